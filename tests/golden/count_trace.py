#!/usr/bin/env python3
"""Independent counts of Kineto traces, the golden data for tests/test_real_traces.cpp.

For every trace in ../shared/traces/*.gz (next to the repository) and tests/data/torch2/*.gz
this counts, with nothing but the standard library, what the loader must report:
traceEvents entries, entries per `ph` and per category (normalised like the loader's
known_category()), timed events (X and i, minus `[memory]` instants), `[memory]` events,
ProfilerStep# ranges, deviceProperties, rank/world_size, distinct (pid, tid) among timed
events, GPU ops, the exact time span in ns, GPU ops with a launch of the same
correlation id, and fwdbwd flow pairs.

Regenerate the goldens (after a deliberate change of the counting rules or new traces):
    python3 tests/golden/count_trace.py --write
Check them without writing (exit 1 on a difference):
    python3 tests/golden/count_trace.py
"""
import decimal
import gzip
import json
import pathlib
import re
import sys
from decimal import Decimal

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
TRACE_DIRS = [REPO.parent / "shared" / "traces", REPO / "tests" / "data" / "torch2"]

# known_category() in core/kineto_parse.cpp: spelling -> cat_name().
KNOWN_CATS = {
    "Trace": "Trace", "cpu_op": "cpu_op", "Operator": "cpu_op", "kernel": "kernel", "Kernel": "kernel",
    "Memcpy": "gpu_memcpy", "gpu_memcpy": "gpu_memcpy", "Memset": "gpu_memset", "gpu_memset": "gpu_memset",
    "Runtime": "cuda_runtime", "cuda_runtime": "cuda_runtime", "overhead": "overhead", "Overhead": "overhead",
    "cuda_sync": "cuda_sync", "cuda_event": "cuda_event", "cuda_driver": "cuda_driver",
    "user_annotation": "user_annotation", "python_function": "python_function",
    "cpu_instant_event": "cpu_instant_event", "gpu_user_annotation": "gpu_user_annotation",
}
# phase_of() in core/kineto_parse.cpp, named as LoadStats::per_phase is printed.
PHASES = {"X": "X", "i": "i", "I": "i", "n": "i", "C": "C", "s": "s", "t": "t", "f": "f", "M": "M",
          "B": "B", "E": "E"}
GPU_OPS = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCHES = {"cuda_runtime", "cuda_driver"}
STEP_CATS = {"user_annotation", "(none)", "cpu_op"}
INT_RE = re.compile(r"-?[0-9]+\Z")
INT64 = (-(2**63), 2**63 - 1)


def category(ev):
    cat = ev.get("cat")
    if not isinstance(cat, str):
        return "(none)"
    return KNOWN_CATS.get(cat, cat)


def row_id(v):
    """A pid or tid as the loader keys it: integers (also in strings) fold together."""
    if isinstance(v, bool) or v is None:
        return ("bad", repr(v))
    if isinstance(v, int) and INT64[0] <= v <= INT64[1]:
        return v
    if isinstance(v, str) and INT_RE.match(v.rstrip(" \t\r\n")) and INT64[0] <= int(v) <= INT64[1]:
        return int(v)
    return (type(v).__name__, str(v))


def to_ns(us):
    """Microseconds (Decimal or int) -> ns, rounding half away from zero like micros_to_ns()."""
    return int((Decimal(us) * 1000).quantize(Decimal(1), rounding=decimal.ROUND_HALF_UP))


def count(path):
    with gzip.open(path, "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    top = doc if isinstance(doc, dict) else {"traceEvents": doc}
    events = top.get("traceEvents", [])
    base = int(top.get("baseTimeNanoseconds", 0) or 0)
    dist = top.get("distributedInfo") or {}
    out = {
        "trace_events": len(events), "phases": {}, "categories": {}, "timed_events": 0, "memory_events": 0,
        "profiler_steps": 0, "devices": len(top.get("deviceProperties") or []),
        "rank": int(dist.get("rank", -1)), "world_size": int(dist.get("world_size", -1)),
        "cpu_gpu_rows": 0, "gpu_ops": 0, "time_begin_ns": 0, "time_end_ns": 0,
        "gpu_ops_with_launch": 0, "fwdbwd_flow_pairs": 0,
    }
    rows, launch_ids, gpu_corr = set(), set(), []
    flow_s, flow_f = set(), set()
    begin = end = None
    for ev in events:
        if not isinstance(ev, dict):
            continue
        ph = PHASES.get(ev.get("ph"), "other")
        cat = category(ev)
        out["phases"][ph] = out["phases"].get(ph, 0) + 1
        out["categories"][cat] = out["categories"].get(cat, 0) + 1
        if ph in ("s", "f") and ev.get("cat") == "fwdbwd":
            (flow_s if ph == "s" else flow_f).add(str(ev.get("id")))
        if ph == "i" and ev.get("name") == "[memory]":
            out["memory_events"] += 1
            continue
        if ph not in ("X", "i"):
            continue
        out["timed_events"] += 1
        rows.add((row_id(ev.get("pid")), row_id(ev.get("tid"))))
        start = to_ns(ev["ts"])
        stop = start + max(0, to_ns(ev["dur"])) if ph == "X" else start
        begin = start if begin is None else min(begin, start)
        end = stop if end is None else max(end, stop)
        if str(ev.get("name", "")).startswith("ProfilerStep#") and cat in STEP_CATS:
            out["profiler_steps"] += 1
        corr = (ev.get("args") or {}).get("correlation")
        if cat in GPU_OPS:
            out["gpu_ops"] += 1
            if corr is not None:
                gpu_corr.append(corr)
        elif cat in LAUNCHES and corr is not None:
            launch_ids.add(corr)
    out["cpu_gpu_rows"] = len(rows)
    if begin is not None:
        out["time_begin_ns"], out["time_end_ns"] = begin + base, end + base
    out["gpu_ops_with_launch"] = sum(1 for c in gpu_corr if c in launch_ids)
    out["fwdbwd_flow_pairs"] = len(flow_s & flow_f)
    return out


def golden_path(trace):
    return HERE / (trace.name.removesuffix(".gz").removesuffix(".json") + ".json")


def main():
    write = "--write" in sys.argv[1:]
    traces = sorted(p for d in TRACE_DIRS if d.is_dir() for p in d.glob("*.gz"))
    if not traces:
        sys.exit("count_trace.py: no traces found in " + ", ".join(map(str, TRACE_DIRS)))
    differ = 0
    for trace in traces:
        text = json.dumps(count(trace), indent=1, sort_keys=True) + "\n"
        target = golden_path(trace)
        if write:
            target.write_text(text)
            print("wrote", target.relative_to(REPO))
        elif not target.exists() or target.read_text() != text:
            differ += 1
            print("differs:", target.relative_to(REPO))
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
