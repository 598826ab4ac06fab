#!/usr/bin/env python3
"""Screenshot test: `strata view FILE --screenshot` under xvfb-run, asserting on the dumped
layout and on image statistics (never exact pixels). Exit 77 (skipped) without xvfb-run."""
import json, os, shutil, struct, subprocess, sys, zlib

from headless_view import xvfb_run

strata, trace, out = sys.argv[1], sys.argv[2], sys.argv[3]
if not shutil.which("xvfb-run"):
    print("xvfb-run not found: skipped")
    sys.exit(77)
os.makedirs(out, exist_ok=True)
png, dump = os.path.join(out, "view.png"), os.path.join(out, "view.json")
for f in (png, dump):
    if os.path.exists(f):
        os.remove(f)
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1")
cmd = [*xvfb_run(), "-s", "-screen 0 1280x800x24", strata, "view", trace, "--size", "1280x800",
       "--focus", "Iteration", "--screenshot", png, "--dump-layout", dump]
r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
print(r.stdout, r.stderr)
if r.returncode != 0 and "cannot open a window" in r.stderr:
    print("no OpenGL 3.3 under xvfb: skipped")
    sys.exit(77)
assert r.returncode == 0, f"strata view failed: {r.returncode}"

layout = json.load(open(dump))
assert layout["rows"] >= 5, layout["rows"]
assert layout["rects"] >= 20, layout["rects"]
assert layout["labels"] >= 5, layout["labels"]
assert layout["sections"][0] == "Annotation", layout["sections"]
assert any(s.startswith("GPU") for s in layout["sections"]), layout["sections"]
assert layout["path"] and layout["path"][0].startswith("Iteration"), layout["path"]
assert layout["selected"].startswith("Iteration"), layout["selected"]
assert layout["bytes_per_event"] < 8, layout["bytes_per_event"]
assert layout["image"]["width"] == 1280 and layout["image"]["height"] == 800, layout["image"]
# Image statistics: not blank, several colours, mostly the dark theme.
img = layout["image"]
assert img["distinct_colours"] >= 30, img
assert 0.02 < img["non_background"] < 0.9, img
assert 10 < img["mean_luma"] < 140, img

# The PNG is a real 1280x800 PNG.
data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
w, h = struct.unpack(">II", data[16:24])
assert (w, h) == (1280, 800), (w, h)
print("screenshot test passed:", layout["rows"], "rows,", layout["rects"], "rects,", img)
