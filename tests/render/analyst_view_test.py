#!/usr/bin/env python3
"""The viewer as a person uses it, headless: `strata view FILE --keys ...` presses keys through
the window's key events, and the layout dump (`ui`, `dialogs`) says what came of them. At 1600x900 and
1024x700: the panels, the breadcrumbs, the dialogs and the search's list fit the window; the
levels view scrolls; `?` opens the key map and Esc closes it without going back; Esc closes
File > Open alone; Backspace and Alt+Left go back; U selects the parent; the search lists
names with counts and time, Esc clears it, and each file keeps its own query; the details list
a selection's flows. Exit 77 (skipped) without xvfb-run.
    analyst_view_test.py STRATA OUT_DIR TORCH2_DIR [TRACES_DIR]"""
import json, os, shutil, subprocess, sys

from headless_view import xvfb_run

strata, out, torch2 = sys.argv[1], sys.argv[2], sys.argv[3]
traces = sys.argv[4] if len(sys.argv) > 4 else ""
if not shutil.which("xvfb-run"):
    print("xvfb-run not found: skipped")
    sys.exit(77)
os.makedirs(out, exist_ok=True)
train = os.path.join(torch2, "resnet18-train-h100.pt.trace.json.gz")
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1")
runs = 0


def view(trace, size, keys="", focus="Iteration 2/Backward", shot=False):
    """Runs strata view headless; returns the layout dump."""
    global runs
    runs += 1
    name = os.path.join(out, f"analyst-{runs}")
    cmd = [*xvfb_run(), "-s", f"-screen 0 {size}x24", strata, "view", trace, "--size", size,
           "--dump-layout", name + ".json"]
    if focus:
        cmd += ["--focus", focus]
    if keys:
        cmd += ["--keys", keys]
    if shot:
        cmd += ["--screenshot", name + ".png"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    if r.returncode != 0 and "cannot open a window" in r.stderr:
        print("no OpenGL 3.3 under xvfb: skipped")
        sys.exit(77)
    assert r.returncode == 0, (cmd, r.returncode, r.stderr)
    return json.load(open(name + ".json"))


def inside(box, window, what):
    assert box["x"] >= 0 and box["y"] >= 0, (what, box)
    assert box["x"] + box["w"] <= window["w"] + 0.5 and box["y"] + box["h"] <= window["h"] + 0.5, (what, box, window)


for size in ("1600x900", "1024x700"):
    # Panels and breadcrumbs fit; a deep selection (a kernel, by search) elides the
    # breadcrumbs in the middle and scrolls the levels view to its last row.
    d = view(train, size, "/,sm90_xmma_dgrad,Enter", focus="Iteration 2", shot=True)
    ui = d["ui"]
    w = ui["window"]
    for panel in ("timeline", "details", "bottom"):
        inside(ui[panel], w, panel)
    assert ui["timeline"]["w"] >= 360 and ui["timeline"]["h"] >= 200, ui["timeline"]
    assert ui["details"]["w"] >= 220 and ui["bottom"]["h"] >= 90, (ui["details"], ui["bottom"])
    assert ui["crumbs_w"] <= ui["crumbs_area"]["w"], (ui["crumbs_w"], ui["crumbs_area"])
    assert len(d["path"]) >= 8, d["path"]
    assert ui["crumbs"][0] == "Trace", ui["crumbs"]
    if size == "1024x700":
        assert "\u2026" in ui["crumbs"], ui["crumbs"]  # a hidden run
        assert ui["crumbs"][-1] != d["path"][-1], ui["crumbs"]  # the kernel's name, shortened
    assert ui["levels_content_h"] > ui["levels_visible_h"], ui
    assert ui["levels_scroll_y"] > 0, ui
    # The kernel's flow: its launch, one click away.
    assert any(f["kind"] == "launch" and f["preceding"] for f in ui["flows"]), ui["flows"]
    assert ui["search"]["current"] == 0 and not ui["search"]["list_open"], ui["search"]

    # `?`: the key map, inside the window; Esc closes it and does not go back.
    focused = view(train, size)
    hist = focused["ui"]["history"]
    assert hist >= 1, focused["ui"]
    d = view(train, size, "?", shot=True)
    assert d["ui"]["keymap_open"], d["ui"]
    keymap = [x for x in d["dialogs"] if x["name"] == "Keys and colours"]
    assert keymap, d["dialogs"]
    inside(keymap[0], d["ui"]["window"], "key map")
    d = view(train, size, "?,Esc")
    assert not d["ui"]["keymap_open"] and d["ui"]["history"] == hist, d["ui"]
    assert (d["view_t0"], d["view_t1"]) == (focused["view_t0"], focused["view_t1"])
    assert d["selected"] == focused["selected"]
    d = view(train, size, "?,?")
    assert not d["ui"]["keymap_open"], d["ui"]

    # File > Open stays inside the window; Esc closes it alone.
    d = view(train, size, "Ctrl+O", shot=True)
    dialog = [x for x in d["dialogs"] if x["name"] == "Open trace"]
    assert dialog, d["dialogs"]
    inside(dialog[0], d["ui"]["window"], "Open trace")
    d = view(train, size, "Ctrl+O,Esc")
    assert not d["dialogs"] and d["ui"]["history"] == hist, d["ui"]
    assert (d["view_t0"], d["view_t1"]) == (focused["view_t0"], focused["view_t1"])

    # File > Attach (Ctrl+R) too: Esc closes it and does not go back.
    d = view(train, size, "Ctrl+R")
    assert [x for x in d["dialogs"] if x["name"] == "Attach to a running job"], d["dialogs"]
    d = view(train, size, "Ctrl+R,Esc")
    assert not d["dialogs"] and d["ui"]["history"] == hist, d["ui"]
    assert (d["view_t0"], d["view_t1"]) == (focused["view_t0"], focused["view_t1"])

# Back as in a browser: Esc, Backspace and Alt+Left each step the view back.
for keys in ("Esc", "Backspace", "Alt+Left"):
    d = view(train, "1024x700", keys)
    assert d["ui"]["history"] == hist - 1, (keys, d["ui"]["history"])
    assert (d["view_t0"], d["view_t1"]) != (focused["view_t0"], focused["view_t1"]), keys

# U: the parent, the breadcrumb before the selection.
d = view(train, "1024x700", "U")
assert d["selected"] == focused["path"][-2], (d["selected"], focused["path"])

# Search: the list of names with counts and time, inside the window.
d = view(train, "1024x700", "/,conv", shot=True)
s = d["ui"]["search"]
assert s["query"] == "conv" and s["matches"] > 0 and s["list_open"], s
assert sum(n["count"] for n in s["names"]) == s["matches"], s
totals = [n["total_ns"] for n in s["names"]]
assert totals == sorted(totals, reverse=True), totals
for n in s["names"]:
    assert "conv" in n["name"].lower(), n
    assert n["longest_ns"] <= n["total_ns"] <= n["count"] * n["longest_ns"], n
lst = [x for x in d["dialogs"] if x["name"] == "search results"]
assert lst, d["dialogs"]
inside(lst[0], d["ui"]["window"], "search results")
# Esc in the box clears the search and does nothing else.
d = view(train, "1024x700", "/,conv,Esc")
s = d["ui"]["search"]
assert s["query"] == "" and s["matches"] == 0 and not s["list_open"], s
assert d["ui"]["history"] == hist and d["selected"] == focused["selected"], d["ui"]
# Enter goes to the first match (in time order) and closes the list.
d = view(train, "1024x700", "/,conv,Enter")
assert d["ui"]["search"]["current"] == 0 and not d["ui"]["search"]["list_open"], d["ui"]["search"]
assert "conv" in d["selected"].lower(), d["selected"]

# Back returns to the earlier place whole: its view and what was selected there.
first = d
d = view(train, "1024x700", "/,conv,Enter,Enter,Esc")
assert d["selected"] != first["selected"] and d["ui"]["history"] == first["ui"]["history"] + 1, d["ui"]
d = view(train, "1024x700", "/,conv,Enter,Enter,Esc,Backspace")
assert d["selected"] == first["selected"], (d["selected"], first["selected"])
assert (d["view_t0"], d["view_t1"]) == (first["view_t0"], first["view_t1"])
d = view(train, "1024x700", "/,conv,Enter,Enter,Esc,Backspace,Backspace")
assert d["selected"] == focused["selected"] and d["ui"]["history"] == hist, (d["selected"], d["ui"])

# Each file keeps its own query: a new file starts with none, the first gets its own back.
# File > Open lists the directory's traces, directories first, then by name: a.json.gz, b.json.gz.
pair = os.path.join(out, "pair")
shutil.rmtree(pair, ignore_errors=True)
os.makedirs(pair)
infer = os.path.join(torch2, "resnet18-infer-h100.pt.trace.json.gz")
os.symlink(os.path.abspath(train), os.path.join(pair, "a.json.gz"))
os.symlink(os.path.abspath(infer), os.path.join(pair, "b.json.gz"))
a = os.path.join(pair, "a.json.gz")
d = view(a, "1024x700", "/,conv,Ctrl+O,Down,Down,Enter", focus="")
assert d["sections"] and d["ui"]["search"]["query"] == "" and d["ui"]["search"]["matches"] == 0, d["ui"]["search"]
d = view(a, "1024x700", "/,conv,Ctrl+O,Down,Down,Enter,Ctrl+O,Down,Enter", focus="")
s = d["ui"]["search"]
assert s["query"] == "conv" and s["matches"] > 0 and not s["list_open"], s

# File > Attach in a window smaller than the dialog: it fits, and stays inside.
r = subprocess.run([*xvfb_run(), "-s", "-screen 0 700x500x24", strata, "view", "--attach-dialog", "--size", "700x500",
                    "--dump-layout", os.path.join(out, "attach.json")], env=env, capture_output=True, text=True, timeout=120)
assert r.returncode == 0, r.stderr
d = json.load(open(os.path.join(out, "attach.json")))
attach = [x for x in d["dialogs"] if x["name"] == "Attach to a running job"]
assert attach, d["dialogs"]
inside(attach[0], {"w": 700, "h": 500}, "Attach")

# Forward op -> backward op, when the trace links them (fwdbwd flows).
fwdbwd = os.path.join(traces, "hta-resnet-v100-fwdbwd.pt.trace.json.gz") if traces else ""
if fwdbwd and os.path.exists(fwdbwd):
    d = view(fwdbwd, "1600x900", "/,aten::conv2d,Enter", focus="")
    assert d["selected"] == "aten::conv2d", d["selected"]
    assert any(f["kind"] == "backward op" and not f["preceding"] for f in d["ui"]["flows"]), d["ui"]["flows"]

print(f"analyst view test passed ({runs} runs)")
