"""Ops that place values without arithmetic, and pow at the exponents ATen
computes with another op, under the binding on the CPU (ops_copy.py):
clone, aten::copy, cat, the constant fills, _foreach_zero_,
select_backward and slice_backward judged bitwise through the oracle's
copy; pow at 2, 0.5, -0.5, -1, 1 and 0 through mul, sqrt, rsqrt, div and
copy, its other exponents passed through with the reason. Wrong kernels
planted under those ATen ops (torch.library overrides of their CPU
kernels) are caught by the oracle with the program's line; PyTorch's own
results (OpInfo's samples) give no oracle violation."""
import pytest

from test_torch import of, run_opinfo_cpu, run_py

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

# every signature judged inline, every call (fill values share a signature)
OPTS = "torch=1:torch_devices=cuda,cpu:torch_budget=1:kernel_clean_limit=-1:op_clean_limit=-1:sample=1:torch_workers=-1"

CORRECT = """
import torch
torch.manual_seed(0)
x = torch.randn(6, 10)
xb = torch.randn(6, 10).bfloat16()
x.t().clone()
torch.ops.aten.copy(x, xb)
torch.cat([xb, x], 1)
torch.cat([torch.randn(6, 0), x, torch.tensor([]), x], 1)
torch.zeros(3, 4, dtype=torch.bfloat16)
torch.zeros(3, dtype=torch.int64)
torch.zeros_like(x)
torch.ones_like(xb)
torch.full((7,), 0.1, dtype=torch.bfloat16)
torch.full((7,), 1 / 3, dtype=torch.float16)
x.new_full((3,), -2.5e-3)
torch.empty(5, 5, dtype=torch.float64).fill_(torch.tensor(0.1))
torch.empty(2, 3).zero_()
torch.scalar_tensor(2.5)
torch._foreach_zero_([torch.randn(3), torch.randn(4, 4)])
g = torch.randn(6, 10)
torch.ops.aten.select_backward(g[:, 0].contiguous(), [6, 10], 1, -1)
torch.ops.aten.slice_backward(g[:, :3].contiguous(), [6, 9], 1, 1, 100, 3)
a = torch.randn(8, 16).abs() + 0.01
for e in (2, 0.5, -0.5, -1, 1, 0, 3, 1.7):
    a.pow(e)
a.half().pow(2)
a.bfloat16().reciprocal()
torch._foreach_maximum([a, x], 0.25)
print("ok")
"""


def _checks(recs, op):
    return [c for c in of(recs, "op_check") if c["op"] == op]


def _one(recs, op):
    cs = _checks(recs, op)
    assert cs, (op, sorted({c["op"] for c in of(recs, "op_check")}))
    return cs[0]


def _outputs(check):
    o = check["gates"]["oracle"]
    return [(x["label"], x["class"]) for x in o.get("outputs", [])]


@pytest.fixture(scope="module")
def correct(tmp_path_factory):
    d = tmp_path_factory.mktemp("copy")
    p, recs = run_py(d, CORRECT, options=OPTS)
    assert p.returncode == 0, p.stderr[-3000:]
    assert not of(recs, "violation"), [v.get("message") for v in of(recs, "violation")]
    return recs


def _summary(recs):
    (s,) = of(recs, "torch_summary")
    return s


@pytest.mark.parametrize("op", ["aten::clone.default", "aten::copy.default",
                                "aten::zeros.default", "aten::zeros_like.default",
                                "aten::ones_like.default", "aten::full.default",
                                "aten::new_full.default", "aten::fill_.Tensor",
                                "aten::zero_.default", "aten::scalar_tensor.default"])
def test_copies_and_fills_judged_bitwise(correct, op):
    checks = _checks(correct, op)
    assert checks, (op, sorted({c["op"] for c in of(correct, "op_check")}))
    for c in checks:
        assert c["oracle_op"] == "copy", c
        assert c["gates"]["oracle"]["class"] == "bitwise", c["gates"]["oracle"]


