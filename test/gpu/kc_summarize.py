#!/usr/bin/env python3
"""test/gpu/kc_summarize.py — small queries over kcheck JSONL reports, for the
GPU check scripts (test/gpu/run_gpu_checks.sh, bench/run_check_bench.sh).

  kc_summarize.py kernel  [--name NAME] REPORT...   key=value lines about one kernel
  kc_summarize.py process REPORT...                 key=value lines about the process
  kc_summarize.py evidence [--name NAME] [--max N] REPORT...
                                                    violations, one readable block each
  kc_summarize.py costs --profile JSON [--top N] REPORT...
                                                    markdown: the N costliest checks
                                                    against their floor

--name NAME selects kernels whose demangled name is NAME followed by '(' or
'<' or the end (so racy_atomic does not match racy_atomic_append); without
it every kernel counts. Reports that are missing or truncated are read as far
as they go; a line that is not JSON is skipped and counted (bad_lines).
"""
import argparse
import json
import os
import sys

# The one report reader of the package (python/kcheck/report.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kcheck import report as kr  # noqa: E402


def load(paths):
    recs, bad = [], 0
    for p in paths:
        try:
            rep = kr.read(p)
        except kr.ReportError:
            bad += 1
            continue
        recs += rep.records
        bad += len(rep.malformed)
    return recs, bad


def name_matches(kname, want):
    if want is None:
        return True
    kname = kname or ""
    if not kname.startswith(want):
        # demangled names of templates or namespaced kernels: substring match
        i = kname.find(want)
        if i < 0:
            return False
        rest = kname[i + len(want):]
    else:
        rest = kname[len(want):]
    return rest == "" or rest[0] in "(<"


def clean(v):
    return str(v).replace(" ", "_").replace(",", ";")


def cmd_kernel(a):
    recs, bad = load(a.reports)
    checks = [r for r in recs if r.get("type") == "check" and name_matches(r.get("kernel_name"), a.name)]
    viols = [r for r in recs if r.get("type") == "violation" and name_matches(r.get("kernel_name"), a.name)]
    skips = [r for r in recs if r.get("type") == "skip" and name_matches(r.get("kernel_name"), a.name)]
    summ = [r for r in recs if r.get("type") == "summary"]
    out = {
        "checks": len(checks),
        "violations": len(viols),
        "violation_gates": ";".join(sorted({str(v.get("gate")) for v in viols})) or "-",
        "skips": len(skips),
        "skip_reasons": ";".join(sorted({clean(s.get("reason")) for s in skips})) or "-",
        "bad_lines": bad,
        "summary": 1 if summ else 0,
        "internal_errors": summ[-1].get("internal_errors", "?") if summ else "?",
    }
    det = race = "-"
    differs, strat = [], []
    cost = 0.0
    for c in checks:
        cost += float(c.get("cost_ms") or 0)
        g = c.get("gates") or {}
        d = g.get("determinism")
        if d:
            if det in ("-", "pass") or d.get("status") == "fail":
                det = d.get("status", "?")
        r = g.get("race")
        if r:
            if race in ("-", "pass", "not run") or r.get("status") == "fail":
                race = r.get("status", "?")
            for k, v in (r.get("strategies") or {}).items():
                strat.append(f"{k}:{clean(v)}")
                if v == "differs" and k not in differs:
                    differs.append(k)
    out.update({
        "det": clean(det),
        "race": clean(race),
        "differs": ";".join(differs) or "-",
        "strategies": ";".join(strat) or "-",
        "cost_ms": f"{cost:.3f}",
        "runs": sum(int(c.get("runs") or 0) for c in checks),
        "saved_bytes": sum(int(c.get("saved_bytes") or 0) for c in checks),
    })
    for k, v in out.items():
        print(f"{k}={v}")
    return 0


def cmd_process(a):
    recs, bad = load(a.reports)
    summ = [r for r in recs if r.get("type") == "summary"]
    s = summ[-1] if summ else {}
    viols = [r for r in recs if r.get("type") == "violation"]
    checks = [r for r in recs if r.get("type") == "check"]
    out = {
        "summary": 1 if summ else 0,
        "launches": s.get("launches", "?"),
        "checks": s.get("checks", len(checks)),
        "check_records": len(checks),
        "violations": s.get("violations", len(viols)),
        "violation_records": len(viols),
        "violation_gates": ";".join(sorted({str(v.get("gate")) for v in viols})) or "-",
        "skips": s.get("skips", "?"),
        "internal_errors": s.get("internal_errors", "?"),
        "check_cost_ms": f"{sum(float(c.get('cost_ms') or 0) for c in checks):.3f}",
        "bad_lines": bad,
    }
    for k, v in out.items():
        print(f"{k}={v}")
    names = sorted({v.get("kernel_name") or "?" for v in viols})
    for n in names[:20]:
        print(f"violation_kernel={n[:160]}")
    return 0


def short(v):
    if isinstance(v, dict):
        return ", ".join(f"{k}={v[k]}" for k in ("fp32", "int32", "bits32", "fp16", "bf16") if k in v)
    return str(v)


