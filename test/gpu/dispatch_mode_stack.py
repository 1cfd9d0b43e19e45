#!/usr/bin/env python3
"""test/gpu/dispatch_mode_stack.py — PyTorch alone, no kcheck: a
TorchDispatchMode that reads the Python stack (traceback.extract_stack, as
the binding does for a finding's line) on every op, around OpInfo's sample
inputs of abs, add, mul and sub on CUDA, forward and backward (backward's
ops reach the mode on autograd's device thread). Exits 0 when the run
finishes."""
import runpy
import sys
import traceback

from torch.utils._python_dispatch import TorchDispatchMode


class Stack(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        traceback.extract_stack()
        return func(*args, **(kwargs or {}))


with Stack():
    sys.argv = ["torch_opinfo.py", "--only", "abs,add,mul,sub", "--seconds", "60"]
    runpy.run_path(sys.path[0] + "/torch_opinfo.py", run_name="__main__")
print("finished")
