#!/usr/bin/env python3
"""The Summary tab's ranked tables and the Levels view's sizing, driven headless with clicks
(`strata view FILE --keys Click:X:Y`, under xvfb-run) and checked in the layout dump:
  - at 1920x1080 and 1024x700 the tab shows the rank toggle inside the window; the phase,
    layer, kernel and CPU-op rows are `strata summary --json`'s, ranked by GPU time;
  - a click on "CPU time", then on "wall time", ranks them by that time (kernels, which have no
    CPU time, by wall time; the order of at least one table changes);
  - the Levels tab sizes blocks by wall time until "GPU time" is clicked.
Exit 77 (skipped) without xvfb-run or OpenGL 3.3.

usage: summary_tables_view_test.py STRATA OUT_DIR TRACE"""
import json, os, shutil, subprocess, sys

from headless_view import run_view

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary_rows import table_mismatches  # noqa: E402

strata, out, trace = sys.argv[1], sys.argv[2], sys.argv[3]
if not shutil.which("xvfb-run"):
    print("xvfb-run not found: skipped")
    sys.exit(77)
os.makedirs(out, exist_ok=True)
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1", XDG_CONFIG_HOME=os.path.join(out, "config"))
failures = []


def view(name, tab, keys="", size="1920x1080"):
    d, r = run_view(strata, trace, out, name, "--tab", tab, *(["--keys", keys] if keys else []), size=size, env=env,
                    timeout=300)
    assert r.returncode == 0, f"{name}: exit {r.returncode}\n{r.stderr[-2000:]}"
    return d


def centre(buttons, name):
    b = next(x["box"] for x in buttons if x["name"] == name)
    return f"{b['x'] + b['w'] / 2:.0f}:{b['y'] + b['h'] / 2:.0f}"


def check(what, cond, detail=""):
    if not cond:
        failures.append(f"{what} {detail}".strip())


r = subprocess.run([strata, "summary", trace, "--json"], capture_output=True, text=True, timeout=300)
assert r.returncode == 0, r.stderr
summary = json.loads(r.stdout)
orders = {}
for size in ("1920x1080", "1024x700"):
    d = view(f"summary-{size}", "summary", size=size)
    t = d["panels"]["summary_tables"]
    window = d["ui"]["window"]
    check(f"{size}: the Summary tab in front", d["ui"]["tab"] == "summary", d["ui"]["tab"])
    check(f"{size}: ranked by GPU time at first", t["rank_by"] == "gpu", t["rank_by"])
    names = [b["name"] for b in t["buttons"]]
    check(f"{size}: the rank toggle", names == ["GPU time", "CPU time", "wall time"], names)
    for b in t["buttons"]:
        box = b["box"]
        check(f"{size}: '{b['name']}' inside the window", 0 <= box["x"] and box["x"] + box["w"] <= window["w"] and
              0 <= box["y"] and box["y"] + box["h"] <= window["h"], box)
    for f in table_mismatches(summary, t):
        failures.append(f"{size}, by GPU time: {f}")
    if size == "1920x1080":
        orders["gpu"] = {k: [r["name"] for r in t[k]["rows"]] for k in ("phases", "layers", "kernels", "cpu_ops")}
        check("rows have targets", all(r["target"] for k in ("phases", "layers", "kernels") for r in t[k]["rows"]),
              [r["name"] for k in ("phases", "layers", "kernels") for r in t[k]["rows"] if not r["target"]][:5])
        buttons = t["buttons"]

# A click on "CPU time", then on "wall time": every table ranked again.
for mode, label in (("cpu", "CPU time"), ("wall", "wall time")):
    at = centre(buttons, label)
    t = view(f"summary-{mode}", "summary", f"Move:{at},Click:{at}")["panels"]["summary_tables"]
    check(f"a click on '{label}'", t["rank_by"] == mode, t["rank_by"])
    for f in table_mismatches(summary, t):
        failures.append(f"by {mode} time: {f}")
    orders[mode] = {k: [r["name"] for r in t[k]["rows"]] for k in ("phases", "layers", "kernels", "cpu_ops")}
check("kernels by wall time when asked for CPU time", t["kernels"]["ranked_by"] == "wall")
check("the order changes with the time ranked by", orders["cpu"] != orders["gpu"],
      "every table's order by CPU time is its order by GPU time")

# The Levels view: wall time until "GPU time" is clicked.
d = view("levels-wall", "levels")
sizing = d["ui"]["levels_sizing"]
check("levels sized by wall time at first", sizing["mode"] == "wall", sizing)
names = [b["name"] for b in sizing["buttons"]]
check("the levels sizing toggle", names == ["wall time", "GPU time"], names)
if names == ["wall time", "GPU time"]:
    at = centre(sizing["buttons"], "GPU time")
    d = view("levels-gpu", "levels", f"Move:{at},Click:{at}")
    check("a click on 'GPU time' sizes the levels by GPU time", d["ui"]["levels_sizing"]["mode"] == "gpu",
          d["ui"]["levels_sizing"])

for f in failures:
    print("FAIL", f)
print(f"{os.path.basename(trace)}: {len(summary['phases'])} phases, {len(summary['layers'])} layers ranked three ways; "
      f"{len(failures)} failures")
sys.exit(1 if failures else 0)
