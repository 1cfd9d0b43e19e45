#!/usr/bin/env python3
"""test/gpu/kc_judged_ops.py — per training-step run of
run_gpu_models.sh (its models-details.jsonl), the binding's judged share by
count of the ops that compute values, and the ops left unjudged most often
(calls seen minus calls judged), as a markdown table.

  python3 test/gpu/kc_judged_ops.py OUTDIR/models-details.jsonl [--top N]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kcheck.op_report import computing  # noqa: E402  (the share's denominator, one definition)


def rows(path, top):
    out = ["| run | judged / computing values on the device | calls on no watched device | unjudged calls, most first |", "|---|---|---|---|"]
    for line in open(path):
        d = json.loads(line)
        s = d.get("summary") or {}
        seen, judged = s.get("ops_seen", 0), s.get("ops_judged", 0)
        # views and calls on no watched device are out of the share
        views = set(s.get("no_values_ops") or {}) | set(s.get("off_device_ops") or {})
        left = sorted(((k - j, op) for op, (j, k) in (s.get("judged_by_op") or {}).items()
                       if k > j and op not in views), reverse=True)[:top]
        out.append("| %s | %d / %d (%.1f%%) | %d | %s |" % (
            d.get("run"), judged, computing(s), 100.0 * judged / computing(s) if computing(s) else 0,
            s.get("ops_off_device", 0),
            ", ".join("%s %d" % (op.replace("aten::", ""), n) for n, op in left)))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("details")
    ap.add_argument("--top", type=int, default=14)
    a = ap.parse_args()
    print("\n".join(rows(a.details, a.top)))
