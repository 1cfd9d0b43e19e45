"""softmax in Triton with the block fixed at the task's row length."""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# Launched with enable_reflect_ftz=False: libdevice would otherwise flush
# subnormal results to zero, which ATen's CUDA kernels do not.


@triton.jit
def softmax_kernel(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=float("-inf"))
    e = libdevice.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * N + cols, tl.div_rn(e, tl.sum(e, axis=0)), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        R, N = x.shape
        block = 4096  # the bug: the task's row length; a longer row loses its tail
        softmax_kernel[(R,)](x, y, N, BLOCK=block,
                             enable_reflect_ftz=False)
        return y
