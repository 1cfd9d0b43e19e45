"""Convolutions under the PyTorch binding on the CPU: conv1d, conv2d,
conv3d and transposed convolutions (stride, padding, dilation, groups,
with and without a bias) forward and backward judged by the oracle's conv
ops and passing, every output of convolution_backward named; custom ops
with a torch_op contract naming op conv: a convolution whose border
ignores the padding, one with the wrong stride and one computed in bf16
are flagged, the correct twin silent."""
import json

import pytest

from test_torch import of, profiles_the_oracle_refuses, run_py

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

OK_CLASSES = {"bitwise", "pass"}

CONV_PROG = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
cases = [
    # (dims, N, C, O, size, kernel, stride, padding, dilation, groups, bias)
    (1, 2, 4, 6, 19, 3, 2, 1, 1, 2, True),
    (1, 3, 3, 2, 16, 5, 1, 2, 2, 1, False),
    (2, 2, 6, 4, (9, 7), (3, 3), 2, 1, 1, 2, True),
    (2, 1, 3, 5, (8, 10), (3, 2), (1, 2), (2, 0), 2, 1, False),
    (2, 2, 4, 8, (6, 6), (3, 3), 1, 1, 1, 4, True),          # depthwise
    (3, 1, 2, 3, (4, 5, 6), (2, 3, 2), 1, 1, 1, 1, True),
]
fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
tfn = {1: F.conv_transpose1d, 2: F.conv_transpose2d}
for it in range(2):
    for d, n, c, o, size, k, s, p, dl, g, b in cases:
        size = size if isinstance(size, tuple) else (size,)
        k = k if isinstance(k, tuple) else (k,) * d
        x = torch.randn(n, c, *size, requires_grad=True)
        w = torch.randn(o, c // g, *k, requires_grad=True)
        bias = torch.randn(o, requires_grad=True) if b else None
        y = fn[d](x, w, bias, stride=s, padding=p, dilation=dl, groups=g)
        y.square().sum().backward()
    # transposed: stride 2, output_padding 1, groups 2
    for d in (1, 2):
        x = torch.randn(2, 4, *((5,) * d), requires_grad=True)
        w = torch.randn(4, 3, *((3,) * d), requires_grad=True)
        bias = torch.randn(6, requires_grad=True)
        y = tfn[d](x, w, bias, stride=2, padding=1, output_padding=1, groups=2)
        y.square().sum().backward()
    # bf16 (accumulation in bf16 assumed on the CPU: judged, or inconclusive for long sums)
    x = torch.randn(2, 4, 8, 8, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(6, 4, 3, 3, dtype=torch.bfloat16, requires_grad=True)
    F.conv2d(x, w, None, padding=1).float().square().sum().backward()
print("ran")
"""


def _conv_checks(recs):
    return [c for c in of(recs, "op_check") if c["op"].startswith("aten::convolution")]


def test_conv_forward_and_backward_judged_and_passing(tmp_path):
    p, recs = run_py(tmp_path, CONV_PROG, timeout=600, options="torch=1:torch_devices=cuda,cpu:"
                     "torch_budget=1:kernel_clean_limit=-1:op_clean_limit=-1")
    assert p.returncode == 0, p.stderr
    assert "ran" in p.stdout
    checks = _conv_checks(recs)
    fwd = [c for c in checks if c["op"] == "aten::convolution.default"]
    bwd = [c for c in checks if c["op"] == "aten::convolution_backward.default"]
    # 6 cases + 2 transposed + bf16, each judged once (the second pass is the same signatures)
    assert len(fwd) == 9 and len(bwd) == 9, [c["op"] for c in checks]
    for c in fwd:
        o = c["gates"]["oracle"]
        ok = OK_CLASSES | ({"inconclusive"} if "bfloat16" in c["key"] else set())
        assert o.get("class") in ok, (c["key"], o)
        assert c["oracle_op"] in ("conv", "conv_transpose")
        assert "('algorithm', 'direct')" in c["key"], c["key"]
        assert c["profile"].startswith("fp32" if "float32" in c["key"] else "bf16_bf16acc")
    assert {c["oracle_op"] for c in fwd} == {"conv", "conv_transpose"}
    labels = set()
    for c in bwd:
        o = c["gates"]["oracle"]
        outs = o["outputs"]
        labels |= {x["label"] for x in outs}
        ok = OK_CLASSES | ({"inconclusive"} if "bfloat16" in c["key"] else set())
        assert all(x["class"] in ok for x in outs), (c["key"], outs)
        ops = {x["label"]: x["oracle_op"] for x in outs}
        # a transposed convolution's input gradient is a convolution
        assert ops.get("grad_input") in ("conv_transpose", "conv") and \
            ops.get("grad_weight") == "conv_weight_grad", ops
    assert labels == {"grad_input", "grad_weight", "grad_bias"}, labels
    assert any({x["oracle_op"] for x in c["gates"]["oracle"]["outputs"]} >= {"conv"}
               for c in bwd), "no transposed convolution's input gradient judged"
    # PyTorch's documented nondeterminism (the nondeterminism gate names
    # convolution_backward): a warning about the op, not a verdict on values
    viol = [v for v in of(recs, "violation") if v.get("cause") != "documented by PyTorch"]
    assert not viol, viol


BUGS_PROG = """
import torch
import torch.nn.functional as F

@torch.library.custom_op("kcc::conv_nopad", mutates_args=())
def conv_nopad(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    y = F.conv2d(x, w, b)                  # the bug: the border's padded taps dropped,
    return F.pad(y, (1, 1, 1, 1))          # those outputs left at zero

@torch.library.custom_op("kcc::conv_stride", mutates_args=())
def conv_stride(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    y = F.conv2d(x, w, b, padding=1)       # the bug: stride 1 computed,
    return y[:, :, : (y.shape[2] + 1) // 2, : (y.shape[3] + 1) // 2].contiguous()  # stride 2's shape

@torch.library.custom_op("kcc::conv_bf16", mutates_args=())
def conv_bf16(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.conv2d(x.bfloat16(), w.bfloat16(), b.bfloat16(), padding=1).float()  # the bug

@torch.library.custom_op("kcc::conv_ok", mutates_args=())
def conv_ok(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.conv2d(x.double(), w.double(), b.double(), padding=1).float()

torch.manual_seed(0)
x, w, b = torch.randn(2, 8, 9, 9), torch.randn(4, 8, 3, 3), torch.randn(4)
conv_nopad(x, w, b)                        # line 25
conv_stride(x, w, b)                       # line 26
conv_bf16(x, w, b)                         # line 27
conv_ok(x, w, b)
print("ran")
"""

BUGS_YAML = """
contracts:
  - {torch_op: "kcc::conv_nopad", op: conv, args: {x: x, w: w, bias: b}, attrs: {padding: 1}, profile: fp32}
  - {torch_op: "kcc::conv_stride", op: conv, args: {x: x, w: w, bias: b}, attrs: {padding: "1,1", stride: "2,2"}, profile: fp32}
  - {torch_op: "kcc::conv_bf16", op: conv, args: {x: x, w: w, bias: b}, attrs: {padding: 1}, profile: fp32}
  - {torch_op: "kcc::conv_ok", op: conv, args: {x: x, w: w, bias: b}, attrs: {padding: 1, groups: 1, dilation: 1}, profile: fp32}
"""


def test_wrong_convolutions_flagged_by_their_contracts(tmp_path):
    (tmp_path / "conv.yaml").write_text(BUGS_YAML)
    p, recs = run_py(tmp_path, BUGS_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "contracts=%s" % (tmp_path / "conv.yaml"), timeout=600)
    assert p.returncode == 0, p.stderr
    viol = of(recs, "violation")
    got = {}
    for v in viol:
        got.setdefault(v["op"], set()).add(v["gate"])
    lines = {v["op"]: v["stack"]["python"][-1]["line"] for v in viol if v["gate"] == "oracle"}
    assert lines.get("kcc::conv_nopad.default") == 25, (lines, got)
    assert lines.get("kcc::conv_stride.default") == 26, (lines, got)
    assert lines.get("kcc::conv_bf16.default") == 27, (lines, got)
    for v in viol:
        if v["gate"] == "oracle":
            assert v["evidence"]["verdict"] in ("fail_value", "fail_precision"), v["evidence"]
            assert v["evidence"]["op"] == "conv"
    assert "kcc::conv_ok.default" not in got, got["kcc::conv_ok.default"]
    ok = [c for c in of(recs, "op_check") if c["op"] == "kcc::conv_ok.default"]
    assert ok and ok[0]["gates"]["oracle"]["class"] in OK_CLASSES, ok


def test_backward_plans_per_output_mask_and_transposed_roles():
    """The mapper: the first asked-for gradient is the primary plan, the
    others follow it; a transposed convolution's input gradient is a
    convolution and its weight gradient takes the input as g."""
    from kcheck.torch import ops, profiles
    f = torch.ops.aten.convolution_backward.default
    e = ops.entry_for(f)
    g, x, w = torch.randn(2, 4, 5, 5), torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3)
    args = (g, x, w, [4], [2, 2], [1, 1], [1, 1], False, [0, 0], 1, [False, True, True])
    p = e.mapper(e.bind(args, {}))
    assert (p.op, p.label, [q.op for q in p.more]) == ("conv_weight_grad", "grad_weight",
                                                       ["conv_bias_grad"])
    assert [n for n, _ in p.inputs] == ["g", "x"] and p.inputs[0][1] is g
    assert p.attrs == {"stride": "2,2", "padding": "1,1", "dilation": "1,1", "groups": 1,
                       "algorithm": "direct"}
    assert p.more[0].klass == "conv_sum"
    # transposed: y = conv_transpose(xt [2, 4, 5, 5], w [4, 3, 3, 3]) -> [2, 3, 9, 9]
    gt, xt = torch.randn(2, 3, 9, 9), torch.randn(2, 4, 5, 5)
    args = (gt, xt, w, [3], [2, 2], [1, 1], [1, 1], True, [0, 0], 1, [True, True, False])
    p = e.mapper(e.bind(args, {}))
    assert (p.op, p.label) == ("conv", "grad_input")
    assert p.inputs[0][1] is gt and p.inputs[1][1] is w
    q = p.more[0]
    assert q.op == "conv_weight_grad" and q.inputs[0][1] is xt and q.inputs[1][1] is gt
    with pytest.raises(ops.Skip):
        e.mapper(e.bind(args[:-1] + ([False, False, False],), {}))
    s = dict(profiles.settings(), cudnn_conv_tf32=True)
    assert profiles.profile("conv", "fp32", "fp32", s).startswith("tensorcore_tf32")
    assert profiles.profile("conv", "fp32", "fp32", dict(s, cudnn_conv_tf32=False)) \
        .startswith("fp32")
    assert profiles.profile("conv_cpu", "fp32", "fp32", s) == "fp32:in=fp32:out=fp32:ftz=1"
    assert profiles.profile("conv", "bf16", "bf16", s).startswith("tensorcore_fp32:in=bf16")
    with pytest.raises(profiles.Unsupported):
        profiles.profile("conv_cpu", "fp32", "fp32", dict(s, mkldnn_conv_fp32_precision="bf16"))


def test_every_conv_profile_parses_in_the_oracle(tmp_path):
    """Each spec the convolution classes can produce is accepted by
    libkcheck's parser, and the judge takes the conv attrs as the binding
    writes them."""
    from kcheck.torch import conv, profiles as P
    specs = set()
    base = P.settings()
    for klass in conv.KLASSES:
        for i in ("fp32", "bf16", "fp16", "fp64"):
            for s in (dict(base, cudnn_conv_tf32=True), dict(base, cudnn_conv_tf32=False),
                      dict(base, mkldnn_conv_fp32_precision="tf32")):
                try:
                    specs.add(P.profile(klass, i, i, s))
                except P.Unsupported:
                    pass
    assert profiles_the_oracle_refuses(tmp_path, specs) == "[]"
    assert len(specs) >= 6, specs


def test_op_judge_takes_conv_attrs_as_text(tmp_path):
    """kcheck_op_judge (the binding's entry) reaches the conv ops with the
    attrs as the binding writes them: one number or one per spatial dim,
    the alias convolution; a list of the wrong length and shapes that fit
    no convolution are errors with the reason, a wrong output a violation."""
    code = """
import ctypes, json, torch
import torch.nn.functional as F
from kcheck import _api
lib = _api.api()
keep = []
def T(name, t):
    t = t.contiguous()
    sh = (ctypes.c_long * t.dim())(*t.shape); st = (ctypes.c_long * t.dim())(*t.stride())
    keep.append((t, sh, st))
    return _api.Tensor(name.encode(), t.data_ptr(), b"fp32", t.dim(), sh, st)
def judge(op, attrs, ins, out):
    arr = (_api.Tensor * len(ins))(*[T(n, x) for n, x in ins])
    res = ctypes.create_string_buffer(4096)
    r = lib.kcheck_op_judge(b"oracle", op.encode(), b"fp32", attrs.encode(), len(ins), arr,
                            ctypes.byref(T("out", out)), 0, b"{}", res, len(res))
    d = json.loads(res.value.decode())
    return r, d.get("class", d.get("reason"))
torch.manual_seed(0)
x, w, b = torch.randn(2, 4, 9, 8), torch.randn(6, 2, 3, 3), torch.randn(6)
ref = lambda *a, **k: F.conv2d(*[t.double() for t in a], **k).float()
y = ref(x, w, b, stride=(2, 1), padding=(1, 0), groups=2)
g = torch.randn(2, 6, 5, 6)
print(json.dumps([
    judge("conv", "stride=2,1 padding=1,0 groups=2", [("x", x), ("w", w), ("bias", b)], y),
    judge("convolution", "stride=2,1 padding=1,0 groups=2", [("x", x), ("w", w), ("bias", b)],
          y + 1e-3),
    judge("conv", "stride=2,1,1 padding=1,0 groups=2", [("x", x), ("w", w), ("bias", b)], y),
    judge("conv", "stride=2 padding=1 groups=2", [("x", x), ("w", w), ("bias", b)], y),
    judge("conv_bias_grad", "", [("g", g)], g.double().sum((0, 2, 3)).float()),
    ]))
"""
    p, _ = run_py(tmp_path, code, options="torch=1")
    assert p.returncode == 0, p.stderr
    (ok, c1), (viol, c2), (e1, why1), (e2, why2), (bg, c5) = \
        json.loads(p.stdout.strip().splitlines()[-1])
    assert ok == 0 and c1 in ("bitwise", "pass"), c1
    assert viol == 1 and c2.startswith("fail"), c2
    assert e1 == -1 and "one per spatial dim" in why1, why1
    assert e2 == -1 and "rejected the conv tensors" in why2, why2
    assert bg == 0 and c5 in ("bitwise", "pass"), c5
