#!/usr/bin/env python3
"""What each real trace's own markers say about its steps, counted independently of Strata:
the golden data for tests/annotate/test_steps.cpp.

For every trace in tests/data/traces (the vendored copies) and what only ../shared/traces adds
(their subfolders too), tests/data/torch2 and
tests/data/cpu-workloads this reads the raw JSON with nothing but the standard library and
writes, per trace:

  iterations  the number of steps the program marked, by the first rule that applies:
              "ProfilerStep ranges"      distinct ProfilerStep#N on the host (any category)
              "iteration ranges"         outermost host ranges named iteration / train_step
              "step ranges"              outermost host ranges a serving engine names
                                         (step[...], step(...), execute_...)
              "Optimizer.step markers"   Optimizer.step# ranges, when at least two
              "DataLoader markers"       enumerate(DataLoader)# ranges, when at least two
              "top-level module calls"   calls of the outermost nn.Module frame (the module,
                                         not a loss, whose calls take the most time)
              null                       the program said nothing: inferred, not checked
  source      the rule's name, as `strata summary --json` writes iterations.source
  ranges      the outermost host ranges the program named (not ProfilerStep, not PyTorch's
              own markers, not the step ranges themselves, none inside a module call):
              [{name, count, total_ns}]; a test checks what the timeline calls their time.

Host events: ph X on a thread of a process that is not a device (no "GPU"/"NPU"/... label,
no kernel/memcpy categories). A range is a user_annotation, or, in the legacy autograd format
that writes no categories, an event whose name is not an op's (no "::", no ':', not
XxxBackwardN, not detach/detach_).

Regenerate after a deliberate change of the rules or new traces:
    python3 tests/golden/count_steps.py --write
Check without writing (exit 1 on a difference):
    python3 tests/golden/count_steps.py
"""
import gzip
import json
import pathlib
import re
import sys
from decimal import Decimal

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
TRACE_DIRS = [REPO / "tests" / "data" / "traces", REPO.parent / "shared" / "traces", REPO / "tests" / "data" / "torch2",
              REPO / "tests" / "data" / "cpu-workloads"]
OUT = HERE / "steps.json"

DEVICE_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "gpu_user_annotation"}
OP_LIKE = re.compile(r"(::|:|Backward\d*$)")
BARE_OPS = {"detach", "detach_"}


def to_ns(v):
    return int((Decimal(str(v)) * 1000).to_integral_value())


def is_pytorch_marker(n):
    return n.startswith("ProfilerStep#") or n.startswith("enumerate(DataLoader)#") or (n.startswith("Optimizer.") and "#" in n)


def names_iteration(n):
    l = n[:64].lower()
    return "iteration" in l or "train_step" in l or "training_step" in l


def names_engine_step(n):
    l = n[:64].lower()
    return l.startswith(("step[", "step(", "execute_", "engine_step", "model_step")) or l == "step"


def is_loss_module(module):
    cls = re.sub(r"_\d+$", "", module)
    return cls.lower().endswith("loss")


def host_events(doc):
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    labels = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") in ("process_labels", "process_name"):
            labels.setdefault(e.get("pid"), []).append(str((e.get("args") or {}).get("labels") or (e.get("args") or {}).get("name") or ""))
    device_pids = {pid for pid, ls in labels.items() if any(re.match(r"(GPU|NPU|MTIA|XPU|HPU)\b", l) or "Ascend Hardware" in l for l in ls)}
    device_pids |= {e.get("pid") for e in events if e.get("cat") in DEVICE_CATS}
    legacy = not any("cat" in e for e in events if e.get("ph") == "X")
    out = []
    for e in events:
        if e.get("ph") != "X" or e.get("pid") in device_pids or "ts" not in e:
            continue
        cat = e.get("cat")
        name = e.get("name", "")
        if legacy or cat is None:
            kind = "op" if (OP_LIKE.search(name) or name in BARE_OPS) else "range"
            if cat is not None:
                kind = "op"
        elif cat == "user_annotation":
            kind = "range"
        elif cat in ("cpu_op", "Operator"):
            kind = "range" if name.startswith("ProfilerStep#") else "op"
        elif cat == "python_function" and name.startswith("nn.Module: "):
            kind = "module"
        else:
            continue
        b = to_ns(e["ts"])
        out.append({"name": name, "kind": kind, "b": b, "e": b + to_ns(e.get("dur", 0) or 0), "tid": (e.get("pid"), e.get("tid"))})
    return out


