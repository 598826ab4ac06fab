#!/usr/bin/env python3
"""Record Strata's trace corpus: real PyTorch 2.x profiler traces with their ground truth
and measured figures, for annotation accuracy, memory and throughput prediction, what-if
prediction and the multi-rank features.

Needs one NVIDIA GPU and PyTorch 2.x with CUDA; torchvision is optional (a hand-written
resnet18 with the same layers and module names stands in). No network: every model is
randomly initialised and every input is synthetic. Run:

    python3 tools/record_corpus.py OUT_DIR [--only corpus,batch,whatif,multiproc] [--quick]
                                           [--budget-s 540] [--in-process]

Layout of OUT_DIR
=================

  manifest.json   every file below with its size, sha256 and a line saying what it is;
                  the environment (torch, CUDA, cuDNN, torchvision, GPU name and total memory,
                  driver, TF32 settings); and per data set its settings and the figures
                  measured while recording (see each data set). Written after every item, so
                  an interrupted run leaves a manifest of what it finished. A later run into
                  the same OUT_DIR (e.g. with another --only) keeps the data sets it does not
                  record and replaces those it does.
  log.txt         the progress log (also on stdout), appended to by every run and by the
                  child processes: one line per event, with the wall-clock time and the
                  seconds since that process started.
  corpus/         annotation-accuracy corpus (one training trace per model, ground truth inside)
  batch/          batch-size series and real out-of-memory batch sizes
  whatif/         baseline/changed pairs with measured speedups
  multiproc/      one trace per rank of data-parallel jobs on one GPU

Common to every trace
=====================

  * profile(activities=[CPU, CUDA], schedule=schedule(wait=1, warmup=1, active=A, repeat=1))
    with prof.step() after each of 2 + A training iterations, so a trace holds
    ProfilerStep#2 .. ProfilerStep#(1+A). A is 2; a trace whose gzipped size exceeds 4 MiB
    is recorded again with A = 1 (the manifest gives A per trace as "active_steps").
  * Written by prof.export_chrome_trace() and gzipped reproducibly (no name, mtime 0),
    as NAME.pt.trace.json.gz.
  * A training iteration is
        optimizer.zero_grad(set_to_none=True)   inside record_function("zero_grad")
        out = model(*inputs)                    inside record_function("forward")
        loss = loss_fn(out, target)             inside record_function("loss")
        loss.backward()                         inside record_function("backward")
        optimizer.step()                        inside record_function("optimizer")
    (the phase names Strata's accuracy scorer reads as ground truth). Inputs are made on the
    GPU before profiling, except in whatif/dataloader-workers and multiproc, which load
    data inside the loop. In batch/, whatif/ and multiproc/ the iteration ends with
    loss.item(), as a loop that logs its loss does, so iterations do not overlap and the
    wall time of one iteration is well defined; corpus/ iterations do not synchronise.
  * "Unprofiled median iteration time": the same iteration function run without the
    profiler, W warm-up iterations and then N timed ones; each timed value is the wall time
    from the end of one iteration (after torch.cuda.synchronize()) to the end of the next,
    data loading included. The manifest gives median, min, max and N.
  * torch's defaults are kept (cudnn.benchmark off, TF32 on for cuDNN convolutions and off
    for matmuls; the manifest records them). Each model is seeded with torch.manual_seed(0).

corpus/  (annotation accuracy)
==============================

Thirteen small models of different families, each trained for 4 iterations under
    record_shapes=True, with_modules=True, with_stack=True, profile_memory=False:

  small_cnn            3 x (Conv-BN-ReLU) with max pooling, global average pool, Linear;
                       batch 32 x 3x32x32, SGD momentum
  resnet18             torchvision resnet18 (100 classes) or the hand-written equivalent;
                       batch 16 x 3x64x64, SGD momentum
  vit                  hand-written tiny ViT: conv patch embedding (8x8 patches), class token,
                       4 pre-norm encoder blocks (qkv Linear, matmul-softmax-matmul attention,
                       GELU MLP), 64x64 images, batch 16, AdamW
  seq2seq_transformer  nn.Transformer (2+2 layers, d_model 128) with token and learned
                       position embeddings and a causal target mask, src 32 / tgt 24 tokens,
                       batch 16, AdamW
  lstm                 Embedding + 2-layer nn.LSTM (cuDNN) + Linear on the last step, batch 32
                       x 64 tokens, Adam
  gru                  Embedding + bidirectional nn.GRU + per-token Linear tagger, Adam
  dlrm                 DLRM-style: bottom MLP on 13 dense features, 8 nn.EmbeddingBag tables
                       (sum, 1-4 ids per bag), dot interaction (cat, bmm, index with the
                       strictly-lower-triangle indices, cat), top MLP, BCE loss, batch 256, SGD
  gnn                  3 message-passing layers on a random graph (4096 nodes, 32768 edges):
                       messages gathered with index_select, summed with index_add_ or averaged
                       with scatter_add_, node classification, Adam
  moe                  2 blocks of a top-2 mixture of 8 experts: router Linear, softmax, topk,
                       per-expert token selection (nonzero, index_select, gather), expert MLP,
                       combine with index_add_; 1024 tokens, AdamW
  unet                 2-level U-Net (double convs, max pool, ConvTranspose2d, skip concat),
                       per-pixel 3-class loss, batch 8 x 3x64x64, Adam
  autoencoder          conv encoder, Linear bottleneck, ConvTranspose2d decoder, sigmoid, MSE
                       to the input, batch 32 x 1x32x32, Adam
  mlp_mixer            MLP-Mixer: conv patch embedding, 4 blocks of token- and channel-mixing
                       MLPs, batch 16 x 3x64x64, AdamW
  small_cnn_compiled   small_cnn under torch.compile() (default backend), compiled by one
                       warm-up iteration before the profiler starts (the manifest gives the
                       time it took as compile_s)

Ground truth is written by the recording itself. Every module of model.named_modules(),
containers included, gets a forward pre-hook that opens
    record_function(f"hid={N} {NAME}")
and a forward hook that closes it, where N numbers the modules in named_modules() order and
NAME is the qualified name ("layer3.1.conv2"; the root's is empty and its range is
"hid=0 (root)"). The hooks keep a stack, so ranges nest as the calls do; a range left open by
an exception is closed when the iteration ends. A module never called (a ModuleList, the
out_proj that nn.MultiheadAttention uses functionally) has no range; a module called twice
has two. Backward has no per-module ranges (only the "backward" phase). In
small_cnn_compiled only the root (the OptimizedModule) is hooked: inside the compiled region
Inductor fuses across modules, and hooks inside it would change what is compiled.

The ground truth is visible three ways and can be stripped: the hid= and phase ranges
(user_annotation), the nn.Module frames (python_function "nn.Module: Class_N") and the call
stacks (every python_function event, which includes the hooks' own frames
"record_corpus.py(L): _hid_range_enter" / "_hid_range_exit" and the record_function frames
they call; the hooks add no cpu_op events).

  corpus/MODEL.pt.trace.json.gz   the trace
  corpus/MODEL.print.txt          print(model) (for the compiled model, of the OptimizedModule)
  corpus/MODEL.modules.json       {"model", "range_format", "modules": [{"hid", "name",
                                  "class", "parent" (hid or null), "hooked"}]}

batch/  (memory and throughput against the batch size)
======================================================

Two fp32 models, each at batch 8, 16, 32, 64, 128 (8, 16, 32 with --quick):

  resnet18      resnet18 (1000 classes) on 3x224x224 images, CrossEntropyLoss,
                SGD(lr 0.01, momentum 0.9)
  transformer   Embedding(1000, 256) + nn.TransformerEncoder (2 layers, d_model 256,
                4 heads, ff 1024, batch_first) + Linear(256, 10) on the mean token,
                sequence 512, CrossEntropyLoss, AdamW(lr 1e-4)

  batch/MODEL-bB.pt.trace.json.gz   record_shapes=True, profile_memory=True,
                                    with_stack=False, with_modules=False

Each batch size uses a fresh model and one input batch resident on the GPU. Per batch size
the manifest gives: the trace; the memory allocated before the first iteration (weights and
input); torch.cuda.max_memory_allocated / max_memory_reserved over
the profiled run and, separately, over the unprofiled timed run (peaks reset before each;
the cache is emptied between batch sizes); the unprofiled median iteration time (W=3, N=20;
N=10 with --quick) and samples/s = batch / median.

After both series, the real out-of-memory point of each configuration, searched in a child
process (a fresh CUDA context, so an error cannot spoil the parent's; the parent empties its
cache first, and the manifest gives the memory free when the child started and what the
parent still held): one training iteration (the same function: forward, backward, step,
loss.item()) at batch 64, then doubling until an iteration fails, then bisection between
the last good and the first failing batch until they are within 5%. The cache is emptied
after every trial. The search stops early, before a trial that would end past a time cap
(180 s, 60 s with --quick, less if the budget is short: the two searches share what is
left; a trial's time is estimated from the last good one, in proportion to the batch), or
when doubling would pass batch 65536. The manifest gives max_ok_batch (the largest batch
whose iteration succeeded), min_failed_batch, failure_kind ("oom" for CUDA out of memory,
"error" for anything else, such as a cuDNN or 32-bit indexing limit, whose message is kept),
every trial (batch, outcome, seconds, peak allocated) and stop_reason. If the CUDA context
stops working the search ends.

whatif/  (what-if prediction)
=============================

Pairs of the same training loop, baseline and changed, each recorded under
record_shapes=False, profile_memory=False, with_stack=False, with_modules=False, and each
timed unprofiled (W=5, N=30; W=3, N=10 with --quick). The manifest gives both medians and
speedup = baseline median / changed median.

  dataloader-workers    DataLoader num_workers 0 -> 4 (batch 32, pin_memory) over a dataset
                        whose __getitem__ does real CPU work (a 3x96x96 image, a chain of
                        elementwise ops repeated to take about 1.5 ms, calibrated at start and
                        recorded, flip, normalise); small CNN on the GPU, SGD
  amp-bf16-mlp          a GEMM-heavy MLP (2 residual blocks LayerNorm-Linear(2048, 8192)-GELU-
                        Linear(8192, 2048), head to 1000 classes, 4096 rows, AdamW) in fp32 vs.
                        torch.autocast(cuda, bfloat16) around forward and loss
  amp-bf16-transformer  the same change on nn.TransformerEncoder (4 layers, d_model 512,
                        8 heads, ff 2048, sequence 256, batch 32, AdamW)
  adam-fused            Adam(foreach=False) vs. Adam(fused=True) on an 8-layer
                        nn.TransformerEncoder (d_model 256, sequence 64, batch 8), where the
                        optimizer's many small kernels matter
  cuda-graphs           a launch-bound MLP (24 x Linear(256)-LayerNorm-GELU, batch 64, MSE,
                        SGD momentum) run eagerly vs. the whole iteration captured once into a
                        torch.cuda.CUDAGraph (warm-up on a side stream, static input and
                        target copied into before each replay; PyTorch's "whole network
                        capture"); the changed side has no phase ranges (one replay)

  whatif/PAIR-baseline.pt.trace.json.gz, whatif/PAIR-changed.pt.trace.json.gz

amp-bf16-transformer and adam-fused are optional: skipped with --quick or when the time
budget is short.

multiproc/  (multi-rank features)
=================================

DistributedDataParallel jobs of 2 and 4 ranks (2 only with --quick), all on the one GPU,
started with torch.multiprocessing (spawn), MASTER_ADDR=127.0.0.1 and a free port. NCCL
refuses two ranks on one GPU, so the backend is gloo, which all-reduces DDP's CUDA gradient
buckets through host memory (GLOO_SOCKET_IFNAME=lo unless set). Each rank: small CNN (width
32) on 3x64x64, batch 32, SGD momentum; data "loaded" inside record_function("data_loading"),
where rank 1 sleeps 5 ms per iteration (a straggler); 3 warm-up and 10 timed unprofiled
iterations (2 and 5 with --quick), then the profiled run (record_shapes=True, others off;
always active=2). No run with a limited bandwidth: gloo on one host has no way to set one.

  multiproc/ddp-gloo-wW/rankR.pt.trace.json.gz

The manifest gives, per rank, the median iteration time and the median data-loading time.
Ranks share the GPU by time slicing (no MPS).

Processes, time budget, failures
================================

Each data set is recorded by a process of its own (this script with --in-process), one
after the other: a crash or a hang loses only that data set's unfinished items. A data set's
process is stopped after 420 s (corpus), 480 s (batch) or 300 s (whatif, multiproc), or 60 s
past the budget left when it started, whichever comes first: first with SIGTERM, on which it
prints every thread's stack, then SIGKILL. On Linux every child process (data set, search,
rank) is killed when its parent ends (PR_SET_PDEATHSIG), so a run stopped from outside leaves
nothing running on the GPU. The manifest's "runs" entry gives each process's exit status and
wall time, and each data set's "process_status" that of the process that recorded it. Any
exception within an item (a model, a batch size, a side of a pair, a rank) is logged with its
traceback and recorded in the manifest as that item's "error"; the next item goes on.

--budget-s (default 540, so that a whole run fits in 10 minutes) bounds the wall time. Each
data set gets what is left of it less what the chosen data sets after it usually need
(corpus 150 s, batch 150 s, whatif 60 s, multiproc 60 s); an item that would start when less
than its estimated need is left is skipped, and the manifest says so. A later run with
--only can record the rest into the same OUT_DIR. --in-process records the chosen data sets
in the calling process instead (same budget rules, no protection from crashes or hangs).
"""

