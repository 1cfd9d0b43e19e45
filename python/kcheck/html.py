"""`kcheck report --html`: one self-contained HTML file (no scripts, no
external resources) — summary, findings with evidence, per-kernel coverage
and check cost, and inline SVG plots: violations by gate and kernel, check
cost per kernel against its floor, oracle error against its bound."""
import html
import math
import os

from kcheck import __version__
from kcheck import report as kr

CSS = """
body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px} h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0} td,th{border:1px solid #ccc;padding:3px 8px;
font-size:13px;text-align:left;vertical-align:top} th{background:#f0f0f0}
.bad{color:#b00020;font-weight:bold} .ok{color:#1b7f3b;font-weight:bold}
pre{background:#f7f7f7;padding:6px;white-space:pre-wrap;font-size:12px;margin:4px 0}
.finding{border-left:4px solid #b00020;padding:4px 12px;margin:12px 0}
svg text{font-family:sans-serif;font-size:11px}
"""

COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
          "#ff9da7", "#9c755f", "#bab0ac"]


def _e(s):
    return html.escape(str(s), quote=True)


def _short(name, n=48):
    return name if len(name) <= n else name[:n - 1] + "\u2026"


def bar_chart(title, rows, unit="", ref=None, ref_label=""):
    """Horizontal bars: rows = [(label, [(series, value)])]; ref: a vertical
    reference line (e.g. the bound, 1.0) at that value."""
    if not rows:
        return "<p><i>%s: nothing to plot.</i></p>" % _e(title)
    series = []
    for _, vals in rows:
        for s, _v in vals:
            if s not in series:
                series.append(s)
    vmax = max([v for _, vals in rows for _, v in vals] + [ref or 0]) or 1.0
    left, width, bar, gap = 330, 420, 12, 8
    per_row = bar * max(1, max(len(v) for _, v in rows)) + gap
    height = 40 + per_row * len(rows) + 20 + 16 * len(series)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img">' %
           (left + width + 120, height),
           '<text x="4" y="16" style="font-size:13px;font-weight:bold">%s</text>' % _e(title)]
    y = 32
    for label, vals in rows:
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' %
                   (left - 6, y + bar - 2, _e(_short(label))))
        for i, (s, v) in enumerate(vals):
            w = max(1.0, width * v / vmax)
            c = COLORS[series.index(s) % len(COLORS)]
            out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s: %g%s'
                       '</title></rect>' % (left, y + i * bar, w, bar - 2, c, _e(label), _e(s), v, unit))
            out.append('<text x="%.1f" y="%d">%s%s</text>' %
                       (left + w + 4, y + i * bar + bar - 3, _e("%.4g" % v), _e(unit)))
        y += per_row
    if ref is not None:
        x = left + width * ref / vmax
        out.append('<line x1="%.1f" y1="28" x2="%.1f" y2="%d" stroke="#b00020" '
                   'stroke-dasharray="4,3"/>' % (x, x, y))
        out.append('<text x="%.1f" y="%d" fill="#b00020">%s</text>' % (x + 3, y + 12, _e(ref_label)))
    y += 20
    for i, s in enumerate(series):
        out.append('<rect x="%d" y="%d" width="10" height="10" fill="%s"/>'
                   '<text x="%d" y="%d">%s</text>' % (left, y + 16 * i, COLORS[i % len(COLORS)],
                                                      left + 14, y + 16 * i + 9, _e(s)))
    out.append("</svg>")
    return "\n".join(out)


def _kernel_stats(reports):
    """kernel -> {checks, cost_ms, floor_ms (None when unrecorded), gates: {gate: status set},
    violations}."""
    stats = {}
    for r in reports:
        for c in r.checks:
            k = r.kernel_name(c)
            s = stats.setdefault(k, {"checks": 0, "cost_ms": 0.0, "floor_ms": None, "gates": {},
                                     "violations": 0, "coverage": []})
            s["checks"] += 1
            s["cost_ms"] += float(c.get("cost_ms") or 0.0)
            if c.get("floor_ms") is not None:
                s["floor_ms"] = (s["floor_ms"] or 0.0) + float(c["floor_ms"])
            for g, res in (c.get("gates") or {}).items():
                s["gates"].setdefault(g, set()).add((res or {}).get("status", "?"))
                cov = (res or {}).get("coverage")
                if isinstance(cov, dict) and cov.get("total"):
                    s["coverage"].append(float(cov.get("fraction") or 0.0))
        for v in r.violations:
            k = r.kernel_name(v)
            stats.setdefault(k, {"checks": 0, "cost_ms": 0.0, "floor_ms": None, "gates": {},
                                 "violations": 0, "coverage": []})["violations"] += 1
    return stats


def _ratio(x):
    """error / bound as a float: numbers, or the report's "inf"/"nan" strings."""
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str) and x.lower() in ("inf", "+inf", "infinity"):
        return math.inf
    return None


def _oracle_ratios(reports):
    """(kernel, gate, error / bound) of every judged value-gate result."""
    out = []
    for r in reports:
        for c in r.checks:
            for g, res in (c.get("gates") or {}).items():
                x = _ratio(res.get("ratio")) if isinstance(res, dict) else None
                if x is not None:
                    out.append((r.kernel_name(c), g, x))
        for v in r.violations:
            x = _ratio((v.get("evidence") or {}).get("ratio"))
            if x is not None:
                out.append((r.kernel_name(v), v.get("gate"), x))
    return out


