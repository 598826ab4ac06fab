#!/usr/bin/env python3
"""The viewer's everyday paths, driven headless with keys and clicks as a person would
(`strata view FILE --keys ...`, under xvfb-run), each checked in the layout dump:
  - files dropped on the window: a folder opens as a job, a trace dropped with Shift held is
    compared with the open one;
  - File > Open: Open with nothing chosen says so; letters typed to the list start a path; a
    path that does not exist is said with the path; a folder typed is entered; several traces
    chosen (Shift+arrows) open as one job; '/' typed into the dialog never reaches the search box;
  - search: after a click on a name in the results list, Enter steps through that name's
    occurrences; Ctrl+A in the box chooses its text (the next letter replaces it);
  - keys: U then Backspace goes back one step, to where U started; Esc first clears a measured
    range; a new selection opens the details panel at its top;
  - text: the range flags' labels have every glyph in the font and sit below the ruler; at
    1024x700 the details panel's GPU ops table keeps its Start column; a What-if scenario that
    cannot be read is said in view; thread names are not cut while there is room.
Exit 77 (skipped) without xvfb-run or OpenGL 3.3."""
import os, shutil, sys, tempfile

from headless_view import require_xvfb, run_view

strata, traces, out = sys.argv[1], sys.argv[2], sys.argv[3]
require_xvfb()
os.makedirs(out, exist_ok=True)
env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(out, "config"))  # no recent files of the person's

# A folder with one trace and a job folder of three ranks beside it.
work = tempfile.mkdtemp(dir=out)
one = os.path.join(work, "one.json.gz")
shutil.copy(os.path.join(traces, "hta-resnet-v100-fwdbwd.pt.trace.json.gz"), one)
os.makedirs(os.path.join(work, "job"))
for r in range(3):
    shutil.copy(os.path.join(traces, "param-dlrm-torchrec-v100-8ranks", f"rank-{r}.json.gz"), os.path.join(work, "job"))


def view(name, keys, *args, size="1600x1000"):
    d, r = run_view(strata, one, out, name, *args, *(["--keys", keys] if keys else []), size=size, env=env)
    assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-2000:]}"
    return d


def browser(d):
    return d["ui"]["browser"]


# File > Open.
d = view("open-nothing", "Ctrl+O,Enter")
assert [x["name"] for x in d["dialogs"]] == ["Open trace"], d["dialogs"]
assert browser(d)["error"].startswith("Nothing is chosen"), browser(d)
assert browser(d)["path"] == "", browser(d)  # never pre-filled: a click cannot land mid-path

d = view("open-bad-path", "Ctrl+O,/no/such/path,Enter")
assert browser(d)["path"] == "/no/such/path", browser(d)  # typed to the list: nothing lost
assert "No such file or folder: /no/such/path" in browser(d)["error"], browser(d)
assert d["ui"]["search"]["query"] == "", d["ui"]["search"]  # the dialog's keys stay in it

d = view("open-folder", "Ctrl+O,job,Enter")
assert browser(d)["dir"] == os.path.join(work, "job"), browser(d)
assert browser(d)["traces"] == 3 and d["dialogs"], browser(d)

d = view("open-job", "Ctrl+O,job,Enter,Down,Shift+Down,Shift+Down,Enter")
assert d["dialogs"] == [], d["dialogs"]
assert isinstance(d.get("job"), dict) and d["job"]["ranks"] == 3, d.get("job")

# Dropped on the window: a folder opens as a job; one trace with Shift held is compared with the open one.
d = view("drop-folder", "Drop:" + os.path.join(work, "job"))
assert isinstance(d.get("job"), dict) and d["job"]["ranks"] == 3, d.get("job")
d = view("drop-compare", "Shift+Drop:" + os.path.join(traces, "hta-alexnet-a100.pt.trace.json.gz"))
assert d["compare"]["loaded"] and d["compare"]["b"].endswith("hta-alexnet-a100.pt.trace.json.gz"), d["compare"]
assert d["ui"]["tab"] == "compare", d["ui"]["tab"]