import argparse
import contextlib
import ctypes
import faulthandler
import gc
import gzip
import hashlib
import json
import multiprocessing
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity, profile, record_function, schedule

try:
    import torchvision
except Exception:  # absent, or built for another torch: the hand-written resnet18 stands in
    torchvision = None

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
WAIT, WARMUP, ACTIVE = 1, 1, 2
MAX_GZ_BYTES = 4 * 1024 * 1024
STAGES = ("corpus", "batch", "whatif", "multiproc")

CORPUS_SETTINGS = dict(record_shapes=True, with_modules=True, with_stack=True, profile_memory=False)
BATCH_SETTINGS = dict(record_shapes=True, with_modules=False, with_stack=False, profile_memory=True)
WHATIF_SETTINGS = dict(record_shapes=False, with_modules=False, with_stack=False, profile_memory=False)
MULTIPROC_SETTINGS = dict(record_shapes=True, with_modules=False, with_stack=False, profile_memory=False)

# Hard limits on each data set's process (its budget normally ends it well before).
STAGE_LIMIT_S = {"corpus": 420, "batch": 480, "whatif": 300, "multiproc": 300}
# The time each data set usually needs: what the data sets before it leave for it.
STAGE_RESERVE_S = {"corpus": 150, "batch": 150, "whatif": 60, "multiproc": 60}
OOM_START_BATCH = 64
OOM_BATCH_LIMIT = 65536
OOM_TOLERANCE = 0.05
STRAGGLER_RANK, STRAGGLER_DELAY_S = 1, 0.005


# ----------------------------------------------------------------------------- logging, files

_LOG = {"path": None, "t0": time.time(), "tag": ""}


def configure_log(path, t0, tag=""):
    _LOG.update(path=path, t0=t0, tag=tag)


def log(msg):
    line = f"{time.strftime('%H:%M:%S')} +{time.time() - _LOG['t0']:7.1f}s {_LOG['tag']}{msg}"
    print(line, flush=True)
    if _LOG["path"]:
        with open(_LOG["path"], "a", encoding="utf-8") as f:
            f.write(line + "\n")


