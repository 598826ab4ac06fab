#!/usr/bin/env python3
"""Record pairs of real PyTorch CPU training traces whose difference is known by
construction, for testing `strata diff A B`.

Needs Debian's python3-torch 1.13 and python3-torchvision 0.14 (CPU only, no Kineto); no
network, no GPU; all models randomly initialised, all data synthetic. Run:

    /usr/bin/python3 tools/record_cpu_pairs.py [OUT_DIR]     # default tests/data/diff-pairs
    /usr/bin/python3 tools/record_cpu_pairs.py --verify [OUT_DIR]   # re-check, record nothing

Every file is recorded in its own fresh process (so side b never profits from side a's warm
caches or allocator, and the `same` pair really is two separate runs), then the parent
checks all files and writes OUT_DIR/truth.json (what differs, known from construction, plus
facts measured back from the traces). OUT_DIR/README.md is written by hand.

Conventions (as tools/record_cpu_workloads.py and tools/record_cpu_corpus.py):
  * torch.set_num_threads(1), torch.set_num_interop_threads(1), torch.manual_seed(0)
    before a model is built; inputs made once, before the profiler starts.
  * torch.autograd.profiler.profile(use_kineto=False, record_shapes=True) (Kineto is not
    built into Debian's 1.13), exported with export_chrome_trace(): a JSON list of "X"
    events, pid "CPU functions", integer-µs ts, empty args.
  * Step 0 is a warm-up run before the profiler starts (optimizer state is created there);
    steps 1..4 are recorded, each inside record_function("ProfilerStep#i") (torch's own
    record_function, which is what prof.step() uses).
  * Inside a step, the phase ranges "zero_grad", "forward", "loss", "backward",
    "optimizer", opened with record_cpu_corpus.Range (a record_function that adds no aten
    events in 1.13).
  * No per-module ranges, except in the stall-truth pair, which is the stall pair recorded
    again with record_cpu_corpus.HidRanges: "hid=N path (Class)" around every module call.
  * gzip level 9, GzipFile(filename='', mtime=0): reproducible bytes for equal JSON.
"""

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "tests", "data", "diff-pairs")
STEPS = 4
PHASES = ("zero_grad", "forward", "loss", "backward", "optimizer")

# --------------------------------------------------------------------------- pairs (static truth)

STALL_MODULE = {"path": "layers.1.mlp", "class": "MLP", "block": 1,
                "extra_work": "time.sleep(0.02) plus 4 matmuls [4,32,64]@[64,64] "
                              "(aten::matmul each) with tanh between them on x.detach(), "
                              "result discarded: forward only, autograd sees none of it"}

