"""An optimizer's step and the norms' parameter gradients under the
binding, on the CPU: torch.optim's foreach path (_foreach_* list ops, each
judged list element an output of the call), the fused updates
(_fused_adamw_, _fused_adam_, _fused_sgd_: param, exp_avg, exp_avg_sq,
max_exp_avg_sq, momentum_buffer judged on the values before the step),
native_layer_norm_backward's dweight and dbias beside dx; every correct
output passes, the results stay bitwise those of a plain run, and planted
custom ops (an AdamW that accumulates exp_avg_sq in fp16, a layer_norm
dweight without the mean term) are flagged by the oracle with the
program's line while their correct twins stay silent. The CUDA side:
test/gpu/torch_optim.py."""
import pytest

from test_torch import of, run_py

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

TRAIN = """
import sys, torch, hashlib
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.ReLU(),
                        torch.nn.Linear(32, 8))
kind = sys.argv[1]
try:
    opt = {
        "foreach_adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=1e-2, foreach=True),
        "foreach_adam": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=1e-2, maximize=True,
                                                   foreach=True),
        "fused_adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=1e-2, fused=True),
        "fused_adam": lambda p: torch.optim.Adam(p, lr=1e-2, weight_decay=1e-2, amsgrad=True,
                                                 maximize=True, fused=True),
        "foreach_sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4,
                                                 foreach=True),
        "fused_sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                               weight_decay=1e-4, fused=True),
    }[kind](m.parameters())
except (RuntimeError, TypeError) as e:
    print("unsupported", e)
    sys.exit(0)
x = torch.randn(64, 16); y = torch.randn(64, 8)
for _ in range(3):
    opt.zero_grad()
    torch.nn.functional.mse_loss(m(x), y).backward()
    opt.step()
h = hashlib.sha256(b''.join(p.detach().numpy().tobytes() for p in m.parameters()))
print(h.hexdigest())
"""

OPTS = "torch=1:torch_devices=cuda,cpu:torch_budget=1"


def _checks(recs, prefix):
    return [c for c in of(recs, "op_check") if c["op"].startswith(prefix)]


def _outputs(check):
    return check["gates"]["oracle"].get("outputs", [])


def _train(tmp_path, kind):
    d = tmp_path / kind
    d.mkdir()
    p, recs = run_py(d, TRAIN, options=OPTS, args=[kind])
    assert p.returncode == 0, p.stderr[-3000:]
    if p.stdout.startswith("unsupported"):
        pytest.skip("this torch has no %s on the CPU: %s" % (kind, p.stdout))
    assert not of(recs, "violation"), [v.get("message") for v in of(recs, "violation")]
    plain, _ = run_py(d, TRAIN, preload=False, args=[kind])
    assert plain.stdout == p.stdout, "results changed under the binding"
    return recs


def _all_pass(checks):
    for c in checks:
        for o in _outputs(c):
            assert o["class"] in ("bitwise", "pass"), (c["op"], o)


@pytest.mark.parametrize("kind", ["foreach_adamw", "foreach_adam"])
def test_foreach_adam_list_ops_judged_element_by_element(tmp_path, kind):
    recs = _train(tmp_path, kind)
    ops = {c["op"].split(".")[0] for c in of(recs, "op_check")}
    for op in ("aten::_foreach_lerp_", "aten::_foreach_mul_", "aten::_foreach_addcmul_",
               "aten::_foreach_sqrt", "aten::_foreach_div_", "aten::_foreach_addcdiv_"):
        assert op in ops, (op, sorted(ops))
    lerp = _checks(recs, "aten::_foreach_lerp_")[0]
    # the model's six parameters, each an output of the call
    assert [o["label"] for o in _outputs(lerp)] == ["self[%d]" % i for i in range(6)]
    assert {o["oracle_op"] for o in _outputs(lerp)} == {"lerp"}
    _all_pass(_checks(recs, "aten::_foreach_"))
    # the step size (bias-corrected, a new value every step) is a plan
    # attr: one signature, judged once over the three steps, not per step
    assert len(_checks(recs, "aten::_foreach_addcdiv_")) == 1
    if kind == "foreach_adam":  # maximize: the gradient negated, L2 decay added with alpha
        assert _checks(recs, "aten::_foreach_neg")
        adds = [o for c in _checks(recs, "aten::_foreach_add") for o in _outputs(c)]
        assert any(o["oracle_op"] == "addcmul" for o in adds), adds


