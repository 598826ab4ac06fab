#!/usr/bin/env python3
"""Record real PyTorch CPU traces of today's training and serving loop shapes, each with
its truth known from how it was made, for testing how Strata finds iterations and phases.

Needs PyTorch (tested: Debian's python3-torch 1.13, CPU only) and torchvision; no
network, no GPU. Models are randomly initialised and all data is synthetic. Run:

    /usr/bin/python3 tools/record_cpu_workloads.py [OUT_DIR]    # default tests/data/cpu-workloads

It writes the gzipped traces below into OUT_DIR, plus OUT_DIR/truth.json (per file, what
is known from construction: the steps recorded and, per step, the named chunks in order
with their phase), and then checks every file against its truth.

Profiler mode. Debian's torch 1.13 is built without Kineto (torch.autograd.kineto_available()
is False): there, torch.profiler.profile(...) records nothing and exports "[]". So every
file is recorded with the legacy autograd profiler,

    torch.autograd.profiler.profile(use_kineto=False, record_shapes=True)

and written by its export_chrome_trace(): a JSON *list* of "X" events with no `cat`, pid
"CPU functions", tid = PyTorch's small per-thread id (1 = the first thread that ran an
op), integer µs `ts` relative to the profiler's start, empty `args` (record_shapes does
not reach this exporter), no flows. Steps are marked as torch.profiler's prof.step()
marks them: a record_function("ProfilerStep#N") around each step (that is what
prof.step() does internally). As with schedule(wait=0, warmup=1, active=K), step 0 runs
before the profiler starts (warm-up, not recorded) and the trace holds ProfilerStep#1..#K.
All threads are 1 (torch.set_num_threads(1)); the machine had 2 cores shared with a
compiler, so durations are noisy.

Workloads (file: what it is; truth):

pipeline-1f1b-rank{0,1}.json.gz
    Two processes (torch.multiprocessing.spawn, gloo on 127.0.0.1) running a tiny GPT
    (vocab 128, d 64, 4 heads, seq 16, micro-batch 2) split in 2 pipeline stages (rank 0:
    embedding + 2 blocks; rank 1: 2 blocks + final LayerNorm + head + cross-entropy), 6
    micro-batches per step, Megatron's non-interleaved 1F1B order (rank 0: F0 | F1 B0 F2 B1
    F3 B2 F4 B3 F5 B4 | B5; rank 1: F0 B0 F1 B1 ... F5 B5). Each micro-batch's forward is
    record_function("forward_chunk mb=K") (on rank 1 it includes the loss), its backward
    "backward_chunk mb=K". Activations go rank 0 -> 1, gradients 1 -> 0, outside the chunk
    ranges, posted in Megatron's pairs (send_forward_recv_backward,
    send_backward_recv_forward: isend + irecv, then wait on both; gloo completes a send
    only once the peer posted its receive). Each step: optimizer.zero_grad() first, then
    the schedule, then Adam.step() (PyTorch's own Optimizer.* ranges, no named range).
    3 recorded steps (ProfilerStep#1..#3) per rank; both ranks barrier just before starting
    their profilers (ts of the two files are each relative to their own start).

pipeline-dualpipe-like-rank{0,1}.json.gz
    Same model and ranks, but each stage is one block split into an attention part and an
    MLP part, and chunks are named as in DeepSeek-V3's DualPipe overlap figure (the DualPipe
    code itself has no record_function ranges): attn(F), mlp(F) (forward), mlp(B), attn(B)
    (input gradient only: torch.autograd.grad(out, chunk_input, grad, retain_graph=True)),
    mlp(W), attn(W) (weight gradient: torch.autograd.grad(out, chunk_params, grad), added
    into .grad). Zero-bubble-like order with forward/backward chunks of different
    micro-batches interleaved the DualPipe way: a pair (F of mb a, B of mb b) runs as
    attn(F)a, mlp(B)b, mlp(F)a, attn(B)b; the input gradient is sent (dist.isend), then
    mlp(W)b, attn(W)b. As in DualPipe's _commit_and_wait_comm, pending sends are waited on
    before each next compute item; receives are blocking dist.recv.
    Rank 0: F0 F1 | (F2,B0) W0 (F3,B1) W1 (F4,B2) W2 (F5,B3) W3 | B4 W4 B5 W5.
    Rank 1: F0 | (F1,B0) W0 (F2,B1) W1 ... (F5,B4) W4 | B5 W5. 6 micro-batches, 3 steps,
    ProfilerStep#1..#3 in both files. The loss is inside rank 1's mlp(F).

torchrec-like-pipeline.json.gz
    DLRM-like model (4 nn.EmbeddingBag tables 4096x16 sum-pooled, bottom MLP 13-64-16,
    pairwise dot interaction, top MLP 26-64-1, BCE-with-logits per sample) trained by a
    loop that imitates TorchRec's TrainPipelineSparseDist.progress() (2022-23 version) with
    its named ranges in its order: "## zero_grad ##", "## copy_batch_to_gpu ##" (next() on
    a real DataLoader over an IterableDataset, then a copy), "## wait_for_batch ##" (empty
    on CPU, as in TorchRec without streams), "## forward ##" (model on batch i, returns the
    per-sample losses), "## sparse_data_dist ##" (input distribution of batch i+1 emulated
    locally for 2 virtual row-wise shards: split per table, bucketize, stable sort,
    index_select, bincount, cat "all-to-all", unique/dedup, offsets - real work, measured
    at 0.39-0.55 of the step; the checks require >= 0.2), "## backward ##", "## optimizer ##" (Adagrad.step).
    The pipeline is filled (batches 0 and 1 fetched, batch 0 distributed) before the
    profiler starts. 4 recorded steps ProfilerStep#1..#4.

activation-checkpointing.json.gz
    6 residual MLP blocks (LayerNorm, Linear 128-512, GELU, Linear 512-128), batch 64, each
    block run under torch.utils.checkpoint.checkpoint (reentrant, the 1.13 default), plus a
    head; ranges "forward", "loss", "backward", "optimizer" (SGD step + zero_grad) inside
    ProfilerStep#1..#3. The forward recompute of each block runs inside "backward"
    (CheckpointFunctionBackward).

serving-like.json.gz and serving-like-vllm.json.gz
    A hand-written causal decoder-only LM (vocab 256, d 64, 4 layers, 4 heads, per-request
    KV cache) served under torch.no_grad() by a continuous-batching loop: requests A
    (prompt 12, 10 new tokens) and B (prompt 8, 10 new tokens) arrive first, C (prompt 10, 8
    new tokens) after 4 decode steps. 13 engine steps: EXTEND(A,B), 4x DECODE(A,B),
    EXTEND(C), 5x DECODE(A,B,C), 2x DECODE(C). Each engine step is one range: in
    serving-like.json.gz "step[EXTEND bs=2 tokens=20]" / "step[DECODE bs=2]" (SGLang-like),
    in serving-like-vllm.json.gz "execute_model" for every step (vLLM-like, prefill and decode not told apart
    by name). No ProfilerStep ranges. Prefill runs each prompt causally and fills the
    cache; decode runs one token per running request; sampling is greedy (argmax). Between
    the ranges: the scheduler's bookkeeping (torch.tensor of the sampled ids).

inference-no-steps.json.gz
    A ViT-like classifier (Conv2d patch embedding 8x8 on 3x32x32 -> 16 tokens of d 64, then
    8 identical pre-norm blocks of attention + MLP, LayerNorm, mean pool, Linear head,
    softmax) called 5 times on a fixed batch of 8 under torch.no_grad(), with no ranges and
    no ProfilerStep: 5 iterations, each with 8 identical per-block op sequences that a
    naive period finder could take for the period.

train-optimizer-only.json.gz
    torchvision resnet18 (10 classes) trained on torchvision FakeData (3x32x32, ToTensor)
    through a real DataLoader (batch 8, num_workers 0), SGD with momentum, loop
    "for x, y in loader: zero_grad; forward; cross-entropy; backward; step", 4 recorded
    iterations, no ProfilerStep and no named ranges: only PyTorch's own
    enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, Optimizer.zero_grad#SGD.zero_grad
    and Optimizer.step#SGD.step (4 each; the loop breaks after 4, so there is no fifth,
    StopIteration next()).
"""

