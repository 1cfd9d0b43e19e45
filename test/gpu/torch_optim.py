#!/usr/bin/env python3
"""test/gpu/torch_optim.py — an optimizer's step and the norms' parameter
gradients under the PyTorch binding on CUDA (the CPU side:
test/integration/test_torch_optim.py). Prints PASS/FAIL lines, exits 1 on
any FAIL.

  python3 test/gpu/torch_optim.py [--out DIR] [CASE...]

Each training case runs a small model (Linear, LayerNorm, RMSNorm, ReLU,
cross-entropy) a few steps plain and under `kcheck run --torch`
(torch_budget=1): the parameters' hash must be equal, no violation, and
the op rows the case exercises judged with every output bitwise or pass:
  foreach_adamw   AdamW's default CUDA path (_foreach_* list ops) and
                  clip_grad_norm_ (_foreach_norm, _foreach_mul_.Tensor);
                  native_layer_norm_backward dx/dweight/dbias and
                  _fused_rms_norm_backward dx/dweight
  fused_adamw     _fused_adamw_ (param, exp_avg, exp_avg_sq)
  fused_adam      _fused_adam_ with amsgrad and maximize (max_exp_avg_sq)
  foreach_sgd     SGD with momentum and weight decay (_foreach_add_ with
                  alpha, _foreach_mul_)
  fused_sgd       _fused_sgd_ with nesterov (its first step and a later one)
  fused_bf16      _fused_adamw_ over bf16 parameters (fp32 opmath, the
                  state stored in bf16)
  amp_scaler      fp16 autocast with GradScaler and fused AdamW
                  (grad_scale, found_inf)
  planted         custom ops with torch_op contracts: an AdamW exp_avg_sq
                  accumulated in fp16 and a layer_norm dweight without the
                  mean term flagged by the oracle with the program's line;
                  their correct twins silent
Environment: BUILD (the build folder, default build); KC_OPTIM_DEVICE=cpu
and KC_OPTIM_OPTS=torch_devices=cuda,cpu run the cases on the CPU (a dry
run of this script: no RMSNorm kernel, no GradScaler there).
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

from torch_check import load  # the reports' records (test/gpu, this script's folder)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = ["foreach_adamw", "fused_adamw", "fused_adam", "foreach_sgd", "fused_sgd", "fused_bf16",
         "amp_scaler", "planted"]

# (op row, labels of its outputs that must be judged) per training case
EXPECT = {
    "foreach_adamw": [("aten::_foreach_lerp_", "self[0]"), ("aten::_foreach_mul_", "self[0]"),
                      ("aten::_foreach_addcmul_", "self[0]"), ("aten::_foreach_sqrt", "self[0]"),
                      ("aten::_foreach_div_", "self[0]"), ("aten::_foreach_addcdiv_", "self[0]"),
                      ("aten::_foreach_norm", "self[0]"),
                      ("aten::native_layer_norm_backward", "dx dweight dbias"),
                      ("aten::_fused_rms_norm_backward", "dx dweight")],
    "fused_adamw": [("aten::_fused_adamw_", "param[0] exp_avg[0] exp_avg_sq[0]")],
    "fused_adam": [("aten::_fused_adam_", "param[0] exp_avg[0] exp_avg_sq[0] max_exp_avg_sq[0]")],
    "foreach_sgd": [("aten::_foreach_add_", "self[0]"), ("aten::_foreach_mul_", "self[0]")],
    "fused_sgd": [("aten::_fused_sgd_", "param[0] momentum_buffer[0]")],
    "fused_bf16": [("aten::_fused_adamw_", "param[0] exp_avg[0] exp_avg_sq[0]")],
    "amp_scaler": [("aten::_fused_adamw_", "param[0] exp_avg[0] exp_avg_sq[0]")],
}

# the rows this script is about (a violation elsewhere is reported as INFO)
OWN = ("_foreach_", "_fused_adam", "_fused_sgd", "native_layer_norm_backward",
       "_fused_rms_norm_backward")

TRAIN = r'''
import hashlib, os, sys, torch
import torch.nn as nn
case = sys.argv[1]
torch.manual_seed(0)
dev = os.environ.get("KC_OPTIM_DEVICE", "cuda")


class Net(nn.Module):
    def __init__(s, d=256):
        super().__init__()
        s.inp, s.ln, s.fc = nn.Linear(64, d), nn.LayerNorm(d), nn.Linear(d, d)
        s.rms, s.out = nn.RMSNorm(d), nn.Linear(d, 10)

    def forward(s, x):
        return s.out(s.rms(torch.relu(s.fc(s.ln(s.inp(x))))))


m = Net().to(dev)
if case == "fused_bf16":
    m = m.to(torch.bfloat16)
P = m.parameters()
opt = {"foreach_adamw": lambda: torch.optim.AdamW(P, lr=3e-3, weight_decay=0.01, foreach=True),
       "fused_adamw": lambda: torch.optim.AdamW(P, lr=3e-3, weight_decay=0.01, fused=True),
       "fused_adam": lambda: torch.optim.Adam(P, lr=3e-3, weight_decay=0.01, amsgrad=True,
                                              maximize=True, fused=True),
       "foreach_sgd": lambda: torch.optim.SGD(P, lr=0.05, momentum=0.9, weight_decay=1e-4,
                                              foreach=True),
       "fused_sgd": lambda: torch.optim.SGD(P, lr=0.05, momentum=0.9, nesterov=True,
                                            weight_decay=1e-4, fused=True),
       "fused_bf16": lambda: torch.optim.AdamW(P, lr=3e-3, weight_decay=0.01, fused=True),
       "amp_scaler": lambda: torch.optim.AdamW(P, lr=3e-3, weight_decay=0.01, fused=True)}[case]()
scaler = torch.amp.GradScaler("cuda") if case == "amp_scaler" else None
x = torch.randn(32, 16, 64, device=dev, dtype=next(m.parameters()).dtype)
y = torch.randint(0, 10, (32 * 16,), device=dev)
for step in range(4):
    opt.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16, enabled=scaler is not None):
        loss = nn.functional.cross_entropy(m(x).reshape(-1, 10).float(), y)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        if case == "foreach_adamw":
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0, foreach=True)
        opt.step()
if dev == "cuda":
    torch.cuda.synchronize()
h = hashlib.sha256(b"".join(p.detach().float().cpu().numpy().tobytes() for p in m.parameters()))
print("PARAMS_SHA256", h.hexdigest())
print("FINAL_LOSS", float(loss).hex())
'''

PLANTED = r'''
import os, torch
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

torch.manual_seed(0)
d = os.environ.get("KC_OPTIM_DEVICE", "cuda")
p, g = torch.randn(256, 64, device=d), torch.randn(256, 64, device=d)
m, v = torch.randn(256, 64, device=d) * 0.1, torch.rand(256, 64, device=d)
adamw_sq_fp16(p, g, m, v, 3.0)                           # planted 1
adamw_sq_ok(p, g, m, v, 3.0)
x = torch.randn(512, 96, device=d) + 3
mean = x.mean(1, keepdim=True)
rstd = (x.var(1, unbiased=False, keepdim=True) + 1e-5).rsqrt()
gy = torch.randn(512, 96, device=d)
ln_dw_nomean(gy, x, mean, rstd)                          # planted 2
ln_dw_ok(gy, x, mean, rstd)
if d == "cuda":
    torch.cuda.synchronize()
print("ran")
'''

PLANTED_YAML = """contracts:
  - {torch_op: "kcopt::adamw_sq_fp16", op: adamw, args: {param: p, grad: g, exp_avg: m, exp_avg_sq: v, step: step}, attrs: {lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01, output: exp_avg_sq}, profile: fp32}
  - {torch_op: "kcopt::adamw_sq_ok", op: adamw, args: {param: p, grad: g, exp_avg: m, exp_avg_sq: v, step: step}, attrs: {lr: 0.001, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.01, output: exp_avg_sq}, profile: fp32}
  - {torch_op: "kcopt::ln_dw_nomean", op: layer_norm_dweight, args: {g: g, x: x, mean: mean, rstd: rstd}, profile: fp32}
  - {torch_op: "kcopt::ln_dw_ok", op: layer_norm_dweight, args: {g: g, x: x, mean: mean, rstd: rstd}, profile: fp32}
