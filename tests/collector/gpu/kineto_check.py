"""Summarizes a Kineto trace: events per category, CPU ops, GPU kernels, flows, span."""
import collections
import gzip
import json
import sys

for path in sys.argv[1:]:
    try:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            t = json.load(f)
    except Exception as e:  # noqa: BLE001
        print(json.dumps({"file": path, "error": str(e)}))
        continue
    ev = t.get("traceEvents", [])
    cats = collections.Counter(e.get("cat", e.get("ph")) for e in ev)
    xs = [e for e in ev if e.get("ph") == "X" and "dur" in e]
    span = (max(float(e["ts"]) + float(e["dur"]) for e in xs) - min(float(e["ts"]) for e in xs)) if xs else 0
    print(json.dumps({"file": path, "events": len(ev), "categories": cats, "span_ms": round(span / 1000, 3),
                      "keys": [k for k in t if k != "traceEvents"]}))