# Search: a name picked in the list, then Enter steps through its occurrences.
d = view("search-list", "/,conv")
s = d["ui"]["search"]
assert s["list_open"] and len(s["rows"]) >= 3, s
row = s["rows"][1]
x, y = row["box"]["x"] + row["box"]["w"] / 2, row["box"]["y"] + row["box"]["h"] / 2
picked = view("search-pick", f"/,conv,Move:{x:.0f}:{y:.0f},Click:{x:.0f}:{y:.0f}")["ui"]["search"]
assert picked["narrowed"] == row["name"], (picked["narrowed"], row["name"])
stepped = view("search-step", f"/,conv,Move:{x:.0f}:{y:.0f},Click:{x:.0f}:{y:.0f},Enter")["ui"]["search"]
assert stepped["narrowed"] == row["name"] and stepped["current"] != picked["current"], (picked, stepped)

d = view("search-select-all", "/,conv,Ctrl+A,x")
assert d["ui"]["search"]["query"] == "x", d["ui"]["search"]["query"]

# Keys: U is one step that Backspace takes back; Esc clears a measured range first.
base = view("focus", "", "--focus", "Iteration 103/Backward")
up = view("focus-up", "U", "--focus", "Iteration 103/Backward")
back = view("focus-up-back", "U,Backspace", "--focus", "Iteration 103/Backward")
assert up["path"] != base["path"] and len(up["path"]) == len(base["path"]) - 1, (base["path"], up["path"])
assert back["path"] == base["path"], (base["path"], back["path"])

ranged = view("range", "", "--range", "100:200")
cleared = view("range-esc", "Esc", "--range", "100:200")
assert ranged["ui"]["range"]["active"], ranged["ui"]["range"]
assert not cleared["ui"]["range"]["active"], cleared["ui"]["range"]
assert cleared["path"] == ranged["path"], (ranged["path"], cleared["path"])  # Esc did not also go back

# The details panel opens at its top for a new selection.
assert up["ui"]["details_scroll_y"] == 0, up["ui"]["details_scroll_y"]

# Flags on the ruler: their labels' glyphs are all in the font, and they sit under the ruler.
ruler = ranged["ui"]["range"]["ruler"]
ry = ruler["y"] + ruler["h"] / 2
flags = view("flags", f"Click:{ruler['x'] + 200:.0f}:{ry:.0f},Click:{ruler['x'] + 500:.0f}:{ry:.0f}")
r = flags["ui"]["range"]
assert r["flags"] == 2 and len(r["flag_labels"]) == 1, r
for label in r["flag_labels"]:
    assert label["missing_glyphs"] == 0, label
    assert label["box"]["y"] >= r["ruler"]["y"] + r["ruler"]["h"] - 1, (label, r["ruler"])

# What-if: a scenario that cannot be read, typed and entered, is said where it can be seen, and
# the box keeps the keys to put it right.
w = view("whatif", "", "--tab", "whatif", size="1024x700")["panels"]["whatif"]
box = w["custom_box"]
bx, by = box["x"] + box["w"] / 2, box["y"] + box["h"] / 2
w = view("whatif-bad", f"Move:{bx:.0f}:{by:.0f},Click:{bx:.0f}:{by:.0f},faster,Enter", "--tab", "whatif", size="1024x700")
w = w["panels"]["whatif"]
assert w["error"] and "faster" in w["error"] and w["error_in_view"], w

# Thread names are not cut while the window has room for them.
wide = view("titles", "", size="1600x1000")["ui"]
assert wide["gutter_w"] >= wide["titles_w"], (wide["gutter_w"], wide["titles_w"])

# At 1024x700 the GPU ops table keeps every column.
small = view("small", "", "--focus", "Iteration 103/Backward", size="1024x700")
assert "Start" in small["ui"]["kernel_columns"], small["ui"]["kernel_columns"]
print("ok")
