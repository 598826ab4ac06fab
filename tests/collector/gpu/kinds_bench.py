"""What each recorded kind costs, measured inside one process so runs do not differ by
process-to-process noise. Run under `strata record --dormant` (STRATA_SOCKET_DIR set):
the script asks its own agent to start and stop recordings over the control socket,
with a different `kinds=` each time, interleaved over rounds. Prints one JSON line per
(round, variant): microseconds per launch of a tiny kernel, and the median iteration
time of a small launch-bound MLP (NVTX ranges included).
"""
import argparse
import json
import os
import socket
import statistics
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--rounds", type=int, default=4)
p.add_argument("--variants", default="off")  # ';'-separated: off | KINDS
p.add_argument("--tag", default="run")
p.add_argument("--launches", type=int, default=3000)
p.add_argument("--iters", type=int, default=60)
a = p.parse_args()


def request(line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(os.environ["STRATA_SOCKET_DIR"], f"{os.getpid()}.sock"))
    s.sendall((line + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    reply = data.decode().strip()
    if not reply.startswith("ok"):
        raise RuntimeError(f"{line!r}: {reply}")
    return reply


dev = "cuda"
torch.manual_seed(0)
x = torch.zeros(1, device=dev)
model = torch.nn.Sequential(torch.nn.Linear(1024, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                            torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
xin = torch.randn(256, 1024, device=dev)
y = torch.randint(0, 10, (256,), device=dev)


def launches():
    out = []
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a.launches):
            x.add_(1.0)
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e6 / a.launches)
    return statistics.median(out)


def mlp():
    times = []
    for _ in range(a.iters):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.cuda.nvtx.range_push("iteration")  # the ranges train_mlp.py pushes
        torch.cuda.nvtx.range_push("forward")
        loss = torch.nn.functional.cross_entropy(model(xin), y)
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
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


variants = [v for v in a.variants.split(";") if v]
launches(); mlp()  # warm up caches, cuBLAS, the allocator
if any(v != "off" for v in variants):  # CUPTI's first enable allocates: not part of any variant
    request("start output=/tmp/kinds-bench-warm.json kinds=all")
    launches()
    request("stop")
n = 0
for r in range(a.rounds):
    order = variants[r % len(variants):] + variants[:r % len(variants)]
    for v in order:
        kinds = v
        if kinds != "off":
            n += 1
            request(f"start output=/tmp/kinds-bench-{os.getpid()}-{n}.json kinds={kinds}")
        us = launches()
        ms = mlp()
        records = ""
        if kinds != "off":
            reply = request("stop")
            records = dict(kv.split("=", 1) for kv in reply.split()[1:] if "=" in kv).get("events", "")
            os.unlink(f"/tmp/kinds-bench-{os.getpid()}-{n}.json")
        print(json.dumps({"tag": a.tag, "round": r, "variant": v, "us_per_launch": round(us, 3),
                          "mlp_ms": round(ms, 4), "events": records}), flush=True)
