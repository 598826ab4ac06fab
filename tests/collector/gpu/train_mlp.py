"""A small PyTorch training loop for recording and overhead tests.

Each iteration is an NVTX range named "iteration"; prints one JSON line with the
median iteration time so runs with and without the agent can be compared.
"""
import argparse
import json
import statistics
import sys
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--tag", default="run")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--progress", type=int, default=0, help="print the time every N iterations to stderr")
    args = p.parse_args()

    torch.manual_seed(0)
    dev = "cuda"
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, 1024, device=dev)
    y = torch.randint(0, 10, (args.batch,), device=dev)
    times = []
    for i in range(args.warmup + args.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("iteration")
        torch.cuda.nvtx.range_push("forward")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("backward")
        loss.backward()
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_push("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.nvtx.range_pop()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        if i >= args.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
        if args.progress and i % args.progress == 0:
            print(f"progress {time.time():.3f} {i}", file=sys.stderr, flush=True)
    print(json.dumps({"tag": args.tag, "iters": args.iters, "median_ms": round(statistics.median(times), 4),
                      "mean_ms": round(statistics.fmean(times), 4), "loss": round(loss.item(), 4)}), flush=True)


if __name__ == "__main__":
    main()
