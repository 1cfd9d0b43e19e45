"""2x2 average pooling in Triton."""
import torch
import triton
import triton.language as tl


@triton.jit
def pool_kernel(x_ptr, y_ptr, total, H, W, OH, OW, K: tl.constexpr, S: tl.constexpr,
                AVG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offs < total
    ow = offs % OW
    oh = (offs // OW) % OH
    base = (offs // (OW * OH)) * H * W + (oh * S) * W + ow * S
    acc = tl.full((BLOCK,), 0.0 if AVG else float("-inf"), tl.float32)
    for kh in tl.static_range(K):
        for kw in tl.static_range(K):
            v = tl.load(x_ptr + base + kh * W + kw, mask=valid, other=0.0)
            if AVG:
                acc += v
            else:
                acc = tl.where((v > acc) | (v != v), v, acc)  # NaN kept, as ATen
    if AVG:
        acc = tl.div_rn(acc, K * K * 1.0)
    tl.store(y_ptr + offs, acc, mask=valid)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        OH, OW = (H - 2) // 2 + 1, (W - 2) // 2 + 1
        y = torch.empty((N, C, OH, OW), device=x.device, dtype=torch.float32)
        total = y.numel()
        pool_kernel[(triton.cdiv(total, 256),)](x, y, total, H, W, OH, OW, K=2, S=2, AVG=True, BLOCK=256)
        return y