def short_error(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


def write_json(path, doc):
    """Write atomically, so a run killed mid-write leaves the previous version."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def gzip_file(src, dst):
    """Gzip src into dst reproducibly (no name or mtime in the header), remove src."""
    with open(src, "rb") as fin, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as fout:
            shutil.copyfileobj(fin, fout)
    os.remove(src)


def summarize(gz_path):
    """Counts that let a README describe a trace without opening it."""
    with gzip.open(gz_path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    per_cat, per_ph = {}, {}
    steps, hid_ranges, phase_ranges, module_frames = set(), 0, 0, 0
    for e in events:
        cat, name = e.get("cat", "<none>"), e.get("name", "")
        per_cat[cat] = per_cat.get(cat, 0) + 1
        per_ph[e.get("ph", "<none>")] = per_ph.get(e.get("ph", "<none>"), 0) + 1
        if name.startswith("ProfilerStep#"):
            steps.add(name)
        elif cat == "user_annotation" and name.startswith("hid="):
            hid_ranges += 1
        elif cat == "user_annotation" and name in ("zero_grad", "forward", "loss", "backward", "optimizer",
                                                   "data_loading"):
            phase_ranges += 1
        elif name.startswith("nn.Module:"):
            module_frames += 1
    return {
        "gz_bytes": os.path.getsize(gz_path),
        "trace_events": len(events),
        "per_cat": dict(sorted(per_cat.items(), key=lambda kv: -kv[1])),
        "per_ph": dict(sorted(per_ph.items(), key=lambda kv: -kv[1])),
        "profiler_steps": sorted(steps),
        "hid_ranges": hid_ranges,
        "phase_ranges": phase_ranges,
        "nn_module_frames": module_frames,
        "distributedInfo": doc.get("distributedInfo") if isinstance(doc, dict) else None,
    }


def shapes(obj):
    if torch.is_tensor(obj):
        return {"shape": list(obj.shape), "dtype": str(obj.dtype).replace("torch.", "")}
    if isinstance(obj, (list, tuple)):
        return [shapes(o) for o in obj]
    return repr(obj)


def param_count(model):
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- run state

class Budget:
    """Wall-time budget: items are skipped, not cut short, when too little is left.
    reserve_s is kept back for the data sets still to come."""

    def __init__(self, seconds):
        self.t0, self.seconds, self.reserve_s = time.time(), seconds, 0

    def left(self):
        return self.seconds - (time.time() - self.t0) - self.reserve_s

    def allows(self, need_s, what):
        if self.left() >= need_s:
            return True
        log(f"SKIP {what}: {self.left():.0f} s of the budget left, about {need_s} s needed")
        return False


class Manifest:
    """OUT_DIR/manifest.json, merged with the one a previous run left there."""

    def __init__(self, out_dir, environment, argv):
        self.out_dir = out_dir
        self.path = os.path.join(out_dir, "manifest.json")
        self.doc = {}
        if os.path.exists(self.path):
            try:
                with open(self.path, encoding="utf-8") as f:
                    self.doc = json.load(f)
            except ValueError:
                self.doc = {}
        self.doc["tool"] = "tools/record_corpus.py"
        if environment is not None:  # None: a run that recorded nothing itself keeps what its stages wrote
            self.doc["environment"] = environment
        self.doc.setdefault("runs", []).append({"argv": argv, "started_unix_time": int(time.time())})
        self.doc.setdefault("datasets", {})
        self.what = {f["path"]: f.get("what") for f in self.doc.get("files", [])}
        self._hashes = {}

    def note(self, path, what):
        self.what[os.path.relpath(path, self.out_dir)] = what

    def dataset(self, name, settings):
        """A fresh entry for a data set recorded now, replacing any earlier one."""
        self.doc["datasets"][name] = {"settings": settings, "items": []}
        return self.doc["datasets"][name]

    def _sha256(self, full):
        st = os.stat(full)
        key = (full, st.st_size, st.st_mtime_ns)
        if key not in self._hashes:
            h = hashlib.sha256()
            with open(full, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            self._hashes[key] = h.hexdigest()
        return self._hashes[key]

    def files(self):
        out = []
        for root, dirs, names in os.walk(self.out_dir):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(root, name)
                rel = os.path.relpath(full, self.out_dir)
                if rel == "manifest.json" or name.startswith(".") or name.endswith(".tmp"):
                    continue
                out.append({"path": rel, "bytes": os.path.getsize(full), "sha256": self._sha256(full),
                            "what": self.what.get(rel)})
        return out

    def save(self):
        self.doc["files"] = self.files()
        write_json(self.path, self.doc)


@dataclass
class Run:
    out_dir: str
    dev: torch.device
    quick: bool
    budget: Budget
    manifest: Manifest

    def subdir(self, name):
        path = os.path.join(self.out_dir, name)
        os.makedirs(path, exist_ok=True)
        return path


def tf32_flags():
    try:
        return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    except Exception:  # newer torch may retire these flags in favour of fp32_precision
        return None, None


def environment():
    props = torch.cuda.get_device_properties(0)
    tf32_matmul, tf32_cudnn = tf32_flags()
    driver = None
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip() or None
    except Exception:  # nvidia-smi is a nicety: the figures do not depend on it
        pass
    return {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version(),
        "torchvision_version": getattr(torchvision, "__version__", None),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "gpu": props.name,
        "gpu_total_memory_bytes": props.total_memory,
        "gpu_compute_capability": f"{props.major}.{props.minor}",
        "gpu_multiprocessors": props.multi_processor_count,
        "nvidia_driver": driver,
        "tf32_matmul": tf32_matmul,
        "tf32_cudnn": tf32_cudnn,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
    }


# ----------------------------------------------------------------------------- training loops

def autocast(dtype):
    return torch.autocast(device_type="cuda", dtype=dtype) if dtype is not None else contextlib.nullcontext()


def make_train_step(model, optimizer, loss_fn, amp_dtype=None, sync=True, ranges=None):
    """One training iteration on a batch (inputs tuple, target), with the phase ranges.

    sync: end with loss.item() (see the docstring). ranges: a ModuleRanges whose ranges left
    open by an exception are closed when the iteration ends."""
    def step(batch):
        inputs, target = batch
        try:
            with record_function("zero_grad"):
                optimizer.zero_grad(set_to_none=True)
            with record_function("forward"), autocast(amp_dtype):
                out = model(*inputs)
            with record_function("loss"), autocast(amp_dtype):
                loss = loss_fn(out, target)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                optimizer.step()
        finally:
            if ranges is not None:
                ranges.close_open()
        if sync:
            loss.item()
    return step


def cycle(pool, n):
    for i in range(n):
        yield pool[i % len(pool)]


def profiled_loop(json_path, batches, step, active, settings):
    """Runs step on each of the WAIT + WARMUP + active batches under the scheduled profiler."""
    with profile(activities=ACTIVITIES, schedule=schedule(wait=WAIT, warmup=WARMUP, active=active, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(json_path), **settings) as prof:
        for batch in batches:
            step(batch)
            prof.step()


def record_trace(gz_path, run_profiled, actives=(ACTIVE, 1)):
    """run_profiled(json_path, active) profiles one loop; the trace is gzipped and summarised.
    A trace over MAX_GZ_BYTES is recorded again with the next, smaller, active count."""
    json_path = gz_path[:-3]
    for active in actives:
        t0 = time.time()
        run_profiled(json_path, active)
        if not os.path.exists(json_path):
            raise RuntimeError("the profiler wrote no trace")
        gzip_file(json_path, gz_path)
        size = os.path.getsize(gz_path)
        log(f"{os.path.basename(gz_path)}: active={active}, {size / 1e6:.2f} MB gzipped, {time.time() - t0:.1f} s")
        if size <= MAX_GZ_BYTES:
            break
        log(f"{os.path.basename(gz_path)}: over {MAX_GZ_BYTES / 2**20:.0f} MiB gzipped")
    try:
        summary = summarize(gz_path)
    except Exception as exc:  # the trace stays; only its counts are missing
        summary = {"gz_bytes": size, "summary_error": short_error(exc)}
    summary["active_steps"] = active
    summary["over_size_limit"] = size > MAX_GZ_BYTES
    return summary


def timed_loop(batches, step, n_warmup):
    """Unprofiled wall time per iteration, from the end of one to the end of the next."""
    times = []
    torch.cuda.synchronize()
    t_prev = time.perf_counter()
    for i, batch in enumerate(batches):
        step(batch)
        torch.cuda.synchronize()
        t = time.perf_counter()
        if i >= n_warmup:
            times.append(t - t_prev)
        t_prev = t
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "n": len(times), "warmup": n_warmup}


def die_with_parent():
    """Linux: be killed when the process that started this one ends, so that a run stopped from
    outside leaves nothing running on the GPU. Elsewhere, or if it fails, nothing changes."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_cuda_memory():
    gc.collect()
    torch.cuda.empty_cache()


def is_oom(exc):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    text = str(exc)
    return ((oom_type is not None and isinstance(exc, oom_type)) or "out of memory" in text.lower()
            or "ALLOC_FAILED" in text)


def token_cross_entropy(out, target):
    return F.cross_entropy(out.reshape(-1, out.size(-1)), target.reshape(-1))


# ----------------------------------------------------------------------------- ground truth

class ModuleRanges:
    """A record_function range "hid=N NAME" around every call of each hooked module."""

    def __init__(self, root, hook_all=True):
        self.stack = []  # (hid, open record_function), innermost last
        self.handles = []
        self.modules = []
        ids = {}
        for hid, (name, module) in enumerate(root.named_modules()):
            ids[name] = hid
            parent = None if hid == 0 else ids[name.rpartition(".")[0]]
            hooked = hook_all or hid == 0
            self.modules.append({"hid": hid, "name": name, "class": type(module).__name__, "parent": parent,
                                 "hooked": hooked})
            if hooked:
                label = f"hid={hid} {name or '(root)'}"
                self.handles.append(module.register_forward_pre_hook(self._enter_hook(hid, label)))
                self.handles.append(module.register_forward_hook(self._exit_hook(hid)))

    # The hooks' function names are what the call stacks show (python_function events).
    def _enter_hook(self, hid, label):
        def _hid_range_enter(module, args):
            rf = record_function(label)
            rf.__enter__()
            self.stack.append((hid, rf))
        return _hid_range_enter

    def _exit_hook(self, hid):
        def _hid_range_exit(module, args, output):
            if all(h != hid for h, _ in self.stack):
                return
            # Ranges above ours belong to inner modules whose exception the forward caught.
            while True:
                top, rf = self.stack.pop()
                rf.__exit__(None, None, None)
                if top == hid:
                    break
        return _hid_range_exit

    def close_open(self):
        while self.stack:
            self.stack.pop()[1].__exit__(None, None, None)

    def remove(self):
        self.close_open()
        for h in self.handles:
            h.remove()


# ----------------------------------------------------------------------------- models

class SmallCNN(nn.Module):
    def __init__(self, classes=10, width=16):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                 nn.ReLU(inplace=True))
        self.features = nn.Sequential(block(3, width), nn.MaxPool2d(2), block(width, 2 * width), nn.MaxPool2d(2),
                                      block(2 * width, 4 * width), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(4 * width, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18(nn.Module):
    """torchvision's resnet18, layer for layer and name for name."""

    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths, cin = (64, 128, 256, 512), 64
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            setattr(self, f"layer{i + 1}", nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
            cin = w
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


RESNET_ORIGIN = "torchvision resnet18" if torchvision is not None else "hand-written resnet18 (torchvision absent)"


def resnet18(classes):
    if torchvision is not None:
        return torchvision.models.resnet18(weights=None, num_classes=classes)
    return ResNet18(classes)


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class ViTBlock(nn.Module):
    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    def __init__(self, image=64, patch=8, dim=192, depth=4, heads=3, mlp=768, classes=100):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.blocks = nn.Sequential(*[ViTBlock(dim, heads, mlp) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.size(0), -1, -1), x], dim=1) + self.pos_embed
        return self.head(self.norm(self.blocks(x))[:, 0])


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab=1000, d_model=128, heads=4, layers=2, ff=256, max_len=64):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        self.pos_embed = nn.Embedding(max_len, d_model)
        self.transformer = nn.Transformer(d_model, heads, layers, layers, ff, batch_first=True)
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        t = tgt.size(1)
        # Built here rather than with generate_square_subsequent_mask, whose signature changed in 2.x.
        causal = torch.triu(torch.full((t, t), float("-inf"), device=tgt.device), diagonal=1)
        src_h = self.src_embed(src) + self.pos_embed(torch.arange(src.size(1), device=src.device))
        tgt_h = self.tgt_embed(tgt) + self.pos_embed(torch.arange(t, device=tgt.device))
        return self.generator(self.transformer(src_h, tgt_h, tgt_mask=causal))


class LSTMClassifier(nn.Module):
    def __init__(self, vocab=1000, embed=128, hidden=256, layers=2, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out[:, -1])


class GRUTagger(nn.Module):
    def __init__(self, vocab=1000, embed=128, hidden=128, tags=20):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.gru = nn.GRU(embed, hidden, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, tags)

    def forward(self, tokens):
        out, _ = self.gru(self.embed(tokens))
        return self.head(out)


def mlp(sizes, last_activation=True):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_activation or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    TABLES = (1000, 5000, 20000, 100, 50000, 300, 7000, 100000)

    def __init__(self, dense=13, dim=32):
        super().__init__()
        self.dim = dim
        self.bottom = mlp([dense, 128, 64, dim])
        self.tables = nn.ModuleList(nn.EmbeddingBag(n, dim, mode="sum") for n in self.TABLES)
        features = len(self.TABLES) + 1
        li, lj = torch.tril_indices(features, features, offset=-1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)
        self.top = mlp([dim + li.numel(), 128, 64, 1], last_activation=False)

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        pooled = [bag(i, o) for bag, i, o in zip(self.tables, indices, offsets)]
        t = torch.cat([x] + pooled, dim=1).view(x.size(0), -1, self.dim)
        z = torch.bmm(t, t.transpose(1, 2))  # every pair of features' dot product
        return self.top(torch.cat([x, z[:, self.li, self.lj]], dim=1))


class GraphConv(nn.Module):
    """Message passing written out: gather along edges, scatter into the destination nodes."""

    def __init__(self, d_in, d_out, reduce):
        super().__init__()
        self.reduce = reduce
        self.message = nn.Linear(d_in, d_out)
        self.update = nn.Linear(d_in + d_out, d_out)

    def forward(self, x, src, dst):
        msg = self.message(x).index_select(0, src)
        agg = torch.zeros(x.size(0), msg.size(1), device=x.device, dtype=msg.dtype)
        if self.reduce == "sum":
            agg.index_add_(0, dst, msg)
        else:
            agg.scatter_add_(0, dst.unsqueeze(1).expand_as(msg), msg)
            deg = torch.zeros(x.size(0), device=x.device, dtype=msg.dtype)
            deg.scatter_add_(0, dst, torch.ones_like(dst, dtype=msg.dtype))
            agg = agg / deg.clamp(min=1).unsqueeze(1)
        return F.relu(self.update(torch.cat([x, agg], dim=1)))


class GNN(nn.Module):
    def __init__(self, d_in=64, hidden=128, classes=8):
        super().__init__()
        self.convs = nn.ModuleList([GraphConv(d_in, hidden, "sum"), GraphConv(hidden, hidden, "mean"),
                                    GraphConv(hidden, hidden, "sum")])
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, src, dst):
        for conv in self.convs:
            x = conv(x, src, dst)
        return self.head(x)


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class MoELayer(nn.Module):
    def __init__(self, dim, experts, k, hidden):
        super().__init__()
        self.k = k
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(Expert(dim, hidden) for _ in range(experts))

    def forward(self, x):
        flat = x.reshape(-1, x.size(-1))
        weights, chosen = self.router(flat).softmax(dim=-1).topk(self.k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)  # a host sync per expert, as eager MoE has
            w = weights.index_select(0, token).gather(1, slot.unsqueeze(1))
            out.index_add_(0, token, expert(flat.index_select(0, token)) * w)
        return out.view_as(x)


