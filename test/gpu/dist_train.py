#!/usr/bin/env python3
"""test/gpu/dist_train.py — data-parallel training for kcheck's multi-rank
validation (test/gpu/run_gpu_dist.sh), written for any number of ranks.

  torchrun --nproc-per-node=N dist_train.py [--steps S] [--fsdp] [--side-stream]

Backend: NCCL when the host has a GPU per rank, else gloo (ranks then share
GPUs; gloo reduces CUDA tensors through host copies, so there is no
communication kernel to leave alone, but the per-rank reports, their merge
and the bitwise loss comparison are the same). KC_DIST_BACKEND overrides.

DDP with small buckets, so the gradient all-reduce of one bucket overlaps
the backward kernels of the next (the reducer launches collectives from the
autograd thread on the communication stream while the compute stream runs).
--side-stream also runs a matmul chain on a stream of its own, ordered by
events, during every step: one more concurrent launch that kcheck may check
while a collective is in flight.

Each rank prints RANK r, BACKEND b, FINAL_LOSS <hex>, PARAMS_SHA256 <hex>,
STEP_MS <median ms of the steps after the first three>; with --out DIR,
also into DIR/rank<r>.txt.
"""
import argparse
import hashlib
import os
import statistics
import struct
import time

import torch
import torch.distributed as dist


class Net(torch.nn.Module):
    def __init__(self, d, layers):
        super().__init__()
        self.body = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.LayerNorm(d), torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                torch.nn.Linear(4 * d, d)) for _ in range(layers))
        self.head = torch.nn.Linear(d, 16)

    def forward(self, x):
        for blk in self.body:
            x = x + blk(x)
        return self.head(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--fsdp", action="store_true")
    ap.add_argument("--side-stream", action="store_true")
    ap.add_argument("--out", help="also write each rank's lines to OUT/rank<r>.txt")
    a = ap.parse_args()

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    ngpu = torch.cuda.device_count()
    backend = os.environ.get("KC_DIST_BACKEND") or ("nccl" if ngpu >= world else "gloo")
    # Without a GPU (a dry run of the script itself) everything stays on the CPU.
    dev = torch.device("cuda", local % ngpu) if ngpu else torch.device("cpu")
    if ngpu:
        torch.cuda.set_device(dev)
    sync = torch.cuda.synchronize if ngpu else (lambda: None)
    dist.init_process_group(backend, device_id=dev if backend == "nccl" else None)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    torch.manual_seed(0)  # the same initial weights on every rank
    model = Net(256, 4).to(dev)
    if a.fsdp:
        from torch.distributed.fsdp import fully_shard
        for blk in model.body:
            fully_shard(blk)
        fully_shard(model)
    else:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if ngpu else None,
                                                          bucket_cap_mb=1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator(device=dev).manual_seed(1234 + rank)  # each rank its own data
    side = torch.cuda.Stream(device=dev) if a.side_stream and ngpu else None
    w_side = torch.randn(512, 512, device=dev, generator=g) / 32
    times = []
    loss = None
    for _ in range(a.steps):
        sync()
        t0 = time.perf_counter()
        x = torch.randn(64, 32, 256, device=dev, generator=g)
        y = torch.randint(0, 16, (64, 32), device=dev, generator=g)
        if side is not None:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                s = w_side
                for _ in range(8):
                    s = torch.tanh(s @ w_side)
        loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)
            w_side = w_side + 1e-6 * s
        sync()
        times.append((time.perf_counter() - t0) * 1e3)

    h = hashlib.sha256()
    for p in model.parameters():
        t = p.full_tensor() if hasattr(p, "full_tensor") else p
        h.update(t.detach().float().cpu().numpy().tobytes())
    lv = float(loss.detach().float().cpu())
    steady = times[3:] or times
    lines = ["RANK %d" % rank, "BACKEND " + backend, "FINAL_LOSS " + struct.pack(">f", lv).hex(),
             "PARAMS_SHA256 " + h.hexdigest(), "STEP_MS %.3f" % statistics.median(steady)]
    print("\n".join(lines), flush=True)
    if a.out:
        with open(os.path.join(a.out, "rank%d.txt" % rank), "w") as f:
            f.write("\n".join(lines) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
