"""Where the Sanitizer route ran in a kcheck report (one or more JSONL
files): per kernel whose race entry names a route, the route, whether the
guard stopped the copy (and what), and the internal errors.
   python3 test/gpu/san_route_summary.py REPORT.jsonl...
Exit status 1 when no check record was found."""
import collections
import json
import sys


def main(paths):
    checks, errors = [], []
    for p in paths:
        for line in open(p):
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("type") == "check":
                checks.append(r)
            elif r.get("type") == "summary":
                errors.append("summary: %s internal errors" % r.get("internal_errors"))
    routes = collections.Counter()
    guarded = []
    for c in checks:
        race = (c.get("gates") or {}).get("race") or {}
        route = race.get("route")
        if route is None:
            continue
        routes[route] += 1
        why = race.get("route_why") or ""
        if "the guard stopped" in why:
            guarded.append((c.get("kernel_name", "?"), why[why.index("the guard stopped"):]))
    print("checks %d; race entries by route: %s" % (len(checks), dict(routes)))
    print("kernels the guard stopped: %d" % len(guarded))
    for name, why in guarded[:20]:
        print("  %s: %s" % (name[:90], why[:400]))
    gate_errors = collections.Counter()
    for c in checks:
        for gate, entry in (c.get("gates") or {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("error"), str):
                gate_errors["%s: %s" % (gate, entry["error"][:120])] += 1
    for e in errors:
        print(e)
    print("gate errors: %s" % (dict(gate_errors) or "none"))
    return 0 if checks else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
