"""The op-level part of a report (the PyTorch binding's op_check and
torch_summary records), summarised for `kcheck report`: what was checked
per oracle op and with what verdicts, and what passed through and why.

One op_check record per checked signature (its oracle verdict on the
application's inputs, the generated-input gates and coverage); a record
with part "generated" is a signature's generated-input part that ran
later (torch_budget), whose gates complete the first record's "deferred"
ones.
"""

from kcheck import _defs

# "not_run": the binding's spelling of "not run" before the status names
# came from gates/gate_status.def; reports written then still have it.
_ORDER = (_defs.STATUS_FAIL, _defs.STATUS_ERROR, _defs.STATUS_INCONCLUSIVE, "suspect",
          _defs.STATUS_PASS, _defs.STATUS_BITWISE, _defs.STATUS_ALLOWED,
          _defs.STATUS_NOT_APPLICABLE, _defs.STATUS_SKIPPED, _defs.STATUS_NOT_RUN, "not_run",
          _defs.STATUS_DEFERRED)


def _status(g):
    return (g or {}).get("class") or (g or {}).get("status") or "?"


def computing(rec):
    """The judged share's denominator from a torch_summary record: calls
    that compute values on a watched device (views and reads, and calls on
    no watched device, left out); records before ops_computing existed
    leave out views and reads only."""
    if "ops_computing" in rec:
        return rec["ops_computing"]
    return (rec.get("ops_seen") or 0) - rec.get("ops_no_values", 0)


def _share(s):
    seen = computing(s)
    out = "%.1f%% of the %d that compute values on a watched device; %d views and reads%s " \
        "left out" % (100.0 * s.get("ops_judged", 0) / seen, seen, s.get("ops_no_values", 0),
                      ", %d calls on no watched device" % s["ops_off_device"]
                      if s.get("ops_off_device") else "") if seen > 0 else "no ops"
    t = s.get("time_judged") or {}
    if t.get("share") is not None:
        out += ", %.1f%% of their %s time in optimizer step %s" % (
            100.0 * t["share"], "GPU" if t.get("source") == "cuda" else "CPU", t.get("step"))
    elif t.get("not_measured"):
        out += "; time not measured: " + t["not_measured"]
    return out


# Rows of the inconclusive table shown; the record holds the rest.
_INC_ROWS = 12


def _inconclusive(s):
    """The torch_summary's inconclusive judgments as a table: op, dtype,
    count, reason; the most frequent first."""
    rows = [(op, r.get("dtype", "?"), r.get("count", 0), r.get("reason", ""))
            for op, row in (s.get("inconclusive_by_op") or {}).items()
            for r in row.get("reasons", [])]
    left = sum(row.get("reasons_left_out", 0) for row in (s.get("inconclusive_by_op") or {}).values())
    left_ops = s.get("inconclusive_ops_left_out", 0)
    if not rows and not left and not left_ops:
        return []
    rows.sort(key=lambda r: -r[2])
    w = max([len("op")] + [len(r[0]) for r in rows[:_INC_ROWS]])
    out = ["  torch: inconclusive judgments (not judged exactly: the reason is the oracle's):",
           "    %-*s  %-6s %6s  %s" % (w, "op", "dtype", "count", "reason")]
    out += ["    %-*s  %-6s %6d  %s" % (w, op, dt, n, why) for op, dt, n, why in rows[:_INC_ROWS]]
    if len(rows) > _INC_ROWS:
        out.append("    ... %d more rows (%d judgments) in the torch_summary record" % (
            len(rows) - _INC_ROWS, sum(r[2] for r in rows[_INC_ROWS:])))
    if left or left_ops:
        out.append("    not kept (the record's bounds): %d judgments with further reasons, %d of "
                   "further ops" % (left, left_ops))
    return out


def lines(report):
    """The summary's lines (empty when the report has no op-level records)."""
    checks = report.by_type("op_check")
    summ = report.by_type("torch_summary")
    if not checks and not summ:
        return []
    out = []
    for s in summ:
        steps = (" in %d of %d optimizer steps" % (s.get("watched_steps", 0),
                                                   s.get("optimizer_steps", 0))
                 if s.get("optimizer_steps") else "")
        out.append("  torch: %d ops seen%s, %d covered, %d signatures checked (%d violations, "
                   "%d inconclusive, %d errors)" % (
                       s.get("ops_seen", 0), steps, s.get("ops_covered", 0),
                       s.get("ops_checked", 0), s.get("violations", 0),
                       s.get("inconclusive", 0), s.get("errors", 0)))
        later, left = s.get("generated_part_deferred", 0), s.get("signatures_deferred_unchecked", 0)
        if later or left:
            out.append("  torch: %d generated-input parts run later (torch_budget), %d signatures "
                       "deferred and never met again" % (later, left))
        if "ops_judged" in s:
            out.append("  torch: judged %d of %d ops (%s)" % (
                s.get("ops_judged", 0), s.get("ops_seen", 0), _share(s)))
            rows = [r for r in (s.get("time_judged") or {}).get("by_op", []) if r["judged"] < 1]
            if rows:
                out.append("  torch: time not judged, by op: " + ", ".join(
                    "%s %.0f us (%.0f%% judged)" % (r["op"], r["us"], 100 * r["judged"])
                    for r in rows[:8]))
        top = sorted((s.get("passed_through") or {}).items(), key=lambda kv: -kv[1])[:6]
        if top:
            out.append("  torch: passed through: " + ", ".join("%s %d" % kv for kv in top))
        out += _inconclusive(s)
    later = {}
    for c in checks:
        if c.get("part") == "generated":
            later.setdefault(c.get("key"), {}).update(c.get("gates") or {})
    per = {}
    for c in checks:
        if c.get("part"):
            continue
        gates = dict(c.get("gates") or {})
        for g, res in later.get(c.get("key"), {}).items():
            if _status(gates.get(g)) == "deferred":
                gates[g] = res
        row = per.setdefault(c.get("oracle_op") or "?", {"n": 0, "gates": {}})
        row["n"] += 1
        for g, res in gates.items():
            st = _status(res)
            row["gates"].setdefault(g, {})
            row["gates"][g][st] = row["gates"][g].get(st, 0) + 1
    if per:
        out.append("  op checks by oracle op (signatures; gate: verdicts):")
    for op in sorted(per, key=lambda o: -per[o]["n"]):
        row = per[op]
        parts = []
        for g in ("oracle", "immutability", "nonfinite", "precision", "extremes", "coverage",
                  "bounds", "shapes", "layouts"):
            v = row["gates"].get(g)
            if not v:
                continue
            parts.append("%s %s" % (g, "/".join("%d %s" % (v[k], k) for k in
                                                 sorted(v, key=lambda k: _ORDER.index(k)
                                                        if k in _ORDER else 99))))
        out.append("    %-12s %3d: %s" % (op, row["n"], "; ".join(parts)))
    return out
