#!/usr/bin/env python3
"""test/gpu/torch_conv.py — convolutions on CUDA under the PyTorch binding.

  python3 test/gpu/torch_conv.py [OUTDIR]     run, check, print PASS/FAIL lines
  python3 test/gpu/torch_conv.py --child      the program itself (prints HASH, CALL)

The driver runs the program plain and under `kcheck run --torch` (every
signature checked at its first call: torch_budget=1, judgments on the
program's thread: torch_workers=-1, so none is deferred; every signature,
not a sample of them after 8 clean ones: kernel_clean_limit=-1; contracts
for the planted ops) and checks:

- the results (outputs and gradients) bitwise equal to the plain run (per
  group; a group that differs between two plain runs is named, not
  compared);
- conv2d forward and backward (grad_input, grad_weight, grad_bias) judged
  in fp32 with TF32 on (PyTorch's default: profile tensorcore_tf32), with
  torch.backends.cudnn.allow_tf32 = False (fp32), in bf16, channels_last
  (fp32 and bf16), a strided/grouped/dilated conv, conv1d, conv3d,
  conv_transpose2d and cudnn.benchmark=True: no violation; each group has
  outputs judged pass or bitwise (inconclusive allowed: cuDNN may run
  Winograd or FFT, which the dot-product bound does not cover — counted,
  with the kernels cuDNN ran);
- planted custom ops under torch_op contracts (op conv, profile fp32):
  conv_nopad (the border ignores the padding) and conv_stride (stride 1
  where the contract says 2) flagged by the oracle gate with the Python
  line of their call; conv_ok (the same convolution in fp64) silent.

Exit status 1 when any line is FAIL. Needs build/libkcheck.so (make all)
and a CUDA device (KC_CONV_DEVICE=cpu runs the same on the CPU stand-in,
without the profile checks, to test this script).
"""
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

CONTRACTS = """
contracts:
  - {torch_op: "kcconv::conv_nopad", op: conv, args: {x: x, w: w, bias: b}, attrs: {padding: 1}, profile: fp32}
  - {torch_op: "kcconv::conv_stride", op: conv, args: {x: x, w: w, bias: b}, attrs: {padding: 1, stride: 2}, profile: fp32}
  - {torch_op: "kcconv::conv_ok", op: conv, args: {x: x, w: w, bias: b}, attrs: {padding: 1}, profile: fp32}
"""
PLANTED = {"kcconv::conv_nopad.default": "oracle", "kcconv::conv_stride.default": "oracle",
           "kcconv::conv_ok.default": "silent"}


# ------------------------------------------------------------------ child

