#!/usr/bin/env python3
# bench/floor_recompute.py REPORT.jsonl... — per report, the checks' cost
# over their floor with the wait for the application's queued work as a
# floor term (floor_ms + wait_ms for records made before floor_terms had
# queued_ms), the same without it, and cost less that wait over the floor
# without it: the figures of reports made before and after that term was
# added, side by side.
import json, sys
for f in sys.argv[1:]:
    ck = [c for c in map(json.loads, open(f)) if c.get("type") == "check" and c.get("floor_ms")]
    q = lambda c: (c.get("floor_terms") or {}).get("queued_ms")
    fl = lambda c: c["floor_ms"] + (max(c["wait_ms"], 0) if q(c) is None else 0)
    bare = lambda c: c["floor_ms"] - (q(c) or 0)
    r = sorted(c["cost_ms"] / fl(c) for c in ck)
    top = [c["cost_ms"] / fl(c) for c in sorted(ck, key=lambda c: -c["cost_ms"])[:10]]
    old = [c["cost_ms"] / bare(c) for c in sorted(ck, key=lambda c: -c["cost_ms"])[:10]]
    lw = sorted((c["cost_ms"] - c["wait_ms"]) / bare(c) for c in ck)
    first = min(ck, key=lambda c: c["launch"])
    fin = [c for c in ck if c.get("violations")]
    print(f"{f.split('/')[-1]}: {len(ck)} checks; with the queued work in the floor: median "
          f"{r[len(r) // 2]:.2f}, ten costliest {min(top):.2f}-{max(top):.2f}; without it: ten costliest "
          f"{min(old):.2f}-{max(old):.2f}, cost less the wait median {lw[len(lw) // 2]:.2f}; first check "
          f"{first['cost_ms']:.3f} ms ({first['cost_ms'] / fl(first):.2f}x, setup {first.get('setup_ms', 0):.2f} ms); "
          "with findings " + ", ".join(f"{c['cost_ms']:.2f} ms ({c['cost_ms'] / fl(c):.2f}x)" for c in fin))
