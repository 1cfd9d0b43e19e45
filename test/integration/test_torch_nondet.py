"""Ops PyTorch documents as nondeterministic on CUDA (the binding's
python/kcheck/torch/nondet.py) are named: a `nondeterminism` finding with
cause "documented by PyTorch", the op and the user's line, once per op;
torch.use_deterministic_algorithms(True) is respected; one line of the
shipped torch-nondeterministic list silences them. On CPU tensors
(torch_devices=cuda,cpu, the binding's test path: test_torch.py)."""
import os

import pytest

from conftest import ROOT

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")
from test_torch import of, run_py  # noqa: E402

PROG = """
import sys, torch
if "det" in sys.argv:
    torch.use_deterministic_algorithms(True)
x = torch.zeros(8)
idx = torch.tensor([0, 1, 1, 3])
src = torch.ones(4)
for _ in range(3):
    x.index_add_(0, idx, src)          # LINE index_add_
y = torch.zeros(8)
y.index_put_((idx,), src)              # accumulate=False: deterministic
y.index_put_((idx,), src, accumulate=True)
z = torch.zeros(8).scatter_add_(0, idx, src)
print("ok", x.sum().item(), y.sum().item(), z.sum().item())
"""


def named(recs):
    return [v for v in of(recs, "violation") if v["gate"] == "nondeterminism"]


def test_documented_ops_named_once_with_the_users_line(tmp_path):
    p, recs = run_py(tmp_path, PROG)
    assert p.returncode == 0, p.stderr
    vs = named(recs)
    ops = sorted(v["op"] for v in vs)
    # index_put_ once: only the accumulate=True call is documented
    assert ops == ["aten::index_add_", "aten::index_put_", "aten::scatter_add_"], ops
    v = [v for v in vs if v["op"] == "aten::index_add_"][0]
    assert v["cause"] == "documented by PyTorch" and v["severity"] == "warning", v
    assert "index_add" in v["documented"] and v["source"].startswith("https://docs.pytorch.org")
    lines = [f for f in v["stack"]["python"] if f["file"].endswith("prog.py")]
    assert lines and "index_add_" in PROG.splitlines()[lines[-1]["line"] - 1], lines


def test_use_deterministic_algorithms_respected(tmp_path):
    p, recs = run_py(tmp_path, PROG, args=("det",))
    assert p.returncode == 0, p.stderr
    assert named(recs) == []


def test_one_shipped_line_suppresses_them(tmp_path):
    supp = os.path.join(ROOT, "python", "kcheck", "suppressions", "torch-nondeterministic.supp")
    p, recs = run_py(tmp_path, PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "suppressions=" + supp)
    assert p.returncode == 0, p.stderr
    assert named(recs) == []
    summ = of(recs, "summary")[-1]
    assert summ.get("suppressed", 0) >= 3, summ


def test_cpu_tensors_not_named_unless_watched(tmp_path):
    p, recs = run_py(tmp_path, PROG, options="torch=1:torch_budget=1")
    assert p.returncode == 0, p.stderr
    assert named(recs) == []


CONV = """
import sys, torch
torch.backends.cudnn.deterministic = "det" in sys.argv
conv = torch.nn.Conv2d(3, 4, 3)
conv(torch.randn(2, 3, 8, 8)).sum().backward()
print("ok")
"""


def test_convolution_backward_named_unless_cudnn_deterministic(tmp_path):
    """PyTorch documents Conv*d on CUDA as nondeterministic unless
    torch.backends.cudnn.deterministic is set (cuDNN's weight-gradient
    algorithms add with atomics)."""
    p, recs = run_py(tmp_path, CONV)
    assert p.returncode == 0, p.stderr
    assert [v["op"] for v in named(recs)] == ["aten::convolution_backward"], named(recs)
    (tmp_path / "d").mkdir()
    p, recs = run_py(tmp_path / "d", CONV, args=("det",))
    assert p.returncode == 0, p.stderr
    assert named(recs) == []
