"""Checks a trace recorded with --metrics: one cuda_profiler_range per profiled kernel, each on its
kernel's row and time with its launch's correlation id; the counters per kernel name; and, with
M N K, that every *gemm* range's FLOPs (add + mul + 2 fma over d/f/h) equal 2*M*N*K.
   check_metrics.py TRACE [M N K]"""
import collections
import gzip
import json
import sys

path = sys.argv[1]
with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
    t = json.load(f)
ev = t["traceEvents"]
kernels = {e["args"]["correlation"]: e for e in ev if e.get("cat") == "kernel"}
ranges = [e for e in ev if e.get("cat") == "cuda_profiler_range"]
on_kernel = sum(1 for r in ranges if (k := kernels.get(r["args"].get("correlation"))) is not None
                and (k["ts"], k["dur"], k["tid"], k["name"]) == (r["ts"], r["dur"], r["tid"], r["name"]))
per_kernel = collections.defaultdict(lambda: collections.defaultdict(list))
for r in ranges:
    for key, v in r["args"].items():
        if key != "correlation":
            per_kernel[r["name"]][key].append(v)


def flops(args):
    total = 0.0
    for p in "dfh":
        total += args.get(f"smsp__sass_thread_inst_executed_op_{p}add_pred_on.sum", 0)
        total += args.get(f"smsp__sass_thread_inst_executed_op_{p}mul_pred_on.sum", 0)
        total += 2 * args.get(f"smsp__sass_thread_inst_executed_op_{p}fma_pred_on.sum", 0)
    return total


out = {"file": path, "kernels": len(kernels), "ranges": len(ranges), "ranges_on_their_kernel": on_kernel,
       "collector": t.get("collector"),
       "counters": {name[:60]: {m: (min(v), max(v), len(v)) for m, v in c.items()} for name, c in per_kernel.items()}}
ok = on_kernel == len(ranges)
if len(sys.argv) == 5:
    m, n, k = map(int, sys.argv[2:])
    want = 2.0 * m * n * k
    got = [flops(r["args"]) for r in ranges if "gemm" in r["name"]]
    out["gemm_flops_expected"] = want
    out["gemm_flops_measured"] = sorted(set(got))
    ok = ok and bool(got) and all(abs(g - want) <= 1e-3 * want for g in got)
out["ok"] = ok
print(json.dumps(out))
sys.exit(0 if ok else 1)