class MoEBlock(nn.Module):
    def __init__(self, dim, experts, k, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.moe = MoELayer(dim, experts, k, hidden)

    def forward(self, x):
        return x + self.moe(self.norm(x))


class MoEModel(nn.Module):
    def __init__(self, vocab=1000, dim=256, blocks=2, experts=8, k=2, hidden=512):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.Sequential(*[MoEBlock(dim, experts, k, hidden) for _ in range(blocks)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        return self.head(self.norm(self.blocks(self.embed(tokens))))


def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, classes=3, base=16):
        super().__init__()
        self.pool = nn.MaxPool2d(2)
        self.enc1 = double_conv(3, base)
        self.enc2 = double_conv(base, 2 * base)
        self.bottleneck = double_conv(2 * base, 4 * base)
        self.up2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2)
        self.dec2 = double_conv(4 * base, 2 * base)
        self.up1 = nn.ConvTranspose2d(2 * base, base, 2, stride=2)
        self.dec1 = double_conv(2 * base, base)
        self.out = nn.Conv2d(base, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottleneck(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.out(d1)


class ConvAutoencoder(nn.Module):
    def __init__(self, latent=64):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                     nn.Flatten(), nn.Linear(32 * 8 * 8, latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 32 * 8 * 8), nn.ReLU(), nn.Unflatten(1, (32, 8, 8)),
                                     nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(),
                                     nn.ConvTranspose2d(16, 1, 4, 2, 1), nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


class MixerBlock(nn.Module):
    def __init__(self, tokens, channels, token_hidden, channel_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(channels)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(), nn.Linear(token_hidden, tokens))
        self.norm2 = nn.LayerNorm(channels)
        self.channel_mlp = nn.Sequential(nn.Linear(channels, channel_hidden), nn.GELU(),
                                         nn.Linear(channel_hidden, channels))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class MLPMixer(nn.Module):
    def __init__(self, image=64, patch=8, channels=128, depth=4, classes=10):
        super().__init__()
        tokens = (image // patch) ** 2
        self.stem = nn.Conv2d(3, channels, patch, stride=patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, channels, 64, 512) for _ in range(depth)])
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, classes)

    def forward(self, images):
        x = self.stem(images).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(dim=1))


class TinyEncoder(nn.Module):
    """Embedding + nn.TransformerEncoder + Linear on the mean token (as in tests/data/torch2)."""

    def __init__(self, vocab=1000, d_model=256, nhead=4, layers=2, ff=1024, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


class LaunchBoundMLP(nn.Module):
    """Many tiny kernels: the CPU's launches, not the GPU, set the pace."""

    def __init__(self, width=256, depth=24, out=16):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(width, width), nn.LayerNorm(width), nn.GELU())
                                      for _ in range(depth)])
        self.head = nn.Linear(width, out)

    def forward(self, x):
        return self.head(self.blocks(x))


class WideMLP(nn.Module):
    """GEMM-bound: residual blocks of two big Linears."""

    def __init__(self, width=2048, hidden=8192, depth=2, classes=1000):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, hidden), nn.GELU(),
                                                  nn.Linear(hidden, width)) for _ in range(depth))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


# ----------------------------------------------------------------------------- corpus

@dataclass
class Case:
    model: nn.Module           # what the iteration calls (for the compiled case, the OptimizedModule)
    optimizer: torch.optim.Optimizer
    loss_fn: object
    make_batch: object         # () -> (inputs tuple, target), on the GPU
    what: str
    hook_all: bool = True
    compiled: bool = False


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def case_small_cnn(dev):
    model = SmallCNN().to(dev)
    return Case(model, sgd(model), nn.CrossEntropyLoss(),
                lambda: ((torch.randn(32, 3, 32, 32, device=dev),), torch.randint(0, 10, (32,), device=dev)),
                "SmallCNN: 3 x (Conv3x3-BN-ReLU) with MaxPool2d, AdaptiveAvgPool2d, Linear; batch 32 x 3x32x32, "
                "CrossEntropyLoss, SGD momentum 0.9")


def case_resnet18(dev):
    model = resnet18(100).to(dev)
    return Case(model, sgd(model), nn.CrossEntropyLoss(),
                lambda: ((torch.randn(16, 3, 64, 64, device=dev),), torch.randint(0, 100, (16,), device=dev)),
                f"{RESNET_ORIGIN}, 100 classes; batch 16 x 3x64x64, CrossEntropyLoss, SGD momentum 0.9")


def case_vit(dev):
    model = TinyViT().to(dev)
    return Case(model, torch.optim.AdamW(model.parameters(), lr=1e-4), nn.CrossEntropyLoss(),
                lambda: ((torch.randn(16, 3, 64, 64, device=dev),), torch.randint(0, 100, (16,), device=dev)),
                "hand-written ViT: Conv2d patch embedding (8x8), class token, learned positions, 4 pre-norm blocks "
                "(dim 192, 3 heads, qkv Linear + matmul/softmax/matmul attention, GELU MLP 768), LayerNorm, Linear "
                "head (100 classes); batch 16 x 3x64x64, CrossEntropyLoss, AdamW")


def case_seq2seq(dev):
    model = Seq2SeqTransformer().to(dev)
    return Case(model, torch.optim.AdamW(model.parameters(), lr=1e-4), token_cross_entropy,
                lambda: ((torch.randint(0, 1000, (16, 32), device=dev), torch.randint(0, 1000, (16, 24), device=dev)),
                         torch.randint(0, 1000, (16, 24), device=dev)),
                "nn.Transformer (2 encoder + 2 decoder layers, d_model 128, 4 heads, ff 256, batch_first) with "
                "token embeddings, learned positions, causal target mask and a Linear generator (vocab 1000); "
                "batch 16, source 32, target 24 tokens, token cross-entropy, AdamW")


def case_lstm(dev):
    model = LSTMClassifier().to(dev)
    return Case(model, torch.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss(),
                lambda: ((torch.randint(0, 1000, (32, 64), device=dev),), torch.randint(0, 10, (32,), device=dev)),
                "Embedding(1000, 128) + 2-layer nn.LSTM (hidden 256, batch_first) + Linear on the last step; "
                "batch 32 x 64 tokens, CrossEntropyLoss, Adam")


def case_gru(dev):
    model = GRUTagger().to(dev)
    return Case(model, torch.optim.Adam(model.parameters(), lr=1e-3), token_cross_entropy,
                lambda: ((torch.randint(0, 1000, (32, 64), device=dev),), torch.randint(0, 20, (32, 64), device=dev)),
                "Embedding(1000, 128) + bidirectional nn.GRU (hidden 128) + per-token Linear (20 tags); "
                "batch 32 x 64 tokens, token cross-entropy, Adam")


def case_dlrm(dev):
    model = DLRM().to(dev)
    batch = 256

    def make_batch():
        indices, offsets = [], []
        for rows in DLRM.TABLES:
            lengths = torch.randint(1, 5, (batch,))
            offsets.append(torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]]).to(dev))
            indices.append(torch.randint(0, rows, (int(lengths.sum()),)).to(dev))
        return ((torch.randn(batch, 13, device=dev), indices, offsets),
                torch.randint(0, 2, (batch, 1), device=dev).float())
    return Case(model, torch.optim.SGD(model.parameters(), lr=0.01), nn.BCEWithLogitsLoss(), make_batch,
                "DLRM-style: bottom MLP 13-128-64-32, 8 nn.EmbeddingBag(mode=sum, dim 32) tables of "
                f"{', '.join(map(str, DLRM.TABLES))} rows with 1-4 ids per bag, dot interaction (cat, bmm, index "
                "by tril_indices, cat), top MLP to 1 logit; batch 256, BCEWithLogitsLoss, SGD")


