#!/usr/bin/env python3
"""test/gpu/dist_summary.py — what one rank's kcheck report says about
communication kernels, for test/gpu/run_gpu_dist.sh.

  dist_summary.py REPORT      key=value lines: summary, launches, checks,
                              violations, internal_errors, comm_kernels (kernel
                              records marked communication), comm_checked (check
                              records of such kernels: must be 0), comm_names.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kcheck import report as kr  # noqa: E402


def main(path):
    rep = kr.read(path)
    recs = rep.records
    comm = {r.get("id"): r.get("demangled") or r.get("name") for r in recs
            if r.get("type") == "kernel" and r.get("communication")}
    checked = [r for r in recs if r.get("type") == "check" and r.get("kernel") in comm]
    summ = [r for r in recs if r.get("type") == "summary"]
    s = summ[-1] if summ else {}
    out = {
        "summary": 1 if summ else 0,
        "launches": s.get("launches", "?"),
        "checks": s.get("checks", "?"),
        "violations": s.get("violations", "?"),
        "internal_errors": s.get("internal_errors", "?"),
        "comm_kernels": len(comm),
        "comm_checked": len(checked),
        "comm_names": ";".join(sorted({(n or "?").split("(")[0][:60] for n in comm.values()})) or "-",
    }
    for k, v in out.items():
        print(f"{k}={v}")


if __name__ == "__main__":
    main(sys.argv[1])
