#!/usr/bin/env python3
"""Record small, real PyTorch 2.x profiler (Kineto) traces for Strata's test data.

Needs a machine with an NVIDIA GPU, PyTorch with CUDA, and torchvision (no network:
all models are randomly initialised, all data is synthetic). Run:

    python3 tools/record_torch_traces.py OUT_DIR [--suffix h100] [--max-mb 3.0]

It writes four gzipped Chrome-trace files into OUT_DIR, plus OUT_DIR/summary.json
(torch version, GPU name and, per file, the event count and the counts per `cat`
and per `ph`):

  resnet18-train-SUFFIX.pt.trace.json.gz     torchvision resnet18, batch 16, 3x112x112,
                                             DataLoader over a TensorDataset,
                                             CrossEntropyLoss, SGD with momentum
  transformer-train-SUFFIX.pt.trace.json.gz  Embedding + 2-layer nn.TransformerEncoder
                                             (d_model 256, 4 heads) + Linear head,
                                             AdamW, bf16 autocast, batch 8 x seq 128
  resnet18-infer-SUFFIX.pt.trace.json.gz     resnet18 eval, torch.inference_mode()
  mlp-train-nosteps-SUFFIX.pt.trace.json.gz  3-layer MLP, 5 iterations in ONE profile
                                             block, no schedule, no prof.step()

The first three use
    profile(activities=[CPU, CUDA], record_shapes=True, with_stack=True,
            with_modules=True, profile_memory=True,
            schedule=schedule(wait=1, warmup=1, active=2, repeat=1))
with prof.step() after every iteration, so the trace holds ProfilerStep#2 and #3.
The last uses the same activities with record_shapes=True, profile_memory=True,
with_stack=False, with_modules=False and no schedule.

Each trace is written with prof.export_chrome_trace(path) and then gzipped (mtime 0).
If a gzipped file is larger than --max-mb, it is recorded again with active=1.
"""

import argparse
import collections
import gzip
import json
import os
import shutil
import sys
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, schedule

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
WAIT, WARMUP, ACTIVE = 1, 1, 2