import argparse
import contextlib
import gzip
import json
import math
import os
import shutil
import socket
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd.profiler import profile, record_function

# --------------------------------------------------------------------------- common

WARMUP_STEPS = 1  # step 0 runs before the profiler starts


_THREADS_SET = []


def set_threads():
    torch.set_num_threads(1)
    if not _THREADS_SET:  # a second call aborts the process (c10::Error, not catchable)
        torch.set_num_interop_threads(1)
        _THREADS_SET.append(True)


def new_profiler():
    # Kineto is absent from Debian's 1.13 build; use_kineto=False works with and without it.
    return profile(use_kineto=False, record_shapes=True)


def gzip_file(src, dst):
    """Gzip src into dst reproducibly (no name, mtime 0), remove src."""
    with open(src, "rb") as fin, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as fout:
            shutil.copyfileobj(fin, fout)
    os.remove(src)


def export(prof, out_dir, name):
    tmp = os.path.join(out_dir, name + ".tmp")
    prof.export_chrome_trace(tmp)
    gzip_file(tmp, os.path.join(out_dir, name + ".json.gz"))


class Log:
    """What the recording did, in order: steps and, per step, the named chunks."""

    def __init__(self):
        self.steps = []      # [{"name": ..., "chunks": [...]}]
        self.loose = []      # chunks outside any step (files with no ProfilerStep)
        self.notes = {}      # chunk name -> what it holds

    @contextlib.contextmanager
    def step(self, index):
        name = "ProfilerStep#%d" % index
        self.steps.append({"name": name, "chunks": []})
        with record_function(name):
            yield

    def chunk(self, name, phase, what=None, **meta):
        entry = {"name": name, "phase": phase}
        entry.update(meta)
        if what:
            self.notes[name] = what
        (self.steps[-1]["chunks"] if self.steps else self.loose).append(entry)
        return record_function(name)


class NullLog(Log):
    """Used for warm-up steps: same code path, nothing logged, no ProfilerStep range."""

    @contextlib.contextmanager
    def step(self, index):
        yield

    def chunk(self, name, phase, what=None, **meta):
        return record_function(name)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- tiny GPT parts

VOCAB, D, HEADS, SEQ, MB = 128, 64, 4, 16, 2


class Attn(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln(x)).split(d, dim=-1)
        q = q.view(b, t, self.heads, -1).transpose(1, 2)
        k = k.view(b, t, self.heads, -1).transpose(1, 2)
        v = v.view(b, t, self.heads, -1).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return x + self.proj(y)


class MLP(nn.Module):
    def __init__(self, d=D):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.mlp = MLP()

    def forward(self, x):
        return self.mlp(self.attn(x))


class Stage0(nn.Module):
    def __init__(self, blocks=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(SEQ, D) * 0.02)
        self.blocks = nn.Sequential(*[Block() for _ in range(blocks)])

    def forward(self, tokens):
        return self.blocks(self.tok(tokens) + self.pos)


class Stage1(nn.Module):
    def __init__(self, blocks=2):
        super().__init__()
        self.blocks = nn.Sequential(*[Block() for _ in range(blocks)])
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, x, labels):
        logits = self.head(self.ln(self.blocks(x)))
        return F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1))


# --------------------------------------------------------------------------- pipeline (2 ranks)

N_MICRO = 6
PIPE_STEPS = 3


def _micro_data(step, rank):
    g = torch.Generator().manual_seed(1000 + step)
    tokens = torch.randint(0, VOCAB, (N_MICRO, MB, SEQ), generator=g)
    labels = torch.randint(0, VOCAB, (N_MICRO, MB, SEQ), generator=g)
    return tokens, labels


def one_f_one_b_order(rank, world=2, m=N_MICRO):
    """Megatron's non-interleaved 1F1B: list of ("F"|"B", microbatch)."""
    warm = min(world - rank - 1, m)
    order = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        order.append(("F", warm + i))
        order.append(("B", i))
    order += [("B", i) for i in range(m - warm, m)]
    return order


def _p2p(send=None, dst=None, recv_shape=None, src=None):
    """isend and/or irecv, then wait on both (Megatron's send_forward_recv_backward etc.).
    Gloo completes a send only once the peer has posted the matching receive, so paired
    exchanges must be posted together."""
    dist = torch.distributed
    works, out = [], None
    if send is not None:
        works.append(dist.isend(send, dst=dst))
    if recv_shape is not None:
        out = torch.empty(recv_shape)
        works.append(dist.irecv(out, src=src))
    for w in works:
        w.wait()
    return out