def test_fills_say_why_their_trials_do_not_apply(correct):
    gates = _one(correct, "aten::full.default")["gates"]
    for g in ("nonfinite", "precision", "extremes"):
        assert gates[g]["status"] == "not_applicable", gates
        assert "constant fill" in gates[g]["reason"], gates[g]
    assert gates["coverage"]["status"] == "pass", gates  # its output still poisoned and read
    # an integer fill passes through as integer outputs do
    assert _summary(correct)["passed_through_ops"]["dtype int64"] == {"aten::zeros.default": 1}


def test_cat_and_placed_gradients_judge_every_part(correct):
    # the bf16 input converted to float32 (exactly) on its slice; empty
    # inputs (one of the output's rank, a legacy 1-D one) are no slice
    assert [_outputs(c) for c in _checks(correct, "aten::cat.default")] == [
        [("tensors[0]", "bitwise"), ("tensors[1]", "bitwise")],
        [("tensors[1]", "bitwise"), ("tensors[3]", "bitwise")]]
    assert _outputs(_one(correct, "aten::select_backward.default")) == [
        ("grad", "bitwise"), ("zeros[0]", "bitwise")]
    # columns 1, 4, 7 of 9: zeros before, after, and two strided runs between
    assert _outputs(_one(correct, "aten::slice_backward.default")) == [
        ("grad", "bitwise"), ("zeros[0]", "bitwise"), ("zeros[1]", "bitwise"),
        ("zeros[2]", "bitwise"), ("zeros[3]", "bitwise")]
    assert [x for x, _ in _outputs(_one(correct, "aten::_foreach_zero_.default"))] == [
        "self[0]", "self[1]"]
    assert {c for _, c in _outputs(_one(correct, "aten::_foreach_maximum.Scalar"))} == {"bitwise"}


def test_pow_judged_through_the_op_ATen_runs(correct):
    ops = sorted(c["oracle_op"] for c in _checks(correct, "aten::pow.Tensor_Scalar"))
    assert ops == ["copy", "copy", "div", "mul", "rsqrt", "sqrt"], ops
    for c in _checks(correct, "aten::pow.Tensor_Scalar"):
        assert c["gates"]["oracle"]["class"] in ("bitwise", "pass"), c["gates"]["oracle"]
    passed = _summary(correct)["passed_through_ops"]
    assert passed["no oracle op for pow with exponent 3.0"] == {"aten::pow.Tensor_Scalar": 1}
    assert passed["no oracle op for pow with exponent 1.7"] == {"aten::pow.Tensor_Scalar": 1}
    assert "aten::pow.Tensor_Scalar" in passed["ATen's CPU pow in float16 calls std::pow "
                                               "(no oracle op)"]
    rec = _one(correct, "aten::reciprocal.default")
    assert (rec["oracle_op"], rec["gates"]["oracle"]["class"]) == ("div", "bitwise"), rec


PLANTED = """
import torch
lib = torch.library.Library("aten", "IMPL")

def clone_off(x, memory_format=None):
    y = torch.empty_like(x).copy_(x)
    y.view(-1)[3] = torch.nextafter(y.view(-1)[3], torch.tensor(float("inf")))
    return y

def zeros_like_dirty(x, dtype=None, layout=None, device=None, pin_memory=None,
                     memory_format=None):
    y = torch.empty_like(x, dtype=dtype)
    y.fill_(0)
    y.view(-1)[-1] = 1e-30
    return y

def full_truncated(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    # the value cut to bf16 by truncating its float bits, not rounded
    v = torch.tensor(float(fill_value)).view(torch.int32) & -65536
    return torch.empty(size, dtype=dtype).fill_(v.view(torch.float32).item())

def cat_swapped(tensors, dim=0):  # the inputs placed in reverse order
    ts = list(reversed(tensors))
    shape = list(ts[0].shape)
    shape[dim] = sum(t.shape[dim] for t in ts)
    y, off = torch.empty(shape, dtype=ts[0].dtype), 0
    for t in ts:
        y.narrow(dim, off, t.shape[dim]).copy_(t)
        off += t.shape[dim]
    return y

def select_backward_next(g, sizes, dim, index):
    y = g.new_zeros(sizes)
    y.select(dim, index + 1).copy_(g)
    return y

def slice_backward_stale(g, sizes, dim, start, end, step):
    y = g.new_ones(sizes)
    y.narrow(dim, start, g.shape[dim]).copy_(g)
    return y

def pow_exp_log(x, e):
    return torch.exp(torch.log(x) * e)

def reciprocal_scaled(x):  # 1/x off by a factor above the bf16 ulp
    return torch.div(torch.ones_like(x), x) * (1 + 2 ** -6)

lib.impl("clone", clone_off, "CPU")
lib.impl("zeros_like", zeros_like_dirty, "CPU")
lib.impl("full", full_truncated, "CPU")
lib.impl("select_backward", select_backward_next, "CPU")
lib.impl("slice_backward", slice_backward_stale, "CPU")
lib.impl("pow.Tensor_Scalar", pow_exp_log, "CPU")
lib.impl("reciprocal", reciprocal_scaled, "CPU")
x = torch.randn(5, 7)
g = torch.randn(5)
x.clone()                                                    # LINE clone
torch.zeros_like(x)                                          # LINE zeros_like
torch.full((4,), 0.1, dtype=torch.bfloat16)                  # LINE full
torch.ops.aten.select_backward(g, [5, 7], 1, 2)              # LINE select_backward
torch.ops.aten.slice_backward(x[:, :3], [5, 9], 1, 0, 3, 1)  # LINE slice_backward
(x.abs() + 0.5).pow(2)                                       # LINE pow
(x.abs() + 0.5).bfloat16().reciprocal()                      # LINE reciprocal
lib.impl("cat", cat_swapped, "CPU")
torch.cat([x, 2 * x])                                        # LINE cat
print("done")
"""