def outermost(evs, keep):
    """Events `keep` selects that no op, module call or other range (but a ProfilerStep)
    on their thread contains in time."""
    out = []
    by_tid = {}
    for e in evs:
        by_tid.setdefault(e["tid"], []).append(e)
    for tid, v in by_tid.items():
        v.sort(key=lambda e: (e["b"], -(e["e"] - e["b"])))
        covered = None
        for e in v:
            if e["kind"] == "range" and e["name"].startswith("ProfilerStep#"):
                continue
            if (covered is None or e["b"] >= covered) and keep(e):
                out.append(e)
            covered = e["e"] if covered is None else max(covered, e["e"])
    return out


def main_thread(evs):
    steps = {}
    for e in evs:
        if e["kind"] == "range" and e["name"].startswith("ProfilerStep#"):
            steps.setdefault(e["tid"], set()).add(e["name"])
    if steps:
        return max(steps, key=lambda t: len(steps[t]))
    ops = {}
    for e in evs:
        if e["kind"] == "op" and "Backward" not in e["name"] and "autograd::" not in e["name"]:
            ops[e["tid"]] = ops.get(e["tid"], 0) + 1
    return max(ops, key=ops.get) if ops else None


def count(path):
    with gzip.open(path, "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    evs = host_events(doc)
    tid = main_thread(evs)
    mine = [e for e in evs if e["tid"] == tid]
    steps = {e["name"] for e in mine if e["kind"] == "range" and e["name"].startswith("ProfilerStep#")}
    top_ranges = outermost(mine, lambda e: e["kind"] == "range" and not is_pytorch_marker(e["name"]))
    result = {"iterations": None, "source": None}
    iteration_ranges = [e for e in top_ranges if names_iteration(e["name"])]
    engine_steps = [e for e in top_ranges if not names_iteration(e["name"]) and names_engine_step(e["name"])]
    opt = [e for e in mine if e["kind"] == "range" and e["name"].startswith("Optimizer.step#")]
    loaders = [e for e in mine if e["kind"] == "range" and e["name"].startswith("enumerate(DataLoader)#")]
    modules = outermost(mine, lambda e: e["kind"] == "module")
    calls = {}
    for m in modules:
        if m["kind"] != "module":
            continue
        name = m["name"][len("nn.Module: "):]
        if is_loss_module(name):
            continue
        t, n = calls.get(name, (0, 0))
        calls[name] = (t + m["e"] - m["b"], n + 1)
    if steps:
        result = {"iterations": len(steps), "source": "ProfilerStep ranges"}
    elif iteration_ranges:
        result = {"iterations": len(iteration_ranges), "source": "iteration ranges"}
    elif engine_steps:
        result = {"iterations": len(engine_steps), "source": "step ranges"}
    elif len(opt) >= 2:
        result = {"iterations": len(opt), "source": "Optimizer.step markers"}
    elif len(loaders) >= 2:
        result = {"iterations": len(loaders), "source": "DataLoader markers"}
    elif calls:
        name = max(calls, key=lambda k: calls[k][0])
        result = {"iterations": calls[name][1], "source": "top-level module calls"}
    step_names = {id(e) for e in iteration_ranges + engine_steps}
    named = {}
    for e in top_ranges:
        if id(e) in step_names:
            continue
        t, n = named.get(e["name"], (0, 0))
        named[e["name"]] = (t + e["e"] - e["b"], n + 1)
    result["ranges"] = [{"name": k, "count": v[1], "total_ns": v[0]} for k, v in sorted(named.items())]
    return result


def traces():
    for d in TRACE_DIRS:
        if d.is_dir():
            yield from sorted(p for p in d.rglob("*.gz"))


def main():
    write = "--write" in sys.argv[1:]
    golden = {}
    for p in traces():
        key = str(p.relative_to(p.parents[1])) if p.parent.name.endswith("ranks") else p.name
        if key not in golden:  # the vendored copy first
            golden[key] = count(p)
    text = json.dumps(golden, indent=1, sort_keys=True) + "\n"
    if write:
        OUT.write_text(text)
        print(f"wrote {OUT} ({len(golden)} traces)")
        return 0
    old = OUT.read_text() if OUT.exists() else ""
    if old != text:
        print(f"{OUT} differs from the traces' counts: run with --write after checking why")
        return 1
    print(f"{len(golden)} traces match {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