@pytest.mark.parametrize("kind", ["fused_adamw", "fused_adam"])
def test_fused_adam_every_state_output_judged(tmp_path, kind):
    recs = _train(tmp_path, kind)
    name = "aten::_fused_%s_" % kind.split("_")[1]
    checks = _checks(recs, name)
    assert checks, sorted({c["op"] for c in of(recs, "op_check")})
    labels = [o["label"] for o in _outputs(checks[0])]
    want = ["param", "exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if kind == "fused_adam"
                                                 else [])
    assert labels == ["%s[%d]" % (w, i) for i in range(6) for w in want], labels
    assert {o["oracle_op"] for o in _outputs(checks[0])} == {kind.split("_")[1]}
    _all_pass(checks)
    # generated state would leave the update's domain: those gates say why
    gates = checks[0]["gates"]
    assert gates["precision"]["status"] == "not_applicable", gates


def test_sgd_momentum_foreach_and_fused(tmp_path):
    recs = _train(tmp_path, "foreach_sgd")
    adds = _checks(recs, "aten::_foreach_add")
    assert adds and _checks(recs, "aten::_foreach_mul_")
    _all_pass(adds)
    recs = _train(tmp_path, "fused_sgd")
    checks = _checks(recs, "aten::_fused_sgd_")
    assert len(checks) >= 2, checks  # the first step (buffer = gradient) and a later one
    labels = [o["label"] for o in _outputs(checks[0])]
    assert labels[:2] == ["param[0]", "momentum_buffer[0]"], labels
    _all_pass(checks)


CAP_PROG = """
import torch
torch.manual_seed(0)
ps = [torch.randn(n) for n in [3, 50, 7, 400, 9, 11, 13, 1300000, 2, 5, 17, 19, 23, 600, 29, 31]]
ps[3] = ps[3].view(20, 20).t()  # non-contiguous: judged unsampled
gs = [torch.randn_like(p) for p in ps]
torch._foreach_add_(ps, gs, alpha=-0.5)
torch._foreach_mul_(ps, torch.tensor(0.5))
print([float(p.sum()) for p in ps][:2])
"""


def test_a_long_list_judges_the_largest_and_a_spread(tmp_path):
    p, recs = run_py(tmp_path, CAP_PROG, options=OPTS)
    assert p.returncode == 0, p.stderr[-3000:]
    add = _checks(recs, "aten::_foreach_add_")[0]
    idx = [int(o["label"][5:-1]) for o in _outputs(add)]
    assert len(idx) == 8 and {3, 7, 13, 1} <= set(idx), idx  # the four largest among them
    assert idx[0] == 0 and idx[-1] == 15, idx  # the spread reaches both ends
    assert {o["oracle_op"] for o in _outputs(add)} == {"addcmul"}  # alpha != 1
    # the 1.3M-value element: every k-th of its last 2^20 (16384 judged)
    big = [o for o in _outputs(add) if o["label"] == "self[7]"]
    assert big, _outputs(add)
    _all_pass([add, _checks(recs, "aten::_foreach_mul_")[0]])  # a CPU scalar tensor
    assert not of(recs, "violation")


NORM_PROG = """
import torch
torch.manual_seed(0)
ln = torch.nn.LayerNorm(48)
x = (torch.randn(4, 24, 48) * 2 + 5).requires_grad_()
ln(x).square().sum().backward()
ln2 = torch.nn.LayerNorm(48, bias=False)
ln2(x).sum().backward()
ln3 = torch.nn.LayerNorm(48).bfloat16()
ln3(x.detach().bfloat16().requires_grad_()).square().sum().backward()
print("ok")
"""