def cmd_evidence(a):
    recs, _ = load(a.reports)
    viols = [r for r in recs if r.get("type") == "violation" and name_matches(r.get("kernel_name"), a.name)]
    for v in viols[: a.max]:
        ev = v.get("evidence") or {}
        alloc = ev.get("allocation") or {}
        print(f"- gate={v.get('gate')} launch={v.get('launch')} kernel={str(v.get('kernel_name'))[:200]}")
        print(f"  message: {v.get('message')}")
        if v.get("exposed_by"):
            print(f"  exposed_by: {', '.join(v['exposed_by'])}")
        print(f"  grid={v.get('grid')} block={v.get('block')} shmem={v.get('shmem')}"
              f" allocation base={alloc.get('base')} size={alloc.get('size')} offset={ev.get('offset')}"
              f" pointed_to_by={ev.get('pointed_to_by')}")
        print(f"  expected: {short(ev.get('expected'))}")
        print(f"  got:      {short(ev.get('got'))}")
        print(f"  differing_bytes={ev.get('differing_bytes')} runs={ev.get('runs')}"
              f" strategy={ev.get('strategy')} seed={ev.get('seed')}")
    if len(viols) > a.max:
        print(f"- ... {len(viols) - a.max} more violations")
    if not viols:
        print("- no violations")
    return 0


def cmd_costs(a):
    """The costliest checks against floor = (1 + runs) * kernel time
    + 2 * saved_bytes / copy bandwidth (kernel time from the plain run's
    profile, matched by demangled name; 0 when not found, marked so)."""
    recs, _ = load(a.reports)
    prof = {}
    try:
        with open(a.profile, encoding="utf-8") as f:
            prof = json.load(f)
    except (OSError, ValueError) as e:
        print(f"(no profile: {e}; kernel time taken as 0)")
    kern = prof.get("kernels") or {}
    bw = float(prof.get("copy_bytes_per_s") or 0)
    # kcheck measures the device's copy bandwidth itself (summary own_kernels)
    for r in recs:
        if not bw and r.get("type") == "summary" and (r.get("own_kernels") or {}).get("copy_gbps"):
            bw = float(r["own_kernels"]["copy_gbps"]) * 1e9
    squash = {"".join(k.split()): v for k, v in kern.items()}
    def kernel_ms(name):
        k = kern.get(name) or squash.get("".join(name.split()))
        if k is None:  # profiler names may be truncated
            for pn, pv in kern.items():
                if pn and (name.startswith(pn) or pn.startswith(name[:80])):
                    k = pv
                    break
        return (float(k["mean_us"]) / 1e3, True) if k else (0.0, False)

    def floor_of(c):
        if c.get("floor_ms") is not None:  # measured by the check itself (device events)
            return float(c["floor_ms"])
        kms, _ = kernel_ms(c.get("kernel_name") or "?")
        runs = int(c.get("runs") or 0)
        saved = int(c.get("saved_bytes") or 0)
        return (1 + runs) * kms + (2.0 * saved / bw * 1e3 if bw else 0.0)

    every = [r for r in recs if r.get("type") == "check"]
    checks = sorted(every, key=lambda r: -float(r.get("cost_ms") or 0))[: a.top]
    print(f"copy bandwidth (device-to-device, bytes copied per s): {bw / 1e9:.1f} GB/s"
          if bw else "copy bandwidth: not measured (copy term taken as 0)")
    ratios = sorted(float(c.get("cost_ms") or 0) / f for c in every for f in [floor_of(c)] if f > 0)
    if ratios:
        costs = sorted(float(c.get("cost_ms") or 0) for c in every)
        print(f"\n{len(every)} checks, cost ms median {costs[len(costs) // 2]:.3f}, "
              f"total {sum(costs):.1f}; cost/floor median {ratios[len(ratios) // 2]:.1f} "
              f"(of {len(ratios)} with a floor), largest {ratios[-1]:.1f}")
    print()
    print("floor: the check's own floor_ms where it has one (its kernel and snapshot timed with "
          "device events), else from the plain profile")
    print()
    print("| kernel | runs | saved MiB | kernel ms (plain, mean) | floor ms | cost ms | cost/floor |")
    print("|---|---|---|---|---|---|---|")
    for c in checks:
        name = c.get("kernel_name") or "?"
        kms, known = kernel_ms(name)
        runs = int(c.get("runs") or 0)
        saved = int(c.get("saved_bytes") or 0)
        floor = floor_of(c)
        cost = float(c.get("cost_ms") or 0)
        ratio = f"{cost / floor:.1f}" if floor > 0 else "n/a"
        disp = name if len(name) <= 90 else name[:87] + "..."
        disp = disp.replace("|", "\\|")
        kdisp = f"{kms:.4f}" if known else "0 (not in profile)"
        print(f"| `{disp}` | {runs} | {saved / 2**20:.2f} | {kdisp} | {floor:.3f} | {cost:.3f} | {ratio} |")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("kernel")
    p.add_argument("--name")
    p.add_argument("reports", nargs="*")
    p.set_defaults(fn=cmd_kernel)
    p = sub.add_parser("process")
    p.add_argument("reports", nargs="*")
    p.set_defaults(fn=cmd_process)
    p = sub.add_parser("evidence")
    p.add_argument("--name")
    p.add_argument("--max", type=int, default=5)
    p.add_argument("reports", nargs="*")
    p.set_defaults(fn=cmd_evidence)
    p = sub.add_parser("costs")
    p.add_argument("--profile", required=True)
    p.add_argument("--top", type=int, default=5)
    p.add_argument("reports", nargs="*")
    p.set_defaults(fn=cmd_costs)
    a = ap.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