def render(reports):
    findings = kr.merge(reports)
    stats = _kernel_stats(reports)
    total = {k: 0 for k in ("launches", "checks", "violations", "skips", "suppressed")}
    for r in reports:
        s = r.summary or {}
        for k in total:
            total[k] += int(s.get(k) or 0)
    unfinished = [r.path for r in reports if not r.finished]
    h = ["<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>kcheck report</title>"
         "<style>%s</style></head><body>" % CSS,
         "<h1>kcheck report</h1>",
         "<p>kcheck %s &middot; %d report%s: %s</p>" % (
             _e(__version__), len(reports), "" if len(reports) == 1 else "s",
             ", ".join(_e(os.path.basename(r.path)) for r in reports))]
    verdict = ('<span class="bad">%d bug%s</span>' % (len(findings), "" if len(findings) == 1 else "s")
               if findings else '<span class="ok">no violations</span>')
    h.append("<h2>Summary</h2><p>%s &middot; %d launches, %d checks, %d violations "
             "(%d bugs), %d suppressed, %d skipped</p>" % (
                 verdict, total["launches"], total["checks"], total["violations"], len(findings),
                 total["suppressed"], total["skips"]))
    if unfinished:
        h.append('<p class="bad">The run did not finish (no summary record): %s</p>' %
                 ", ".join(_e(p) for p in unfinished))
    # Plots
    h.append("<h2>Plots</h2>")
    by_kernel = {}
    for f in findings:
        by_kernel.setdefault(f.kernel, {}).setdefault(f.gate, 0)
        by_kernel[f.kernel][f.gate] += f.occurrences
    h.append(bar_chart("Violations by kernel and gate",
                       [(k, sorted(g.items())) for k, g in by_kernel.items()]))
    cost_rows = []
    for k, s in sorted(stats.items(), key=lambda kv: -kv[1]["cost_ms"]):
        if not s["checks"]:
            continue
        vals = [("check cost", s["cost_ms"] / s["checks"])]
        if s["floor_ms"] is not None:
            vals.append(("floor", s["floor_ms"] / s["checks"]))
        cost_rows.append((k, vals))
    h.append(bar_chart("Mean check cost per kernel (ms) against its floor", cost_rows[:30], " ms"))
    if cost_rows and all(len(v) == 1 for _, v in cost_rows):
        h.append("<p><i>No check record carries a floor (floor_ms): only the cost is drawn.</i></p>")
    ratios = _oracle_ratios(reports)
    worst = {}
    for k, g, x in ratios:
        worst[(k, g)] = max(x, worst.get((k, g), 0.0))
    finite = [x for x in worst.values() if math.isfinite(x)]
    cap = max(finite + [1.0]) * 1.25  # an infinite error is drawn past the largest finite one
    h.append(bar_chart("Oracle: worst error / bound per kernel and gate (1.0 = the bound)",
                       [("%s" % k, [(g, x if math.isfinite(x) else cap)])
                        for (k, g), x in sorted(worst.items())][:30],
                       ref=1.0, ref_label="bound"))
    if len(finite) < len(worst):
        h.append("<p><i>Bars drawn at %.3g: infinite error (NaN/Inf where the exact result is "
                 "finite, or the reverse).</i></p>" % cap)
    # Findings
    h.append("<h2>Findings</h2>")
    if not findings:
        h.append("<p>None.</p>")
    for i, f in enumerate(findings):
        v = f.first
        where = kr.contract_location(v) or kr.user_frame(v)
        h.append('<div class="finding"><b>#%d [%s] %s</b> &times;%d (occurrences)<br>' % (
            i, _e(f.gate), _e(f.kernel), f.occurrences))
        if f.sites:
            h.append("sites: %s<br>" % " &rarr; ".join(_e(s) for s in f.sites))
        if v.get("gate_contract"):
            h.append("<i>%s</i><br>" % _e(v["gate_contract"]))
        h.append("launch %s, signature %s, seed %s%s<br>" % (
            _e(v.get("launch")), _e(v.get("signature")), _e(v.get("seed")),
            (", ranks %s" % _e(f.ranks)) if f.ranks else ""))
        if f.tests:
            h.append("tests: %s<br>" % _e(", ".join(f.tests)))
        if where:
            h.append("at %s:%s<br>" % (_e(where[0]), _e(where[1])))
        h.append("<pre>%s</pre>" % _e("\n".join(kr.evidence_text(v))))
        if v.get("reproduce"):
            h.append("reproduce:<pre>%s</pre>" % _e(v["reproduce"]))
        h.append("</div>")
    # Per-kernel table
    h.append("<h2>Kernels checked</h2><table><tr><th>kernel</th><th>checks</th>"
             "<th>violations</th><th>gates (status)</th><th>oracle coverage</th>"
             "<th>check cost (ms, total)</th></tr>")
    for k, s in sorted(stats.items()):
        gates = "; ".join("%s: %s" % (g, ",".join(sorted(st))) for g, st in sorted(s["gates"].items()))
        cov = ("%.0f%% of elements" % (100 * min(s["coverage"]))) if s["coverage"] else "-"
        h.append("<tr><td>%s</td><td>%d</td><td class=\"%s\">%d</td><td>%s</td><td>%s</td>"
                 "<td>%.2f</td></tr>" % (_e(k), s["checks"], "bad" if s["violations"] else "ok",
                                         s["violations"], _e(gates), _e(cov), s["cost_ms"]))
    h.append("</table></body></html>")
    return "\n".join(h) + "\n"
