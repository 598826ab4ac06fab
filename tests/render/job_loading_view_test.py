#!/usr/bin/env python3
"""A job's viewer shows its ranks as they load, and small windows keep their parts apart,
headless under xvfb-run:
  - `--while-loading 1` saves the frame once a rank of an eight-rank job has loaded, the rest
    still loading: the loading box lists the ranks arrived (each with its iterations and
    median), sits above the recent files and does not cover them;
  - at 800x600, on a trace of several processes and on the job, no process header covers a
    track's title.
Exit 77 (skipped) without xvfb-run or OpenGL 3.3."""
import os, sys

from headless_view import require_xvfb, run_view

strata, traces, out = sys.argv[1], sys.argv[2], sys.argv[3]
require_xvfb()
os.makedirs(out, exist_ok=True)
config = os.path.join(out, "config")
os.makedirs(os.path.join(config, "strata"), exist_ok=True)
recent = [os.path.join(traces, t) for t in ("hta-resnet-v100-fwdbwd.pt.trace.json.gz", "hta-rocm-mi250.pt.trace.json.gz")]
with open(os.path.join(config, "strata", "recent"), "w") as f:
    f.write("\n".join(recent) + "\n")
env = dict(os.environ, XDG_CONFIG_HOME=config)
job = os.path.join(traces, "param-dlrm-torchrec-v100-8ranks")


def box(dump, name):
    boxes = [d for d in dump["dialogs"] if d["name"] == name]
    assert len(boxes) == 1, (name, dump["dialogs"])
    return boxes[0]


# Ranks as they arrive, in the loading box over the welcome screen.
for size in ("800x600", "1024x700"):
    d, r = run_view(strata, job, out, f"loading-{size}", "--while-loading", "1", size=size, env=env)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-2000:]}"
    loading = d["loading"]
    assert loading["ranks_total"] == 8, loading
    assert 1 <= len(loading["ranks"]) <= 8, loading
    for a in loading["ranks"]:
        assert 0 <= a["rank"] < 8 and a["iterations"] >= 1 and a["median_ns"] > 0, a
        assert os.path.basename(a["file"]) == f"rank-{a['rank']}.json.gz", a
    assert "trace" not in d or not d.get("lanes"), "the job was shown before it loaded"
    lb, rf = box(d, "loading box"), box(d, "recent files")
    assert lb["y"] + lb["h"] <= rf["y"] + 0.5, ("the loading box covers the recent files", lb, rf)
    w, h = (float(x) for x in size.split("x"))
    assert rf["y"] + rf["h"] <= h and lb["x"] + lb["w"] <= w + 0.5, ("outside the window", lb, rf, size)

# Small windows: headers and titles apart.
for name, trace in (("processes", os.path.join(traces, "hta-nccl-a100-2ranks.pt.trace.json.gz")), ("job", job)):
    d, r = run_view(strata, trace, out, f"{name}-800x600", size="800x600", env=env)
    assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-2000:]}"
    gutter = d["gutter"]
    assert any(not g["section"] for g in gutter), gutter
    assert name == "job" or any(g["section"] for g in gutter), gutter  # the job's expanded layers fill the panel
    for s in (g for g in gutter if g["section"]):
        for l in (g for g in gutter if not g["section"]):
            assert s["y1"] <= l["y0"] + 0.5 or l["y1"] <= s["y0"] + 0.5, ("a header covers a track", s, l)
print("ok")