def _step_1f1b(rank, model, opt, step, log):
    """Megatron's forward_backward_pipelining_without_interleaving for 2 stages."""
    tokens, labels = _micro_data(step, rank)
    opt.zero_grad()
    shape = (MB, SEQ, D)
    order = one_f_one_b_order(rank)
    inputs, outputs = {}, {}

    def forward(mb):
        with log.chunk("forward_chunk mb=%d" % mb, "forward", mb=mb, includes_loss=(rank == 1)):
            if rank == 0:
                outputs[mb] = model(tokens[mb])
            else:
                outputs[mb] = model(inputs[mb], labels[mb]) / N_MICRO

    def backward(mb, grad):
        with log.chunk("backward_chunk mb=%d" % mb, "backward", mb=mb):
            outputs.pop(mb).backward(grad)

    if rank == 0:  # first stage: F0 | F1 B0 ... F5 B4 | B5
        forward(0)
        _p2p(send=outputs[0].detach(), dst=1)                                   # send_forward
        for i in range(N_MICRO - 1):
            forward(i + 1)
            g = _p2p(send=outputs[i + 1].detach(), dst=1, recv_shape=shape, src=1)  # send_forward_recv_backward
            backward(i, g)
        backward(N_MICRO - 1, _p2p(recv_shape=shape, src=1))                   # recv_backward
    else:  # last stage: F0 B0 F1 B1 ... F5 B5
        x = _p2p(recv_shape=shape, src=0)                                       # recv_forward
        for i in range(N_MICRO):
            inputs[i] = x.requires_grad_()
            forward(i)
            backward(i, None)
            gx = inputs.pop(i).grad
            if i < N_MICRO - 1:
                x = _p2p(send=gx, dst=0, recv_shape=shape, src=0)                # send_backward_recv_forward
            else:
                _p2p(send=gx, dst=0)                                           # send_backward
    assert [(c["name"].split("_")[0][0].upper(), c["mb"]) for c in log.steps[-1]["chunks"]] == \
        order if log.steps else True
    opt.step()


class HalfStage(nn.Module):
    """One block of a stage split in its attention part and its MLP part (DualPipe-like)."""

    def __init__(self, rank):
        super().__init__()
        self.rank = rank
        if rank == 0:
            self.tok = nn.Embedding(VOCAB, D)
            self.pos = nn.Parameter(torch.randn(SEQ, D) * 0.02)
        self.attn = Attn()
        self.mlp = MLP()
        if rank == 1:
            self.ln = nn.LayerNorm(D)
            self.head = nn.Linear(D, VOCAB)

    def attn_params(self):
        ps = list(self.attn.parameters())
        if self.rank == 0:
            ps = list(self.tok.parameters()) + [self.pos] + ps
        return ps

    def mlp_params(self):
        ps = list(self.mlp.parameters())
        if self.rank == 1:
            ps += list(self.ln.parameters()) + list(self.head.parameters())
        return ps


def _dualpipe_order(rank, m=N_MICRO):
    """List of items: ("F", a), ("B", b), ("FB", a, b), ("W", b)."""
    if rank == 0:
        order = [("F", 0), ("F", 1)]
        for b in range(m - 2):
            order += [("FB", b + 2, b), ("W", b)]
        for b in range(m - 2, m):
            order += [("B", b), ("W", b)]
    else:
        order = [("F", 0)]
        for b in range(m - 1):
            order += [("FB", b + 1, b), ("W", b)]
        order += [("B", m - 1), ("W", m - 1)]
    return order


def _step_dualpipe(rank, model, opt, step, log):
    dist = torch.distributed
    tokens, labels = _micro_data(step, rank)
    opt.zero_grad()
    shape = (MB, SEQ, D)
    st = {}  # mb -> dict of tensors
    pending = []

    def recv_forward(a):
        if rank == 1:
            x = torch.empty(shape)
            dist.recv(x, src=0)
            st[a] = {"in": x.requires_grad_()}
        else:
            st[a] = {}

    def recv_backward(b):
        if rank == 0:
            g = torch.empty(shape)
            dist.recv(g, src=1)
            st[b]["gout"] = g
        else:
            st[b]["gout"] = None  # the loss

    def attn_f(a):
        s = st[a]
        with log.chunk("attn(F)", "forward", mb=a, part="attn"):
            if rank == 0:
                s["in"] = model.tok(tokens[a]) + model.pos
            s["attn_out"] = model.attn(s["in"])

    def mlp_f(a):
        s = st[a]
        with log.chunk("mlp(F)", "forward", mb=a, part="mlp", includes_loss=(rank == 1)):
            s["mlp_in"] = s["attn_out"].detach().requires_grad_()
            y = model.mlp(s["mlp_in"])
            if rank == 1:
                logits = model.head(model.ln(y))
                y = F.cross_entropy(logits.view(-1, VOCAB), labels[a].view(-1)) / N_MICRO
            s["out"] = y

    def send_forward(a):
        if rank == 0:
            act = st[a]["out"].detach()
            pending.append((dist.isend(act, dst=1), act))

    def mlp_b(b):
        s = st[b]
        with log.chunk("mlp(B)", "backward", mb=b, part="mlp"):
            (s["g_mlp_in"],) = torch.autograd.grad(s["out"], s["mlp_in"], s["gout"],
                                                   retain_graph=True)

    def attn_b(b):
        s = st[b]
        with log.chunk("attn(B)", "backward", mb=b, part="attn"):
            (s["g_in"],) = torch.autograd.grad(s["attn_out"], s["in"], s["g_mlp_in"],
                                               retain_graph=True)

    def send_backward(b):
        if rank == 1:
            g = st[b]["g_in"]
            pending.append((dist.isend(g, dst=0), g))

    def accumulate(params, grads):
        for p, g in zip(params, grads):
            if p.grad is None:
                p.grad = g
            else:
                p.grad.add_(g)

    def weight(b):
        s = st.pop(b)
        with log.chunk("mlp(W)", "backward-weight", mb=b, part="mlp"):
            ps = model.mlp_params()
            accumulate(ps, torch.autograd.grad(s["out"], ps, s["gout"]))
        with log.chunk("attn(W)", "backward-weight", mb=b, part="attn"):
            ps = model.attn_params()
            accumulate(ps, torch.autograd.grad(s["attn_out"], ps, s["g_mlp_in"]))

    def commit_and_wait():  # as DualPipe's _commit_and_wait_comm before each compute chunk
        for work, _ in pending:
            work.wait()
        del pending[:]

    for item in _dualpipe_order(rank):
        commit_and_wait()
        if item[0] == "F":
            recv_forward(item[1])
            attn_f(item[1])
            mlp_f(item[1])
            send_forward(item[1])
        elif item[0] == "B":
            recv_backward(item[1])
            mlp_b(item[1])
            attn_b(item[1])
            send_backward(item[1])
        elif item[0] == "FB":
            a, b = item[1], item[2]
            recv_forward(a)
            recv_backward(b)
            attn_f(a)
            mlp_b(b)
            mlp_f(a)
            attn_b(b)
            send_forward(a)
            send_backward(b)
        else:
            weight(item[1])
    commit_and_wait()
    opt.step()


