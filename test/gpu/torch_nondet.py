#!/usr/bin/env python3
"""test/gpu/torch_nondet.py — PyTorch ops with and without run-to-run
nondeterminism, one mode per process so that a kcheck report is attributable.

  python3 test/gpu/torch_nondet.py MODE      MODE: index_add scatter_add mm
                                                   softmax layer_norm elementwise
  python3 test/gpu/torch_nondet.py list      the modes, with what kcheck should say

Expected to be flagged (float32 atomicAdd with many duplicate indices and
mixed magnitudes, torch.use_deterministic_algorithms left off):
  index_add, scatter_add
Expected not to be flagged (deterministic kernels):
  mm (fp32, TF32 off), softmax, layer_norm, elementwise (add, mul, gelu)

Inputs are made on the CPU (seeded) and copied to the GPU, so the only kernels
a mode launches are the op's own (and, for the scatter ops, nothing but the
op: the destination is copied in too). The op runs REPEATS times from the same
inputs; each result is hashed on the CPU. Prints one line per op:
  OP <mode> <op> distinct=<k>/<REPEATS> hash=<first result's sha256 prefix> <details>
and exits 0 (2 without CUDA).
"""
import hashlib
import sys

import torch

REPEATS = 5
EXPECT = {
    "index_add": "flagged",
    "scatter_add": "flagged",
    "mm": "clean",
    "softmax": "clean",
    "layer_norm": "clean",
    "elementwise": "clean",
}


def digest(t):
    t = t.detach().cpu().contiguous()
    try:
        b = t.view(torch.uint8).numpy().tobytes()
    except Exception:  # no numpy
        b = bytes(t.reshape(-1).view(torch.uint8).tolist())
    return hashlib.sha256(b).hexdigest()


def cpu_gen(seed):
    return torch.Generator(device="cpu").manual_seed(seed)


def mixed_values(n, g):
    """A quarter +-1e8, the rest in [1, 2): the fp32 sum depends on order."""
    small = 1.0 + torch.rand(n, generator=g)
    big = torch.where(torch.rand(n, generator=g) < 0.5, -1e8, 1e8).float()
    pick = torch.rand(n, generator=g) < 0.25
    return torch.where(pick, big, small).float()


def scatter_inputs():
    g = cpu_gen(7)
    n, slots = 1_000_000, 1000
    idx = torch.randint(0, slots, (n,), generator=g)
    src = mixed_values(n, g)
    return idx, src, slots


def run(mode, dev):
    lines = []

    def rep(op, fn, details=""):
        hashes = []
        first = None
        for _ in range(REPEATS):
            out = fn()
            torch.cuda.synchronize()
            hashes.append(digest(out))
            if first is None:
                first = out.detach().float().cpu()
        extra = details(first) if callable(details) else details
        lines.append(f"OP {mode} {op} distinct={len(set(hashes))}/{REPEATS} hash={hashes[0][:16]} {extra}")

    if mode in ("index_add", "scatter_add"):
        idx, src, slots = scatter_inputs()
        zeros = torch.zeros(slots)
        d_idx, d_src = idx.to(dev), src.to(dev)

        def op():
            dst = zeros.to(dev)  # a host-to-device copy, no kernel
            if mode == "index_add":
                return dst.index_add_(0, d_idx, d_src)
            return dst.scatter_add_(0, d_idx, d_src)

        rep(mode, op, lambda r: f"slot0={r[0].item():.9g} total={r.double().sum().item():.9g}")
    elif mode == "mm":
        torch.backends.cuda.matmul.allow_tf32 = False
        g = cpu_gen(11)
        a = torch.randn(1024, 1024, generator=g).to(dev)
        b = torch.randn(1024, 1024, generator=g).to(dev)
        rep("mm_fp32", lambda: torch.mm(a, b), lambda r: f"sum={r.double().sum().item():.12g}")
    elif mode == "softmax":
        g = cpu_gen(12)
        x = (torch.randn(4096, 1024, generator=g) * 4).to(dev)
        rep("softmax", lambda: torch.softmax(x, dim=-1))
    elif mode == "layer_norm":
        g = cpu_gen(13)
        x = torch.randn(4096, 1024, generator=g).to(dev)
        w = torch.randn(1024, generator=g).to(dev)
        b = torch.randn(1024, generator=g).to(dev)
        rep("layer_norm", lambda: torch.nn.functional.layer_norm(x, (1024,), w, b))
    elif mode == "elementwise":
        g = cpu_gen(14)
        x = torch.randn(1 << 22, generator=g).to(dev)
        y = torch.randn(1 << 22, generator=g).to(dev)
        rep("add", lambda: x + y)
        rep("mul", lambda: x * y)
        rep("gelu", lambda: torch.nn.functional.gelu(x))
    else:
        raise SystemExit(f"unknown mode {mode!r}; modes: {' '.join(EXPECT)}")
    for line in lines:
        print(line, flush=True)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "list"
    if mode == "list":
        for m, e in EXPECT.items():
            print(m, e)
        return 0
    if mode not in EXPECT:
        print(f"unknown mode {mode!r}; modes: {' '.join(EXPECT)}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("CUDA is not available", file=sys.stderr)
        return 2
    torch.use_deterministic_algorithms(False)
    run(mode, torch.device("cuda"))
    print(f"VERSIONS torch={torch.__version__} cuda={torch.version.cuda} "
          f"device={torch.cuda.get_device_name(0)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