"""


def kcheck_cmd(prefix, extra=""):
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    opts = ["-o", "log_path=%s" % prefix, "-o", "torch_budget=1"]
    for o in [extra, os.environ.get("KC_OPTIM_OPTS", "")]:
        if o:
            opts += ["-o", o]
    return [sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "--lib",
            os.path.join(build, "libkcheck.so"), "run", "--torch"] + opts + ["--"]


def run(cmd, log, timeout=300):
    with open(log + ".out", "w") as out, open(log + ".err", "w") as err:
        try:
            return subprocess.run(cmd, stdout=out, stderr=err, timeout=timeout,
                                  cwd=os.path.dirname(log)).returncode
        except subprocess.TimeoutExpired:
            return 124


def records(prefix):
    return load(glob.glob(prefix + ".*.jsonl"))


def outputs(check):
    o = check["gates"].get("oracle") or {}
    return o.get("outputs") or [{"label": "out", "oracle_op": check.get("oracle_op"),
                                 "class": o.get("class", o.get("status"))}]


def train_case(case, work, lines):
    prog = os.path.join(work, "train.py")
    with open(prog, "w") as f:
        f.write(TRAIN)
    plain = os.path.join(work, case + "_plain")
    checked = os.path.join(work, case + "_torch")
    rc0 = run([sys.executable, prog, case], plain)
    rc1 = run(kcheck_cmd(checked) + [sys.executable, prog, case], checked)
    ok = True

    def say(good, what):
        nonlocal ok
        ok &= good
        lines.append("%s %s: %s" % ("PASS" if good else "FAIL", case, what))
    say(rc0 == 0 and rc1 == 0, "exit codes plain %d, under the binding %d" % (rc0, rc1))
    digest = [open(p + ".out").read().strip() for p in (plain, checked)]
    say(bool(digest[0]) and digest[0] == digest[1], "parameters and loss bitwise equal")
    recs = records(checked)
    viol = [r for r in recs if r["type"] == "violation" and r.get("cause") != "documented by PyTorch"]
    mine = [v for v in viol if any(k in str(v.get("op")) for k in OWN)]
    say(not mine, "no violation on the optimizer's and the norms' backward ops (%s)" % "; ".join(
        "%s %s %s" % (v.get("op"), v.get("gate"), v.get("output", "")) for v in mine)[:600])
    for v in viol:
        if v not in mine:  # another row's finding: reported, judged by its own tests
            lines.append("INFO %s: violation outside this script's rows: %s %s" % (
                case, v.get("op"), v.get("gate")))
    checks = [c for c in recs if c["type"] == "op_check" and "part" not in c]
    for c in checks:
        if not any(k in c["op"] for k in OWN):
            continue
        for o in outputs(c):
            if str(o.get("class", "")).startswith("fail"):
                say(False, "%s output %s: %s" % (c["op"], o["label"], o["class"]))
            elif o.get("class") == "inconclusive":
                lines.append("INFO %s: %s output %s inconclusive" % (case, c["op"], o["label"]))
    for row, labels in EXPECT[case]:
        mine = [c for c in checks if c["op"].startswith(row + ".")]
        judged = {o["label"]: o["class"] for c in mine for o in outputs(c)}
        want = labels.split()
        good = all(judged.get(lb) in ("bitwise", "pass") for lb in want)
        say(good, "%s judged %s" % (row, {lb: judged.get(lb, "never") for lb in want}))
    summ = [r for r in recs if r["type"] == "torch_summary"]
    if summ:
        s = summ[0]
        lines.append("INFO %s: %s ops seen, %s judged, errors %s" % (
            case, s.get("ops_seen"), s.get("ops_judged"), s.get("errors")))
        say(not s.get("errors"), "no internal error in the binding")
    return ok


def planted_case(work, lines):
    prog = os.path.join(work, "planted.py")
    with open(prog, "w") as f:
        f.write(PLANTED)
    yml = os.path.join(work, "planted.yaml")
    with open(yml, "w") as f:
        f.write(PLANTED_YAML)
    log = os.path.join(work, "planted")
    rc = run(kcheck_cmd(log, "contracts=" + yml) + [sys.executable, prog], log)
    ok = rc == 0
    lines.append("%s planted: exit %d" % ("PASS" if rc == 0 else "FAIL", rc))
    recs = records(log)
    src = PLANTED.split("\n")
    at = {k: next(i + 1 for i, t in enumerate(src) if t.endswith("# planted %d" % k))
          for k in (1, 2)}
    viol = [r for r in recs if r["type"] == "violation"]
    for op, line in (("kcopt::adamw_sq_fp16", at[1]), ("kcopt::ln_dw_nomean", at[2])):
        v = [r for r in viol if r.get("op", "").startswith(op) and r.get("gate") == "oracle"]
        got = v and v[0]["stack"]["python"][-1]["line"]
        good = bool(v) and got == line
        ok &= good
        lines.append("%s planted: %s flagged by the oracle at line %s (%s)" % (
            "PASS" if good else "FAIL", op, line, got if v else "not flagged"))
    checks = {c["op"]: c for c in recs if c["type"] == "op_check"}
    for op in ("kcopt::adamw_sq_ok.default", "kcopt::ln_dw_ok.default"):
        cls = (checks.get(op, {}).get("gates", {}).get("oracle") or {}).get("class")
        good = cls in ("bitwise", "pass") and not [r for r in viol if r.get("op") == op]
        ok &= good
        lines.append("%s planted: correct twin %s silent (%s)" % ("PASS" if good else "FAIL",
                                                                   op, cls))
    return ok


def main(argv):
    out = None
    if argv[:1] == ["--out"]:
        out, argv = argv[1], argv[2:]
    cases = argv or CASES
    work = tempfile.mkdtemp(prefix="kcheck-optim.")
    lines, ok = [], True
    for case in cases:
        try:
            ok &= planted_case(work, lines) if case == "planted" else train_case(case, work, lines)
        except Exception as e:  # one case's failure is reported, the others still run
            ok = False
            lines.append("FAIL %s: %s: %s" % (case, type(e).__name__, e))
        for line in lines:
            print(line, flush=True)
        lines = []
    if out:
        os.makedirs(out, exist_ok=True)
        shutil.make_archive(os.path.join(out, "torch-optim-logs"), "gztar", work)
    print("%s torch_optim (logs: %s)" % ("PASS" if ok else "FAIL", work))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