def _pipeline_worker(rank, kind, port, out_dir):
    set_threads()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist = torch.distributed
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(rank)
    if kind == "1f1b":
        model = Stage0() if rank == 0 else Stage1()
        step_fn = _step_1f1b
        name = "pipeline-1f1b-rank%d" % rank
    else:
        model = HalfStage(rank)
        step_fn = _step_dualpipe
        name = "pipeline-dualpipe-like-rank%d" % rank
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for s in range(WARMUP_STEPS):
        step_fn(rank, model, opt, s, NullLog())
    dist.barrier()
    log = Log()
    t0 = time.time_ns()
    with new_profiler() as prof:
        for s in range(WARMUP_STEPS, WARMUP_STEPS + PIPE_STEPS):
            with log.step(s):
                step_fn(rank, model, opt, s, log)
    dist.barrier()
    export(prof, out_dir, name)
    with open(os.path.join(out_dir, name + ".truth.tmp"), "w") as f:
        json.dump({"steps": log.steps, "profiler_enter_unix_ns": t0}, f)
    dist.destroy_process_group()


def record_pipeline(out_dir, kind):
    import torch.multiprocessing as mp

    mp.spawn(_pipeline_worker, args=(kind, free_port(), out_dir), nprocs=2, join=True)
    result = {}
    for rank in range(2):
        stem = ("pipeline-1f1b-rank%d" if kind == "1f1b" else "pipeline-dualpipe-like-rank%d") % rank
        tpath = os.path.join(out_dir, stem + ".truth.tmp")
        with open(tpath) as f:
            result[stem + ".json.gz"] = json.load(f)
        os.remove(tpath)
    return result


# --------------------------------------------------------------------------- TorchRec-like

class DLRM(nn.Module):
    def __init__(self, tables=4, rows=4096, dim=16, dense_in=13):
        super().__init__()
        self.tables = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.bottom = nn.Sequential(nn.Linear(dense_in, 64), nn.ReLU(), nn.Linear(64, dim), nn.ReLU())
        n = tables + 1
        self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, batch):
        dense = self.bottom(batch["dense"])
        pooled = [t(v, o) for t, (v, o) in zip(self.tables, batch["sparse"])]
        feats = torch.stack([dense] + pooled, dim=1)            # B x (T+1) x dim
        inter = feats @ feats.transpose(1, 2)
        iu = torch.triu_indices(feats.shape[1], feats.shape[1], 1)
        logits = self.top(torch.cat([dense, inter[:, iu[0], iu[1]]], dim=1)).squeeze(1)
        losses = F.binary_cross_entropy_with_logits(logits, batch["label"], reduction="none")
        return losses, logits


class RecBatches(torch.utils.data.IterableDataset):
    """Yields whole batches, KJT-like: values of all tables concatenated, lengths T x B."""

    def __init__(self, batch=256, tables=4, rows=4096, pooling=24, n=64):
        self.batch, self.tables, self.rows, self.pooling, self.n = batch, tables, rows, pooling, n

    def __iter__(self):
        g = torch.Generator().manual_seed(7)
        for _ in range(self.n):
            lengths = torch.randint(1, 2 * self.pooling, (self.tables, self.batch), generator=g)
            values = torch.randint(0, self.rows, (int(lengths.sum()),), generator=g)
            yield {"dense": torch.rand(self.batch, 13, generator=g),
                   "values": values, "lengths": lengths,
                   "label": torch.randint(0, 2, (self.batch,), generator=g).float()}


