"""test/gpu/torch_bugs_allclose.py — would allclose (rtol = atol = 1e-2, the
field's usual acceptance test) accept each planted bug of torch_bugs.py?
Runs torch_bugs.run() on CPU tensors (KC_BUGS_DEVICE=cpu), the Triton
kernels in Triton's interpreter (TRITON_INTERPRET=1), without kcheck; the
run's ALLCLOSE lines compare each buggy op's output with its correct
twin's on the same inputs (the GPU run prints the same lines beside
kcheck's verdicts). The load_inline CUDA ops need a GPU: here they are
replaced by CPU emulations of their kernels (marked EMULATED), fp16
additions rounded once each as __hadd does.

  python3 test/gpu/torch_bugs_allclose.py
"""
import os
import sys

os.environ["TRITON_INTERPRET"] = "1"
os.environ["KC_BUGS_DEVICE"] = "cpu"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import torch  # noqa: E402
import torch_bugs  # noqa: E402


def scale(x, bug):
    y = x * 2.0
    if bug:  # the kernel's scratch store
        x.mul_(4.0)
    return y


def rowsum(x, bug):
    """torch_ext.py's rowsum_kernel: one thread per row, in order; the bug
    adds in fp16 (__float2half of each element, __hadd: the exact sum
    rounded once to fp16 — exact in double, then one rounding)."""
    if bug:
        xs = x.double().half().double()
        acc = torch.zeros(x.shape[:-1], dtype=torch.float64)
        for i in range(x.shape[-1]):
            acc = (acc + xs[..., i]).half().double()
        return acc.float()
    acc = torch.zeros(x.shape[:-1], dtype=torch.float32)
    for i in range(x.shape[-1]):
        acc = acc + x[..., i]
    return acc


define = torch_bugs.define


def define_with_emulations():
    ops = define()
    for name, fn in (("kcext::scale_ok", lambda x: scale(x, False)),
                     ("kcext::scale_scratch", lambda x: scale(x, True)),
                     ("kcext::rowsum_ok", lambda x: rowsum(x, False)),
                     ("kcext::rowsum_half", lambda x: rowsum(x, True))):
        # the extension's ops have CUDA kernels only
        print("EMULATED %s (load_inline CUDA: no GPU here)" % name, flush=True)
        ops[name] = fn
    return ops


torch_bugs.define = define_with_emulations
sys.exit(torch_bugs.run())
