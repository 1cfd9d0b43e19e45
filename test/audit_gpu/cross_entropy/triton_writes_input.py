"""cross entropy in Triton that stores log_softmax into the logits."""
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice

# Launched with enable_reflect_ftz=False: libdevice would otherwise flush
# subnormal results to zero, which ATen's CUDA kernels do not.


@triton.jit
def ce_kernel(x_ptr, t_ptr, loss_ptr, C, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < C
    x = tl.load(x_ptr + row * C + cols, mask=mask, other=float("-inf"))
    m = tl.max(x, axis=0)
    lse = m + libdevice.log(tl.sum(libdevice.exp(x - m), axis=0))
    logp = x - lse
    # the bug: the log-probabilities kept in the logits' own buffer
    tl.store(x_ptr + row * C + cols, logp, mask=mask)
    t = tl.load(t_ptr + row)
    tl.store(loss_ptr + row, -tl.sum(tl.where(cols == t, logp, 0.0), axis=0))


class ModelNew(torch.nn.Module):
    def forward(self, logits, target):
        R, C = logits.shape
        loss = torch.empty((R,), device=logits.device, dtype=torch.float32)
        ce_kernel[(R,)](logits, target, loss, C, BLOCK=triton.next_power_of_2(C),
                        enable_reflect_ftz=False)
        return loss.mean()
