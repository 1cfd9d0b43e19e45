"""A small CNN trained under the binding on CPU (fp32 with SGD and AdamW,
bf16 autocast with SGD): batch norm (training y,
saved statistics, running-statistics updates, eval, the three
gradients) and pooling (max with its indices, avg without the padding
counted, adaptive avg, their backwards) judged by their oracle ops, every
output named, no violation, and the run's losses and parameters bitwise
those of the plain run; a batch norm normalising by the unbiased
variance, a running variance updated with the biased one and an average
pool that counts the padding, shipped as custom ops with torch_op
contracts, are flagged at their lines."""
import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")
from test_torch import assert_planted_flagged, of, run_py  # noqa: E402

CNN_PROG = """
import hashlib, sys, torch, torch.nn as nn
# PyTorch documents adaptive_avg_pool2d's backward as nondeterministic on
# CUDA, and the binding's CPU path stands in for CUDA: ask for determinism
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                    nn.AvgPool2d(3, 2, 1, count_include_pad=False), nn.AdaptiveAvgPool2d(2),
                    nn.Flatten(), nn.Linear(32, 10))
opt = (torch.optim.AdamW if "adamw" in sys.argv else torch.optim.SGD)(net.parameters(), lr=0.05)
x = torch.randn(4, 3, 12, 12); y = torch.randint(0, 10, (4,))
for _ in range(3):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled="bf16" in sys.argv):
        loss = nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    print("loss", loss.float().item().hex())
net.eval()
with torch.no_grad():
    out = net(x)
h = hashlib.sha256()
for t in list(net.state_dict().values()) + [out]:
    h.update(t.detach().contiguous().numpy().tobytes())
print("state", h.hexdigest())
"""

_BN_OUTS = {"out": "batch_norm", "save_mean": "batch_norm_mean",
            "save_invstd": "batch_norm_invstd", "running_mean": "batch_norm_running_mean",
            "running_var": "batch_norm_running_var"}
_BN_GRADS = {"grad_input": "batch_norm_backward", "grad_weight": "batch_norm_backward_weight",
             "grad_bias": "batch_norm_backward_bias"}


def _outputs(c):
    o = c["gates"]["oracle"]
    return {x["label"]: (x["oracle_op"], x["class"]) for x in o.get("outputs", [])} or \
        {"out": (c["oracle_op"], o.get("status"))}


@pytest.mark.parametrize("optim", ["sgd", "adamw", "sgd bf16"])
def test_cnn_batch_norm_and_pooling_judged(tmp_path, optim):
    """fp32, and bf16 autocast (batch norm on bf16 activations with fp32
    weight and statistics)."""
    (tmp_path / "plain").mkdir()
    argv = tuple(optim.split())
    plain, _ = run_py(tmp_path / "plain", CNN_PROG, preload=False, args=argv)
    assert plain.returncode == 0, plain.stderr
    p, recs = run_py(tmp_path, CNN_PROG, args=argv)
    assert p.returncode == 0, p.stderr
    assert p.stdout == plain.stdout  # losses, parameters, running stats: bitwise
    checks = {}
    for c in of(recs, "op_check"):
        checks.setdefault(c["op"], []).append(c)
    want = {"aten::native_batch_norm.default", "aten::native_batch_norm_backward.default",
            "aten::max_pool2d_with_indices.default",
            "aten::max_pool2d_with_indices_backward.default", "aten::avg_pool2d.default",
            "aten::avg_pool2d_backward.default", "aten::_adaptive_avg_pool2d.default",
            "aten::_adaptive_avg_pool2d_backward.default"}
    assert want <= set(checks), sorted(checks)
    for name in want:
        for c in checks[name]:
            st = c["gates"]["oracle"]["status"]
            assert st in ("bitwise", "pass"), c
            for label, (op, cls) in _outputs(c).items():
                assert cls in ("bitwise", "pass"), (name, label, c["gates"]["oracle"])
    bn = [_outputs(c) for c in checks["aten::native_batch_norm.default"]]
    train = [o for o in bn if o["out"][0] == "batch_norm"]
    assert train and {k: v[0] for k, v in train[0].items()} == _BN_OUTS, train
    back = _outputs(checks["aten::native_batch_norm_backward.default"][0])
    assert {k: v[0] for k, v in back.items()} == _BN_GRADS, back
    mp = _outputs(checks["aten::max_pool2d_with_indices.default"][0])
    assert mp == {"out": ("max_pool2d", "bitwise"), "indices": ("max_pool2d_indices", "bitwise")}
    assert checks["aten::max_pool2d_with_indices_backward.default"][0]["oracle_op"] == \
        "max_pool2d_backward"
    avg = checks["aten::avg_pool2d.default"][0]
    assert "('count_include_pad', False)" in avg["key"] and "('kernel_h', 3)" in avg["key"], avg
    viol = of(recs, "violation")
    if "adamw" in argv:
        # ATen's CPU sqrt in AdamW's step is 1 ulp off the correctly
        # rounded value where the oracle's sqrt budget is 0: a question of
        # the optimizer ops' profile, not of these layers; the rest silent
        viol = [v for v in viol if v["op"] != "aten::sqrt.default"]
    assert not viol, [v.get("message") for v in viol]