PAIRS = {
    "batch": {
        "model": "torchvision resnet18(num_classes=10), input 3x32x32, cross-entropy, "
                 "SGD(lr=0.01, momentum=0.9)",
        "differs": {"kind": "batch_size", "a": {"batch": 8}, "b": {"batch": 32}},
        "expect": {"slower": ["forward", "backward"], "same": ["zero_grad", "optimizer"],
                   "min_ratio": {"forward": 1.5, "backward": 1.5},
                   "same_ops": True,
                   "note": "same op sequence, 4x the batch; loss is tiny either way; the "
                           "optimizer updates the same parameters (batch-independent)"},
    },
    "stall": {
        "model": "TinyLM: Embedding(256,64) + learned positions, 4 pre-norm blocks "
                 "layers.N = Block(attn=Attention(2 heads), mlp=MLP(64->256->64, GELU)), "
                 "final LayerNorm, head Linear(64,256); tokens [4,32], next-token "
                 "cross-entropy, "
                 "AdamW(lr=1e-3, weight_decay=0.01)",
        "differs": {"kind": "module_extra_work", "module": STALL_MODULE,
                    "a": {"stall": False}, "b": {"stall": True}},
        "expect": {"slower": ["forward"], "same": ["zero_grad", "loss", "backward", "optimizer"],
                   "min_delta_us": {"forward": 15000, "module": 15000},
                   "same_ops": False,
                   "note": "forward grows by >= 20 ms (the sleep) plus 4 matmul+tanh, all "
                           "inside layers.1.mlp (the 2nd of 4 blocks' MLP); no other module "
                           "and no other phase changes"},
    },
    "stall-truth": {
        "model": "as stall, with hid= ranges (record_cpu_corpus.HidRanges) around every "
                 "module call in forward",
        "differs": {"kind": "module_extra_work", "module": STALL_MODULE,
                    "a": {"stall": False}, "b": {"stall": True}},
        "expect": {"slower": ["forward"], "same": ["zero_grad", "loss", "backward", "optimizer"],
                   "min_delta_us": {"forward": 15000, "module": 15000},
                   "same_ops": False,
                   "note": "the range 'hid=N layers.1.mlp (MLP)' (N in 'modules') holds the "
                           "extra time and ops; use it to check the diff's layer alignment"},
    },
    "added-layer": {
        "model": "SmallCNN: features = Sequential(cbr(3,16), cbr(16,32), MaxPool2d(2), "
                 "cbr(32,64), MaxPool2d(2), cbr(64,64)), AdaptiveAvgPool2d(1), "
                 "Linear(64,10); cbr = Conv2d(3x3, pad 1, no bias)-BatchNorm2d-ReLU; "
                 "input [16,3,32,32], cross-entropy, SGD(lr=0.01, momentum=0.9)",
        "differs": {"kind": "added_layer",
                    "added": {"kind": "Conv2d-BatchNorm2d-ReLU", "class": "Sequential",
                              "conv": "Conv2d(32, 32, 3x3, pad 1, no bias)",
                              "input_shape": [16, 32, 32, 32],
                              "b_path": "features.2",
                              "between": ["features.1 (cbr 16->32, 2nd conv block)",
                                          "features.2 in a / features.3 in b (the first "
                                          "MaxPool2d, then cbr 32->64)"],
                              "conv_index_in_forward_b": 2,
                              "conv_macs_share": "9.4M of b's 21.6M conv MACs per sample "
                                                 "(a: 12.2M): ~+77% conv work",
                              "note": "b's Sequential indices after the insert shift by one "
                                      "(a: features.2..5 = b: features.3..6); the shared "
                                      "layers have identical weights in a and b"},
                    "a": {"conv_layers": 4, "param_tensors": 14},
                    "b": {"conv_layers": 5, "param_tensors": 17}},
        "expect": {"slower": ["forward", "backward"], "same": ["zero_grad", "loss"],
                   "min_ratio": {"forward": 1.2, "backward": 1.2},
                   "same_ops": False,
                   "note": "one more conv/bn/relu in forward (aten::conv2d, "
                           "aten::batch_norm, aten::relu_ subtrees) and their backward "
                           "nodes; the optimizer gets 3 more parameter tensors (slightly "
                           "more ops, ~9k more elements: near-noise)"},
    },
    "same": {
        "model": "TinyLM as in stall (a), no stall, AdamW; recorded twice in two "
                 "separate processes",
        "differs": {"kind": "none", "a": {"run": 1}, "b": {"run": 2}},
        "expect": {"slower": [], "same": list(PHASES), "same_ops": True,
                   "note": "no real change: differences are run-to-run noise on a shared "
                           "2-core machine; stall-a is a third run of the same setup"},
    },
    "optimizer": {
        "model": "MLP 256 -> 1024 -> 1024 -> 1024 -> 10 (Linear+ReLU, ~2.4M parameters "
                 "in 8 tensors), input [32,256], cross-entropy",
        "differs": {"kind": "optimizer", "a": {"optimizer": "SGD(lr=0.01, momentum=0.9)"},
                    "b": {"optimizer": "Adam(lr=1e-3)"}},
        "expect": {"slower": ["optimizer"], "same": ["zero_grad", "forward", "loss", "backward"],
                   "min_ratio": {"optimizer": 1.5},
                   "same_ops": False,
                   "note": "only the optimizer phase changes: Optimizer.step#SGD.step -> "
                           "Optimizer.step#Adam.step (single-tensor Adam: more elementwise "
                           "ops per parameter); zero_grad names change too "
                           "(Optimizer.zero_grad#SGD.zero_grad -> #Adam.zero_grad)"},
    },
}
SIDES = ("a", "b")


