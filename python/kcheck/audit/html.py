"""audit.html: the audit of a directory as one self-contained HTML file (no
scripts, no external resources), written beside audit.jsonl — the summary
by verdict, by failed gate and by task family (with how many broken
candidates KernelBench's allclose accepted), then per task its tier and
contract and per candidate its verdict, allclose, failed gates and every
piece of evidence with the candidate's line."""
import html
import os

from kcheck import __version__
from kcheck.html import CSS

_BAD = ("broken", "error")
_VERDICTS = ("broken", "error", "partial", "unjudged", "clean")


def _e(s):
    return html.escape(str(s), quote=True)


def _cls(verdict):
    return "bad" if verdict in _BAD else "ok" if verdict == "clean" else ""


def _table(head, rows):
    out = ["<table><tr>%s</tr>" % "".join("<th>%s</th>" % _e(h) for h in head)]
    for r in rows:
        out.append("<tr>%s</tr>" % "".join("<td>%s</td>" % c for c in r))
    out.append("</table>")
    return "\n".join(out)


def _summary(s):
    verdicts = [v for v in _VERDICTS if v in s["by_verdict"]] + \
        sorted(v for v in s["by_verdict"] if v not in _VERDICTS)
    out = ["<h2>Summary</h2>",
           "<p>%d candidates; broken though KernelBench's allclose passed: <b>%d</b></p>" % (
               s["candidates"], s["allclose_pass_broken"]),
           _table(["verdict", "candidates"],
                  [['<span class="%s">%s</span>' % (_cls(v), _e(v)), s["by_verdict"][v]]
                   for v in verdicts])]
    if s["by_gate"]:
        out.append("<h3>By failed gate</h3>")
        out.append(_table(["gate", "candidates"],
                          [[_e(g), n] for g, n in sorted(s["by_gate"].items(),
                                                         key=lambda kv: (-kv[1], kv[0]))]))
    fams = s["by_family"]
    if fams:
        cols = [v for v in _VERDICTS if any(v in f for f in fams.values())]
        out.append("<h3>By task family</h3>")
        out.append(_table(["family"] + cols,
                          [[_e(f)] + [fams[f].get(v, 0) for v in cols] for f in sorted(fams)]))
    return "\n".join(out)


def _task_what(t):
    what = "tier %s" % t.get("tier")
    if t.get("contract"):
        what += ": oracle op %s, profile %s" % (t["contract"].get("op"), t["contract"].get("profile"))
        if t.get("profile_derived"):
            what += " (given by --profile; PyTorch's settings imply %s)" % t["profile_derived"]
    elif t.get("tier") == "C":
        what += ": exact (bitwise against the reference)"
    if t.get("reason"):
        what += "; unjudged: %s" % t["reason"]
    return what


def _evidence(c):
    items = []
    if c.get("error"):
        e = c["error"]
        items.append("<b>%s</b>: %s%s" % (_e(e.get("stage")), _e(e.get("message")),
                                          " <code>%s</code>" % _e(e["line"]) if e.get("line") else ""))
    for e in c.get("evidence") or []:
        text = "<b>%s</b>: %s" % (_e(e.get("gate")), _e(e.get("message") or ""))
        if e.get("line"):
            text += " <code>%s</code>" % _e(e["line"])
        if e.get("worst"):
            text += "<pre>%s</pre>" % _e(e["worst"])
        items.append(text)
    if not items and c.get("reason"):
        items.append(_e(c["reason"]))
    return "<br>".join(items) or "-"


def _candidate_row(c):
    ac = {True: "pass", False: "FAIL", None: "-"}[c.get("allclose")]
    return ['<code>%s</code>' % _e(os.path.basename(c["candidate"])),
            '<span class="%s">%s</span>' % (_cls(c["verdict"]), _e(c["verdict"])), ac,
            _e(", ".join(c.get("failed") or []) or "-"), _evidence(c)]


def audit_html(records, title="kcheck audit"):
    """The HTML text for audit.jsonl's records (tasks, candidates, summary)."""
    from kcheck.audit.driver import summary, task_name
    tasks = [r for r in records if r["type"] == "audit_task"]
    cands = [r for r in records if r["type"] == "audit_candidate"]
    s = next((r for r in records if r["type"] == "audit_summary"), None) or summary(records)
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>%s</title>"
           "<style>%s</style></head><body>" % (_e(title), CSS),
           "<h1>%s</h1><p>kcheck %s; schema %s</p>" % (_e(title), _e(__version__), _e(s.get("schema"))),
           _summary(s), "<h2>Tasks</h2>"]
    for t in tasks:
        mine = [c for c in cands if c["task"] == t["task"]]
        out.append("<h3>%s <small>(%s)</small></h3><p>%s</p>" % (
            _e(task_name(t["task"])), _e(t.get("family", "composite")), _e(_task_what(t))))
        if mine:
            out.append(_table(["candidate", "verdict", "allclose", "failed gates", "evidence"],
                              [_candidate_row(c) for c in mine]))
    out.append("</body></html>")
    return "\n".join(out)