def case_gnn(dev):
    model = GNN().to(dev)
    nodes, edges = 4096, 32768
    return Case(model, torch.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss(),
                lambda: ((torch.randn(nodes, 64, device=dev), torch.randint(0, nodes, (edges,), device=dev),
                          torch.randint(0, nodes, (edges,), device=dev)),
                         torch.randint(0, 8, (nodes,), device=dev)),
                "GNN: 3 message-passing layers (Linear message, index_select gather along edges, index_add_ sum / "
                "scatter_add_ mean / index_add_ sum into destinations, cat, Linear update, ReLU), Linear head; "
                "random graph of 4096 nodes and 32768 edges, 64 features, 8-class node classification, Adam")


def case_moe(dev):
    model = MoEModel().to(dev)
    return Case(model, torch.optim.AdamW(model.parameters(), lr=1e-4), token_cross_entropy,
                lambda: ((torch.randint(0, 1000, (16, 64), device=dev),), torch.randint(0, 1000, (16, 64), device=dev)),
                "mixture of experts: Embedding(1000, 256), 2 pre-norm blocks of a top-2 MoE over 8 experts "
                "(router Linear, softmax, topk, renormalise; per expert nonzero, index_select, gather, "
                "Linear-GELU-Linear 256-512-256, index_add_ combine), LayerNorm, Linear to the vocabulary; "
                "batch 16 x 64 tokens, token cross-entropy, AdamW")


def case_unet(dev):
    model = UNet().to(dev)
    return Case(model, torch.optim.Adam(model.parameters(), lr=1e-3), nn.CrossEntropyLoss(),
                lambda: ((torch.randn(8, 3, 64, 64, device=dev),), torch.randint(0, 3, (8, 64, 64), device=dev)),
                "U-Net, 2 levels: double (Conv3x3-BN-ReLU) blocks 16/32/64 channels, MaxPool2d, ConvTranspose2d "
                "up-sampling, skip concatenation, 1x1 Conv to 3 classes; batch 8 x 3x64x64, per-pixel "
                "CrossEntropyLoss, Adam")


def case_autoencoder(dev):
    model = ConvAutoencoder().to(dev)

    def make_batch():
        x = torch.rand(32, 1, 32, 32, device=dev)
        return (x,), x
    return Case(model, torch.optim.Adam(model.parameters(), lr=1e-3), nn.MSELoss(), make_batch,
                "convolutional autoencoder: 2 strided Conv2d + Linear to a 64-d code, Linear + Unflatten + "
                "2 ConvTranspose2d + Sigmoid back; batch 32 x 1x32x32, MSELoss to the input, Adam")


def case_mlp_mixer(dev):
    model = MLPMixer().to(dev)
    return Case(model, torch.optim.AdamW(model.parameters(), lr=1e-4), nn.CrossEntropyLoss(),
                lambda: ((torch.randn(16, 3, 64, 64, device=dev),), torch.randint(0, 10, (16,), device=dev)),
                "MLP-Mixer: Conv2d patch embedding (8x8, 128 channels), 4 blocks of token-mixing (64 tokens, "
                "hidden 64) and channel-mixing (hidden 512) MLPs with LayerNorm, mean pooling, Linear head; "
                "batch 16 x 3x64x64, CrossEntropyLoss, AdamW")


def case_small_cnn_compiled(dev):
    if not hasattr(torch, "compile"):
        raise RuntimeError("torch.compile is not available in this torch")
    case = case_small_cnn(dev)
    case.model = torch.compile(case.model)
    case.what = "torch.compile(SmallCNN) with the default backend; " + case.what.split(": ", 1)[1]
    case.hook_all, case.compiled = False, True
    return case


CORPUS = [
    ("small_cnn", case_small_cnn),
    ("resnet18", case_resnet18),
    ("vit", case_vit),
    ("seq2seq_transformer", case_seq2seq),
    ("lstm", case_lstm),
    ("gru", case_gru),
    ("dlrm", case_dlrm),
    ("gnn", case_gnn),
    ("moe", case_moe),
    ("unet", case_unet),
    ("autoencoder", case_autoencoder),
    ("mlp_mixer", case_mlp_mixer),
    ("small_cnn_compiled", case_small_cnn_compiled),
]


def record_corpus_model(run, name, build, folder):
    torch.manual_seed(0)
    case = build(run.dev)
    entry = {"model": name, "what": case.what, "parameters": param_count(case.model)}
    batches = [case.make_batch() for _ in range(WAIT + WARMUP + ACTIVE)]
    entry["inputs"], entry["target"] = shapes(batches[0][0]), shapes(batches[0][1])

    print_path = os.path.join(folder, f"{name}.print.txt")
    with open(print_path, "w", encoding="utf-8") as f:
        f.write(str(case.model) + "\n")
    run.manifest.note(print_path, f"print(model) of corpus/{name}")

    ranges = ModuleRanges(case.model, hook_all=case.hook_all)
    try:
        modules_path = os.path.join(folder, f"{name}.modules.json")
        write_json(modules_path, {"model": name, "range_format": "hid={hid} {name or '(root)'}",
                                  "modules": ranges.modules})
        run.manifest.note(modules_path, f"modules of corpus/{name}: hid, qualified name, class, parent hid, hooked")
        entry["modules"] = len(ranges.modules)
        entry["hooked_modules"] = sum(m["hooked"] for m in ranges.modules)

        step = make_train_step(case.model, case.optimizer, case.loss_fn, sync=False, ranges=ranges)
        if case.compiled:
            t0 = time.time()
            step(case.make_batch())  # compiles forward and backward before the profiler starts
            torch.cuda.synchronize()
            entry["compile_s"] = round(time.time() - t0, 2)
            log(f"corpus {name}: compiled in {entry['compile_s']} s")
        gz_path = os.path.join(folder, f"{name}.pt.trace.json.gz")
        entry["summary"] = record_trace(
            gz_path, lambda jp, active: profiled_loop(jp, batches[:WAIT + WARMUP + active], step, active,
                                                      CORPUS_SETTINGS))
        entry["trace"] = os.path.relpath(gz_path, run.out_dir)
        run.manifest.note(gz_path, f"corpus trace: {case.what}")
    finally:
        ranges.remove()
    return entry


def run_corpus(run):
    folder = run.subdir("corpus")
    data = run.manifest.dataset("corpus", {
        "profiler": dict(CORPUS_SETTINGS, activities="CPU,CUDA", schedule={"wait": WAIT, "warmup": WARMUP,
                                                                            "active": ACTIVE, "repeat": 1}),
        "iteration": "zero_grad, forward, loss, backward, optimizer ranges; no loss.item()",
        "ground_truth": "record_function('hid=N NAME') per module call from forward pre-hook to forward hook",
    })
    for name, build in CORPUS:
        need = 150 if name.endswith("_compiled") else 20
        if not run.budget.allows(need, f"corpus {name}"):
            data["items"].append({"model": name, "status": "skipped: time budget"})
            run.manifest.save()
            continue
        log(f"corpus {name}")
        try:
            entry = record_corpus_model(run, name, build, folder)
            entry["status"] = "ok"
        except Exception as exc:
            log(f"corpus {name} FAILED: {short_error(exc)}\n{traceback.format_exc()}")
            entry = {"model": name, "status": "failed", "error": short_error(exc)}
        free_cuda_memory()
        data["items"].append(entry)
        run.manifest.save()


# ----------------------------------------------------------------------------- batch

BATCH_MODELS = ("resnet18", "transformer")


def batch_config(key):
    if key == "resnet18":
        return {"model": f"{RESNET_ORIGIN}, 1000 classes", "input": "3x224x224 float32", "loss": "CrossEntropyLoss",
                "optimizer": "SGD(lr=0.01, momentum=0.9)", "dtype": "float32", "tokens_per_sample": None}
    return {"model": "Embedding(1000,256) + nn.TransformerEncoder(2 layers, d_model 256, 4 heads, ff 1024, "
                     "batch_first) + Linear(256,10) on the mean token",
            "input": "512 tokens", "loss": "CrossEntropyLoss", "optimizer": "AdamW(lr=1e-4)", "dtype": "float32",
            "tokens_per_sample": 512}


def build_batch_model(key, dev):
    """The model, optimizer, loss and batch maker of one batch-series configuration."""
    torch.manual_seed(0)
    if key == "resnet18":
        model = resnet18(1000).to(dev)
        return (model, sgd(model), nn.CrossEntropyLoss(),
                lambda b: ((torch.randn(b, 3, 224, 224, device=dev),), torch.randint(0, 1000, (b,), device=dev)))
    model = TinyEncoder().to(dev)
    return (model, torch.optim.AdamW(model.parameters(), lr=1e-4), nn.CrossEntropyLoss(),
            lambda b: ((torch.randint(0, 1000, (b, 512), device=dev),), torch.randint(0, 10, (b,), device=dev)))