# --------------------------------------------------------------------------- recording (child)

def calibrate(torch):
    """Time (µs) of a fixed CPU workload in this process: median of 5 runs of 20 matmuls
    128x128 plus tanh and add (~40 ms each on the loaded recording machine). Run before the
    warm-up step and after the profiler stops, to tell machine load apart from the change
    under test; the parent compares the two sides of a pair."""
    g = torch.Generator()
    g.manual_seed(3)
    x = torch.randn(128, 128, generator=g)
    w = torch.randn(128, 128, generator=g) / 128 ** 0.5
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        y = x
        for _ in range(20):
            y = torch.tanh(y @ w) + x
        runs.append(time.perf_counter() - t0)
    return int(statistics.median(runs) * 1e6)


def child_record(pair, side, out_dir):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.autograd.profiler import profile, record_function

    sys.path.insert(0, HERE)
    # importing it sets torch.set_num_threads(1) and set_num_interop_threads(1) (a second
    # set_num_interop_threads call would abort the process)
    from record_cpu_corpus import HidRanges, Range, module_tree  # noqa: E402
    torch.set_num_threads(1)

    def gen(seed):
        g = torch.Generator()
        g.manual_seed(seed)
        return g

    # ---- models
    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.heads = heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
            mask = torch.ones(t, t, dtype=torch.bool).triu(1)
            att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
            return x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))

    class MLP(nn.Module):
        def __init__(self, d, stall=False):
            super().__init__()
            self.ln = nn.LayerNorm(d)
            self.fc1 = nn.Linear(d, 4 * d)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(4 * d, d)
            self.stall = stall
            # a buffer, not a parameter: the optimizer sees the same tensors in a and b
            self.register_buffer("stall_w", torch.randn(d, d, generator=gen(7)) / d ** 0.5)

        def forward(self, x):
            if self.stall:
                time.sleep(0.02)
                y = x.detach()
                for _ in range(4):
                    y = torch.tanh(torch.matmul(y, self.stall_w))
            return x + self.fc2(self.act(self.fc1(self.ln(x))))

    class Block(nn.Module):
        def __init__(self, d, heads, stall=False):
            super().__init__()
            self.attn = Attention(d, heads)
            self.mlp = MLP(d, stall)

        def forward(self, x):
            return self.mlp(self.attn(x))

    class TinyLM(nn.Module):
        def __init__(self, vocab=256, d=64, heads=2, depth=4, seq=32, stall_block=None):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(0.02 * torch.randn(seq, d))
            self.layers = nn.ModuleList(Block(d, heads, i == stall_block) for i in range(depth))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab)

        def forward(self, tokens):
            x = self.tok(tokens) + self.pos
            for layer in self.layers:
                x = layer(x)
            return self.head(self.norm(x))

    def cbr(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True))

    class SmallCNN(nn.Module):
        def __init__(self, extra=False):
            super().__init__()
            blocks = [cbr(3, 16), cbr(16, 32), nn.MaxPool2d(2), cbr(32, 64), nn.MaxPool2d(2),
                      cbr(64, 64)]
            self.gap = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(64, 10)
            if extra:  # built last, so every shared layer has the same weights as in a
                blocks.insert(2, cbr(32, 32))
            self.features = nn.Sequential(*blocks)

        def forward(self, x):
            return self.fc(torch.flatten(self.gap(self.features(x)), 1))

    # ---- the workload of this file
    torch.manual_seed(0)
    ce = F.cross_entropy
    if pair == "batch":
        import torchvision
        model = torchvision.models.resnet18(num_classes=10)
        bs = {"a": 8, "b": 32}[side]
        inputs = torch.randn(bs, 3, 32, 32, generator=gen(1))
        target = torch.randint(0, 10, (bs,), generator=gen(2))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = ce
    elif pair in ("stall", "stall-truth", "same"):
        stall = pair != "same" and side == "b"
        model = TinyLM(stall_block=1 if stall else None)
        tokens = torch.randint(0, 256, (4, 33), generator=gen(1))
        inputs, target = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

        def loss_fn(out, tgt):
            return ce(out.reshape(-1, out.shape[-1]), tgt.reshape(-1))
    elif pair == "added-layer":
        model = SmallCNN(extra=(side == "b"))
        inputs = torch.randn(16, 3, 32, 32, generator=gen(1))
        target = torch.randint(0, 10, (16,), generator=gen(2))
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = ce
    elif pair == "optimizer":
        model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                              nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
        inputs = torch.randn(32, 256, generator=gen(1))
        target = torch.randint(0, 10, (32,), generator=gen(2))
        if side == "a":
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        else:
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = ce
    else:
        raise SystemExit("unknown pair " + pair)
    model.train()
    hooks = HidRanges(model) if pair == "stall-truth" else None

    def step():
        if hooks:
            hooks.calls = {}
        with Range("zero_grad"):
            opt.zero_grad()
        with Range("forward"):
            try:
                out = model(inputs)
            finally:
                if hooks:
                    hooks.close_all()
        with Range("loss"):
            loss = loss_fn(out, target)
        with Range("backward"):
            loss.backward()
        with Range("optimizer"):
            opt.step()
        return float(loss.detach())

    calib = [calibrate(torch)]
    losses = [step()]  # warm-up step 0, not recorded
    t0 = time.time()
    with profile(use_kineto=False, record_shapes=True) as prof:
        for i in range(1, STEPS + 1):
            with record_function("ProfilerStep#%d" % i):
                losses.append(step())
    secs = time.time() - t0
    calib.append(calibrate(torch))
    calls = dict(hooks.calls) if hooks else {}
    name = "%s-%s" % (pair, side)
    tmp = os.path.join(out_dir, name + ".json.tmp")
    prof.export_chrome_trace(tmp)
    with open(tmp, "rb") as fin, open(os.path.join(out_dir, name + ".json.gz"), "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz:
            shutil.copyfileobj(fin, gz)
    os.remove(tmp)
    info = {"torch": torch.__version__, "kineto_available": bool(torch.autograd.kineto_available()),
            "threads": torch.get_num_threads(), "record_seconds": round(secs, 2),
            "losses": [round(v, 5) for v in losses],
            "calib_us": calib,
            "parameters": sum(p.numel() for p in model.parameters()),
            "param_tensors": len(list(model.parameters())),
            "optimizer": type(opt).__name__}
    if hooks:
        info["modules"] = [{"hid": m["hid"], "path": m["path"], "class": m["class"],
                            "parent": m["parent"], "calls_per_step": m["calls_per_step"]}
                           for m in module_tree(model, calls)]
    print("@@INFO " + json.dumps(info), flush=True)


# --------------------------------------------------------------------------- checking / measuring

def load_events(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def measure(path, stall_range=None):
    """Checks the structure of one file (raises AssertionError) and returns measured facts.

    Each of ProfilerStep#1..#4 must hold the five phase ranges, in order, on its thread.
    Per phase: median duration (µs) and the median count of events inside it (all nested
    events; deterministic for a given model except resnet18 aten::empty, +-3)."""
    ev = [e for e in load_events(path) if e.get("ph") == "X"]
    steps = sorted((e for e in ev if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    names = [s["name"] for s in steps]
    assert names == ["ProfilerStep#%d" % i for i in range(1, STEPS + 1)], names
    per_phase = {p: [] for p in PHASES}
    per_phase_n = {p: [] for p in PHASES}
    stall_us, stall_n = [], []

    def inside(outer, e):
        return (e["tid"] == outer["tid"] and outer["ts"] <= e["ts"]
                and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1 and e is not outer)

    for s in steps:
        in_step = sorted((e for e in ev if inside(s, e)), key=lambda e: (e["ts"], -e["dur"]))
        ph = [e for e in in_step if e["name"] in PHASES]
        assert [e["name"] for e in ph] == list(PHASES), (s["name"], [e["name"] for e in ph])
        for e in ph:
            per_phase[e["name"]].append(e["dur"])
            per_phase_n[e["name"]].append(sum(1 for x in in_step if inside(e, x)))
        if stall_range:
            r = [e for e in in_step if e["name"] == stall_range]
            assert len(r) == 1, (s["name"], stall_range, len(r))
            stall_us.append(r[0]["dur"])
            stall_n.append(sum(1 for x in in_step if inside(r[0], x)))
    m = {"gz_bytes": os.path.getsize(path), "events": len(ev),
         "hid_ranges": sum(1 for e in ev if e["name"].startswith("hid=")),
         "step_us": [s["dur"] for s in steps],
         "median_step_us": statistics.median(s["dur"] for s in steps),
         "median_phase_us": {p: statistics.median(v) for p, v in per_phase.items()},
         "phase_events": {p: statistics.median(v) for p, v in per_phase_n.items()},
         "threads": sorted({e["tid"] for e in ev}, key=str)}
    if stall_range:
        m["module_range"] = stall_range
        m["median_module_us"] = statistics.median(stall_us)
        m["module_events"] = statistics.median(stall_n)
    if all(len(set(v)) == 1 for v in per_phase_n.values()):
        m["phase_events_equal_across_steps"] = True
    else:
        m["phase_events_equal_across_steps"] = False
    return m


def check_pair(pair, t):
    """Expectation checks from the measured facts. Hard: structure, sign of the delta in
    the phases that must get slower (with a margin), op counts. Soft: 'same' phases within
    noise (warned, not failed: the machine is shared)."""
    hard, soft = [], []
    a, b = t["measured"]["a"], t["measured"]["b"]
    for p in t["expect"]["slower"]:
        ra = b["median_phase_us"][p] / max(a["median_phase_us"][p], 1)
        want = t["expect"].get("min_ratio", {}).get(p, 1.15)
        if ra < want:
            hard.append("%s: %s b/a = %.2f, want >= %.2f" % (pair, p, ra, want))
    for p in t["expect"]["same"]:
        ra = b["median_phase_us"][p] / max(a["median_phase_us"][p], 1)
        if not 0.67 <= ra <= 1.5 and max(a["median_phase_us"][p], b["median_phase_us"][p]) > 200:
            soft.append("%s: %s b/a = %.2f (expected about 1)" % (pair, p, ra))
    # resnet18's aten::empty count varies by a few per step (seen: 1697-1700 events per
    # step), so "same ops" means per-phase counts within 0.5% + 3
    def close(x, y):
        return abs(x - y) <= 3 + 0.005 * max(x, y)
    same_ops = all(close(a["phase_events"][p], b["phase_events"][p]) for p in PHASES)
    if same_ops != t["expect"]["same_ops"]:
        hard.append("%s: per-phase event counts alike=%s, want %s (%s vs %s)" % (
            pair, same_ops, t["expect"]["same_ops"], a["phase_events"], b["phase_events"]))
    for what, want in t["expect"].get("min_delta_us", {}).items():
        if what == "module":
            if "median_module_us" not in a:
                continue  # no hid= ranges in this pair
            d = b["median_module_us"] - a["median_module_us"]
        else:
            d = b["median_phase_us"][what] - a["median_phase_us"][what]
        if d < want:
            hard.append("%s: %s delta %d us < %d (the sleep is 20000)" % (pair, what, d, want))
    return hard, soft


def compact_json(obj, indent=0):
    """JSON with one line per value that fits in ~110 characters."""
    flat = json.dumps(obj)
    if len(flat) + indent <= 110 or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        items = ["%s%s: %s" % (pad, json.dumps(k), compact_json(v, indent + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact_json(v, indent + 1) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def summarize(pairs_truth):
    for pair, t in pairs_truth.items():
        a, b = t["measured"]["a"], t["measured"]["b"]
        d = {"median_step_us": [a["median_step_us"], b["median_step_us"],
                                round(b["median_step_us"] / max(a["median_step_us"], 1), 2)]}
        for p in PHASES:
            d[p] = [a["median_phase_us"][p], b["median_phase_us"][p],
                    round(b["median_phase_us"][p] / max(a["median_phase_us"][p], 1), 2)]
        d["phase_events_b_minus_a"] = {p: b["phase_events"][p] - a["phase_events"][p] for p in PHASES}
        if "median_module_us" in a:
            d["module_us"] = [a["median_module_us"], b["median_module_us"]]
            d["module_events_b_minus_a"] = b["module_events"] - a["module_events"]
        t["measured"]["a_b_ratio"] = d


def verify_all(out_dir, truth):
    hard, soft = [], []
    for pair, t in truth["pairs"].items():
        h, s, calib = check_one_pair(out_dir, pair, t)
        hard += h
        soft += s
        if "run" in t:
            t["measured"]["calib_b_over_a"] = round(calib, 2)
    if not hard:
        summarize(truth["pairs"])
    return hard, soft


MAX_ATTEMPTS = 3      # per pair, when machine load spoiled a recording (see README)
CALIB_TOLERANCE = 1.25  # calibration b/a must lie within [1/1.25, 1.25]


def record_pair(out_dir, pair, truth):
    t = json.loads(json.dumps(PAIRS[pair]))
    for side in SIDES:
        t0 = time.time()
        r = subprocess.run([sys.executable, os.path.abspath(__file__), out_dir,
                            "--record-one", pair, side],
                           stdout=subprocess.PIPE, universal_newlines=True, check=True)
        info = json.loads(r.stdout.split("@@INFO ", 1)[1])
        print("%-24s %5.1f s" % ("%s-%s" % (pair, side), time.time() - t0), flush=True)
        for k in ("torch", "kineto_available", "threads"):
            truth[k] = info.pop(k)
        mods = info.pop("modules", None)
        if mods:
            t["modules_" + side] = mods
            hit = [m for m in mods if m["path"] == STALL_MODULE["path"]]
            t["module_range"] = "hid=%d %s (%s)" % (hit[0]["hid"], hit[0]["path"], hit[0]["class"])
        t.setdefault("run", {})[side] = info
    return t


def check_one_pair(out_dir, pair, t):
    """Measures both files of a pair into t["measured"]; returns (hard, soft, calib b/a)."""
    t["measured"] = {}
    hard = []
    for side in SIDES:
        path = os.path.join(out_dir, "%s-%s.json.gz" % (pair, side))
        try:
            m = t["measured"][side] = measure(path, t.get("module_range"))
            if bool(m["hid_ranges"]) != pair.endswith("-truth"):
                hard.append("%s-%s: %d hid= ranges" % (pair, side, m["hid_ranges"]))
        except AssertionError as e:
            hard.append("%s-%s: %s" % (pair, side, e))
    if hard:
        return hard, [], 0.0
    h, soft = check_pair(pair, t)
    run = t.get("run")
    calib = 1.0
    if run:
        calib = statistics.median(run["b"]["calib_us"]) / max(statistics.median(run["a"]["calib_us"]), 1)
    return h, soft, calib


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default=DEFAULT_OUT)
    ap.add_argument("--verify", action="store_true", help="check recorded files, record nothing")
    ap.add_argument("--record-one", nargs=2, metavar=("PAIR", "SIDE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    out_dir = os.path.abspath(args.out_dir)
    if args.record_one:
        child_record(args.record_one[0], args.record_one[1], out_dir)
        return
    truth_path = os.path.join(out_dir, "truth.json")
    if args.verify:
        with open(truth_path) as f:
            truth = json.load(f)
        for t in truth["pairs"].values():
            t.pop("measured", None)
    else:
        os.makedirs(out_dir, exist_ok=True)
        truth = {"generator": "tools/record_cpu_pairs.py", "pairs": {}}
        t00 = time.time()
        for pair in PAIRS:
            for attempt in range(1, MAX_ATTEMPTS + 1):
                t = record_pair(out_dir, pair, truth)
                t["attempts"] = attempt
                hard, soft, calib = check_one_pair(out_dir, pair, t)
                ok_calib = 1 / CALIB_TOLERANCE <= calib <= CALIB_TOLERANCE
                print("  %s attempt %d: calib b/a %.2f%s" % (
                    pair, attempt, calib, "".join("\n    " + h for h in hard)), flush=True)
                if soft:
                    print("    (noise) " + "\n    (noise) ".join(soft), flush=True)
                # retried when the construction's effect is not seen, when the two sides
                # ran under different load (calibration), or when a phase that should not
                # change differs by more than 1.5x (a load spike)
                if not hard and ok_calib and not soft:
                    break
            truth["pairs"][pair] = t
        truth["record_seconds_total"] = round(time.time() - t00, 1)
    truth.update({
        "profiler": "torch.autograd.profiler.profile(use_kineto=False, record_shapes=True), "
                    "export_chrome_trace; 1 warm-up step unrecorded, then ProfilerStep#1..#4 "
                    "(record_function); phases zero_grad, forward, loss, backward, optimizer",
        "files": "PAIR-a.json.gz and PAIR-b.json.gz per pair; each recorded in its own process",
        "note": "Everything except 'run' and 'measured' is known from construction. 'measured' "
                "is read back from the traces: medians over the 4 steps, in µs, of each phase "
                "range; phase_events = median count of events nested in the phase range "
                "(deterministic, except resnet18's aten::empty count, which varies by up to 3 "
                "per step); a_b_ratio = [a, b, b/a]. Machine: 2 CPU cores shared with "
                "compilers (load average 5-7), so durations are noisy: run.*.calib_us times a "
                "fixed matmul workload in each recording process (before and after), and a "
                "pair was re-recorded (up to 3 attempts, 'attempts') when calibration b/a "
                "left [0.8, 1.25], an expected slowdown was missing, or an unchanged phase "
                "differed by more than 1.5x.",
    })
    hard, soft = verify_all(out_dir, truth)
    order = ["generator", "torch", "kineto_available", "threads", "profiler", "files", "note",
             "record_seconds_total", "pairs"]
    truth = {k: truth[k] for k in order if k in truth}
    if not hard:
        with open(truth_path, "w") as f:
            f.write(compact_json(truth) + "\n")
    total = 0
    for n in sorted(os.listdir(out_dir)):
        size = os.path.getsize(os.path.join(out_dir, n))
        total += size
        print("%-28s %8d bytes" % (n, size))
    print("folder total %d bytes" % total)
    for pair, t in truth["pairs"].items():
        r = t["measured"].get("a_b_ratio")
        if r:
            print("%-12s step %s  " % (pair, r["median_step_us"]) +
                  "  ".join("%s %.2f" % (p, r[p][2]) for p in PHASES))
    if soft:
        print("WARNINGS (noise?):\n  " + "\n  ".join(soft))
    if hard:
        print("PROBLEMS:\n  " + "\n  ".join(hard))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