def test_layer_norm_backward_dweight_dbias_beside_dx(tmp_path):
    p, recs = run_py(tmp_path, NORM_PROG, options=OPTS)
    assert p.returncode == 0, p.stderr[-3000:]
    checks = _checks(recs, "aten::native_layer_norm_backward")
    outs = [[(o["label"], o["oracle_op"]) for o in _outputs(c)] for c in checks]
    assert [("dx", "layer_norm_backward"), ("dweight", "layer_norm_dweight"),
            ("dbias", "layer_norm_dbias")] in outs, outs
    assert [("dx", "layer_norm_backward"), ("dweight", "layer_norm_dweight")] in outs, outs
    fp32 = [c for c in checks if "bf16" not in c["profile"]]
    _all_pass(fp32)
    # bf16 on the CPU: ATen sums dweight and dbias with bf16 roundings, so
    # they are judged under a 16-bit accumulator's bound (none for 96 rows)
    bf16 = [c for c in checks if "bf16" in c["profile"]]
    assert bf16, [c["profile"] for c in checks]
    classes = {o["label"]: o["class"] for o in _outputs(bf16[0])}
    assert classes["dweight"] in ("pass", "bitwise", "inconclusive"), classes
    assert classes["dbias"] in ("pass", "bitwise", "inconclusive"), classes
    assert not of(recs, "violation")


PLANTED = """
import torch
T = torch.Tensor

@torch.library.custom_op("kcopt::adamw_sq_fp16", mutates_args=())
def adamw_sq_fp16(p: T, g: T, m: T, v: T, step: float) -> T:
    h = g.half()
    return (v.half() * 0.999 + h * h * 0.001).float()   # the bug: fp16 arithmetic

@torch.library.custom_op("kcopt::adamw_sq_ok", mutates_args=())
def adamw_sq_ok(p: T, g: T, m: T, v: T, step: float) -> T:
    return v * 0.999 + g * g * 0.001

@torch.library.custom_op("kcopt::ln_dw_nomean", mutates_args=())
def ln_dw_nomean(g: T, x: T, mean: T, rstd: T) -> T:
    return (g * x * rstd).sum(0)                         # the bug: no mean term

@torch.library.custom_op("kcopt::ln_dw_ok", mutates_args=())
def ln_dw_ok(g: T, x: T, mean: T, rstd: T) -> T:
    return (g * ((x - mean) * rstd)).sum(0)

@torch.library.custom_op("kcopt::rms_dw_ok", mutates_args=())
def rms_dw_ok(g: T, x: T, rstd: T) -> T:
    return (g * (x * rstd)).sum(0)

torch.manual_seed(0)
p, g = torch.randn(64, 32), torch.randn(64, 32)
m, v = torch.randn(64, 32) * 0.1, torch.rand(64, 32)
adamw_sq_fp16(p, g, m, v, 3.0)                           # planted 1
adamw_sq_ok(p, g, m, v, 3.0)
x = torch.randn(128, 40) + 3
mean = x.mean(1, keepdim=True)
rstd = (x.var(1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
gy = torch.randn(128, 40)
ln_dw_nomean(gy, x, mean, rstd)                          # planted 2
ln_dw_ok(gy, x, mean, rstd)
rms_dw_ok(gy, x, rstd)
print("ran")
"""

PLANTED_YAML = """
contracts:
  - {torch_op: "kcopt::adamw_sq_fp16", op: adamw, args: {param: p, grad: g, exp_avg: m, exp_avg_sq: v, step: step}, attrs: {lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01, output: exp_avg_sq}, profile: fp32}
  - {torch_op: "kcopt::adamw_sq_ok", op: adamw, args: {param: p, grad: g, exp_avg: m, exp_avg_sq: v, step: step}, attrs: {lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01, output: exp_avg_sq}, profile: fp32}
  - {torch_op: "kcopt::ln_dw_nomean", op: layer_norm_dweight, args: {g: g, x: x, mean: mean, rstd: rstd}, profile: fp32}
  - {torch_op: "kcopt::ln_dw_ok", op: layer_norm_dweight, args: {g: g, x: x, mean: mean, rstd: rstd}, profile: fp32}
  - {torch_op: "kcopt::rms_dw_ok", op: rms_norm_dweight, args: {g: g, x: x, rstd: rstd}, profile: fp32}
"""


