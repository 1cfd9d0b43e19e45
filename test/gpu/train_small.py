#!/usr/bin/env python3
"""test/gpu/train_small.py — a small, deterministic PyTorch training run on CUDA.

A two-layer MLP block with LayerNorm and a residual, trained with AdamW:
  - fp32 Linear layers (cuBLAS/cuBLASLt), TF32 off;
  - an fp16 matmul (explicit .half() mm) in the forward;
  - one Triton kernel (fused residual add: out = x + alpha * y) in the forward,
    wrapped in an autograd.Function.

Prints
  FINAL_LOSS <float.hex() of the last step's loss>
  PARAM_DIGEST <sha256 over all parameter bytes after the last step>
  MS_PER_STEP <mean wall time per step after the warm-up steps>
and exits 0. Runs with and without kcheck must print identical FINAL_LOSS and
PARAM_DIGEST lines.
"""
import argparse
import hashlib
import os
import sys
import time

# Must be set before CUDA/cuBLAS initialise for deterministic cuBLAS.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def kc_scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + alpha * y, mask=mask)


def scaled_add(x, y, alpha):
    assert x.is_cuda and x.shape == y.shape and x.dtype == y.dtype
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    BLOCK = 1024
    kc_scaled_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, alpha, n, BLOCK=BLOCK)
    return out


class ScaledAdd(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, alpha):
        ctx.alpha = alpha
        return scaled_add(x, y, alpha)

    @staticmethod
    def backward(ctx, g):
        return g, g * ctx.alpha, None


class Block(torch.nn.Module):
    def __init__(self, d_in, d_hidden, d_out):
        super().__init__()
        self.inp = torch.nn.Linear(d_in, d_hidden)
        self.norm = torch.nn.LayerNorm(d_hidden)
        self.fc1 = torch.nn.Linear(d_hidden, 4 * d_hidden)
        self.fc2 = torch.nn.Linear(4 * d_hidden, d_hidden)
        # Weight for the fp16 matmul path.
        self.proj16 = torch.nn.Parameter(torch.randn(d_hidden, d_hidden) / d_hidden**0.5)
        self.head = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x):
        h = self.inp(x)
        m = self.fc2(torch.nn.functional.gelu(self.fc1(self.norm(h))))
        h = ScaledAdd.apply(h, m, 0.5)  # Triton kernel
        # fp16 matmul (cuBLAS half GEMM), result back in fp32.
        p = torch.mm(h.half(), self.proj16.half()).float()
        h = h + torch.tanh(p)
        return self.head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3, help="steps excluded from MS_PER_STEP")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--dim", type=int, default=128)
    args = ap.parse_args()
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    if not torch.cuda.is_available():
        print("CUDA is not available", file=sys.stderr)
        return 2

    torch.manual_seed(1234)
    torch.cuda.manual_seed_all(1234)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False

    dev = torch.device("cuda")
    model = Block(args.dim, args.dim, 16).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    g = torch.Generator(device="cpu").manual_seed(99)
    xs = torch.randn(args.steps, args.batch, args.dim, generator=g).to(dev)
    ys = torch.randn(args.steps, args.batch, 16, generator=g).to(dev)

    loss = None
    t_start = None
    timed_from = 0
    for step in range(args.steps):
        if step == min(args.warmup, args.steps - 1):
            torch.cuda.synchronize()
            t_start = time.perf_counter()
            timed_from = step
        opt.zero_grad(set_to_none=True)
        out = model(xs[step])
        loss = torch.nn.functional.mse_loss(out, ys[step])
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - t_start
    timed_steps = args.steps - timed_from

    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        h.update(name.encode())
        # No numpy dependency: bytes from a uint8 view of the flat tensor.
        h.update(bytes(p.detach().cpu().contiguous().reshape(-1).view(torch.uint8).tolist()))
    print(f"FINAL_LOSS {float(loss.item()).hex()}")
    print(f"PARAM_DIGEST {h.hexdigest()}")
    print(f"MS_PER_STEP {1000.0 * elapsed / timed_steps:.4f}")
    print(f"VERSIONS torch={torch.__version__} triton={triton.__version__} "
          f"cuda={torch.version.cuda} device={torch.cuda.get_device_name(0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
