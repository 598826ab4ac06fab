#!/usr/bin/env python3
"""The Roofline tab (headless, under xvfb-run): `strata view TRACE --tab roofline` at 1920x1080
on a trace with shapes shows the device's roofs and a point per kernel class, each under its
roof, inside the plot, its label on the picture, and a click on a point picks its class (its
kernels in the table, its longest kernel on the timeline); on a trace without shapes the tab
says why in words and plots nothing. Exit 77 (skipped) without xvfb-run or OpenGL 3.3, or without the trace.
Usage: roofline_view_test.py STRATA OUT_DIR TRACE_WITH_SHAPES TRACE_WITHOUT_SHAPES"""
import os, sys

from headless_view import require_xvfb, run_view

strata, out, shapes, no_shapes = sys.argv[1:5]
require_xvfb()
for t in (shapes, no_shapes):
    if not os.path.exists(t):
        print(f"{t} is absent: skipped")
        sys.exit(77)
os.makedirs(out, exist_ok=True)


def view(name, trace, *args):
    d, r = run_view(strata, trace, out, name, "--tab", "roofline", *args, size="1920x1080")
    print(name, r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert r.returncode == 0, f"strata view ({name}): exit {r.returncode}"
    assert d["ui"]["tab"] == "roofline" and "roofline" in d["ui"]["tabs"], (name, d["ui"]["tab"], d["ui"]["tabs"])
    return d


d = view("roofline", shapes)
r = d["panels"]["roofline"]
assert r["shown"] and r["empty"] == "" and r["no_roof"] == "" and r["device"], r
roofs = r["roofs"]
assert len(roofs) == 2 and roofs[0]["label"].startswith("FP32 vector") and "tensor" in roofs[1]["label"], roofs
assert all(abs(x["ridge"] * r["bandwidth"] / x["peak"] - 1) < 1e-9 for x in roofs), roofs
points = r["points"]
assert len(points) >= 3, points
plot, picture = r["plot"], r["picture"]
window = d["ui"]["window"]
assert picture["w"] >= 400 and picture["h"] >= 200, picture
assert picture["x"] >= 0 and picture["y"] >= 0 and picture["x"] + picture["w"] <= window["w"] + 1, (picture, window)
assert picture["y"] + picture["h"] <= window["h"] + 1, (picture, window)
for p in points:
    # Under the roof its kernels ran against, on the axes, inside the plot.
    assert p["roof"] > 0 and p["y"] <= p["roof"] * (1 + 1e-9), p
    assert p["y"] <= max(x["peak"] for x in roofs) and p["y"] <= r["bandwidth"] * p["x"] * (1 + 1e-9), p
    assert r["x_min"] <= p["x"] <= r["x_max"] and r["y_min"] <= p["y"] <= r["y_max"], (p, r)
    assert p["radius"] > 0, p
    assert plot["x"] <= p["px"] <= plot["x"] + plot["w"] and plot["y"] <= p["py"] <= plot["y"] + plot["h"], (p, plot)
# The larger point first (drawn under the smaller).
assert [p["radius"] for p in points] == sorted((p["radius"] for p in points), reverse=True), points
# Every text on the picture, and the points' labels apart from each other.
for t in r["texts"]:
    assert t["x"] >= -1 and t["x"] + t["w"] <= picture["w"] + 1 and t["y"] >= -1 and t["y"] + t["h"] <= picture["h"] + 1, (t, picture)
labels = [t for t in r["texts"] if t["text"] in {p["class"] for p in points}]
assert len(labels) == len(points), (labels, points)
for i, a in enumerate(labels):
    for b in labels[i + 1:]:
        apart = a["x"] + a["w"] <= b["x"] or b["x"] + b["w"] <= a["x"] or a["y"] + a["h"] <= b["y"] or b["y"] + b["h"] <= a["y"]
        assert apart, ("labels overlap", a, b)
assert r["kernel_rows"] > 0, r
img = d["image"]
assert img["distinct_colours"] >= 30 and 10 < img["mean_luma"] < 140, img

# A click on the largest point picks its class: ringed, its kernels in the table, its longest
# kernel selected on the timeline.
top = points[0]
x, y = round(picture["x"] + top["px"]), round(picture["y"] + top["py"])
d = view("roofline-click", shapes, "--keys", f"Move:{x}:{y},Click:{x}:{y},Move:{x}:200")
r = d["panels"]["roofline"]
assert r["selected"] == top["class"] and r["kernel_rows"] > 0, (top, r["selected"], r["kernel_rows"])
assert d["selected"], d["selected"]

d = view("roofline-no-shapes", no_shapes)
r = d["panels"]["roofline"]
assert r["empty"].startswith("no kernel's work is known"), r
assert r["points"] == [] and r["roofs"] == [], r
print("roofline view test passed")
