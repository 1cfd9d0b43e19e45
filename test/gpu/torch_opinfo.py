#!/usr/bin/env python3
"""test/gpu/torch_opinfo.py — PyTorch's own edge cases for the ops the
binding judges: every sample input PyTorch's OpInfo database
(torch.testing._internal.common_methods_invocations.op_db) has for them,
forward and (where the op supports autograd) backward, on CUDA.

  kcheck run --torch -o torch_budget=1 -o gates=oracle -o sample=1 \\
      -o kernel_clean_limit=-1 -o op_clean_limit=-1 -o torch_workers=-1 -- python3 torch_opinfo.py [--seconds S]
  python3 torch_opinfo.py --table REPORT.jsonl... < its stdout

The run prints one SAMPLES line per OpInfo name and dtype (samples run,
samples that raised: those meant to raise); --table reads the reports:
per oracle op and ATen op, the calls judged and their verdicts, and every
oracle violation with its message (PASS: none). Stops issuing samples
after --seconds (default 240) and says how far it got.
"""
import argparse
import json
import sys
import time

NAMES = ("mm addmm bmm baddbmm matmul softmax log_softmax logsumexp nn.functional.layer_norm "
         "nn.functional.rms_norm sum mean amax amin linalg.vector_norm cumsum var std var_mean "
         "std_mean add sub mul div neg abs nn.functional.relu nn.functional.gelu "
         "nn.functional.silu sigmoid tanh exp log sqrt rsqrt clamp where masked_fill addcmul "
         "addcdiv lerp nn.functional.nll_loss nn.functional.cross_entropy "
         "nn.functional.embedding index_select nn.functional.scaled_dot_product_attention "
         "nn.functional.conv1d nn.functional.conv2d nn.functional.batch_norm "
         "nn.functional.max_pool2d nn.functional.avg_pool2d "
         "nn.functional.adaptive_avg_pool2d clone cat zeros ones full zeros_like ones_like "
         "full_like new_zeros new_ones new_full fill zero_ scalar_tensor pow select narrow "
         "slice").split()


def run(seconds, dev, only=None, verbose=False):
    import torch
    from torch.testing._internal.common_methods_invocations import op_db
    t0 = time.time()
    dtypes = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
    left = []
    for op in op_db:
        if op.name not in (only or NAMES) or op.variant_test_name not in ("", "no_rounding_mode"):
            continue
        for dt in dtypes:
            if dt not in op.supported_dtypes(dev):
                continue
            if time.time() - t0 > seconds:
                left.append("%s/%s" % (op.name, dt))
                continue
            n = bad = 0
            grad = op.supports_autograd and dt != torch.float16 and \
                dt in op.supported_backward_dtypes(dev)
            for i, s in enumerate(op.sample_inputs(dev, dt, requires_grad=grad)):
                if verbose:
                    print("SAMPLE %s %s %d %r" % (op.name, dt, i, s), flush=True)
                try:
                    r = op(s.input, *s.args, **s.kwargs)
                    outs = r if isinstance(r, (tuple, list)) else [r]
                    t = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
                    if t:
                        sum(o.float().sum() for o in t).backward()
                    n += 1
                except Exception:
                    bad += 1  # a sample meant to raise
            print("SAMPLES %s %s %d raised %d" % (op.name, str(dt).replace("torch.", ""), n, bad),
                  flush=True)
    if dev == "cuda":
        torch.cuda.synchronize()
    print("LEFT %d %s" % (len(left), " ".join(left[:40])))
    print("SECONDS %.1f" % (time.time() - t0))


def table(paths):
    recs = [json.loads(line) for p in paths for line in open(p)]
    per = {}
    for c in recs:
        if c.get("type") != "op_check" or "oracle" not in (c.get("gates") or {}):
            continue
        o = c["gates"]["oracle"]
        key = (c.get("oracle_op") or "?", c.get("op"))
        row = per.setdefault(key, {})
        st = o.get("class") or o.get("status") or "?"
        row[st] = row.get(st, 0) + 1
    viol = [v for v in recs if v.get("type") == "violation" and v.get("gate") == "oracle"]
    samples = [line.split() for line in sys.stdin if line.startswith(("SAMPLES", "LEFT"))]
    print("| oracle op | ATen op | judged calls | verdicts |")
    print("|---|---|---|---|")
    for (op, aten), row in sorted(per.items()):
        print("| %s | %s | %d | %s |" % (op, aten, sum(row.values()),
                                          ", ".join("%s %d" % kv for kv in sorted(row.items()))))
    print()
    print("samples run per OpInfo name and dtype: " + "; ".join(
        "%s %s %s" % (s[1], s[2], s[3]) for s in samples if s[0] == "SAMPLES"))
    print()
    for s in samples:
        if s[0] == "LEFT":
            print("left out by the time limit: %s" % " ".join(s[1:]))
    for v in viol[:20]:
        print("VIOLATION %s %s: %s" % (v.get("op"), v.get("oracle_op"), v.get("message")))
        print("  inputs %s attrs %s profile %s" % (
            json.dumps(v.get("inputs"))[:400], v.get("attrs"), v.get("profile")))
    judged = sum(sum(r.values()) for r in per.values())
    ok = not viol and judged > 0  # nothing judged proves nothing
    print("%s opinfo: %d oracle violations in %d judged calls" % (
        "PASS" if ok else "FAIL", len(viol), judged))
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=240)
    ap.add_argument("--table", nargs="*")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", help="OpInfo names, ','-separated")
    ap.add_argument("--verbose", action="store_true", help="print each sample before running it")
    a = ap.parse_args()
    if a.table is not None:
        sys.exit(table(a.table))
    run(a.seconds, a.device, a.only.split(",") if a.only else None, a.verbose)