def sparse_data_dist(batch, rows=4096, shards=2, rounds=3):
    """Emulated input distribution of one batch (row-wise sharding over `shards` virtual
    ranks, all local): returns per table (unique values, offsets) for the EmbeddingBags."""
    lengths = batch["lengths"]
    tables, bsz = lengths.shape
    per_table = lengths.sum(dim=1).tolist()
    out = []
    for t, vals in enumerate(batch["values"].split(per_table)):
        lens = lengths[t]
        sample = torch.repeat_interleave(torch.arange(bsz), lens)
        for _ in range(rounds):  # splits exchange, values exchange, weights/ids exchange
            bucket = torch.div(vals, rows // shards, rounding_mode="floor")
            key = bucket * bsz + sample
            order = torch.argsort(key, stable=True)
            sent_vals = vals.index_select(0, order)
            sent_sample = sample.index_select(0, order)
            counts = torch.bincount(bucket, minlength=shards)
            recv = torch.cat(list(sent_vals.split(counts.tolist())))          # "all-to-all"
            recv_sample = torch.cat(list(sent_sample.split(counts.tolist())))
            back = torch.argsort(recv_sample, stable=True)                     # regroup by sample
            vals, sample = recv.index_select(0, back), recv_sample.index_select(0, back)
        uniq, inverse = torch.unique(vals, return_inverse=True)              # dedup
        vals = uniq.index_select(0, inverse)
        offsets = torch.zeros(bsz, dtype=torch.long)
        offsets[1:] = torch.cumsum(torch.bincount(sample, minlength=bsz), 0)[:-1]
        out.append((vals, offsets))
    return {"dense": batch["dense"], "sparse": out, "label": batch["label"]}


def record_torchrec(out_dir, steps=4):
    set_threads()
    torch.manual_seed(0)
    model = DLRM()
    opt = torch.optim.Adagrad(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(RecBatches(), batch_size=None, num_workers=0)
    it = iter(loader)

    def to_device(b):
        return {k: v.to("cpu", copy=True) for k, v in b.items()}

    # TrainPipelineSparseDist._connect / _fill_pipeline: batch 0 copied and distributed,
    # batch 1 copied, before the first progress().
    state = {"i": sparse_data_dist(to_device(next(it))), "ip1": to_device(next(it))}

    def progress(log):
        with log.chunk("## zero_grad ##", "optimizer", what="optimizer.zero_grad()"):
            opt.zero_grad()
        with log.chunk("## copy_batch_to_gpu ##", "data", what="next(dataloader) of batch i+2 + copy"):
            ip2 = to_device(next(it))
        with log.chunk("## wait_for_batch ##", "data", what="empty on CPU"):
            pass
        with log.chunk("## forward ##", "forward", what="model(batch i), includes the per-sample BCE loss"):
            losses, _ = model(state["i"])
        with log.chunk("## sparse_data_dist ##", "input distribution", what="input dist of batch i+1"):
            dist_ip1 = sparse_data_dist(state["ip1"])
        with log.chunk("## backward ##", "backward", what="torch.sum(losses).backward()"):
            torch.sum(losses, dim=0).backward()
        with log.chunk("## optimizer ##", "optimizer", what="Adagrad.step()"):
            opt.step()
        state["i"], state["ip1"] = dist_ip1, ip2

    for s in range(WARMUP_STEPS):
        progress(NullLog())
    log = Log()
    with new_profiler() as prof:
        for s in range(WARMUP_STEPS, WARMUP_STEPS + steps):
            with log.step(s):
                progress(log)
    export(prof, out_dir, "torchrec-like-pipeline")
    return {"torchrec-like-pipeline.json.gz": {"steps": log.steps, "chunk_notes": log.notes}}


# --------------------------------------------------------------------------- activation checkpointing

class ResBlock(nn.Module):
    def __init__(self, d=128):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x))))


def record_checkpointing(out_dir, steps=3):
    from torch.utils.checkpoint import checkpoint

    set_threads()
    torch.manual_seed(0)
    blocks = nn.ModuleList(ResBlock() for _ in range(6))
    head = nn.Linear(128, 10)
    params = list(blocks.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    xs = torch.randn(WARMUP_STEPS + steps, 64, 128, generator=g)
    ys = torch.randint(0, 10, (WARMUP_STEPS + steps, 64), generator=g)

    def train_step(i, log):
        with log.chunk("forward", "forward", what="6 checkpointed blocks + head"):
            h = xs[i].requires_grad_()
            for b in blocks:
                h = checkpoint(b, h)
            logits = head(h)
        with log.chunk("loss", "loss"):
            loss = F.cross_entropy(logits, ys[i])
        with log.chunk("backward", "backward", what="includes the forward recompute of the 6 blocks"):
            loss.backward()
        with log.chunk("optimizer", "optimizer", what="SGD.step() + zero_grad()"):
            opt.step()
            opt.zero_grad()

    for s in range(WARMUP_STEPS):
        train_step(s, NullLog())
    log = Log()
    with new_profiler() as prof:
        for s in range(WARMUP_STEPS, WARMUP_STEPS + steps):
            with log.step(s):
                train_step(s, log)
    export(prof, out_dir, "activation-checkpointing")
    return {"activation-checkpointing.json.gz": {"steps": log.steps, "chunk_notes": log.notes}}


# --------------------------------------------------------------------------- serving

class TinyLM(nn.Module):
    def __init__(self, vocab=256, d=64, layers=4, heads=4):
        super().__init__()
        self.vocab, self.d, self.heads = vocab, d, heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(64, d)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "o": nn.Linear(d, d),
                "ln2": nn.LayerNorm(d), "fc1": nn.Linear(d, 4 * d), "fc2": nn.Linear(4 * d, d)}))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def _attend(self, q, k, v, causal):
        # q: tq x H x hd, k/v: tk x H x hd
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        if causal:
            tq, tk = q.shape[1], k.shape[1]
            att = att.masked_fill(torch.ones(tq, tk, dtype=torch.bool).triu(1), float("-inf"))
        return (att.softmax(-1) @ v).transpose(0, 1).reshape(q.shape[1], -1)

    def forward(self, reqs, prefill):
        """reqs: list of dicts with "ids" (new tokens, 1-D) and "cache" (per layer [k, v]).
        Tokens of all requests are packed (ragged, as in SGLang's extend/decode batches)."""
        lens = [len(r["ids"]) for r in reqs]
        pos = torch.cat([torch.arange(r["pos"], r["pos"] + n) for r, n in zip(reqs, lens)])
        h = self.tok(torch.cat([r["ids"] for r in reqs])) + self.pos(pos)
        hd = self.d // self.heads
        for li, L in enumerate(self.layers):
            qkv = L["qkv"](L["ln1"](h)).view(-1, 3, self.heads, hd)
            outs = []
            for r, q, k, v in zip(reqs, *[t.split(lens) for t in qkv.unbind(1)]):
                cache = r["cache"][li]
                if cache:
                    k, v = torch.cat([cache[0], k]), torch.cat([cache[1], v])
                r["cache"][li] = [k, v]
                outs.append(self._attend(q, k, v, causal=prefill))
            h = h + L["o"](torch.cat(outs))
            h = h + L["fc2"](F.gelu(L["fc1"](L["ln2"](h))))
        last = torch.cumsum(torch.tensor(lens), 0) - 1
        return self.head(self.ln(h.index_select(0, last)))


def serving_schedule():
    """(kind, request names) per engine step, from a continuous-batching scheduler."""
    return ([("EXTEND", ["A", "B"])] + [("DECODE", ["A", "B"])] * 4 + [("EXTEND", ["C"])]
            + [("DECODE", ["A", "B", "C"])] * 5 + [("DECODE", ["C"])] * 2)


