#!/usr/bin/env python3
"""The Attach flow and its live view, headless and without a GPU: strata_fake_agent plays a job
running with the agent; `strata view --attach PID --duration 3 --focus "Iteration 3"` records
from it under xvfb-run, saving a screenshot mid-recording and one after the final load. Asserts
that the selection and the zoomed range survive the live re-reads and the final load, and on
image statistics (never exact pixels). Exit 77 (skipped) without xvfb-run or OpenGL 3.3."""
import json, os, shutil, subprocess, sys, tempfile

strata, fake_agent, out = sys.argv[1], sys.argv[2], sys.argv[3]
if not shutil.which("xvfb-run"):
    print("xvfb-run not found: skipped")
    sys.exit(77)
os.makedirs(out, exist_ok=True)
live, final, dump = (os.path.join(out, n) for n in ("attach-live.png", "attach-final.png", "attach.json"))
for f in (live, final, dump):
    if os.path.exists(f):
        os.remove(f)
sockets = tempfile.mkdtemp(prefix="strata-attach-view-")
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", STRATA_SOCKET_DIR=sockets)
agent = subprocess.Popen([fake_agent, "--lifetime", "120"], env=env, stdout=subprocess.PIPE, text=True)
try:
    pid = agent.stdout.readline().split()[1]  # "listening PID"
    cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", strata, "view", "--size", "1280x800", "--attach", pid,
           "--duration", "3", "-o", os.path.join(sockets, "live.pt.trace.json"), "--focus", "Iteration 3",
           "--live-screenshot", live, "--screenshot", final, "--dump-layout", dump]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
finally:
    agent.terminate()
    agent.wait()
    shutil.rmtree(sockets, ignore_errors=True)
print(r.stdout, r.stderr)
if r.returncode != 0 and "cannot open a window" in r.stderr:
    print("no OpenGL 3.3 under xvfb: skipped")
    sys.exit(77)
assert r.returncode == 0, f"strata view --attach failed: {r.returncode}"
assert "finished: " in r.stderr, "the recording did not finish"
assert "the recording ended before a live view" not in r.stderr, "no live view was captured"
assert os.path.getsize(live) > 10000 and os.path.getsize(final) > 10000

layout = json.load(open(dump))
# Selected on the first live view; still selected, and still zoomed to it, after every re-read.
assert layout["selected"] == "Iteration 3", layout["selected"]
span_ms = (layout["view_t1"] - layout["view_t0"]) / 1e6
assert 90 < span_ms < 130, span_ms
assert any(s.startswith("GPU") for s in layout["sections"]), layout["sections"]
img = layout["image"]
assert img["distinct_colours"] >= 30, img
assert 0.02 < img["non_background"] < 0.9, img
print("attach screenshot test passed:", layout["rects"], "rects,", img)