EVAL_PROG = """
import torch
torch.manual_seed(0)
x = torch.randn(4, 6, 5, 5) * 3 + 1
w = torch.rand(6) + 0.5; b = torch.randn(6)
rm = torch.randn(6); rv = torch.rand(6) + 0.2
y = torch.nn.functional.batch_norm(x, rm, rv, w, b, training=False, eps=1e-3)
z = torch.nn.functional.batch_norm(x[:, :3], None, None, training=True)
# a frozen batch norm in training (fine-tuning): the eval-mode backward
xg = x.clone().requires_grad_(); wg = w.clone().requires_grad_(); bg = b.clone().requires_grad_()
f = torch.nn.functional.batch_norm(xg, rm, rv, wg, bg, training=False, eps=1e-3)
(f * torch.randn_like(f)).sum().backward()
print(float(y.sum()), float(z.sum()), float(xg.grad.sum()))
"""


def test_eval_batch_norm_and_no_running_stats_judged(tmp_path):
    """net.eval()'s batch norm (y from the running statistics, eps as
    given), a training one without running statistics (y and the saved
    statistics only) and a frozen one's backward (invstd from the running
    variance); sample=1: each signature of the op judged."""
    p, recs = run_py(tmp_path, EVAL_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:sample=1")
    assert p.returncode == 0, p.stderr
    outs = [_outputs(c) for c in of(recs, "op_check")
            if c["op"] == "aten::native_batch_norm.default"]
    ev = [o for o in outs if o["out"][0] == "batch_norm_eval"]
    tr = [o for o in outs if o["out"][0] == "batch_norm"]
    assert ev and ev[0]["out"][1] in ("bitwise", "pass"), outs
    assert tr and set(tr[0]) == {"out", "save_mean", "save_invstd"}, outs
    assert all(cls in ("bitwise", "pass") for o in tr for _, cls in o.values()), tr
    back = [_outputs(c) for c in of(recs, "op_check")
            if c["op"] == "aten::native_batch_norm_backward.default"]
    assert back and {k: v[0] for k, v in back[0].items()} == {
        "grad_input": "batch_norm_eval_backward", "grad_weight": "batch_norm_backward_weight",
        "grad_bias": "batch_norm_backward_bias"}, back
    assert all(cls in ("bitwise", "pass") for _, cls in back[0].values()), back
    assert not of(recs, "violation"), [v.get("message") for v in of(recs, "violation")]


BUGS_PROG = """
import torch
torch.manual_seed(0)

@torch.library.custom_op("kcb::bn_unbiased", mutates_args=())
def bn_unbiased(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m = x.mean(dim=(0, 2, 3), keepdim=True)
    v = x.var(dim=(0, 2, 3), keepdim=True)           # the bug: unbiased in y
    return (x - m) / torch.sqrt(v + 1e-5) * w.view(1, -1, 1, 1) + b.view(1, -1, 1, 1)

@torch.library.custom_op("kcb::bn_ok", mutates_args=())
def bn_ok(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=1e-5)

@torch.library.custom_op("kcb::rv_biased", mutates_args=())
def rv_biased(x: torch.Tensor, rv: torch.Tensor) -> torch.Tensor:
    return 0.9 * rv + 0.1 * x.var(dim=(0, 2, 3), unbiased=False)   # the bug: biased

@torch.library.custom_op("kcb::avg_pad", mutates_args=())
def avg_pad(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=True)  # the bug

x = torch.randn(4, 6, 9, 9) * 2 + 0.5
w = torch.rand(6) + 0.5; b = torch.randn(6); rv = torch.rand(6) + 0.5
bn_unbiased(x, w, b)                                  # LINE bn_unbiased
bn_ok(x, w, b)
rv_biased(x, rv)                                      # LINE rv_biased
avg_pad(x)                                            # LINE avg_pad
print("done")
"""

BUGS_YAML = """
contracts:
  - {torch_op: "kcb::bn_unbiased", op: batch_norm, args: {x: x, weight: w, bias: b}, attrs: {eps: 1e-5}, profile: fp32}
  - {torch_op: "kcb::bn_ok", op: batch_norm, args: {x: x, weight: w, bias: b}, attrs: {eps: 1e-5}, profile: fp32}
  - {torch_op: "kcb::rv_biased", op: batch_norm_running_var, args: {x: x, running_var: rv}, attrs: {momentum: 0.1}, profile: fp32}
  - {torch_op: "kcb::avg_pad", op: avg_pool2d, args: {x: x}, attrs: {kernel_h: 3, kernel_w: 3, stride_h: 2, stride_w: 2, pad_h: 1, pad_w: 1, count_include_pad: false}, profile: fp32}
"""


def test_planted_batch_norm_and_pool_bugs_flagged(tmp_path):
    assert_planted_flagged(tmp_path, BUGS_PROG, BUGS_YAML, "kcb::bn_ok.default")


OPINFO_PROG = """
import torch
from torch.testing._internal.common_methods_invocations import op_db
names = ("nn.functional.batch_norm", "nn.functional.max_pool2d", "nn.functional.avg_pool2d",
         "nn.functional.adaptive_avg_pool2d", "nn.functional.adaptive_max_pool2d")
n = 0
for op in op_db:
    if op.name not in names or op.variant_test_name != "":
        continue
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        grad = op.supports_autograd and dt != torch.float16
        for k, s in enumerate(op.sample_inputs("cpu", dt, requires_grad=grad)):
            if k >= 40:  # max_pool2d has 1440 per dtype: their first 40
                break
            try:
                r = op(s.input, *s.args, **s.kwargs)
                outs = [o for o in (r if isinstance(r, (tuple, list)) else [r])
                        if isinstance(o, torch.Tensor) and o.requires_grad]
                if outs:
                    sum(o.float().sum() for o in outs).backward()
                n += 1
            except Exception:
                pass  # a sample meant to raise
print("samples", n)
"""


def test_opinfo_samples_of_batch_norm_and_pooling_judged_without_violation(tmp_path):
    """PyTorch's own edge cases (OpInfo's sample inputs: one-element
    channels, negative momentum and divisor_override, ceil_mode, dilation,
    16-bit parameters whose statistics ATen holds in their type) in fp32,
    bf16 and fp16, forward and backward: every judged call bitwise or
    pass, no oracle error."""
    # the program imports OpInfo itself: importing it here would initialise
    # CUDA in the pytest process (torch.utils.cpp_extension probes
    # torch.cuda.is_available() at import), which crashed that process twice
    pytest.importorskip("expecttest", reason="torch's OpInfo needs expecttest")
    p, recs = run_py(tmp_path, OPINFO_PROG, timeout=600,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:gates=oracle:"
                     "sample=1:torch_workers=-1")
    assert p.returncode == 0, p.stderr
    seen = {}
    for c in of(recs, "op_check"):
        if not any(k in c["op"] for k in ("batch_norm", "pool")):
            continue
        o = c["gates"]["oracle"]
        for x in o.get("outputs") or [{"oracle_op": c["oracle_op"], "class": o.get("status")}]:
            seen.setdefault(x["oracle_op"], set()).add(x["class"])
    assert {"batch_norm", "batch_norm_eval", "batch_norm_backward", "batch_norm_eval_backward",
            "max_pool2d", "max_pool2d_indices", "max_pool2d_backward", "avg_pool2d",
            "avg_pool2d_backward", "adaptive_avg_pool2d", "adaptive_max_pool2d"} <= set(seen), seen
    bad = {op: cls for op, cls in seen.items() if cls - {"bitwise", "pass"}}
    assert not bad, bad
    assert not of(recs, "violation"), [v.get("message") for v in of(recs, "violation")]


FTZ_PROG = """
import torch

def flushed(g, x):
    out = torch.ops.aten._adaptive_avg_pool2d_backward(g, x)
    return torch.where(out.abs() < torch.finfo(torch.float32).tiny, torch.zeros_like(out), out)

@torch.library.custom_op("kcb::aap_bwd_ftz", mutates_args=())
def aap_bwd_ftz(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return flushed(g, x)

@torch.library.custom_op("kcb::aap_bwd_noftz", mutates_args=())
def aap_bwd_noftz(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return flushed(g, x)

x = torch.randn(2, 3, 8, 8)
g = torch.randn(2, 3, 4, 4) * torch.finfo(torch.float32).tiny  # g / 4: subnormal results
aap_bwd_ftz(g, x)
aap_bwd_noftz(g, x)                                   # LINE noftz
print("done")
"""

FTZ_YAML = """
contracts:
  - {torch_op: "kcb::aap_bwd_ftz", op: adaptive_avg_pool2d_backward, args: {g: g, x: x}, profile: "fp32:ftz=1"}
  - {torch_op: "kcb::aap_bwd_noftz", op: adaptive_avg_pool2d_backward, args: {g: g, x: x}, profile: fp32}
"""


def test_flushed_subnormal_pool_gradient_passes_only_under_ftz(tmp_path):
    # CUDA's adaptive pool backwards scatter with fp32 atomic adds, which
    # flush subnormals (ops_cnn._atomic_ftz): the oracle accepts the
    # flushed zeros under ftz=1 and names them without it.
    (tmp_path / "c.yaml").write_text(FTZ_YAML)
    p, recs = run_py(tmp_path, FTZ_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "gates=oracle:torch_workers=-1:contracts=%s" % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr
    viol = [v for v in of(recs, "violation") if v["gate"] == "oracle"]
    assert [v["op"] for v in viol] == ["kcb::aap_bwd_noftz.default"], \
        [v.get("message") for v in viol]
    ok = [c for c in of(recs, "op_check") if c["op"] == "kcb::aap_bwd_ftz.default"]
    assert ok and ok[0]["gates"]["oracle"]["status"] in ("bitwise", "pass"), ok


def test_atomic_ftz_profile_only_for_cuda_fp32():
    import types
    torch = pytest.importorskip("torch")
    from kcheck.torch import ops  # noqa: F401  (ops imports ops_cnn for its rows)
    from kcheck.torch import ops_cnn

    def plan_for(device, dtype):
        g = types.SimpleNamespace(device=types.SimpleNamespace(type=device), dtype=dtype)
        return ops_cnn._atomic_ftz(ops_cnn.Plan("adaptive_avg_pool2d_backward", [], None), g)

    assert plan_for("cuda", torch.float32).profile.endswith(":ftz=1")
    for device, dtype in (("cpu", torch.float32), ("cuda", torch.bfloat16),
                          ("cuda", torch.float64)):
        assert plan_for(device, dtype).profile is None
