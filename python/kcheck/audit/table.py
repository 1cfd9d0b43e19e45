"""The terminal table: per task a header (tier, family, profile or why
unjudged), per candidate one line: verdict, KernelBench's allclose, the
failed gates and the worst evidence with the candidate's line."""
import os

_COLS = "  %-28s %-9s %-9s %-24s %s"


def _short(s, n):
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[:n - 3] + "..."


def task_header(t):
    from kcheck.audit.driver import task_name
    what = "tier %s" % t.get("tier")
    if t.get("contract"):
        what += " %s profile %s" % (t["contract"]["op"], t["contract"]["profile"])
        if t.get("profile_derived"):
            what += " (--profile; PyTorch's settings: %s)" % t["profile_derived"]
    elif t.get("tier") == "C":
        what += " exact (bitwise)"
    if t.get("reason"):
        what += "  unjudged: %s" % t["reason"]
    return "task %s  %s\n" % (task_name(t["task"]), _short(what, 160)) + \
        _COLS % ("candidate", "verdict", "allclose", "failed gates", "worst evidence")


def worst(c):
    """The first evidence's message and line, or why there is none."""
    if c.get("error"):
        e = c["error"]
        return "%s: %s%s" % (e.get("stage"), _short(e.get("message"), 90),
                             "  " + e["line"] if e.get("line") else "")
    if c.get("evidence"):
        e = c["evidence"][0]
        return "%s: %s%s" % (e["gate"], _short(e.get("message") or "", 90),
                             "  " + e["line"] if e.get("line") else "")
    return _short(c.get("reason") or "-", 110)


def candidate_line(c):
    ac = {True: "pass", False: "FAIL", None: "-"}[c.get("allclose")]
    return _COLS % (_short(os.path.basename(c["candidate"]), 28), c["verdict"], ac,
                    _short(", ".join(c.get("failed") or []) or "-", 24), worst(c))


def summary_line(s):
    parts = ", ".join("%d %s" % (n, v) for v, n in sorted(s["by_verdict"].items()))
    return "%d candidates: %s; broken though allclose passed: %d" % (
        s["candidates"], parts or "none", s["allclose_pass_broken"])
