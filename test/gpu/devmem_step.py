#!/usr/bin/env python3
"""test/gpu/devmem_step.py — runs a program (bench/transformer_step.py, or
the script KC_DM_SCRIPT names, relative to the repository: e.g.
test/gpu/torch_models.py for a Llama, test/gpu/serving/harness.py for a
serving loop), with our arguments as its own, while a thread samples
cuMemGetInfo, and prints what the device had in use:

  DEVICE_USED_PEAK <bytes>   most in use at any sample (every 20 ms)
  DEVICE_USED_EXIT <bytes>   in use when the step program has returned
  TORCH_MAX_RESERVED <bytes> PyTorch's own peak reserved

Run plain and under kcheck (test/gpu/run_gpu_devmem.sh): the difference is
what kcheck costs in device memory, to be set beside the summary's
device_mem (what kcheck says it holds). The device must be otherwise idle:
cuMemGetInfo counts every process."""
import os
import runpy
import sys
import threading
import time

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
peak = [0]
stop = threading.Event()


def used():
    free, total = torch.cuda.mem_get_info()
    return total - free


def sample():
    while not stop.is_set():
        try:
            peak[0] = max(peak[0], used())
        except RuntimeError:
            pass
        time.sleep(0.02)


def main():
    torch.cuda.init()
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    script = os.environ.get("KC_DM_SCRIPT", os.path.join("bench", "transformer_step.py"))
    sys.argv = [os.path.join(ROOT, script)] + sys.argv[1:]
    code = 0
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    torch.cuda.synchronize()
    stop.set()
    t.join()
    at_exit = used()
    print(f"DEVICE_USED_PEAK {max(peak[0], at_exit)}")
    print(f"DEVICE_USED_EXIT {at_exit}")
    print(f"TORCH_MAX_RESERVED {torch.cuda.max_memory_reserved()}")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