def record_serving(out_dir, style):
    set_threads()
    torch.manual_seed(0)
    model = TinyLM().eval()
    g = torch.Generator().manual_seed(3)
    prompts = {"A": 12, "B": 8, "C": 10}
    max_new = {"A": 10, "B": 10, "C": 8}

    def new_requests():
        return {n: {"ids": torch.randint(0, 256, (p,), generator=g), "pos": 0, "out": [],
                    "cache": [[] for _ in model.layers]} for n, p in prompts.items()}

    def engine_step(kind, names, reqs, log):
        batch = [reqs[n] for n in names]
        tokens = sum(len(r["ids"]) for r in batch)
        if style == "sglang":
            name = ("step[EXTEND bs=%d tokens=%d]" % (len(batch), tokens) if kind == "EXTEND"
                    else "step[DECODE bs=%d]" % len(batch))
        else:
            name = "execute_model"
        phase = "prefill" if kind == "EXTEND" else "decode"
        with log.chunk(name, phase, requests=names, batch_size=len(batch), new_tokens=tokens):
            logits = model(batch, prefill=(kind == "EXTEND"))
            next_ids = logits.argmax(-1)
        for r, t in zip(batch, next_ids.tolist()):   # scheduler bookkeeping, outside the range
            r["pos"] += len(r["ids"])
            r["out"].append(t)
            r["ids"] = torch.tensor([t])

    with torch.no_grad():
        warm = new_requests()
        for kind, names in serving_schedule()[:2]:
            engine_step(kind, names, warm, NullLog())
        reqs = new_requests()
        log = Log()
        with new_profiler() as prof:
            for kind, names in serving_schedule():
                engine_step(kind, names, reqs, log)
    for n, r in reqs.items():
        assert len(r["out"]) == max_new[n], (n, len(r["out"]))
    stem = "serving-like" if style == "sglang" else "serving-like-vllm"
    export(prof, out_dir, stem)
    return {stem + ".json.gz": {"steps": [], "engine_steps": log.loose}}


# --------------------------------------------------------------------------- inference, no steps