def gzip_file(src, dst):
    """Gzip src into dst reproducibly (no name or mtime in the header), remove src."""
    with open(src, "rb") as fin, open(dst, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as fout:
            shutil.copyfileobj(fin, fout)
    os.remove(src)


def scheduled_profile(json_path, active):
    """The profiler used for the three scheduled recordings; saves on the last active step."""
    return profile(
        activities=ACTIVITIES,
        record_shapes=True,
        with_stack=True,
        with_modules=True,
        profile_memory=True,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=active, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(json_path),
    )


def record_resnet18_train(json_path, active, dev):
    import torchvision
    from torch.utils.data import DataLoader, TensorDataset

    steps = WAIT + WARMUP + active
    batch = 16
    images = torch.randn(batch * steps, 3, 112, 112)
    labels = torch.randint(0, 1000, (batch * steps,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=batch, shuffle=True,
                        num_workers=0, pin_memory=True)
    model = torchvision.models.resnet18(weights=None).to(dev).train()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    with scheduled_profile(json_path, active) as prof:
        for x, y in loader:
            x = x.to(dev, non_blocking=True)
            y = y.to(dev, non_blocking=True)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            loss.item()  # a typical loop logs the loss: one device sync per iteration
            prof.step()


class TinyEncoder(nn.Module):
    def __init__(self, vocab=1000, d_model=256, nhead=4, layers=2, classes=10):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=4 * d_model,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        h = self.encoder(self.embed(tokens))
        return self.head(h.mean(dim=1))


def record_transformer_train(json_path, active, dev):
    steps = WAIT + WARMUP + active
    batch, seq = 8, 128
    model = TinyEncoder().to(dev).train()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, 1000, (steps, batch, seq))
    labels = torch.randint(0, 10, (steps, batch))
    with scheduled_profile(json_path, active) as prof:
        for i in range(steps):
            x = tokens[i].to(dev, non_blocking=True)
            y = labels[i].to(dev, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            prof.step()


def record_resnet18_infer(json_path, active, dev):
    import torchvision

    steps = WAIT + WARMUP + active
    model = torchvision.models.resnet18(weights=None).to(dev).eval()
    images = torch.randn(steps, 16, 3, 112, 112).pin_memory()
    with torch.inference_mode():
        with scheduled_profile(json_path, active) as prof:
            for i in range(steps):
                logits = model(images[i].to(dev, non_blocking=True))
                logits.argmax(dim=1).cpu()  # results back to the host
                prof.step()


def record_mlp_nosteps(json_path, active, dev):
    del active  # no schedule here
    iters = 5
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).to(dev).train()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    xs = torch.randn(iters + 1, 64, 512, device=dev)
    ys = torch.randint(0, 10, (iters + 1, 64), device=dev)

    def train_step(i):
        optimizer.zero_grad()
        loss = criterion(model(xs[i]), ys[i])
        loss.backward()
        optimizer.step()

    train_step(iters)  # one warm-up iteration outside the profiler (cuBLAS init etc.)
    torch.cuda.synchronize()
    with profile(activities=ACTIVITIES, record_shapes=True, with_stack=False,
                 with_modules=False, profile_memory=True) as prof:
        for i in range(iters):
            train_step(i)
    prof.export_chrome_trace(json_path)


RECORDINGS = [
    ("resnet18-train", record_resnet18_train,
     "torchvision resnet18 (random init), batch 16, 3x112x112 via DataLoader(TensorDataset, "
     "pin_memory), CrossEntropyLoss, SGD momentum 0.9, loss.item() each iteration"),
    ("transformer-train", record_transformer_train,
     "Embedding(1000,256) + TransformerEncoder(2 layers, d_model 256, 4 heads, ff 1024) + "
     "Linear(256,10), AdamW, bf16 autocast, batch 8 x seq 128"),
    ("resnet18-infer", record_resnet18_infer,
     "torchvision resnet18 eval under torch.inference_mode(), batch 16, 3x112x112"),
    ("mlp-train-nosteps", record_mlp_nosteps,
     "MLP 512-1024-1024-10, Adam, batch 64, 5 iterations in one profile block, "
     "no schedule, no prof.step(), 1 warm-up iteration before profiling"),
]


def summarize(gz_path):
    with gzip.open(gz_path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    cats = collections.Counter(e.get("cat", "<none>") for e in events)
    phs = collections.Counter(e.get("ph", "<none>") for e in events)
    names = [e.get("name", "") for e in events]
    return {
        "file": os.path.basename(gz_path),
        "gz_bytes": os.path.getsize(gz_path),
        "top_level_keys": list(doc.keys()) if isinstance(doc, dict) else None,
        "schemaVersion": doc.get("schemaVersion") if isinstance(doc, dict) else None,
        "trace_events": len(events),
        "per_cat": dict(cats.most_common()),
        "per_ph": dict(phs.most_common()),
        "profiler_steps": sorted({n for n in names if n.startswith("ProfilerStep#")}),
        "nn_module_events": sum(1 for n in names if n.startswith("nn.Module:")),
        "memory_events": sum(1 for n in names if n == "[memory]"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--suffix", default="h100", help="file-name suffix naming the GPU")
    ap.add_argument("--max-mb", type=float, default=3.0,
                    help="re-record with active=1 if a gzipped trace is larger than this")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        sys.exit("CUDA is not available: these traces need a GPU")
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(0)
    dev = torch.device("cuda")
    info = {
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "cudnn_version": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(),
        "python": sys.version.split()[0],
        "recorded_unix_time": int(time.time()),
        "files": [],
    }
    print(f"torch {info['torch_version']} (CUDA {info['cuda_version']}, cuDNN "
          f"{info['cudnn_version']}), GPU: {info['gpu']}", flush=True)

    for stem, record, what in RECORDINGS:
        gz_path = os.path.join(args.out_dir, f"{stem}-{args.suffix}.pt.trace.json.gz")
        json_path = gz_path[:-3]
        for active in (ACTIVE, 1):
            t0 = time.time()
            record(json_path, active, dev)
            torch.cuda.synchronize()
            gzip_file(json_path, gz_path)
            mb = os.path.getsize(gz_path) / 1e6
            print(f"{stem}: active={active} {mb:.2f} MB gz in {time.time() - t0:.1f} s",
                  flush=True)
            if mb <= args.max_mb or stem == "mlp-train-nosteps":
                break
            print(f"{stem}: larger than {args.max_mb} MB, recording again with active=1",
                  flush=True)
        s = summarize(gz_path)
        s["what"] = what
        s["schedule"] = (None if stem == "mlp-train-nosteps"
                         else {"wait": WAIT, "warmup": WARMUP, "active": active, "repeat": 1})
        info["files"].append(s)
        print(json.dumps(s, indent=1), flush=True)

    with open(os.path.join(args.out_dir, "summary.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    print("wrote", os.path.join(args.out_dir, "summary.json"), flush=True)


if __name__ == "__main__":
    main()