def test_planted_fp16_optimizer_and_meanless_dweight_flagged(tmp_path):
    (tmp_path / "c.yaml").write_text(PLANTED_YAML)
    p, recs = run_py(tmp_path, PLANTED, options=OPTS + ":contracts=%s" % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr[-3000:]
    viol = {}
    for v in of(recs, "violation"):
        viol.setdefault(v["op"], []).append(v)
    lines = PLANTED.split("\n")
    at = {k: next(i + 1 for i, t in enumerate(lines) if t.endswith("# planted %d" % k))
          for k in (1, 2)}
    for bad, line in (("kcopt::adamw_sq_fp16.default", at[1]),
                      ("kcopt::ln_dw_nomean.default", at[2])):
        assert bad in viol, (bad, sorted(viol))
        v = [x for x in viol[bad] if x["gate"] == "oracle"]
        assert v, viol[bad]
        assert v[0]["stack"]["python"][-1]["line"] == line
        assert v[0]["evidence"]["verdict"].startswith("fail")
    checked = {c["op"]: c for c in of(recs, "op_check")}
    for ok in ("kcopt::adamw_sq_ok.default", "kcopt::ln_dw_ok.default",
               "kcopt::rms_dw_ok.default"):
        assert ok not in viol, (ok, viol.get(ok))
        assert checked[ok]["gates"]["oracle"]["class"] in ("bitwise", "pass"), checked[ok]
    # the optimizer's generated-input gates: not applicable, with the reason
    assert checked["kcopt::adamw_sq_ok.default"]["gates"]["precision"]["status"] == \
        "not_applicable"


OVERLOADS = """
import torch
torch.manual_seed(0)
a = [torch.rand(16, 8) + 0.5, torch.rand(40) + 0.5]
b = [torch.rand(16, 8) + 0.5, torch.rand(40) + 0.5]
c = [torch.rand(16, 8) + 0.5, torch.rand(40) + 0.5]
torch._foreach_mul(a, b)                                   # List, functional
torch._foreach_div(a, [3.0, 7.0])                          # ScalarList
torch._foreach_sub(a, b, alpha=0.25)                       # alpha as addcmul
outs = [torch.empty_like(t) for t in a]
torch.ops.aten._foreach_add.List_out(a, b, out=outs)        # out=
torch._foreach_addcdiv(a, b, c, torch.tensor([0.5, -2.0]))  # Tensor of scalars
torch._foreach_addcmul(a, b, c, [0.1, 0.2])                # ScalarList
torch._foreach_lerp(a, b, c)                               # List of weights
torch._foreach_lerp(a, b, [0.25, 0.75])                    # ScalarList weights
torch._foreach_clamp_min(a, 0.75)
torch._foreach_norm(a)
for f in ("exp", "log", "tanh", "sigmoid", "abs", "neg", "rsqrt", "sqrt"):
    getattr(torch, "_foreach_" + f)(a)
x = [t.clone() for t in a]
torch._foreach_div_(x, torch.tensor(3.0))                  # a CPU scalar tensor
torch._foreach_copy_([torch.empty(16, 8, dtype=torch.bfloat16),
                      torch.empty(40, dtype=torch.bfloat16)], a)  # a conversion
print("ok")
"""


def test_list_op_overloads(tmp_path):
    p, recs = run_py(tmp_path, OVERLOADS, options=OPTS)
    assert p.returncode == 0, p.stderr[-3000:]
    assert not of(recs, "violation"), [v.get("message") for v in of(recs, "violation")]
    judged = {}
    for c in _checks(recs, "aten::_foreach_"):
        outs = _outputs(c)
        assert [o["label"] for o in outs] == ["self[0]", "self[1]"], (c["op"], outs)
        judged[c["op"]] = {o["class"] for o in outs}
    want = ["mul.List", "div.ScalarList", "sub.List", "add.List_out", "addcdiv.Tensor",
            "addcmul.ScalarList", "lerp.List", "lerp.ScalarList", "clamp_min.Scalar",
            "norm.Scalar", "exp.default", "log.default", "tanh.default", "sigmoid.default",
            "abs.default", "neg.default", "rsqrt.default", "sqrt.default", "div_.Tensor",
            "copy_.default"]
    for w in want:
        got = judged.get("aten::_foreach_" + w)
        assert got and got <= {"bitwise", "pass"}, (w, got, sorted(judged))


SCALED = """
import torch
torch.manual_seed(0)

def state(shapes):
    p = [torch.randn(s) for s in shapes]
    return (p, [torch.randn_like(t) * 1024 for t in p], [torch.randn_like(t) * 1e-2 for t in p],
            [torch.rand_like(t) * 1e-4 for t in p], [torch.tensor(3.0) for _ in p])

for shapes, inf in (([(8, 16), (16,)], 0.0), ([(4, 16), (16,)], 1.0)):
    p, g, m, v, steps = state(shapes)
    before = [t.clone() for t in p]
    torch._fused_adamw_(p, g, m, v, [], steps, lr=1e-3, beta1=0.9, beta2=0.999,
                        weight_decay=1e-2, eps=1e-8, amsgrad=False, maximize=False,
                        grad_scale=torch.tensor(1024.0), found_inf=torch.tensor(inf))
    print(inf, all(torch.equal(a, b) for a, b in zip(p, before)))
"""


def test_fused_adamw_with_grad_scale_and_found_inf(tmp_path):
    p, recs = run_py(tmp_path, SCALED, options=OPTS)
    assert p.returncode == 0, p.stderr[-3000:]
    if "unsupported" in p.stderr or "NotImplementedError" in p.stderr:
        pytest.skip("no fused AdamW with grad_scale on this CPU")
    assert p.stdout.split("\n")[:2] == ["0.0 False", "1.0 True"], p.stdout
    checks = _checks(recs, "aten::_fused_adamw_")
    assert len(checks) == 2, checks
    for c in checks:
        outs = _outputs(c)
        assert [o["label"] for o in outs][:3] == ["param[0]", "exp_avg[0]", "exp_avg_sq[0]"]
    _all_pass(checks)
    # the skipped step (found_inf set, the [4, 16] call): every output its
    # old value, bit for bit
    skipped = [c for c in checks if "[4, 16]" in c["key"]]
    assert len(skipped) == 1, [c["key"][:200] for c in checks]
    assert {o["class"] for o in _outputs(skipped[0])} == {"bitwise"}, _outputs(skipped[0])
    assert not of(recs, "violation")


def test_dense_layouts_as_c10_sees_them():
    # _fast_route's density test (the CUDA foreach fast path's condition)
    # against PyTorch's own reference implementation on the layouts an
    # optimizer's lists hold; Tensor has no such method in Python (a
    # mapping error on CUDA before)
    torch = pytest.importorskip("torch")
    import torch._prims_common as pc
    is_non_overlapping_and_dense = getattr(pc, "is_non_overlapping_and_dense", None) or \
        pc.is_non_overlapping_and_dense_or_false  # renamed in later releases
    from kcheck.torch import ops  # noqa: F401  (ops imports ops_optim for its rows)
    from kcheck.torch import ops_optim
    base = torch.zeros(4, 6, 5)
    cases = [base, base.transpose(0, 2), base[:, ::2], base[1:3], base[:, :, 0],
             torch.zeros(6, 1).expand(6, 4), torch.zeros(2, 3, 4, 5).to(
                 memory_format=torch.channels_last), torch.zeros(1, 7), torch.zeros(()),
             base.as_strided((4, 6), (6, 1), 3), base.as_strided((3, 3), (1, 1))]
    for t in cases:
        assert ops_optim._dense(t) == is_non_overlapping_and_dense(t), (t.shape, t.stride())