def measure_batch_point(run, key, batch, folder, n_timed):
    model, optimizer, loss_fn, make_batch = build_batch_model(key, run.dev)
    config = batch_config(key)
    pool = [make_batch(batch)]
    step = make_train_step(model, optimizer, loss_fn)
    point = {"batch": batch, "allocated_before_bytes": torch.cuda.memory_allocated()}

    torch.cuda.reset_peak_memory_stats()
    gz_path = os.path.join(folder, f"{key}-b{batch}.pt.trace.json.gz")
    point["summary"] = record_trace(
        gz_path, lambda jp, active: profiled_loop(jp, cycle(pool, WAIT + WARMUP + active), step, active,
                                                  BATCH_SETTINGS))
    point["trace"] = os.path.relpath(gz_path, run.out_dir)
    point["profiled_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    point["profiled_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    run.manifest.note(gz_path, f"batch series: {config['model']}, batch {batch}, {config['input']}")

    torch.cuda.reset_peak_memory_stats()
    timing = timed_loop(cycle(pool, 3 + n_timed), step, 3)
    point["unprofiled"] = timing
    point["samples_per_s"] = batch / timing["median_s"]
    if config["tokens_per_sample"]:
        point["tokens_per_s"] = point["samples_per_s"] * config["tokens_per_sample"]
    point["timed_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    point["timed_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    log(f"batch {key} b={batch}: {timing['median_s'] * 1e3:.2f} ms/iter, {point['samples_per_s']:.0f} samples/s, "
        f"peak {point['timed_peak_allocated_bytes'] / 2**30:.2f} GiB allocated")
    return point


def one_iteration(step, make_batch, optimizer, batch):
    """One training iteration at `batch`; any exception is caught and classified."""
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    outcome, error = "ok", None
    try:
        step(make_batch(batch))
        torch.cuda.synchronize()
    except Exception as exc:  # out of memory is the expected failure; anything else is recorded too
        outcome, error = ("oom" if is_oom(exc) else "error"), short_error(exc)
    optimizer.zero_grad(set_to_none=True)
    return {"batch": batch, "outcome": outcome, "seconds": round(time.perf_counter() - t0, 3),
            "peak_allocated_bytes": torch.cuda.max_memory_allocated(), "error": error}


def cuda_still_works():
    try:
        (torch.ones(1, device="cuda") + 1).item()
        return True
    except Exception:
        return False


def oom_search_main(key, result_path, log_path, t0, cap_s):
    """Child process: the largest batch of `key` whose training iteration fits (see the docstring)."""
    die_with_parent()
    configure_log(log_path, t0, f"[oom {key}] ")
    started = time.time()
    result = {"model": key, "start_batch": OOM_START_BATCH, "batch_limit": OOM_BATCH_LIMIT,
              "tolerance": OOM_TOLERANCE, "time_cap_s": cap_s, "trials": []}
    try:
        dev = torch.device("cuda")
        free, total = torch.cuda.mem_get_info()
        result.update(free_bytes_at_start=free, total_bytes=total)
        model, optimizer, loss_fn, make_batch = build_batch_model(key, dev)
        step = make_train_step(model, optimizer, loss_fn)
        deadline = time.time() + cap_s
        good = bad = stop = None

        def time_for(batch):
            """Would a trial at `batch` end before the cap? Its time grows with the batch."""
            done = [t for t in result["trials"] if t["outcome"] == "ok"]
            expected = done[-1]["seconds"] * batch / done[-1]["batch"] if done else 0
            return time.time() + expected < deadline

        def attempt(batch):
            trial = one_iteration(step, make_batch, optimizer, batch)
            free_cuda_memory()
            result["trials"].append(trial)
            write_json(result_path, result)  # a killed search still leaves its trials
            why = f" ({trial['error']})" if trial["error"] else ""
            log(f"batch {batch}: {trial['outcome']} in {trial['seconds']} s, peak "
                f"{trial['peak_allocated_bytes'] / 2**30:.2f} GiB{why}")
            if trial["outcome"] == "error" and not cuda_still_works():
                return "broken"
            return trial["outcome"]

        batch = OOM_START_BATCH
        while True:
            outcome = attempt(batch)
            if outcome == "broken":
                bad, stop = batch, "the CUDA context stopped working"
                break
            if outcome != "ok":
                bad = batch
                break
            good = batch
            if batch * 2 > OOM_BATCH_LIMIT:
                stop = f"no failure up to the batch limit {OOM_BATCH_LIMIT}"
                break
            if not time_for(batch * 2):
                stop = "time cap"
                break
            batch *= 2
        while stop is None and good is not None and bad - good > max(1, OOM_TOLERANCE * good):
            mid = (good + bad) // 2
            if not time_for(mid):
                stop = "time cap"
                break
            outcome = attempt(mid)
            if outcome == "broken":
                stop = "the CUDA context stopped working"
            elif outcome == "ok":
                good = mid
            else:
                bad = mid
        result.update(max_ok_batch=good, min_failed_batch=bad,
                      failure_kind=next((t["outcome"] for t in result["trials"] if t["batch"] == bad), None),
                      stop_reason=stop or ("converged" if good is not None else "the start batch failed"))
        log(f"largest batch that fits: {good} (first failure {bad}; {result['stop_reason']})")
    except Exception as exc:
        result["error"] = short_error(exc)
        log(f"FAILED: {short_error(exc)}\n{traceback.format_exc()}")
    result["elapsed_s"] = round(time.time() - started, 1)
    write_json(result_path, result)


def run_oom_search(run, key, folder, cap_s):
    result_path = os.path.join(folder, f".oom-{key}.json")
    free_cuda_memory()  # leave the GPU to the child
    parent_reserved = torch.cuda.memory_reserved()
    t0 = time.time()
    proc = multiprocessing.get_context("spawn").Process(
        target=oom_search_main, args=(key, result_path, _LOG["path"], _LOG["t0"], cap_s))
    proc.start()
    proc.join(cap_s + 120)  # the cap, the child's start and one last (large) trial
    timed_out = proc.is_alive()
    if timed_out:
        proc.kill()
        proc.join(10)
    result = {}
    if os.path.exists(result_path):
        with open(result_path, encoding="utf-8") as f:
            result = json.load(f)
        os.remove(result_path)
    result.update(parent_reserved_bytes=parent_reserved, child_exit_code=proc.exitcode,
                  wall_s=round(time.time() - t0, 1))
    if timed_out:
        result["error"] = "the search process did not finish in time and was killed"
    return result


def run_batch(run):
    folder = run.subdir("batch")
    sizes = [8, 16, 32] if run.quick else [8, 16, 32, 64, 128]
    n_timed = 10 if run.quick else 20
    data = run.manifest.dataset("batch", {
        "profiler": dict(BATCH_SETTINGS, activities="CPU,CUDA", schedule={"wait": WAIT, "warmup": WARMUP,
                                                                           "active": ACTIVE, "repeat": 1}),
        "batch_sizes": sizes,
        "timing": {"warmup": 3, "timed": n_timed},
        "iteration": "zero_grad, forward, loss, backward, optimizer ranges, then loss.item()",
        "oom_search": {"start": OOM_START_BATCH, "limit": OOM_BATCH_LIMIT, "tolerance": OOM_TOLERANCE,
                       "process": "a spawned child, fresh CUDA context"},
    })
    entries = []
    for key in BATCH_MODELS:
        entry = {"model": key, "config": batch_config(key), "series": []}
        entries.append(entry)
        data["items"].append(entry)
        for batch in sizes:
            if not run.budget.allows(20, f"batch {key} b={batch}"):
                entry["series"].append({"batch": batch, "status": "skipped: time budget"})
                continue
            try:
                point = measure_batch_point(run, key, batch, folder, n_timed)
                point["status"] = "ok"
            except Exception as exc:
                log(f"batch {key} b={batch} FAILED: {short_error(exc)}\n{traceback.format_exc()}")
                point = {"batch": batch, "status": "failed", "error": short_error(exc)}
            free_cuda_memory()
            entry["series"].append(point)
            run.manifest.save()
    # The searches come after both series, and share what is left of the budget.
    for i, entry in enumerate(entries):
        key = entry["model"]
        cap = min(60 if run.quick else 180, (run.budget.left() - 15) / (len(entries) - i))
        if cap < 45:
            log(f"SKIP oom search {key}: {run.budget.left():.0f} s of the budget left")
            entry["oom_search"] = {"status": "skipped: time budget"}
        else:
            log(f"oom search {key} (cap {cap:.0f} s)")
            entry["oom_search"] = run_oom_search(run, key, folder, cap)
        run.manifest.save()


# ----------------------------------------------------------------------------- what-if

class CpuWorkDataset(torch.utils.data.Dataset):
    """Images whose making costs real CPU time, as decoding and augmenting do."""

    SIZE = 96  # 3x96x96 = 27648 elements: under torch's intra-op grain, so one thread does each op

    def __init__(self, length, reps):
        self.length, self.reps = length, reps

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, self.SIZE, self.SIZE, generator=g)
        for _ in range(self.reps):  # stands in for colour jitter and the like
            img = torch.sin(img * 3.0 + 0.5).abs_()
        if i % 2:
            img = img.flip(2)
        img = (img - img.mean()) / (img.std() + 1e-6)
        return img, i % 10


def calibrate_reps(target_s=1.5e-3):
    """The number of op chains that makes one __getitem__ take about target_s here."""
    def per_item(reps):
        ds = CpuWorkDataset(64, reps)
        t0 = time.perf_counter()
        for i in range(32):
            ds[i]
        return (time.perf_counter() - t0) / 32
    per_item(4)  # first calls pay for lazy initialisation
    reps = 20
    for _ in range(2):  # the cost is not quite proportional to reps: a second pass corrects
        reps = max(1, round(reps * target_s / per_item(reps)))
    return reps, per_item(reps)


def loader_side(dev, workers, reps):
    torch.manual_seed(0)
    model = SmallCNN(width=32).to(dev)
    inner = make_train_step(model, sgd(model), nn.CrossEntropyLoss())

    def step(batch):
        x, y = batch
        inner(((x.to(dev, non_blocking=True),), y.to(dev, non_blocking=True)))

    def batches(n):
        # A timeout turns a stuck worker into an error instead of a hang (it needs workers).
        return torch.utils.data.DataLoader(CpuWorkDataset(32 * n, reps), batch_size=32, num_workers=workers,
                                           pin_memory=True, timeout=60 if workers else 0)
    return step, batches, {"num_workers": workers}


def graph_side(dev, graphed):
    torch.manual_seed(0)
    model = LaunchBoundMLP().to(dev)
    optimizer = sgd(model)
    loss_fn = nn.MSELoss()
    pool = [(torch.randn(64, 256, device=dev), torch.randn(64, 16, device=dev)) for _ in range(4)]
    if not graphed:
        inner = make_train_step(model, optimizer, loss_fn)
        return (lambda b: inner(((b[0],), b[1]))), (lambda n: cycle(pool, n)), {"cuda_graph": False}

    # PyTorch's whole-network capture: warm up on a side stream, then capture one iteration.
    static_x, static_y = torch.zeros_like(pool[0][0]), torch.zeros_like(pool[0][1])
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(static_x), static_y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)  # backward then allocates the grads from the graph's pool
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(static_x), static_y)
        static_loss.backward()
        optimizer.step()

    def step(batch):
        static_x.copy_(batch[0])
        static_y.copy_(batch[1])
        graph.replay()
        static_loss.item()
    return step, (lambda n: cycle(pool, n)), {"cuda_graph": True}