def child():
    import inspect
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    dev = os.environ.get("KC_CONV_DEVICE", "cuda")  # cpu: a smoke test of this script
    hashes = {}
    calls = {}

    def keep(group, *ts):
        h = hashes.setdefault(group, hashlib.sha256())
        for t in ts:
            if t is not None:
                h.update(t.detach().float().cpu().contiguous().numpy().tobytes())

    def step(group, fn, x, w, b, **kw):
        """One forward and backward of fn on fresh leaves (the group is
        printed so the driver can tell the records apart by shape)."""
        x = x.detach().requires_grad_()
        w = w.detach().requires_grad_()
        b = b.detach().requires_grad_() if b is not None else None
        y = fn(x, w, b, **kw)
        (y.float() * torch.linspace(-1, 1, y.numel(), device=dev).view_as(y)).sum().backward()
        keep(group, y, x.grad, w.grad, b.grad if b is not None else None)
        print("GROUP %s %s" % (group, "x".join(str(s) for s in x.shape)))

    def rnd(*shape, dtype=torch.float32, cl=False):
        t = torch.randn(*shape, device=dev, dtype=dtype)
        return t.to(memory_format=torch.channels_last) if cl else t

    torch.backends.cudnn.allow_tf32 = True  # PyTorch's default, said out loud
    # fp32, TF32 on
    step("fp32_tf32", F.conv2d, rnd(4, 16, 20, 20), rnd(32, 16, 3, 3), rnd(32), padding=1)
    step("fp32_tf32", F.conv2d, rnd(2, 8, 17, 15), rnd(12, 4, 3, 3), rnd(12), stride=2, padding=1,
         groups=2)
    step("fp32_tf32", F.conv2d, rnd(2, 6, 16, 16), rnd(6, 3, 3, 3), None, padding=2, dilation=2,
         groups=2)
    step("fp32_tf32_cl", F.conv2d, rnd(4, 16, 18, 18, cl=True), rnd(32, 16, 3, 3, cl=True),
         rnd(32), padding=1)
    step("conv1d", F.conv1d, rnd(4, 8, 50), rnd(16, 8, 5), rnd(16), stride=2, padding=2)
    step("conv3d", F.conv3d, rnd(2, 4, 6, 8, 8), rnd(8, 4, 3, 3, 3), rnd(8), padding=1)
    step("transpose", F.conv_transpose2d, rnd(2, 8, 9, 9), rnd(8, 6, 3, 3), rnd(12), stride=2,
         padding=1, output_padding=1, groups=2)
    # fp32, TF32 off
    torch.backends.cudnn.allow_tf32 = False
    step("fp32_ieee", F.conv2d, rnd(4, 16, 21, 21), rnd(32, 16, 3, 3), rnd(32), padding=1)
    step("fp32_ieee", F.conv2d, rnd(2, 8, 19, 15), rnd(12, 4, 3, 3), rnd(12), stride=2, padding=1,
         groups=2)
    step("fp32_ieee_cl", F.conv2d, rnd(4, 16, 19, 19, cl=True), rnd(32, 16, 3, 3, cl=True),
         rnd(32), padding=1)
    torch.backends.cudnn.allow_tf32 = True
    # bf16
    bf = torch.bfloat16
    step("bf16", F.conv2d, rnd(4, 16, 20, 23, dtype=bf), rnd(32, 16, 3, 3, dtype=bf),
         rnd(32, dtype=bf), padding=1)
    step("bf16", F.conv2d, rnd(2, 8, 17, 17, dtype=bf), rnd(12, 4, 3, 3, dtype=bf),
         rnd(12, dtype=bf), stride=2, padding=1, groups=2)
    step("bf16_cl", F.conv2d, rnd(4, 16, 22, 22, dtype=bf, cl=True),
         rnd(32, 16, 3, 3, dtype=bf, cl=True), rnd(32, dtype=bf), padding=1)
    # cuDNN's timed choice (may be Winograd or FFT)
    torch.backends.cudnn.benchmark = True
    step("benchmark", F.conv2d, rnd(8, 32, 28, 28), rnd(32, 32, 3, 3), rnd(32), padding=1)
    step("benchmark", F.conv2d, rnd(8, 32, 30, 30, dtype=bf), rnd(32, 32, 3, 3, dtype=bf),
         rnd(32, dtype=bf), padding=1)
    torch.backends.cudnn.benchmark = False

    # planted convolutions (custom ops; their contracts say what they compute)
    @torch.library.custom_op("kcconv::conv_nopad", mutates_args=())
    def conv_nopad(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.pad(F.conv2d(x, w, b), (1, 1, 1, 1))  # the bug: border outputs left 0

    @torch.library.custom_op("kcconv::conv_stride", mutates_args=())
    def conv_stride(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        y = F.conv2d(x, w, b, padding=1)  # the bug: stride 1's outputs, stride 2's shape
        return y[:, :, : (y.shape[2] + 1) // 2, : (y.shape[3] + 1) // 2].contiguous()

    @torch.library.custom_op("kcconv::conv_ok", mutates_args=())
    def conv_ok(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x.double(), w.double(), b.double(), padding=1).float()

    x, w, b = rnd(2, 8, 13, 13), rnd(4, 8, 3, 3), rnd(4)
    for name, fn in (("kcconv::conv_nopad", conv_nopad), ("kcconv::conv_stride", conv_stride),
                     ("kcconv::conv_ok", conv_ok)):
        calls[name + ".default"] = inspect.currentframe().f_lineno + 1
        keep("planted", fn(x, w, b))
    if dev == "cuda":
        torch.cuda.synchronize()
    for k, v in calls.items():
        print("CALL %s %d" % (k, v))
    for group, h in sorted(hashes.items()):
        print("HASH %s %s" % (group, h.hexdigest()))


# ------------------------------------------------------------------ driver

def run(cmd, env, out):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    with open(out + ".out", "w") as f:
        f.write(p.stdout)
    with open(out + ".err", "w") as f:
        f.write(p.stderr)
    return p


def field(text, key):
    vals = [ln.split(None, 1)[1] for ln in text.splitlines() if ln.startswith(key + " ")]
    return vals


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="kcheck-conv.", dir=outdir)
    env = dict(os.environ)
    env.setdefault("KCHECK_LIB", os.path.join(ROOT, "build", "libkcheck.so"))
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    yaml = os.path.join(work, "conv.yaml")
    with open(yaml, "w") as f:
        f.write(CONTRACTS)
    me = os.path.abspath(__file__)
    lines, bad = [], 0

    def note(ok, what, info=False):
        nonlocal bad
        tag = "INFO" if info else ("PASS" if ok else "FAIL")
        bad += not ok and not info
        lines.append("%s %s" % (tag, what))
        print(lines[-1], flush=True)

    plain = run([sys.executable, me, "--child"], env, os.path.join(work, "plain"))
    note(plain.returncode == 0, "plain run exits 0 (rc %d)" % plain.returncode)
    # twice: a group whose results differ between two plain runs (cuDNN's
    # nondeterministic algorithms, benchmark's timed choice) is left out of
    # the bitwise comparison, and said so
    plain2 = run([sys.executable, me, "--child"], env, os.path.join(work, "plain2"))
    log = os.path.join(work, "kc")
    cpu = os.environ.get("KC_CONV_DEVICE") == "cpu"
    kc = run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "run", "--torch",
              "-o", "log_path=" + log, "-o", "torch_budget=1", "-o", "torch_workers=-1", "-o",
              "kernel_clean_limit=-1", "-o", "op_clean_limit=-1", "-o", "contracts=" + yaml] +
             (["-o", "torch_devices=cuda,cpu"] if cpu else []) +
             ["--", sys.executable, me, "--child"], env, os.path.join(work, "torch"))
    note(kc.returncode == 0, "run under kcheck --torch exits 0 (rc %d)" % kc.returncode)
    hp, hp2, ht = (dict(x.split() for x in field(r.stdout, "HASH")) for r in (plain, plain2, kc))
    same = sorted(g for g in hp if hp.get(g) == hp2.get(g))
    for g in sorted(set(hp) - set(same)):
        note(True, "group %s differs between two plain runs (PyTorch's own nondeterminism): "
             "not compared" % g, info=True)
    diff = [g for g in same if ht.get(g) != hp[g]]
    note(bool(same) and not diff, "results bitwise equal to the plain run in %d groups %s%s" % (
        len(same), same, ("; differ: %s" % diff) if diff else ""))

    recs = []
    for p in sorted(glob.glob(log + ".*.jsonl")):
        with open(p) as f:
            recs += [json.loads(ln) for ln in f if ln.strip()]
    checks = [r for r in recs if r["type"] == "op_check" and "part" not in r]
    viol = [r for r in recs if r["type"] == "violation"]
    # the groups, by the x shape printed beside each
    group_of = {}
    for g in field(kc.stdout, "GROUP"):
        name, shape = g.split()
        group_of[shape] = name
    conv_checks = [c for c in checks if c["op"].startswith("aten::convolution")]
    note(len(conv_checks) > 0, "aten convolution ops checked: %d" % len(conv_checks))
    seen = {}
    for c in conv_checks:
        xs = None
        for i in c.get("inputs", []):
            if i["name"] in ("x", "g") and len(i["shape"]) >= 3:
                xs = "x".join(str(s) for s in i["shape"])
                break
        grp = group_of.get(xs)
        if grp is None and c["op"].endswith("backward.default"):
            # the backward's x is grad_output; find the group by the input shape in the key
            grp = next((g for s, g in group_of.items() if "[%s]" % s.replace("x", ", ") in
                        c.get("key", "")), "?")
        o = c["gates"].get("oracle", {})
        outs = o.get("outputs") or [{"label": "out", "oracle_op": c.get("oracle_op"),
                                     "class": o.get("class") or o.get("status")}]
        for out in outs:
            seen.setdefault(grp or "?", []).append((c["op"], out["label"], out["class"],
                                                   c.get("profile"), o.get("verdict", "")))
        ks = sorted(set(c.get("kernels") or []))
        if ks:
            note(True, "%s %s %s kernels: %s" % (grp, c["op"], c.get("profile"),
                                                 ", ".join(k[:60] for k in ks[:4])), info=True)
    want_profile = {"fp32_tf32": "tensorcore_tf32", "fp32_tf32_cl": "tensorcore_tf32",
                    "fp32_ieee": "fp32:", "fp32_ieee_cl": "fp32:", "bf16": "tensorcore_fp32",
                    "bf16_cl": "tensorcore_fp32", "conv1d": "", "conv3d": "", "transpose": "",
                    "benchmark": ""}
    for grp, want in want_profile.items():
        rows = seen.get(grp, [])
        classes = [r[2] for r in rows]
        good = [r for r in rows if r[2] in ("pass", "bitwise")]
        prof_ok = cpu or all(want in (r[3] or "") for r in rows if r[1] in ("out", "grad_input"))
        labels = {r[1] for r in rows}
        note(bool(good) and prof_ok and not any(str(k).startswith("fail") for k in classes),
             "%s: %d outputs judged (%s), profile %s, outputs %s" % (
                 grp, len(rows), ", ".join("%s %d" % (k, classes.count(k))
                                           for k in sorted(set(map(str, classes)))),
                 sorted({r[3] for r in rows}), sorted(labels)))
        for r in rows:
            if r[2] == "inconclusive":
                note(True, "%s %s %s inconclusive: %s" % (grp, r[0], r[1], r[4][:200]), info=True)
    # no violation on any ATen op (generated-input gates included); PyTorch's
    # documented nondeterminism (convolution_backward with
    # cudnn.deterministic=False) is named by its own gate: counted apart
    documented = [v for v in viol if v.get("cause") == "documented by PyTorch"]
    note(True, "documented nondeterminism named (expected): %s" % sorted(
        {v.get("op") for v in documented}), info=True)
    aten_viol = [v for v in viol if v.get("op", "").startswith("aten::") and v not in documented]
    note(not aten_viol, "no violation on ATen ops (%d)" % len(aten_viol))
    for v in aten_viol[:10]:
        note(False, "  violation %s %s: %s" % (v.get("op"), v.get("gate"),
                                                (v.get("evidence") or {}).get("verdict_line",
                                                                              "")[:300]))
    # the planted ops
    calls = dict((k, int(n)) for k, n in (c.split() for c in field(kc.stdout, "CALL")))
    for op, expect in PLANTED.items():
        mine = [v for v in viol if v.get("op") == op]
        if expect == "silent":
            chk = [c for c in checks if c["op"] == op]
            cls = chk[0]["gates"].get("oracle", {}).get("class") if chk else None
            note(not mine and cls in ("pass", "bitwise"), "%s silent, oracle %s (violations: %s)"
                 % (op, cls, sorted({v.get("gate") for v in mine})))
            continue
        orc = [v for v in mine if v.get("gate") == expect]
        line_ok = any(f.get("line") == calls.get(op) and f.get("file", "").endswith(
            "torch_conv.py") for v in orc for f in (v.get("stack") or {}).get("python", [])[-1:])
        note(bool(orc) and line_ok, "%s caught by %s at line %s: %s" % (
            op, expect, calls.get(op),
            (orc[0]["evidence"].get("verdict_line", "")[:200] if orc else "never")))
    summ = [r for r in recs if r["type"] == "torch_summary"]
    if summ:
        s = summ[0]
        note(True, "summary: %s ops seen, %s judged, %s violations, %s inconclusive" % (
            s.get("ops_seen"), s.get("ops_judged"), s.get("violations"), s.get("inconclusive")),
            info=True)
    with open(os.path.join(outdir, "torch-conv-results.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("torch_conv: %d FAIL" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child()
    else:
        sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "gpu-out")))
