"""row mean in Triton."""
import torch
import triton
import triton.language as tl


@triton.jit
def _nanmax(a, b):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def reduce_kernel(x_ptr, y_ptr, N, NF, KIND: tl.constexpr, TAIL: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    if KIND == 2:
        acc = tl.full((BLOCK,), float("-inf"), tl.float32)
    else:
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
    end = N if TAIL else (N // BLOCK) * BLOCK
    for off in range(0, end, BLOCK):
        m = off + cols < N
        if KIND == 2:
            v = tl.load(x_ptr + row * N + off + cols, mask=m, other=float("-inf"))
            acc = _nanmax(v, acc)
        else:
            acc += tl.load(x_ptr + row * N + off + cols, mask=m, other=0.0)
    if KIND == 2:
        r = tl.reduce(acc, 0, _nanmax)
    else:
        r = tl.sum(acc, axis=0)
    if KIND == 1:
        r = tl.div_rn(r, NF)
    tl.store(y_ptr + row, r)


def reduce_rows(x, kind, tail=True):
    """kind 0: sum, 1: mean, 2: max (NaN kept) over dim 1 of a 2-D tensor."""
    x = x.contiguous()
    R, N = x.shape
    y = torch.empty((R,), device=x.device, dtype=torch.float32)
    reduce_kernel[(R,)](x, y, N, float(N), KIND=kind, TAIL=tail, BLOCK=1024)
    return y


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return reduce_rows(x, 1)