def test_planted_wrong_kernels_caught_with_the_line(tmp_path):
    p, recs = run_py(tmp_path, PLANTED, options=OPTS)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = {}
    for v in of(recs, "violation"):
        if v["gate"] == "oracle":
            lines.setdefault(v["op"].split(".")[0], v["stack"]["python"][-1]["line"])
    marked = {"aten::" + ln.split("# LINE ")[1]: i + 1
              for i, ln in enumerate(PLANTED.splitlines()) if "# LINE " in ln}
    assert lines == marked, [v.get("message") for v in of(recs, "violation")]
    # each wrong part named: the stale ones beside slice_backward's slice
    outs = {v.get("output") for v in of(recs, "violation") if v["op"].startswith(
        "aten::slice_backward")}
    assert "zeros[0]" in outs, outs


def test_opinfo_samples_give_no_false_verdict(tmp_path):
    """PyTorch's OpInfo samples of the ops ops_copy judges (their
    backward brings select_backward and slice_backward), every signature
    judged: no oracle violation on PyTorch's own results."""
    pytest.importorskip("expecttest", reason="torch's OpInfo needs expecttest")
    names = ("clone,cat,zeros,ones,full,zeros_like,ones_like,full_like,new_zeros,new_ones,"
             "new_full,fill,zero_,scalar_tensor,pow,select,narrow,slice")
    p, recs = run_opinfo_cpu(tmp_path, names, 200)
    judged = {c["op"].split(".")[0] for c in of(recs, "op_check")}
    # (OpInfo's pow samples have tensor exponents: CORRECT judges pow)
    for op in ("clone", "cat", "zeros", "ones", "full", "zeros_like", "full_like", "new_full",
               "fill", "zero_", "scalar_tensor", "select_backward", "slice_backward"):
        assert "aten::" + op in judged, (op, sorted(judged))
    viol = [v for v in of(recs, "violation") if v["gate"] == "oracle"]
    assert not viol, [v["message"] for v in viol][:5]
    # an empty output is no judgment: it passes through, as an empty input does
    skipped = [c["op"] for c in of(recs, "op_check") if c["gates"]["oracle"].get("status") ==
               "skipped"]
    assert not skipped, skipped


def test_a_factory_on_an_unwatched_device_passes_through(tmp_path):
    # no tensor argument names a factory's device: the mapper does
    # (torch_devices=cuda, the default, leaves the CPU out)
    p, recs = run_py(tmp_path, "import torch\ntorch.zeros(3)\ntorch.full((2,), 0.5)\n",
                     options="torch=1:torch_budget=1")
    assert p.returncode == 0, p.stderr[-3000:]
    assert not of(recs, "op_check")
    assert _summary(recs)["passed_through_ops"]["cpu tensor"] == {
        "aten::zeros.default": 1, "aten::full.default": 1}