def amp_mlp_side(dev, amp):
    torch.manual_seed(0)
    model = WideMLP().to(dev)
    inner = make_train_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4), nn.CrossEntropyLoss(),
                            amp_dtype=torch.bfloat16 if amp else None)
    pool = [((torch.randn(4096, 2048, device=dev),), torch.randint(0, 1000, (4096,), device=dev))]
    return inner, (lambda n: cycle(pool, n)), {"autocast": "bfloat16" if amp else None}


def amp_transformer_side(dev, amp):
    torch.manual_seed(0)
    model = TinyEncoder(d_model=512, nhead=8, layers=4, ff=2048).to(dev)
    inner = make_train_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4), nn.CrossEntropyLoss(),
                            amp_dtype=torch.bfloat16 if amp else None)
    pool = [((torch.randint(0, 1000, (32, 256), device=dev),), torch.randint(0, 10, (32,), device=dev))]
    return inner, (lambda n: cycle(pool, n)), {"autocast": "bfloat16" if amp else None}


def adam_side(dev, fused):
    torch.manual_seed(0)
    model = TinyEncoder(layers=8).to(dev)
    optimizer = (torch.optim.Adam(model.parameters(), lr=1e-4, fused=True) if fused
                 else torch.optim.Adam(model.parameters(), lr=1e-4, foreach=False))
    inner = make_train_step(model, optimizer, nn.CrossEntropyLoss())
    pool = [((torch.randint(0, 1000, (8, 64), device=dev),), torch.randint(0, 10, (8,), device=dev))]
    return inner, (lambda n: cycle(pool, n)), {"optimizer": "Adam(fused=True)" if fused else "Adam(foreach=False)",
                                               "param_tensors": len(list(model.parameters()))}


def whatif_pairs(dev, reps):
    """(name, optional, what, change, baseline builder, changed builder)."""
    return [
        ("dataloader-workers", False,
         f"SmallCNN(width 32) on 3x96x96, batch 32, SGD; DataLoader(pin_memory) over CpuWorkDataset ({reps} "
         "op chains per sample)",
         "DataLoader num_workers 0 -> 4", lambda: loader_side(dev, 0, reps), lambda: loader_side(dev, 4, reps)),
        ("amp-bf16-mlp", False,
         "WideMLP: 2 residual blocks LayerNorm-Linear(2048,8192)-GELU-Linear(8192,2048), Linear(2048,1000); "
         "4096 rows, CrossEntropyLoss, AdamW",
         "float32 -> torch.autocast(cuda, bfloat16) around forward and loss",
         lambda: amp_mlp_side(dev, False), lambda: amp_mlp_side(dev, True)),
        ("amp-bf16-transformer", True,
         "Embedding + nn.TransformerEncoder(4 layers, d_model 512, 8 heads, ff 2048) + Linear; batch 32 x 256 "
         "tokens, CrossEntropyLoss, AdamW",
         "float32 -> torch.autocast(cuda, bfloat16) around forward and loss",
         lambda: amp_transformer_side(dev, False), lambda: amp_transformer_side(dev, True)),
        ("adam-fused", True,
         "Embedding + nn.TransformerEncoder(8 layers, d_model 256, 4 heads, ff 1024) + Linear; batch 8 x 64 "
         "tokens, CrossEntropyLoss",
         "Adam(foreach=False) -> Adam(fused=True)", lambda: adam_side(dev, False), lambda: adam_side(dev, True)),
        # Last: a crash in graph capture or replay under the profiler would end this process.
        ("cuda-graphs", False,
         "LaunchBoundMLP: 24 x (Linear(256,256)-LayerNorm-GELU) + Linear(256,16), batch 64, MSELoss, SGD momentum",
         "eager -> whole iteration captured in one torch.cuda.CUDAGraph and replayed",
         lambda: graph_side(dev, False), lambda: graph_side(dev, True)),
    ]


def measure_side(run, gz_path, build, n_warmup, n_timed):
    step, batches, config = build()
    side = {"config": config}
    side["summary"] = record_trace(
        gz_path, lambda jp, active: profiled_loop(jp, batches(WAIT + WARMUP + active), step, active, WHATIF_SETTINGS))
    side["trace"] = os.path.relpath(gz_path, run.out_dir)
    side["unprofiled"] = timed_loop(batches(n_warmup + n_timed), step, n_warmup)
    return side


def run_whatif(run):
    folder = run.subdir("whatif")
    n_warmup, n_timed = (3, 10) if run.quick else (5, 30)
    reps, per_item_s = calibrate_reps()
    log(f"whatif: CpuWorkDataset calibrated to {reps} op chains, {per_item_s * 1e3:.2f} ms per sample")
    data = run.manifest.dataset("whatif", {
        "profiler": dict(WHATIF_SETTINGS, activities="CPU,CUDA", schedule={"wait": WAIT, "warmup": WARMUP,
                                                                            "active": ACTIVE, "repeat": 1}),
        "timing": {"warmup": n_warmup, "timed": n_timed},
        "iteration": "zero_grad, forward, loss, backward, optimizer ranges, then loss.item() (the CUDA-graph "
                     "side: copy inputs, replay, loss.item())",
        "speedup": "baseline unprofiled median / changed unprofiled median",
        "cpu_work_dataset": {"reps": reps, "measured_s_per_sample_main_process": per_item_s},
    })
    pairs = whatif_pairs(run.dev, reps)
    for i, (name, optional, what, change, build_baseline, build_changed) in enumerate(pairs):
        entry = {"pair": name, "what": what, "change": change}
        data["items"].append(entry)
        if optional and run.quick:
            entry["status"] = "skipped: --quick"
            continue
        # An optional pair leaves time for the required pairs after it.
        need = 40 + 25 * sum(not p[1] for p in pairs[i + 1:]) if optional else 25
        if not run.budget.allows(need, f"whatif {name}"):
            entry["status"] = "skipped: time budget"
            continue
        for side_name, build in (("baseline", build_baseline), ("changed", build_changed)):
            gz_path = os.path.join(folder, f"{name}-{side_name}.pt.trace.json.gz")
            try:
                entry[side_name] = measure_side(run, gz_path, build, n_warmup, n_timed)
                run.manifest.note(gz_path, f"what-if {name}, {side_name}: {what}; change: {change}")
                log(f"whatif {name} {side_name}: {entry[side_name]['unprofiled']['median_s'] * 1e3:.2f} ms/iter")
            except Exception as exc:
                log(f"whatif {name} {side_name} FAILED: {short_error(exc)}\n{traceback.format_exc()}")
                entry[side_name] = {"status": "failed", "error": short_error(exc)}
            free_cuda_memory()
        if "unprofiled" in entry["baseline"] and "unprofiled" in entry["changed"]:
            entry["speedup"] = entry["baseline"]["unprofiled"]["median_s"] / entry["changed"]["unprofiled"]["median_s"]
            entry["status"] = "ok"
            log(f"whatif {name}: measured speedup {entry['speedup']:.2f}x")
        else:
            entry["status"] = "failed"
        run.manifest.save()


# ----------------------------------------------------------------------------- multi-process

def ddp_rank_main(rank, world, port, run_dir, log_path, t0, quick):
    """One rank of the data-parallel job (see the docstring); writes its figures to .rankR.json."""
    die_with_parent()
    configure_log(log_path, t0, f"[w{world} rank{rank}] ")
    result_path = os.path.join(run_dir, f".rank{rank}.json")
    result = {"rank": rank, "data_delay_s": STRAGGLER_DELAY_S if rank == STRAGGLER_RANK else 0.0}
    try:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
        torch.cuda.set_device(0)
        dev = torch.device("cuda", 0)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
        torch.manual_seed(0)
        model = DistributedDataParallel(SmallCNN(width=32).to(dev), device_ids=[0])
        step = make_train_step(model, sgd(model), nn.CrossEntropyLoss())
        torch.manual_seed(1 + rank)
        pool = [((torch.randn(32, 3, 64, 64, device=dev),), torch.randint(0, 10, (32,), device=dev))
                for _ in range(2)]
        data_times = []

        def batches(n):
            for i in range(n):
                t = time.perf_counter()
                with record_function("data_loading"):
                    if result["data_delay_s"]:
                        time.sleep(result["data_delay_s"])  # the straggler's slow input pipeline
                    batch = pool[i % len(pool)]
                data_times.append(time.perf_counter() - t)
                yield batch

        n_warmup, n_timed = (2, 5) if quick else (3, 10)
        result["unprofiled"] = timed_loop(batches(n_warmup + n_timed), step, n_warmup)
        result["median_data_s"] = statistics.median(data_times[n_warmup:])
        gz_path = os.path.join(run_dir, f"rank{rank}.pt.trace.json.gz")
        # Every rank must run the same number of iterations, so no re-recording with fewer steps.
        result["summary"] = record_trace(
            gz_path, lambda jp, active: profiled_loop(jp, batches(WAIT + WARMUP + active), step, active,
                                                      MULTIPROC_SETTINGS), actives=(ACTIVE,))
        dist.barrier()
        result["status"] = "ok"
    except Exception as exc:
        result.update(status="failed", error=short_error(exc))
        log(f"FAILED: {short_error(exc)}\n{traceback.format_exc()}")
        raise
    finally:
        write_json(result_path, result)
        if dist.is_initialized():
            dist.destroy_process_group()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ddp_job(run, world, run_dir, timeout_s):
    port = free_port()
    ctx = torch.multiprocessing.start_processes(
        ddp_rank_main, args=(world, port, run_dir, _LOG["path"], _LOG["t0"], run.quick), nprocs=world,
        join=False, start_method="spawn")
    deadline = time.time() + timeout_s
    job = {"world_size": world, "port": port, "status": "ok"}
    try:
        while not ctx.join(timeout=2):
            if time.time() > deadline:
                job["status"] = f"timed out after {timeout_s} s; ranks killed"
                break
    except Exception as exc:  # a rank failed; join() has terminated the others
        job["status"] = f"failed: {short_error(exc)}"
    for proc in ctx.processes:
        if proc.is_alive():
            proc.kill()
            proc.join(10)
    job["ranks"] = []
    for rank in range(world):
        path = os.path.join(run_dir, f".rank{rank}.json")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                job["ranks"].append(json.load(f))
            os.remove(path)
        else:
            job["ranks"].append({"rank": rank, "status": "no result"})
    return job


