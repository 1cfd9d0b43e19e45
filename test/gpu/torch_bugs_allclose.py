"""test/gpu/torch_bugs_allclose.py — would allclose (rtol = atol = 1e-2, the
field's usual acceptance test) accept each planted bug of torch_bugs.py?
Runs torch_bugs.run() on CPU tensors, the Triton kernels in Triton's
interpreter (TRITON_INTERPRET=1), and compares each buggy op's output with
its correct twin's on the same inputs. The load_inline CUDA ops need a GPU
(n/a here).

  python3 test/gpu/torch_bugs_allclose.py
"""
import os, sys, types
os.environ["TRITON_INTERPRET"] = "1"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
src = open(os.path.join(HERE, "torch_bugs.py")).read()
src = src.replace('dev = "cuda"', 'dev = "cpu"').replace("torch.cuda.synchronize()", "pass")
mod = types.ModuleType("tb")
mod.__file__ = os.path.join(HERE, "torch_bugs.py")
exec(compile(src, "torch_bugs.py", "exec"), mod.__dict__)
import torch
outs = {}
def call(ops, name, *args):
    if name not in ops:
        return None
    try:
        outs[name] = ops[name](*args)
    except Exception as e:
        outs[name] = e
    return outs[name]
mod.call = call
try:
    mod.run()
except Exception as e:
    print("run stopped:", type(e).__name__, str(e)[:300])
names = [n for n, _ in mod.EXPECT]
for i in range(0, len(names), 2):
    ok, bug = names[i], names[i + 1]
    a, b = outs.get(ok), outs.get(bug)
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        print("%-24s %-24s n/a (%s, %s)" % (ok, bug, type(a).__name__, str(b)[:80] if b is not None else None))
        continue
    acc = a.shape == b.shape and torch.allclose(b.double(), a.double(), rtol=1e-2, atol=1e-2, equal_nan=True)
    err = (b.double() - a.double()).abs().max().item() if a.shape == b.shape else float("nan")
    print("%-24s %-24s allclose(1e-2)=%s max|diff|=%.3g" % (ok, bug, acc, err))
