"""row sum in Triton; the last row's program also stores its sum one element past the output's end."""
import torch
import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, y_ptr, R, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for off in range(0, N, BLOCK):
        m = off + cols < N
        acc += tl.load(x_ptr + row * N + off + cols, mask=m, other=0.0)
    r = tl.sum(acc, axis=0)
    tl.store(y_ptr + row, r)
    # the bug: a "next row's slot" written by each row, the last one's past
    # the output's end (inside the caching allocator's 512-byte rounding:
    # nothing else sees it)
    if row == R - 1:
        tl.store(y_ptr + row + 1, r)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        R, N = x.shape
        y = torch.empty((R,), device=x.device, dtype=torch.float32)
        sum_kernel[(R,)](x, y, R, N, BLOCK=1024)
        return y