class ViTBlock(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.attn = Attn(d, 4)
        self.mlp = MLP(d)

    def forward(self, x):
        return self.mlp(self.attn(x))


class TinyViT(nn.Module):
    def __init__(self, d=64, depth=8, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, d, kernel_size=8, stride=8)
        self.blocks = nn.Sequential(*[ViTBlock(d) for _ in range(depth)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = self.ln(self.blocks(x))
        return self.head(x.mean(dim=1)).softmax(-1)


def record_inference_no_steps(out_dir, iters=5):
    set_threads()
    torch.manual_seed(0)
    model = TinyViT().eval()
    img = torch.randn(8, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        model(img)  # warm-up, not recorded
        with new_profiler() as prof:
            for _ in range(iters):
                model(img)
    export(prof, out_dir, "inference-no-steps")
    return {"inference-no-steps.json.gz": {"steps": []}}


# --------------------------------------------------------------------------- train, optimizer markers only

def record_train_optimizer_only(out_dir, iters=4):
    import torchvision
    import torchvision.transforms as T

    set_threads()
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).train()
    data = torchvision.datasets.FakeData(size=8 * (iters + 2), image_size=(3, 32, 32),
                                         num_classes=10, transform=T.ToTensor(), random_offset=0)
    loader = torch.utils.data.DataLoader(data, batch_size=8, num_workers=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    it = iter(loader)

    def train_step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    train_step(*next(it))  # warm-up, not recorded
    with new_profiler() as prof:
        for i, (x, y) in enumerate(it):
            train_step(x, y)
            if i + 1 == iters:
                break
    export(prof, out_dir, "train-optimizer-only")
    return {"train-optimizer-only.json.gz": {"steps": []}}


# --------------------------------------------------------------------------- truth and checks

STATIC_TRUTH = {
    "pipeline-1f1b-rank0.json.gz": {
        "workload": "2-stage pipeline, 1F1B, 6 micro-batches, stage 0 (embedding + 2 blocks)",
        "rank": 0, "world_size": 2, "peer_file": "pipeline-1f1b-rank1.json.gz",
        "iterations": 3, "iteration_marker": "ProfilerStep#N",
        "schedule": "F0 | F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 | B5",
        "unnamed_in_step": ["Optimizer.zero_grad#Adam.zero_grad at the start",
                            "gloo send/recv between chunks (not in a named range)",
                            "Optimizer.step#Adam.step at the end (phase optimizer)"],
        "checks": ["3 ProfilerStep ranges", "6 forward_chunk and 6 backward_chunk per step",
                   "chunks of different micro-batches interleave (1F1B), so a step is not "
                   "forward-then-backward", "backward ops run on the same thread as forward"],
    },
    "pipeline-1f1b-rank1.json.gz": {
        "workload": "2-stage pipeline, 1F1B, 6 micro-batches, stage 1 (2 blocks + head + loss)",
        "rank": 1, "world_size": 2, "peer_file": "pipeline-1f1b-rank0.json.gz",
        "iterations": 3, "iteration_marker": "ProfilerStep#N",
        "schedule": "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5",
        "unnamed_in_step": ["Optimizer.zero_grad#Adam.zero_grad at the start",
                            "gloo recv of activations before each forward_chunk, send of "
                            "input gradients after each backward_chunk",
                            "Optimizer.step#Adam.step at the end (phase optimizer)"],
        "checks": ["3 ProfilerStep ranges", "forward_chunk includes the loss (cross_entropy)",
                   "strict alternation F,B per micro-batch"],
    },
    "pipeline-dualpipe-like-rank0.json.gz": {
        "workload": "2-stage pipeline, DualPipe-like F/B/W split, 6 micro-batches, stage 0",
        "rank": 0, "world_size": 2, "peer_file": "pipeline-dualpipe-like-rank1.json.gz",
        "iterations": 3, "iteration_marker": "ProfilerStep#N",
        "schedule": "F0 F1 | (F2,B0) W0 (F3,B1) W1 (F4,B2) W2 (F5,B3) W3 | B4 W4 B5 W5; "
                    "F = attn(F) mlp(F); B = mlp(B) attn(B); W = mlp(W) attn(W); "
                    "(Fa,Bb) = attn(F)a mlp(B)b mlp(F)a attn(B)b",
        "phase_of_name": {"attn(F)": "forward", "mlp(F)": "forward", "attn(B)": "backward",
                          "mlp(B)": "backward", "attn(W)": "backward-weight",
                          "mlp(W)": "backward-weight"},
        "unnamed_in_step": ["Optimizer.zero_grad#Adam.zero_grad at the start",
                            "gloo send/recv (not in a named range)",
                            "Optimizer.step#Adam.step at the end"],
        "checks": ["3 ProfilerStep ranges", "chunk names repeat within a step (no micro-batch "
                   "id in the name): 12 attn(F)/mlp(F)... i.e. 6 of each of the six names",
                   "B and W chunks run autograd (evaluate_function) on the main thread, "
                   "B via torch.autograd.grad w.r.t. the chunk input"],
    },
    "pipeline-dualpipe-like-rank1.json.gz": {
        "workload": "2-stage pipeline, DualPipe-like F/B/W split, 6 micro-batches, stage 1 (with loss)",
        "rank": 1, "world_size": 2, "peer_file": "pipeline-dualpipe-like-rank0.json.gz",
        "iterations": 3, "iteration_marker": "ProfilerStep#N",
        "schedule": "F0 | (F1,B0) W0 (F2,B1) W1 (F3,B2) W2 (F4,B3) W3 (F5,B4) W4 | B5 W5",
        "phase_of_name": {"attn(F)": "forward", "mlp(F)": "forward", "attn(B)": "backward",
                          "mlp(B)": "backward", "attn(W)": "backward-weight",
                          "mlp(W)": "backward-weight"},
        "unnamed_in_step": ["Optimizer.zero_grad#Adam.zero_grad at the start",
                            "gloo send/recv (not in a named range)",
                            "Optimizer.step#Adam.step at the end"],
        "checks": ["3 ProfilerStep ranges", "mlp(F) includes the loss (cross_entropy)"],
    },
    "torchrec-like-pipeline.json.gz": {
        "workload": "DLRM-like model, TorchRec TrainPipelineSparseDist-like progress()",
        "iterations": 4, "iteration_marker": "ProfilerStep#N",
        "checks": ["4 ProfilerStep ranges", "7 named ranges per step in this order",
                   "'## sparse_data_dist ##' is input distribution, not loss, though it sits "
                   "between forward and backward", "its share of the step is >= 0.2 "
                   "(measured shares below)",
                   "enumerate(DataLoader)#...__next__ inside '## copy_batch_to_gpu ##'"],
    },
    "activation-checkpointing.json.gz": {
        "workload": "6 residual MLP blocks under torch.utils.checkpoint (reentrant) + head, SGD",
        "iterations": 3, "iteration_marker": "ProfilerStep#N",
        "checks": ["3 ProfilerStep ranges", "forward, loss, backward, optimizer per step",
                   "inside 'backward': CheckpointFunctionBackward with forward ops "
                   "(aten::layer_norm, aten::linear, aten::gelu) recomputed - they belong to "
                   "the backward phase"],
    },
    "serving-like.json.gz": {
        "workload": "tiny causal LM served with continuous batching, SGLang-like step ranges",
        "iterations": 13, "iteration_marker": "one range per engine step, no ProfilerStep",
        "engine_step_counts": {"step[EXTEND bs=2 tokens=20]": 1, "step[DECODE bs=2]": 4,
                               "step[EXTEND bs=1 tokens=10]": 1, "step[DECODE bs=3]": 5,
                               "step[DECODE bs=1]": 2},
        "checks": ["no ProfilerStep", "13 engine steps: 2 prefill (EXTEND), 11 decode",
                   "decode steps of equal batch size are near-identical op sequences",
                   "no backward, no optimizer (torch.no_grad)"],
    },
    "serving-like-vllm.json.gz": {
        "workload": "same engine and schedule as serving-like, every step named execute_model",
        "iterations": 13, "iteration_marker": "execute_model, no ProfilerStep",
        "checks": ["no ProfilerStep", "13 execute_model ranges; steps 1 and 6 are prefill "
                   "(more tokens, causal mask ops: aten::triu, aten::masked_fill), others decode"],
    },
    "inference-no-steps.json.gz": {
        "workload": "TinyViT (Conv2d patch embed + 8 identical blocks + head), 5 forwards, no_grad",
        "iterations": 5, "iteration_marker": "none: no ProfilerStep, no ranges",
        "identical_blocks_per_iteration": 8,
        "checks": ["repetition detection finds 5 iterations, each starting at aten::conv2d "
                   "(patch embedding) and ending at aten::softmax", "it must not cut per block "
                   "(period of 8 per iteration)", "no backward, no optimizer"],
    },
    "train-optimizer-only.json.gz": {
        "workload": "torchvision resnet18, FakeData 3x32x32 via DataLoader, SGD momentum",
        "iterations": 4, "iteration_marker": "none: no ProfilerStep, no named ranges",
        "per_iteration_order": ["data: enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                                "optimizer: Optimizer.zero_grad#SGD.zero_grad",
                                "forward: resnet18 ops", "loss: aten::cross_entropy_loss",
                                "backward: autograd::engine::evaluate_function: ...",
                                "optimizer: Optimizer.step#SGD.step"],
        "checks": ["4 iterations, each delimited by a DataLoader __next__ and ending with "
                   "Optimizer.step#SGD.step", "4 of each marker, no fifth next()"],
    },
}


def load_events(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def partial_overlaps(ev):
    """X events on one thread that start inside an open event and end after it (no nesting):
    counts of those ending 1 µs after it (integer-µs rounding) and of larger ones, by pair."""
    by_1us, larger = 0, {}
    by_tid = {}
    for e in ev:
        by_tid.setdefault(e["tid"], []).append(e)
    for es in by_tid.values():
        es.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in es:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
                if e["ts"] + e["dur"] - stack[-1]["ts"] - stack[-1]["dur"] <= 1:
                    by_1us += 1
                else:
                    key = "%s > %s" % (stack[-1]["name"], e["name"])
                    larger[key] = larger.get(key, 0) + 1
                continue
            stack.append(e)
    return {"end_1us_after_parent": by_1us, "larger": larger}


def check_and_measure(out_dir, truth):
    """Check each file against its truth; add measured facts (kept apart, under "measured")."""
    problems = []
    for fname, t in truth.items():
        path = os.path.join(out_dir, fname)
        ev = load_events(path)
        steps = sorted((e for e in ev if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
        m = {"gz_bytes": os.path.getsize(path), "events": len(ev),
             "threads": sorted({e["tid"] for e in ev}, key=str),
             "backward_threads": sorted({e["tid"] for e in ev
                                         if e["name"].startswith("autograd::engine::evaluate_function")},
                                        key=str)}
        if [s["name"] for s in steps] != [s["name"] for s in t["steps"]]:
            problems.append("%s: ProfilerStep ranges %s != %s" % (
                fname, [s["name"] for s in steps], [s["name"] for s in t["steps"]]))
        chunk_names = {c["name"] for s in t["steps"] for c in s["chunks"]}
        chunk_names |= {c["name"] for c in t.get("engine_steps", [])}
        if steps:
            m["step_dur_us"] = [s["dur"] for s in steps]
            shares = {}
            for s, ts in zip(steps, t["steps"]):
                inside = sorted((e for e in ev if e["name"] in chunk_names
                                 and s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"]),
                                key=lambda e: e["ts"])
                got = [e["name"] for e in inside]
                want = [c["name"] for c in ts["chunks"]]
                if got != want:
                    problems.append("%s %s: chunks %s != %s" % (fname, s["name"], got[:8], want[:8]))
                for e in inside:
                    shares.setdefault(e["name"], []).append(round(e["dur"] / max(s["dur"], 1), 3))
            if fname.startswith("torchrec"):
                m["share_of_step"] = shares
                if min(shares["## sparse_data_dist ##"]) < 0.2:
                    problems.append("%s: sparse_data_dist share %s < 0.2" % (
                        fname, shares["## sparse_data_dist ##"]))
        elif "engine_steps" in t:
            got = [e["name"] for e in sorted((e for e in ev if e["name"] in chunk_names),
                                             key=lambda e: e["ts"])]
            want = [c["name"] for c in t["engine_steps"]]
            if got != want:
                problems.append("%s: engine steps %s != %s" % (fname, got, want))
            m["engine_step_dur_us"] = [e["dur"] for e in sorted(
                (e for e in ev if e["name"] in chunk_names), key=lambda e: e["ts"])]
        names = {}
        for e in ev:
            for key in ("enumerate(DataLoader)", "Optimizer.step#", "Optimizer.zero_grad#",
                        "CheckpointFunctionBackward", "aten::conv2d", "aten::softmax"):
                if e["name"].startswith(key) or e["name"].endswith(key):
                    names[e["name"]] = names.get(e["name"], 0) + 1
        m["marker_counts"] = names
        m["partial_overlaps_same_tid"] = partial_overlaps(ev)
        if fname.startswith("train-optimizer-only"):
            for key in ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                        "Optimizer.step#SGD.step", "Optimizer.zero_grad#SGD.zero_grad"):
                if names.get(key) != 4:
                    problems.append("%s: %s x%s, want 4" % (fname, key, names.get(key)))
        if fname.startswith("inference-no-steps"):
            if names.get("aten::conv2d") != 5 or names.get("aten::softmax") != 5 + 5 * 8:
                problems.append("%s: conv2d/softmax counts %s" % (fname, names))
        if fname.startswith("activation-checkpointing") and not any(
                "CheckpointFunctionBackward" in n for n in names):
            problems.append("%s: no CheckpointFunctionBackward" % fname)
        if m["gz_bytes"] > 400 * 1024:
            problems.append("%s: %d bytes > 400 KiB" % (fname, m["gz_bytes"]))
        t["measured"] = m
    return problems


def compact_json(obj, indent=0):
    """JSON with one line per value that fits in 100 characters (chunks stay one a line)."""
    flat = json.dumps(obj)
    if len(flat) + indent <= 110 or not isinstance(obj, (dict, list)) or not obj:
        return flat
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        items = ["%s%s: %s" % (pad, json.dumps(k), compact_json(v, indent + 1)) for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact_json(v, indent + 1) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "cpu-workloads"))
    ap.add_argument("--only", nargs="*", default=None,
                    help="record only these workloads (1f1b dualpipe torchrec checkpointing "
                         "serving inference train)")
    args = ap.parse_args()
    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    jobs = [("1f1b", lambda: record_pipeline(out_dir, "1f1b")),
            ("dualpipe", lambda: record_pipeline(out_dir, "dualpipe")),
            ("torchrec", lambda: record_torchrec(out_dir)),
            ("checkpointing", lambda: record_checkpointing(out_dir)),
            ("serving", lambda: {**record_serving(out_dir, "sglang"), **record_serving(out_dir, "vllm")}),
            ("inference", lambda: record_inference_no_steps(out_dir)),
            ("train", lambda: record_train_optimizer_only(out_dir))]
    truth_path = os.path.join(out_dir, "truth.json")
    recorded = {}
    if args.only and os.path.exists(truth_path):
        with open(truth_path) as f:
            recorded = json.load(f)["files"]
    for key, job in jobs:
        if args.only and key not in args.only:
            continue
        t0 = time.time()
        res = job()
        print("%-14s %.1f s" % (key, time.time() - t0), flush=True)
        for fname, t in res.items():
            recorded[fname] = {**STATIC_TRUTH[fname], **t}
    problems = check_and_measure(out_dir, recorded)
    doc = {
        "generator": "tools/record_cpu_workloads.py",
        "torch": torch.__version__,
        "kineto_available": bool(torch.autograd.kineto_available()),
        "profiler": "torch.autograd.profiler.profile(use_kineto=False, record_shapes=True), "
                    "export_chrome_trace; ProfilerStep#N = record_function around each step",
        "phases": ["forward", "backward", "backward-weight", "loss", "optimizer", "data",
                   "input distribution", "prefill", "decode"],
        "note": "Everything except 'measured' is known from how the trace was made; 'measured' "
                "is read back from the trace after recording (durations are from a loaded "
                "2-core machine).",
        "files": dict(sorted(recorded.items())),
    }
    with open(truth_path, "w") as f:
        f.write(compact_json(doc) + "\n")
    total = sum(os.path.getsize(os.path.join(out_dir, n)) for n in os.listdir(out_dir))
    for fname in sorted(recorded):
        print("%-40s %8d bytes %6d events" % (fname, recorded[fname]["measured"]["gz_bytes"],
                                            recorded[fname]["measured"]["events"]))
    print("folder total %d bytes" % total)
    if problems:
        print("PROBLEMS:\n  " + "\n  ".join(problems))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
