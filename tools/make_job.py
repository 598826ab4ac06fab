#!/usr/bin/env python3
"""Derive a multi-rank job with a known truth from one real rank's trace.

    tools/make_job.py BASE.json[.gz] OUT_DIR --ranks N [--offset-ms 15] [--seed 1]
                      [--straggler RANK:STEP:CAUSE:DELAY_MS ...]

Every rank is a copy of BASE (which must hold ProfilerStep ranges and NCCL collectives),
with `distributedInfo.rank`/`world_size` set and its clock moved by a random offset within
±--offset-ms. A straggler makes RANK late by DELAY_MS in step STEP, for one of these causes:

  kernel  a compute kernel before the step's first collective after its forward pass runs
          DELAY_MS longer (everything after it on that rank starts later)
  data    a data-loading stall at the start of the step (an `enumerate(DataLoader)` range,
          short on every rank, DELAY_MS longer on RANK)
  cpu     a gap on the host in the middle of the forward pass

and every other rank waits as long in that collective: its kernel lasts DELAY_MS longer and
what comes after it starts later, as in synchronous data-parallel training.

Writes OUT_DIR/rank-R.pt.trace.json.gz for each rank and OUT_DIR.truth.json (beside the
directory, so that the directory holds only the job's traces):
{"offsets_ns": [...], "stragglers": [{"rank", "step", "cause", "delay_ms", "kernel"?, "phase"}]}.
"""
import argparse, copy, gzip, json, os, random, sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def timed(e):
    return e.get("ph") == "X" and "ts" in e and "dur" in e


def shift_after(events, t, d):
    """Everything from time t on starts d later; what contains t lasts d longer."""
    for e in events:
        if "ts" not in e:
            continue
        if e["ts"] >= t:
            e["ts"] += d
        elif timed(e) and e["ts"] + e["dur"] > t:
            e["dur"] += d


def is_nccl(e):
    return timed(e) and e.get("cat") == "kernel" and "nccl" in e["name"].lower()