def run_multiproc(run):
    folder = run.subdir("multiproc")
    data = run.manifest.dataset("multiproc", {
        "backend": "gloo (NCCL refuses several ranks on one GPU); DistributedDataParallel on CUDA, gradients "
                   "all-reduced through host memory",
        "profiler": dict(MULTIPROC_SETTINGS, activities="CPU,CUDA", schedule={"wait": WAIT, "warmup": WARMUP,
                                                                               "active": ACTIVE, "repeat": 1}),
        "straggler": {"rank": STRAGGLER_RANK, "sleep_s_per_iteration": STRAGGLER_DELAY_S,
                      "where": "inside record_function('data_loading')"},
        "bandwidth_limited_run": "not recorded: gloo on one host has no way to limit its bandwidth",
        "gpu_sharing": "all ranks on GPU 0, time-sliced (no MPS)",
    })
    if not (dist.is_available() and dist.is_gloo_available()):
        data["status"] = "skipped: torch.distributed with gloo is not available"
        log("SKIP multiproc: " + data["status"])
        run.manifest.save()
        return
    if "GLOO_SOCKET_IFNAME" not in os.environ and os.path.exists("/sys/class/net/lo"):
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # the host name may resolve to an interface that is down
    data["settings"]["GLOO_SOCKET_IFNAME"] = os.environ.get("GLOO_SOCKET_IFNAME")
    for world in ([2] if run.quick else [2, 4]):
        if not run.budget.allows(60, f"multiproc world {world}"):
            data["items"].append({"world_size": world, "status": "skipped: time budget"})
            continue
        run_dir = os.path.join(folder, f"ddp-gloo-w{world}")
        os.makedirs(run_dir, exist_ok=True)
        log(f"multiproc: DDP over gloo, {world} ranks")
        job = run_ddp_job(run, world, run_dir, timeout_s=120)
        for r in job["ranks"]:
            gz_path = os.path.join(run_dir, f"rank{r['rank']}.pt.trace.json.gz")
            if os.path.exists(gz_path):
                r["trace"] = os.path.relpath(gz_path, run.out_dir)
                run.manifest.note(gz_path, f"DDP (gloo) rank {r['rank']} of {world} on one GPU, SmallCNN(width 32) "
                                           f"3x64x64 batch 32, data delay {r.get('data_delay_s')} s per iteration")
            if "unprofiled" in r:
                log(f"multiproc w{world} rank {r['rank']}: {r['unprofiled']['median_s'] * 1e3:.2f} ms/iter, data "
                    f"{r['median_data_s'] * 1e3:.2f} ms")
        log(f"multiproc world {world}: {job['status']}")
        data["items"].append(job)
        run.manifest.save()


# ----------------------------------------------------------------------------- main

def print_table(out_dir, wall_s):
    rows = []
    for root, dirs, names in os.walk(out_dir):
        dirs.sort()
        for name in sorted(names):
            if not name.startswith("."):
                full = os.path.join(root, name)
                rows.append((os.path.relpath(full, out_dir), os.path.getsize(full)))
    width = max([len(r[0]) for r in rows] + [4])
    print(f"\n{'file':<{width}} {'bytes':>12}")
    for rel, size in rows:
        print(f"{rel:<{width}} {size:>12,}")
    print(f"{len(rows)} files, {sum(s for _, s in rows):,} bytes; wall time {wall_s:.1f} s", flush=True)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--only", default=",".join(STAGES),
                    help="comma-separated data sets to record, of " + ", ".join(STAGES))
    ap.add_argument("--quick", action="store_true", help="fewer batch sizes, iterations, pairs and ranks")
    ap.add_argument("--budget-s", type=float, default=540,
                    help="items that would start with less than their need of this wall time left are skipped")
    ap.add_argument("--in-process", action="store_true",
                    help="record in this process rather than in one child process per data set")
    args = ap.parse_args()
    only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = [s for s in only if s not in STAGES]
    if unknown:
        ap.error(f"unknown data set(s) {', '.join(unknown)}; choose from {', '.join(STAGES)}")
    args.only = only
    return args


def record_stages(args, out_dir, t0):
    """Records the chosen data sets in this process, one after the other."""
    die_with_parent()
    # Stopped by the parent with SIGTERM, a hung process prints every thread's stack before it is killed.
    faulthandler.register(signal.SIGTERM, all_threads=True, chain=False)
    env = environment()
    log(f"torch {env['torch_version']} (CUDA {env['cuda_version']}, cuDNN {env['cudnn_version']}), torchvision "
        f"{env['torchvision_version']}, GPU {env['gpu']} ({env['gpu_total_memory_bytes'] / 2**30:.1f} GiB); "
        f"recording {', '.join(args.only)}{' (quick)' if args.quick else ''}, budget {args.budget_s:.0f} s")
    manifest = Manifest(out_dir, env, sys.argv[1:])
    manifest.note(os.path.join(out_dir, "log.txt"), "progress log of every run into this folder")
    run = Run(out_dir, torch.device("cuda"), args.quick, Budget(args.budget_s), manifest)
    stage_fns = {"corpus": run_corpus, "batch": run_batch, "whatif": run_whatif, "multiproc": run_multiproc}
    chosen = [stage for stage in STAGES if stage in args.only]
    for i, stage in enumerate(chosen):
        run.budget.reserve_s = reserve_after(chosen, i)
        log(f"=== {stage}")
        try:
            stage_fns[stage](run)
        except Exception as exc:  # one data set failing must not stop the others
            log(f"{stage} FAILED: {short_error(exc)}\n{traceback.format_exc()}")
            manifest.doc["datasets"].setdefault(stage, {})["error"] = short_error(exc)
        free_cuda_memory()
        manifest.save()
    manifest.doc["runs"][-1]["wall_s"] = round(time.time() - t0, 1)
    manifest.save()


def stop_stage_process(proc):
    """SIGTERM makes the stage process print its stacks; then it is killed, and its search or
    rank processes die with it (die_with_parent), its DataLoader workers by themselves."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def reserve_after(chosen, i):
    return sum(STAGE_RESERVE_S[stage] for stage in chosen[i + 1:])


def run_stage_processes(args, out_dir):
    """Runs each data set in a process of its own, so that a crash or a hang (a segfault, a
    stuck kernel) loses that data set's unfinished items only."""
    budget = Budget(args.budget_s)
    chosen = [stage for stage in STAGES if stage in args.only]
    stages = []
    for i, stage in enumerate(chosen):
        left = budget.left() - reserve_after(chosen, i)
        if left < 30:
            log(f"SKIP {stage}: {left:.0f} s of the budget left")
            stages.append({"stage": stage, "status": "skipped: time budget"})
            continue
        cmd = [sys.executable, os.path.abspath(__file__), out_dir, "--only", stage, "--budget-s", f"{left:.0f}",
               "--in-process"] + (["--quick"] if args.quick else [])
        limit = min(STAGE_LIMIT_S[stage], left + 60)
        t0 = time.time()
        proc = subprocess.Popen(cmd)
        try:
            status = f"exit code {proc.wait(limit)}"
        except subprocess.TimeoutExpired:
            stop_stage_process(proc)
            status = f"killed after {limit:.0f} s"
        log(f"{stage} process: {status} after {time.time() - t0:.0f} s")
        stages.append({"stage": stage, "status": status, "wall_s": round(time.time() - t0, 1)})
    return stages


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("CUDA is not available: these recordings need an NVIDIA GPU")
    t0 = time.time()
    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    configure_log(os.path.join(out_dir, "log.txt"), t0)
    if args.in_process:
        record_stages(args, out_dir, t0)
        return
    stages = run_stage_processes(args, out_dir)
    wall = time.time() - t0
    manifest = Manifest(out_dir, None, sys.argv[1:])
    manifest.doc["runs"][-1].update(started_unix_time=int(t0), stage_processes=stages, wall_s=round(wall, 1))
    for entry in stages:
        if "wall_s" in entry and entry["stage"] in manifest.doc["datasets"]:  # it ran now
            manifest.doc["datasets"][entry["stage"]]["process_status"] = entry["status"]
    manifest.save()
    log(f"done in {wall:.1f} s")
    print_table(out_dir, wall)


if __name__ == "__main__":
    main()
