"""bench/mode_push_pop_cpu.py — does a TorchDispatchMode that was pushed and
popped leave a lasting per-step cost? A small CPU training loop (12 linear
layers of 16, AdamW, one thread: dispatch-bound) is timed for 200 steps,
then one step runs under a trivial mode, then 200 more steps are timed; six
times. Prints each pair (10th percentile of the step times, us) and the
median ratio after/before. No GPU: the autograd engine's device threads are
not exercised here.
  python3 bench/mode_push_pop_cpu.py"""
import statistics
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class Passthrough(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(12)])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(4, 16)

    def step():
        model(x).square().mean().backward()
        opt.step()
        opt.zero_grad()

    def timed(n):
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            step()
            ts.append(time.perf_counter() - t)
        ts.sort()
        return ts[len(ts) // 10] * 1e6

    for _ in range(50):
        step()
    pairs = []
    for _ in range(6):
        before = timed(200)
        with Passthrough():
            step()
        pairs.append((before, timed(200)))
    print(" ".join("%.0f->%.0f" % p for p in pairs),
          "median ratio after/before %.3f" % statistics.median(b / a for a, b in pairs))


if __name__ == "__main__":
    main()