def steps_of(events):
    out = {}
    for e in events:
        if timed(e) and e.get("cat") in ("user_annotation", "cpu_op") and e["name"].startswith("ProfilerStep#"):
            out[int(e["name"].split("#")[1])] = e
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--offset-ms", type=float, default=15.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--straggler", action="append", default=[])
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    base = load(args.base)
    events = base["traceEvents"]
    steps = steps_of(events)
    colls = sorted((e for e in events if is_nccl(e)), key=lambda e: e["ts"])
    if not steps or not colls:
        sys.exit("make_job: the base trace needs ProfilerStep ranges and NCCL kernels")
    main_tid = next(e["tid"] for e in events if timed(e) and e["name"].startswith("ProfilerStep#"))
    main_pid = next(e["pid"] for e in events if timed(e) and e["name"].startswith("ProfilerStep#"))

    # Plan each straggler on the base trace's own times (before any shift).
    plans = []
    for spec in args.straggler:
        rank, step, cause, delay_ms = spec.split(":")
        rank, step, delay = int(rank), int(step), float(delay_ms) * 1000.0
        if step not in steps:
            sys.exit(f"make_job: no ProfilerStep#{step} in the base trace")
        s = steps[step]
        s0, s1 = s["ts"], s["ts"] + s["dur"]
        in_step = [c for c in colls if s0 <= c["ts"] < s1]
        fwd = next((e for e in events if timed(e) and e["name"] == "## forward ##" and s0 <= e["ts"] < s1), None)
        after_fwd = fwd["ts"] + fwd["dur"] if fwd else s0
        plan = {"rank": rank, "step": step, "cause": cause, "delay": delay}
        if cause == "kernel":
            late = next(c for c in in_step if c["ts"] >= after_fwd)
            prev_end = max([c["ts"] + c["dur"] for c in colls if c["ts"] + c["dur"] <= late["ts"]] + [s0])
            kernels = [e for e in events if timed(e) and e.get("cat") == "kernel" and not is_nccl(e)
                       and e["ts"] >= prev_end and e["ts"] + e["dur"] <= late["ts"]]
            k = max(kernels, key=lambda e: e["dur"])
            plan.update(at=k["ts"] + k["dur"], stretch=k, kernel=k["name"], phase="Backward" if k["ts"] >= after_fwd else "Forward")
        elif cause == "data":
            plan.update(at=s0 + 1.0, phase="Data loading")
        elif cause == "cpu":
            ops = sorted(e["ts"] for e in events if timed(e) and e.get("cat") == "cpu_op" and e["tid"] == main_tid
                         and fwd and fwd["ts"] < e["ts"] < fwd["ts"] + fwd["dur"])
            plan.update(at=ops[len(ops) // 2] - 0.5, phase="Forward")
        else:
            sys.exit(f"make_job: unknown cause {cause} (kernel, data, cpu)")
        # The collective everyone else waits in: the first that starts after the point.
        plan["collective"] = colls.index(next(c for c in colls if c["ts"] >= plan["at"]))
        plans.append(plan)

    offsets = [rnd.uniform(-args.offset_ms, args.offset_ms) * 1000.0 for _ in range(args.ranks)]
    os.makedirs(args.out, exist_ok=True)
    for r in range(args.ranks):
        trace = copy.deepcopy(base)
        ev = trace["traceEvents"]
        by_id = {id(e): i for i, e in enumerate(events)}  # base event → its copy's index
        late_colls = [c for c in ev if is_nccl(c)]
        late_colls.sort(key=lambda e: e["ts"])
        shifts = []  # (base time, delay) applied so far: a base time's place on this rank

        def here(t):
            return t + sum(d for at, d in shifts if at <= t)

        for p in sorted(plans, key=lambda p: p["at"]):
            if p["cause"] == "data":
                # Every rank loads data at the step's start; the straggler's load stalls.
                loader = {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                          "pid": main_pid, "tid": main_tid, "ts": here(p["at"]), "dur": 20.0, "args": {}}
                if r == p["rank"]:
                    loader["dur"] += p["delay"]
                ev.append(loader)
            if r == p["rank"]:
                stretched = ev[by_id[id(p["stretch"])]] if p["cause"] == "kernel" else None
                shift_after(ev, here(p["at"]), p["delay"])
                shifts.append((p["at"], p["delay"]))
                if stretched:
                    stretched["dur"] += p["delay"]
            else:
                c = late_colls[p["collective"]]
                end = c["ts"] + c["dur"]
                twins = [e for e in ev if timed(e) and e.get("cat") == "gpu_user_annotation" and e["tid"] == c["tid"]
                         and abs(e["ts"] + e["dur"] - end) < 1.0]
                shift_after(ev, end, p["delay"])
                base_c = colls[p["collective"]]
                shifts.append((base_c["ts"] + base_c["dur"], p["delay"]))
                c["dur"] += p["delay"]
                for t in twins:
                    t["dur"] += p["delay"]
        for e in ev:
            if "ts" in e and e.get("ph") != "M":
                e["ts"] += offsets[r]
        di = trace.setdefault("distributedInfo", {})
        di["rank"] = r
        di["world_size"] = args.ranks
        with gzip.open(os.path.join(args.out, f"rank-{r}.pt.trace.json.gz"), "wt", compresslevel=1) as f:
            json.dump(trace, f, separators=(",", ":"))
    truth = {"offsets_ns": [round(o * 1000) for o in offsets],
             "stragglers": [{k: p[k] for k in ("rank", "step", "cause") if k in p} |
                            {"delay_ms": p["delay"] / 1000.0, "phase": p.get("phase"), "kernel": p.get("kernel")}
                            for p in plans]}
    with open(args.out.rstrip("/") + ".truth.json", "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()
