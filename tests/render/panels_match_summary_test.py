#!/usr/bin/env python3
"""The viewer's panels show the same figures as `strata summary --json`.

For every trace given (files or directories), runs `strata summary FILE --json` and
`strata view FILE --dump-layout OUT.json --focus ITERATION` (headless, under xvfb-run), and
checks that the dump's `panels.summary` holds exactly the summary's keys for what the Summary
tab shows, with equal values, that its ranked tables (`panels.summary_tables`: phases, layers,
kernels, CPU ops) hold the summary's rows and efficiency figures by GPU time, and that `panels.details` of the focused iteration equals
`strata summary FILE --item ITERATION --json`. With allocator events, `strata view FILE
--memory-at peak` shows in `panels.memory` what `strata summary FILE --memory-at peak --json`
prints, and its categories are the summary's `memory.at_peak`, summing to the peak. On two
traces the What-if tab (`--tab whatif --whatif kernels-2x`) shows the predictions `strata whatif
--json` prints. Exit 77 (skipped) without xvfb-run or OpenGL.

usage: panels_match_summary_test.py STRATA OUT_DIR TRACE_OR_DIR...
"""
import json, os, shutil, subprocess, sys

from headless_view import xvfb_run

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summary_rows import table_mismatches  # noqa: E402

PANEL_KEYS = ["iterations", "utilization", "idle", "kernels", "cpu_ops", "memory", "work"]

strata, out = sys.argv[1], sys.argv[2]
inputs = sys.argv[3:]
traces = []
for p in inputs:
    if os.path.isdir(p):
        traces += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith((".json", ".json.gz")))
    elif os.path.exists(p):
        traces.append(p)
traces = [t for t in traces if os.path.basename(t) != "summary.json"]
if not traces:
    print("no traces found: skipped")
    sys.exit(77)

if not os.environ.get("DISPLAY"):
    if not shutil.which("xvfb-run"):
        print("xvfb-run not found: skipped")
        sys.exit(77)
    # One X server for every file.
    cmd = [*xvfb_run(), "-s", "-screen 0 1024x768x24", sys.executable, __file__] + sys.argv[1:]
    sys.exit(subprocess.run(cmd).returncode)

os.makedirs(out, exist_ok=True)
env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1")
failures = []
for trace in traces:
    name = os.path.basename(trace)
    r = subprocess.run([strata, "summary", trace, "--json"], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        failures.append(f"{name}: strata summary failed: {r.stderr.strip()}")
        continue
    summary = json.loads(r.stdout)
    dump = os.path.join(out, name + ".layout.json")
    if os.path.exists(dump):
        os.remove(dump)
    first = summary["iterations"]["list"][0]["name"] if summary["iterations"]["list"] else ""
    cmd = [strata, "view", trace, "--size", "1024x700", "--dump-layout", dump]
    if first:
        cmd += ["--focus", first]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "cannot open a window" in r.stderr:
        print("no OpenGL 3.3 under xvfb: skipped")
        sys.exit(77)
    if r.returncode != 0:
        failures.append(f"{name}: strata view failed ({r.returncode}): {r.stderr.strip()}")
        continue
    layout = json.load(open(dump))
    panels = layout.get("panels", {})
    shown = panels.get("summary")
    if shown is None:
        failures.append(f"{name}: no panels.summary in the dump")
        continue
    if sorted(shown.keys()) != sorted(PANEL_KEYS):
        failures.append(f"{name}: panels.summary keys {sorted(shown.keys())}, expected {sorted(PANEL_KEYS)}")
    for key in PANEL_KEYS:
        if shown.get(key) != summary.get(key):
            failures.append(f"{name}: panels.summary.{key} differs from strata summary --json:\n"
                            f"  view:    {json.dumps(shown.get(key))[:400]}\n  summary: {json.dumps(summary.get(key))[:400]}")
    for f in table_mismatches(summary, panels.get("summary_tables", {})):
        failures.append(f"{name}: panels.summary_tables: {f}")
    if first:
        details = panels.get("details")
        it = summary["iterations"]["list"][0]
        if details is None:
            failures.append(f"{name}: --focus '{first}' left no panels.details")
        elif details["name"] != first or details["begin_ns"] != it["begin_ns"] or details["end_ns"] != it["end_ns"]:
            failures.append(f"{name}: panels.details {details['name']} {details['begin_ns']}..{details['end_ns']} "
                            f"is not the summary's {first} {it['begin_ns']}..{it['end_ns']}")
        else:
            r = subprocess.run([strata, "summary", trace, "--item", first, "--json"], capture_output=True, text=True,
                               timeout=600)
            item = json.loads(r.stdout) if r.returncode == 0 else None
            if item != details:
                failures.append(f"{name}: panels.details differs from strata summary --item:\n"
                                f"  view:    {json.dumps(details)}\n  summary: {json.dumps(item)}")
    if summary["memory"]["present"]:
        r = subprocess.run(cmd[:3] + ["--size", "1024x700", "--dump-layout", dump, "--memory-at", "peak"], env=env,
                           capture_output=True, text=True, timeout=600)
        shown = json.load(open(dump)).get("panels", {}).get("memory") if r.returncode == 0 else None
        r = subprocess.run([strata, "summary", trace, "--memory-at", "peak", "--json"], capture_output=True, text=True, timeout=600)
        printed = json.loads(r.stdout) if r.returncode == 0 else None
        mem = summary["memory"]
        if shown is None or shown != printed:
            failures.append(f"{name}: panels.memory differs from strata summary --memory-at peak:\n"
                            f"  view:    {json.dumps(shown)[:400]}\n  summary: {json.dumps(printed)[:400]}")
        elif shown["by_category"] != mem["at_peak"] or sum(shown["by_category"].values()) != mem["peak_allocated"]:
            failures.append(f"{name}: memory at the peak {shown['by_category']} is not the summary's {mem['at_peak']} "
                            f"summing to {mem['peak_allocated']}")
    # The What-if tab: the same predictions as `strata whatif --json` for the default scenarios.
    if name.startswith(("resnet18-train", "hotline-transformer")):
        r = subprocess.run(cmd[:3] + ["--size", "1024x700", "--tab", "whatif", "--whatif", "kernels-2x", "--dump-layout", dump],
                           env=env, capture_output=True, text=True, timeout=600)
        shown = json.load(open(dump)).get("panels", {}).get("whatif") if r.returncode == 0 else None
        r = subprocess.run([strata, "whatif", trace, "--json"], capture_output=True, text=True, timeout=600)
        printed = json.loads(r.stdout) if r.returncode == 0 else None
        if not shown or not printed or shown["chosen"] != "kernels-2x" or shown["predicted_ns"] != printed["baseline"]["predicted_ns"] or \
                {s["name"]: s["predicted_ns"] for s in printed["scenarios"]}.items() - {s["name"]: s["predicted_ns"] for s in shown["scenarios"]}.items():
            failures.append(f"{name}: panels.whatif differs from strata whatif --json:\n  view:    {json.dumps(shown)[:400]}\n"
                            f"  whatif:  {json.dumps(printed)[:400]}")
    print(f"{name}: {len(PANEL_KEYS)} panel figures and the ranked tables equal the summary's"
          + (f"; details of {first}: bound {panels['details']['bound']}" if first and panels.get("details") else ""))

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
