#!/usr/bin/env python3
"""test/gpu/torch_activation.py — programs for the binding's activation
paths (run_gpu_torch.sh): nothing here mentions kcheck; the binding must be
installed by torch=1 + LD_PRELOAD alone.

  torch_activation.py worker    one matmul (as a torchrun worker)
  torch_activation.py spawn     a torch.multiprocessing spawn worker does one
  torch_activation.py compile   a torch.compile'd function; prints COMPILED <hash>
  pytest -k pytest_case torch_activation.py   one matmul in a test
"""
import hashlib
import sys

import torch


def work():
    x = torch.arange(64 * 64, dtype=torch.float32, device="cuda").reshape(64, 64) / 4096
    return float((x @ x).sum())


def test_pytest_case():
    assert work() > 0


def _spawned(rank):
    work()


def compiled():
    torch.backends.cuda.matmul.allow_tf32 = False

    @torch.compile
    def f(x, w):
        return torch.nn.functional.gelu(x @ w).softmax(-1) * 3 + x.sum(-1, keepdim=True)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 128, generator=g).cuda()
    w = torch.randn(128, 128, generator=g).cuda()
    out = f(x, w)
    out = f(x, w)
    torch.cuda.synchronize()
    print("COMPILED %s" % hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()[:16])


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "worker":
        print(work())
    elif what == "spawn":
        torch.multiprocessing.spawn(_spawned, nprocs=1)
    elif what == "compile":
        compiled()
