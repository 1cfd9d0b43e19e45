#!/usr/bin/env python3
"""test/gpu/torch_check.py — reads kcheck reports of the PyTorch binding's
GPU runs (run_gpu_torch.sh) and prints PASS/FAIL lines.

  torch_check.py train R...    no violation; every covered op that the
                               training script uses was checked by the
                               oracle with a verdict; the summary counts
  torch_check.py clean R...    no violation, no internal error, a summary
                               (a program not using every covered op)
  torch_check.py nondet R...   a determinism violation exists
  torch_check.py active R...   the binding was installed (torch_summary)
  torch_check.py compile R...  the binding ran; Triton kernels were checked
                               by determinism at kernel level
"""
import json
import sys

# Oracle ops the training script must have had checked (each by one ATen op
# or more; attention: flash in bf16, efficient in fp32).
# judged only in a mixed-precision (autocast) step
MIXED_PRECISION_OPS = ("copy",)
TRAIN_ORACLE_OPS = ["matmul", "softmax", "log_softmax", "logsumexp", "layer_norm", "rms_norm",
                    "sum", "mean", "max", "min", "norm2", "add", "sub", "mul", "div", "neg",
                    "abs", "relu", "gelu_erf", "gelu_tanh", "silu", "sigmoid", "tanh", "exp",
                    "log", "sqrt", "rsqrt", "attention",
                    # gradients of the activations and the softmax family
                    "sigmoid_backward", "tanh_backward", "threshold_backward", "silu_backward",
                    "gelu_erf_backward", "gelu_tanh_backward", "softmax_backward",
                    "log_softmax_backward", "layer_norm_backward", "rms_norm_backward",
                    # the embedding's rows (bit for bit) and dtype conversions
                    "index_select", "copy"]

# ATen rows on which nonfinite must run (once marked not applicable).
NONFINITE_ROWS = ["aten::_fused_rms_norm", "aten::_scaled_dot_product_flash_attention",
                  "aten::_scaled_dot_product_efficient_attention"]


def load(paths):
    recs = []
    for p in paths:
        with open(p) as f:
            for line in f:
                try:
                    recs.append(json.loads(line))
                except ValueError:
                    pass
    return recs


def train(recs):
    out, bad = [], 0
    viol = [r for r in recs if r["type"] == "violation"]
    # PyTorch's documented nondeterminism (the model's nn.Embedding
    # backward on CUDA): a true finding, named as such, expected here
    documented = [r for r in viol if r.get("cause") == "documented by PyTorch"]
    viol = [r for r in viol if r not in documented]
    for v in documented:
        out.append("INFO documented nondeterminism (expected): %s (%s)" % (v.get("op"),
                                                                        v.get("documented")))
    checks = [r for r in recs if r["type"] == "op_check"]
    summ = [r for r in recs if r["type"] == "torch_summary"]
    # a check whose profile reads or writes a 16-bit float format
    mixed = any(f in str(c.get("profile")) for c in checks for f in ("bf16", "fp16"))
    judged = {}
    for c in checks:
        o = c["gates"].get("oracle", {})
        if "part" in c:  # a generated-input part run later: no oracle verdict of its own
            continue
        judged.setdefault(c["oracle_op"], set()).add(o.get("class") or o.get("status"))
    for op in TRAIN_ORACLE_OPS:
        classes = judged.get(op, set())
        if op in MIXED_PRECISION_OPS and not mixed:
            continue  # an fp32 step converts no float type to another
        ok = bool(classes & {"bitwise", "pass", "suspect", "inconclusive"})
        bad += not ok
        out.append("%s oracle op %s checked: %s" % ("PASS" if ok else "FAIL", op,
                                                   sorted(classes) or "never"))
    # nonfinite applies to rms_norm and the fused attention ops (the
    # oracle follows IEEE there): it ran on them and did not fail.
    for name in NONFINITE_ROWS:
        runs = [c["gates"].get("nonfinite", {}).get("status") for c in checks
                if c["op"].startswith(name)]
        ok = any(r in ("pass", "bitwise", "inconclusive") for r in runs) and \
            not any(r in ("fail", "not_applicable") for r in runs)
        if runs:
            bad += not ok
            out.append("%s nonfinite on %s: %s" % ("PASS" if ok else "FAIL", name, sorted(set(
                str(r) for r in runs))))
    for v in viol[:20]:
        out.append("FAIL violation [%s] %s: %s" % (v.get("gate"), v.get("op", v.get("kernel_name")),
                                                   str(v.get("message"))[:300]))
    bad += len(viol)
    if summ:
        s = summ[-1]
        out.append("INFO ops seen %d, covered %d, checked %d, inconclusive %d, errors %d; "
                   "passed through %s" % (s["ops_seen"], s["ops_covered"], s["ops_checked"],
                                          s["inconclusive"], s["errors"], s["passed_through"]))
        incon = sorted({c["op"] for c in checks
                        if c["gates"].get("oracle", {}).get("class") == "inconclusive"})
        if incon:
            out.append("INFO inconclusive: %s" % incon)
        errs = sorted({"%s: %s" % (c["op"], c["gates"]["oracle"].get("reason"))
                       for c in checks if c["gates"].get("oracle", {}).get("status") == "error"})
        for e in errs[:10]:
            out.append("INFO error %s" % e)
    else:
        bad += 1
        out.append("FAIL no torch_summary record")
    out.insert(0, "%s train: %d violations" % ("PASS" if not bad else "FAIL", len(viol)))
    return out


def main():
    what, paths = sys.argv[1], sys.argv[2:]
    recs = load(paths)
    if what == "train":
        print("\n".join(train(recs)))
        return 0
    if what == "clean":  # a program that need not use every covered op
        out = [line for line in train(recs) if " oracle op " not in line]
        # PyTorch's documented nondeterminism is named (train's INFO line), not a failure
        viol = [r for r in recs if r["type"] == "violation"
                and r.get("cause") != "documented by PyTorch"]
        s = [r for r in recs if r["type"] == "torch_summary"]
        errs = s[-1]["errors"] if s else None
        ok = s and not viol and not errs
        out[0] = "%s clean: %d violations, %s internal errors, %d summaries" % (
            "PASS" if ok else "FAIL", len(viol), errs, len(s))
        print("\n".join(out))
        return 0
    if what == "nondet":
        det = [r for r in recs if r["type"] == "violation" and r.get("gate") == "determinism"]
        print("%s %d determinism violations" % ("PASS" if det else "FAIL", len(det)))
        return 0
    if what == "active":
        s = [r for r in recs if r["type"] == "torch_summary"]
        print("%s %d reports, %d with the binding's summary%s" % (
            "PASS" if s else "FAIL", len(paths), len(s),
            (": %d ops seen, %d checked" % (s[0]["ops_seen"], s[0]["ops_checked"])) if s else ""))
        return 0
    if what == "compile":
        s = [r for r in recs if r["type"] == "torch_summary"]
        tri = [r for r in recs if r["type"] == "check" and "triton" in r.get("kernel_name", "")]
        det = [r for r in tri if "determinism" in r.get("gates", {})]
        ok = s and det
        print("%s binding summary %d; Triton kernels checked at kernel level: %d (determinism %d)"
              % ("PASS" if ok else "FAIL", len(s), len(tri), len(det)))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
