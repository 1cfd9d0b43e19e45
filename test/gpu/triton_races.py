#!/usr/bin/env python3
"""test/gpu/triton_races.py — Triton kernels for the race gate's reach into
cubins (run by test/gpu/run_gpu_triton_races.sh, which checks the reports).

  python3 test/gpu/triton_races.py              launch each kernel once
  python3 test/gpu/triton_races.py --drop-ptx   compile first, then delete
                                                the .ptx files of Triton's
                                                cache (TRITON_CACHE_DIR)
                                                before the launches

Kernels:
  kc_lost_update   4 programs add their block's sum into 2 bins with a
                   plain load and store (cross-program lost update, short
                   kernel: plain repetition almost never shows it) -> race
  kc_slots         each program writes its own slot (race-free)  -> clean
Exit status 0, 2 without CUDA or Triton.
"""
import glob
import os
import sys

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # pragma: no cover - only on machines without them
    print(f"triton_races: {e}", file=sys.stderr)
    sys.exit(2)


@triton.jit
def kc_lost_update(x_ptr, bins_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    s = tl.sum(tl.load(x_ptr + offs), axis=0)
    b = bins_ptr + pid % 2
    old = tl.load(b)
    tl.store(b, old + s)  # not atomic: another program's update can be lost


@triton.jit
def kc_slots(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + pid, tl.sum(tl.load(x_ptr + offs), axis=0))


def main():
    if not torch.cuda.is_available():
        print("triton_races: no CUDA", file=sys.stderr)
        return 2
    block, progs = 128, 4
    x = torch.arange(block * progs, device="cuda", dtype=torch.int32)
    bins = torch.zeros(2, device="cuda", dtype=torch.int32)
    out = torch.zeros(progs, device="cuda", dtype=torch.int32)
    if "--drop-ptx" in sys.argv:
        kc_lost_update.warmup(x, bins, BLOCK=block, grid=(progs,))
        kc_slots.warmup(x, out, BLOCK=block, grid=(progs,))
        cache = os.environ.get("TRITON_CACHE_DIR", "")
        dropped = [p for p in glob.glob(os.path.join(cache, "*", "kc_*.ptx")) if cache]
        for p in dropped:
            os.unlink(p)
        print("DROPPED", len(dropped))
    kc_lost_update[(progs,)](x, bins, BLOCK=block)
    kc_slots[(progs,)](x, out, BLOCK=block)
    torch.cuda.synchronize()
    print("RESULT bins", bins.tolist(), "slots", out.tolist())
    return 0


if __name__ == "__main__":
    sys.exit(main())
