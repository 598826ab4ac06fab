"""Summarizes a recorded trace: event counts per category, flow pairing, time span."""
import collections
import gzip
import json
import sys

path = sys.argv[1]
with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
    t = json.load(f)
ev = t["traceEvents"]
cats = collections.Counter(e.get("cat") for e in ev)
starts = {e["id"] for e in ev if e.get("ph") == "s"}
ends = {e["id"] for e in ev if e.get("ph") == "f"}
xs = [e for e in ev if e.get("ph") == "X"]
span = (max(float(e["ts"]) + float(e["dur"]) for e in xs) - min(float(e["ts"]) for e in xs)) if xs else 0
iters = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "iteration"]
print(json.dumps({"file": path, "events": len(ev), "categories": cats, "flows_s": len(starts), "flows_f": len(ends),
                  "flows_paired": starts == ends, "span_ms": round(span / 1000, 3), "iterations": len(iters),
                  "devices": [d.get("name") for d in t.get("deviceProperties", [])], "collector": t.get("collector")}))
