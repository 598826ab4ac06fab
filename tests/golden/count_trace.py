#!/usr/bin/env python3
"""Independent counts of Kineto traces, the golden data for tests/test_real_traces.cpp.

For every trace in tests/data/traces/*.gz (the vendored copies), what only ../shared/traces/*.gz
(next to the repository) adds, and tests/data/torch2/*.gz
this counts, with nothing but the standard library, what the loader must report:
traceEvents entries, entries per `ph` and per category (normalised like the loader's
known_category(); uncategorised events it recognises by their place, torch_npu's device tasks
and runtime calls, under the categories it gives them), timed events (X and i, minus `[memory]`
instants), `[memory]` events, ProfilerStep# ranges, deviceProperties, rank/world_size, distinct
(pid, tid) among timed events (a runtime-only process folded into the process whose thread ids
it shares, as the loader merges torch_npu's CANN process into Python's), GPU ops, the exact time span in ns, GPU ops with a launch of the same
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
TRACE_DIRS = [REPO / "tests" / "data" / "traces", REPO.parent / "shared" / "traces", REPO / "tests" / "data" / "torch2"]

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
# Categories of launch kind (device_category_kind() in core/trace_model.cpp), for folding
# runtime-only processes below.
LAUNCH_KINDS = LAUNCHES | {"mtia_runtime", "glow_runtime", "xpu_runtime", "privateuse1_runtime", "mlu_runtime",
                           "xpu_driver", "privateuse1_driver", "mlu_driver", "enqueue"}
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


# Events written without a category whose place says what they are (torch_npu), as the loader
# recognises them (ModelBuilder::recognise_uncategorised in core/model_build.cpp): on a stream
# of a process labelled as an accelerator ("NPU", "GPU 0") a kernel, or a copy or set where a
# word of the name says so; on a host process, `AscendCL@<call>` is a runtime call. The loader
# counts them under those categories.
DEVICE_LABEL_RE = re.compile(r"([A-Z]{2,})(?:\Z| *[0-9])")
STREAM_RE = re.compile(r"(?i)stream *[0-9]")
WORD_RE = re.compile(r"[A-Za-z0-9]+")
RUNTIME_API_PREFIXES = ("AscendCL@",)


def device_label(labels):
    """device_word_of_label(): the accelerator a process label names, or None."""
    m = DEVICE_LABEL_RE.match(labels) if isinstance(labels, str) else None
    return m.group(1) if m and m.group(1) != "CPU" else None


def labelled_device_number(label):
    """device_number_of_label(): "GPU 0" -> 0, else -1."""
    m = re.match(r"([A-Z]+) *([0-9]+)", label) if isinstance(label, str) else None
    return int(m.group(2)) if m and m.group(1) != "CPU" else -1


def task_category(name):
    words = [w.lower() for w in WORD_RE.findall(str(name))]
    return "gpu_memcpy" if "memcpy" in words else "gpu_memset" if "memset" in words else "kernel"


def legacy_op_name(n):
    """is_legacy_op_name(): an operator's name in a trace without categories."""
    if "::" in n or re.match(r"[a-z0-9_]+:[^ ]", n):
        return True
    return bool(re.search(r".Backward\d*$", n)) or n in ("detach", "detach_")


class Places:
    """Process labels and names, thread names, from the metadata (as apply_metadata() keeps them)."""

    def __init__(self, events):
        self.labels, self.names, self.threads, self.order = {}, {}, {}, {}
        for ev in events:
            if not isinstance(ev, dict):
                continue
            pid = row_id(ev.get("pid"))
            self.order.setdefault(pid, len(self.order))
            if ev.get("ph") != "M":
                continue
            text = (ev.get("args") or {}).get("name" if ev.get("name") != "process_labels" else "labels")
            if not isinstance(text, str):
                continue
            if ev.get("name") == "process_labels":
                self.labels[pid] = text
            elif ev.get("name") == "process_name":
                self.names[pid] = text
            elif ev.get("name") == "thread_name":
                self.threads.setdefault((pid, row_id(ev.get("tid"))), text)

    def device_process(self, pid):
        return device_label(self.labels.get(pid)) is not None

    def host_process(self, pid):
        label = self.labels[pid] if pid in self.labels else self.names.get(pid)
        return not self.device_process(pid) and labelled_device_number(label) < 0

    def stream_thread(self, pid, tid):
        name = self.threads.get((pid, tid))
        if name is None and not isinstance(tid, tuple):
            return True
        return any(isinstance(t, str) and STREAM_RE.match(t) for t in (name, tid[1] if isinstance(tid, tuple) else None))

    def category(self, ev, legacy=False):
        cat = category(ev)
        if cat != "(none)" or ev.get("ph") != "X":
            return cat
        pid, tid = row_id(ev.get("pid")), row_id(ev.get("tid"))
        if self.device_process(pid):
            return task_category(ev.get("name", "")) if self.stream_thread(pid, tid) else cat
        name = ev.get("name")
        if isinstance(name, str) and any(name.startswith(p) and len(name) > len(p) for p in RUNTIME_API_PREFIXES):
            return "privateuse1_runtime"
        if legacy and isinstance(name, str) and not legacy_op_name(name):
            return "user_annotation"  # a record_function range of the legacy autograd profiler
        return cat


def folded_processes(events, places):
    """fold_runtime_processes(): a host process whose timed events are all runtime calls, sharing
    thread ids with another host process, is that process's runtime layer; pid -> that pid."""
    timed, launches, tids = {}, {}, {}
    for ev in events:
        if not isinstance(ev, dict):
            continue
        pid, tid = row_id(ev.get("pid")), row_id(ev.get("tid"))
        tids.setdefault(pid, set()).add(tid)
        if ev.get("ph") not in ("X", "i", "I", "n", "B", "E") or ev.get("name") == "[memory]":
            continue
        timed[pid] = timed.get(pid, 0) + 1
        launches[pid] = launches.get(pid, 0) + (places.category(ev) in LAUNCH_KINDS)
    folded = [p for p in timed if timed[p] == launches[p] and places.host_process(p)]
    into = {}
    for p in folded:
        shared = {}
        used = {row_id(ev.get("tid")) for ev in events if isinstance(ev, dict) and row_id(ev.get("pid")) == p
                and ev.get("ph") in ("X", "i", "I", "n", "B", "E")}
        for q, qt in tids.items():
            if q != p and q not in folded and places.host_process(q) and used & qt:
                shared[q] = len(used & qt)
        if shared:
            into[p] = max(sorted(shared, key=lambda q: places.order[q]), key=lambda q: shared[q])
    return into


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
    places = Places(events)
    fold = folded_processes(events, places)
    legacy = not any(isinstance(ev, dict) and category(ev) != "(none)" for ev in events)
    for ev in events:
        if not isinstance(ev, dict):
            continue
        ph = PHASES.get(ev.get("ph"), "other")
        cat = places.category(ev, legacy)
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
        pid = row_id(ev.get("pid"))
        rows.add((fold.get(pid, pid), row_id(ev.get("tid"))))
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
    by_name = {}  # each name once: the first folder's copy
    for p in (p for d in TRACE_DIRS if d.is_dir() for p in sorted(d.glob("*.gz"))):
        by_name.setdefault(p.name, p)
    traces = sorted(by_name.values())
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
