#!/usr/bin/env python3
"""test/gpu/torch_threads.py — two threads, each training its own small model
on its own CUDA stream at the same time (default kcheck options when run
under kcheck). Each thread: an MLP block (Linear, GELU, LayerNorm, residual,
softmax cross-entropy), SGD with momentum, fixed seeds, fp32, TF32 off; the
two models have different widths so both threads' launches get checked.

Prints one line per thread
  THREAD <i> DIGEST <sha256 over its parameters and last logits> LOSS <hex>
then DONE. Runs with and without kcheck must print identical lines.
"""
import argparse
import contextlib
import hashlib
import os
import threading

# Deterministic cuBLAS with several streams (the application's setting, the
# same with and without kcheck).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402


def tensor_bytes(t):
    t = t.detach().cpu().contiguous()
    try:
        return t.view(torch.uint8).numpy().tobytes()
    except Exception:  # no numpy
        return bytes(t.view(torch.uint8).flatten().tolist())


def train(i, width, steps, out, device):
    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator().manual_seed(1000 + i)
    dev = torch.device(device)
    stream = torch.cuda.Stream() if device == "cuda" else None
    with torch.cuda.stream(stream) if stream else contextlib.nullcontext():
        model = torch.nn.Sequential(
            torch.nn.Linear(128, width), torch.nn.GELU(), torch.nn.LayerNorm(width),
            torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.Linear(width, 16))
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
        model = model.to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        x = torch.randn(64, 128, generator=g).to(dev)
        y = torch.randint(0, 16, (64,), generator=g).to(dev)
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            h = model(x)
            logits = h + x[:, :16]  # residual
            loss = torch.nn.functional.cross_entropy(logits, y)
            loss.backward()
            opt.step()
        if stream:
            stream.synchronize()
        d = hashlib.sha256()
        for p in model.parameters():
            d.update(tensor_bytes(p))
        d.update(tensor_bytes(logits))
        out[i] = (d.hexdigest(), float(loss.item()).hex())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    out = {}
    ts = [threading.Thread(target=train, args=(i, w, a.steps, out, a.device))
          for i, w in enumerate((256, 384))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i in sorted(out):
        print("THREAD %d DIGEST %s LOSS %s" % (i, out[i][0], out[i][1]))
    print("DONE" if len(out) == 2 else "INCOMPLETE")


if __name__ == "__main__":
    main()
