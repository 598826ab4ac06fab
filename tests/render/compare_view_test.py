#!/usr/bin/env python3
"""The viewer's comparison of two runs (headless, under xvfb-run), on the CPU pair with a stall
inside one module (tests/data/diff-pairs/stall-a, stall-b: truth.json):
  - `strata view A --compare B --tab compare`: the Compare tab in front, the comparison loaded,
    its top layer row the stalled layer (only in B), outlined in B's iteration in the picture;
  - File > Compare... (Ctrl+Shift+O, B picked in the browser with the arrows, Enter): the same;
  - a B that cannot be read: one error naming the file, A still shown, exit 1.
Exit 77 (skipped) without xvfb-run or OpenGL 3.3."""
import json, os, shutil, subprocess, sys

from headless_view import xvfb_run

strata, pairs, out = sys.argv[1], sys.argv[2], sys.argv[3]
if not shutil.which("xvfb-run"):
    print("xvfb-run not found: skipped")
    sys.exit(77)
os.makedirs(out, exist_ok=True)
a, b = os.path.join(pairs, "stall-a.json.gz"), os.path.join(pairs, "stall-b.json.gz")
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1")


def view(name, *args, rc=0):
    png, dump = os.path.join(out, name + ".png"), os.path.join(out, name + ".json")
    for f in (png, dump):
        if os.path.exists(f):
            os.remove(f)
    cmd = [*xvfb_run(), "-s", "-screen 0 1600x1000x24", strata, "view", a, "--size", "1600x1000",
           "--screenshot", png, "--dump-layout", dump, *args]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    print(name, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    if r.returncode != 0 and "cannot open a window" in r.stderr:
        print("no OpenGL 3.3 under xvfb: skipped")
        sys.exit(77)
    assert r.returncode == rc, f"strata view ({name}): exit {r.returncode}, expected {rc}"
    return json.load(open(dump)), r.stderr


def check_compared(d, what):
    c = d["compare"]
    assert c["loaded"], (what, c)
    assert c["b"].endswith("stall-b.json.gz"), (what, c["b"])
    assert d["ui"]["tab"] == "compare" and "compare" in d["ui"]["tabs"], (what, d["ui"]["tab"], d["ui"]["tabs"])
    assert c["time_basis"] == "wall" and c["same_model"] and c["aligned_share"] > 0.8, (what, c)
    assert c["layers_aligned"] <= min(c["layers_a"], c["layers_b"]), (what, c)
    assert c["explain"] and c["explain"][0].startswith("Iteration") and "slower" in c["explain"][0], (what, c["explain"])
    # The stall: its layer first in the table, on both sides (the injected ops are its own), and
    # outlined in both iterations.
    top = c["top_rows"][0]
    assert top["path_a"] == top["path_b"] and top["path_b"].startswith("Forward/") and top["detail"] == "", (what, top)
    assert top["self_delta_ns"] > 10e6, (what, top)
    assert c["selected"] == 0 and c["rows_shown"] == c["layer_rows"] > 50, (what, c)
    p = c["picture"]
    assert p["rows"] >= 2 and p["items_a"] > 20 and p["items_b"] > 20, (what, p)
    assert p["outlined_b"] and p["outlined_a"], (what, p)
    img = d["image"]
    assert img["distinct_colours"] >= 30 and 10 < img["mean_luma"] < 140, (what, img)


# --compare, headless.
compared, _ = view("compare", "--compare", b, "--tab", "compare")
check_compared(compared, "--compare")
# The open trace is still A, on the timeline.
assert compared["sections"] and compared["panels"]["summary"], compared["sections"]

# Ctrl+Shift+O opens the browser for B.
dialog, _ = view("dialog", "--keys", "Ctrl+Shift+O")
assert [x["name"] for x in dialog["dialogs"]] == ["Compare with another run"], dialog["dialogs"]
assert not dialog["compare"]["loaded"], dialog["compare"]

# File > Compare...: B picked in A's directory (the browser starts there) and opened with Enter.
entries = sorted(n for n in os.listdir(pairs) if not n.startswith(".") and (n.endswith(".json") or n.endswith(".gz")))
downs = ",".join(["Down"] * (entries.index("stall-b.json.gz") + 1))
menu, _ = view("menu", "--keys", f"Ctrl+Shift+O,{downs},Enter")
check_compared(menu, "File > Compare")
assert menu["dialogs"] == [], menu["dialogs"]

# A B that cannot be read: said once, naming it; A stays open and usable.
missing = os.path.join(out, "no-such-run.json.gz")
failed, stderr = view("missing", "--compare", missing, "--tab", "compare", rc=1)
errors = [line for line in stderr.splitlines() if "no-such-run.json.gz" in line]
assert len(errors) == 1 and "compare" in errors[0].lower(), stderr
assert not failed["compare"]["loaded"], failed["compare"]
assert failed["sections"] and failed["ui"]["tab"] != "compare", (failed["sections"], failed["ui"]["tab"])
print("compare view test passed")
