#!/usr/bin/env python3
"""test/gpu/torch_train.py — a small GPT-style training run that uses every
op the PyTorch binding covers (python/kcheck/torch/ops.py), for the
binding's GPU validation: run it plain and under `kcheck run --torch`; the
final loss and a hash of every parameter must be bitwise equal, and the
binding must report no violation.

  python3 torch_train.py [--bf16] [--steps N]

Ops, forward and backward: Linear (mm, addmm), manual attention (bmm,
baddbmm, _softmax), scaled_dot_product_attention (flash in bf16, efficient
in fp32), layer_norm, rms_norm, gelu (erf and tanh), silu, relu, sigmoid,
tanh, exp, log, sqrt, rsqrt, add, sub, mul, div, neg, abs, sum, mean, amax,
amin, logsumexp, log_softmax (cross entropy), linalg_vector_norm (gradient
clipping); their gradients (sigmoid, tanh, threshold, silu, gelu
backward, _softmax_backward_data, _log_softmax_backward_data). fp32 runs with TF32 off; --bf16 under autocast with PyTorch's
default reduced-precision settings.

Prints OPS_USED, FINAL_LOSS <hex>, PARAMS_SHA256 <hex>.
"""
import argparse
import hashlib

import torch
import torch.nn.functional as F


class Block(torch.nn.Module):
    def __init__(self, d, heads, i):
        super().__init__()
        self.heads, self.i = heads, i
        self.ln1 = torch.nn.LayerNorm(d)
        self.rms = torch.nn.RMSNorm(d, eps=1e-6)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.fc1 = torch.nn.Linear(d, 4 * d)
        self.fc2 = torch.nn.Linear(4 * d, d, bias=False)
        self.gate = torch.nn.Parameter(torch.zeros(d))

    def attention(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.i % 2 == 0:  # SDPA (flash in bf16, efficient or math in fp32)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # by hand: baddbmm, softmax, bmm
            hd = d // self.heads
            qf, kf, vf = (t.reshape(b * self.heads, s, hd) for t in (q, k, v))
            mask = torch.full((s, s), float("-inf"), device=x.device).triu(1)
            att = torch.baddbmm(mask.expand(b * self.heads, s, s), qf, kf.transpose(1, 2),
                                alpha=1.0 / hd ** 0.5)
            o = torch.bmm(torch.softmax(att, -1), vf).view(b, self.heads, s, hd)
        return self.proj(o.transpose(1, 2).reshape(b, s, d))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        h = self.rms(x)
        h = self.fc1(h)
        h = F.gelu(h, approximate="tanh") if self.i % 2 else F.gelu(h)
        h = h * torch.sigmoid(self.gate).repeat(4) + F.silu(h) * 0.5
        return x + self.fc2(h)


class GPT(torch.nn.Module):
    def __init__(self, vocab=512, d=128, heads=4, layers=2, seq=64):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(d, heads, i) for i in range(layers))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.emb(idx) + self.pos[: idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def extra_losses(logits, h):
    """The covered ops a GPT step does not use on its own, folded into the
    loss with small weights (all differentiable)."""
    z = logits.float()
    t = torch.tanh(z[..., :8]).mean() + torch.relu(z[..., 8:16]).mean()
    t = t + torch.exp(-z.abs()[..., :8]).sum() / z.numel()
    t = t + torch.log(z[..., :8].abs() + 1).mean() - torch.neg(z[..., :4]).mean()
    t = t + torch.sqrt(z[..., :8] ** 2 + 1).mean() + torch.rsqrt(z[..., :8] ** 2 + 1).mean()
    t = t + (z.amax(-1) - z.amin(-1)).mean() / 100 + torch.logsumexp(z, -1).mean() / 100
    t = t + (h / (h.abs() + 1)).sum(-1).mean() / 1000 - (h - h.mean()).pow(2).mean() / 1000
    return t * 1e-3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--device", default="cuda", help="cpu: for trying the script without a GPU")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = a.device
    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, 512, (a.steps, 8, 65), generator=g).to(dev)
    loss = None
    for i in range(a.steps):
        x, y = data[i, :, :-1], data[i, :, 1:]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=a.bf16):
            logits = model(x)
            h = model.ln(model.emb(x))
        loss = F.cross_entropy(logits.float().reshape(-1, 512), y.reshape(-1))
        loss = loss + extra_losses(logits, h.float())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=False)
        opt.step()
    if dev == "cuda":
        torch.cuda.synchronize()
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.detach().float().cpu().numpy().tobytes())
    print("FINAL_LOSS %s" % float(loss).hex())
    print("PARAMS_SHA256 %s" % digest.hexdigest())


if __name__ == "__main__":
    main()
