#!/usr/bin/env python3
"""test/gpu/torch_copy.py — the rows of python/kcheck/torch/ops_copy.py on
CUDA: clone, copy, cat across dtypes, the constant fills at values that
round in each dtype, _foreach_zero_, _foreach_maximum / _foreach_minimum
with a number (on ATen's multi-tensor route), select_backward and
slice_backward, pow at every exponent it maps; every call of them judged.

  kcheck run --torch -o torch_budget=1 -o sample=1 -o kernel_clean_limit=-1 -o op_clean_limit=-1 \\
      -o clean_limit=-1 -o torch_workers=-1 -- python3 test/gpu/torch_copy.py

Before the binding judges anything it prints MAXIMUM_AS_CLAMP_MIN: whether
CUDA's _foreach_maximum / _foreach_minimum with a number equal
_foreach_clamp_min / _foreach_clamp_max bit for bit (NaN, -0 and +0
included), the kernels ops_copy.py judges them as.
"""
import sys

import torch


def _values(dt, dev):
    x = torch.randn(4096, device=dev) * 10.0 ** torch.randint(-8, 8, (4096,), device=dev)
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-30],
                           device=dev)
    return torch.cat([x, special]).to(dt)


def maximum_as_clamp(dev):
    """Bitwise equality of the aliases on the multi-tensor route."""
    same = True
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        xs = [_values(dt, dev), _values(dt, dev)[:1000]]
        for s in (0.0, -0.0, 0.25, -3.0):
            pairs = ((torch._foreach_maximum(xs, s), torch._foreach_clamp_min(xs, s)),
                     (torch._foreach_minimum(xs, s), torch._foreach_clamp_max(xs, s)))
            for a, b in pairs:
                for u, v in zip(a, b):
                    same &= bool(torch.equal(u.view(torch.int16 if dt != torch.float32
                                                    else torch.int32),
                                             v.view(torch.int16 if dt != torch.float32
                                                    else torch.int32)))
    return same


def main(dev):
    print("MAXIMUM_AS_CLAMP_MIN", maximum_as_clamp(dev), flush=True)
    torch.manual_seed(0)
    for dt in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        x = _values(dt, dev)
        x.clone()
        x[::3].clone()
        torch.cat([x, x.float(), x[:7].double()])
        for v in (0.1, 1 / 3, -2.5e-3, 7, 300.7, 1e-8, float("inf"), float("nan"), -0.0):
            torch.full((33,), v, dtype=dt, device=dev)
            torch.empty(5, dtype=dt, device=dev).fill_(v)
            torch.scalar_tensor(v, dtype=dt, device=dev)
        torch.empty(3, dtype=dt, device=dev).fill_(torch.tensor(0.1, device=dev))
        torch.zeros_like(x), torch.ones_like(x), x.new_full((9,), 0.3), x.new_zeros(2, 3)
        a = x.abs()
        for e in (2, 0.5, -0.5, -1, 1, 0, 3):
            x.pow(e), a.pow(e)
        m = x[:4100].view(-1, 5)
        torch.ops.aten.select_backward(m[:, 2].contiguous(), list(m.shape), 1, 2)
        torch.ops.aten.slice_backward(m[:, 1:5:2].contiguous(), list(m.shape), 1, 1, 5, 2)
        torch._foreach_zero_([x.clone(), a.clone()])
        torch._foreach_maximum([x, a], 0.25), torch._foreach_minimum([x, a], -0.0)
    if dev == "cuda":
        torch.cuda.synchronize()
    print("done")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda")  # "cpu": the same calls on the CPU
