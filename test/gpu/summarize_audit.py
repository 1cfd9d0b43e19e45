"""The GPU audit corpus's results as a markdown table and PASS/FAIL lines:
each candidate's expected verdict (test/audit_gpu/manifest.json) beside the
audit's (audit.jsonl), its failed gates, KernelBench's allclose and its
ratio (audit_gpu_allclose.py) and the audit's wall time per candidate.

PASS when every planted bug is caught by the gate its manifest row names
(verdict broken), every correct candidate is silent (no failed gate) and
has its expected verdict (clean, or unjudged for a composition; partial
is silent but not expected), and every planted bug is one allclose
accepts on the task's own inputs. Exit status 0 when every line is PASS.

    python test/gpu/summarize_audit.py --corpus test/audit_gpu --audit OUT/audit.jsonl \
        --allclose OUT/allclose.json [--work WORK/audit] [--times build=..,...] -o OUT/summary.md
"""
import argparse
import json
import os
import statistics
import sys


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def compare(manifest, records, allclose, corpus):
    """[(row, record or None, allclose result or None, problems)] in
    manifest order; problems: what differs from the row."""
    corpus = os.path.abspath(corpus)
    got = {os.path.relpath(os.path.abspath(r["candidate"]), corpus): r
           for r in records if r.get("type") == "audit_candidate"}
    ac = {os.path.relpath(k, corpus): v for k, v in (allclose or {}).items()}
    out = []
    for m in manifest:
        r, a, why = got.get(m["candidate"]), ac.get(m["candidate"]), []
        if r is None:
            why.append("not audited")
        else:
            if r["verdict"] != m["verdict"]:
                why.append("verdict %s, expected %s" % (r["verdict"], m["verdict"]))
            if m.get("gate") and m["gate"] not in (r.get("failed") or []):
                why.append("gate %s did not fail" % m["gate"])
            if m["verdict"] != "broken" and r.get("failed"):
                why.append("false flag: %s" % ", ".join(r["failed"]))
            if m.get("exposed_by") and r.get("evidence"):
                ev = [e for e in r["evidence"] if e["gate"] == m.get("gate")]
                how = (ev[0].get("exposed_by") or {}) if ev else {}
                if ev and (how.get("generator") or how.get("inputs")) != m["exposed_by"]:
                    why.append("exposed by %s, expected %s" % (how, m["exposed_by"]))
        if m["verdict"] == "broken" and not (a and a.get("allclose")):
            why.append("allclose does not accept it (%s)" % (a.get("error") or a.get("ratio")
                                                             if a else "not run"))
        out.append((m, r, a, why))
    extra = sorted(set(got) - {m["candidate"] for m in manifest})
    for c in extra:
        out.append(({"candidate": c, "verdict": "?"}, got[c], ac.get(c), ["no manifest row"]))
    return out


def verdict_lines(rows):
    """The PASS/FAIL lines, and whether all passed."""
    bugs = [x for x in rows if x[0].get("verdict") == "broken"]
    good = [x for x in rows if x[0].get("verdict") not in ("broken", "?")]
    caught = [x for x in bugs if not [w for w in x[3] if not w.startswith("allclose")]]
    # silent: no gate failed and no error (a partial verdict is silent,
    # but not the verdict the manifest expects: the next line)
    silent = [x for x in good if x[1] and not x[1].get("failed") and
              x[1]["verdict"] not in ("broken", "error")]
    expected = [x for x in good if not x[3]]
    accepted = [x for x in bugs if x[2] and x[2].get("allclose")]
    extra = [x for x in rows if x[0].get("verdict") == "?"]
    lines = [
        ("every planted bug caught by its gate", len(caught), len(bugs),
         [x[0]["candidate"] for x in bugs if x not in caught]),
        ("every correct candidate silent (no failed gate, no error)", len(silent),
         len(good), [x[0]["candidate"] for x in good if x not in silent]),
        ("every correct candidate has its expected verdict (clean; unjudged for compositions)",
         len(expected), len(good), [x[0]["candidate"] for x in good if x not in expected]),
        ("every planted bug accepted by allclose(rtol=atol=1e-2) on the task's inputs",
         len(accepted), len(bugs), [x[0]["candidate"] for x in bugs if x not in accepted]),
        ("every audited candidate has a manifest row", len(rows) - len(extra), len(rows),
         [x[0]["candidate"] for x in extra]),
    ]
    out, ok = [], True
    for what, n, total, missing in lines:
        good_line = n == total
        ok = ok and good_line
        out.append("%s: %s (%d/%d)%s" % ("PASS" if good_line else "FAIL", what, n, total,
                                         "" if good_line else ": " + ", ".join(missing)))
    return out, ok


def _ratio(a):
    if not a:
        return "-"
    if a.get("error"):
        return "error"
    r = a.get("ratio")
    return "%s (%s)" % ("yes" if a.get("allclose") else "NO",
                        r if isinstance(r, str) else "%.3g" % r)


def _cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def markdown(rows, lines, times=None, work=None, tails=20):
    out = ["# kcheck audit: the GPU corpus (test/audit_gpu)", ""]
    out += lines + [""]
    costs = [r.get("cost_s", {}).get("audit") for _, r, _, _ in rows if r and r.get("cost_s")]
    if costs:
        costs.sort()
        p95 = costs[min(len(costs) - 1, int(round(0.95 * (len(costs) - 1))))]
        out.append("audit wall time per candidate: median %.1f s, p95 %.1f s, max %.1f s (%d candidates)"
                   % (statistics.median(costs), p95, costs[-1], len(costs)))
    if times:
        out.append("runner stages: " + ", ".join("%s %s s" % kv for kv in times.items()))
    out += ["", "| candidate | lang | class | expected | got | failed gates | allclose (ratio) | audit s | notes |",
            "|---|---|---|---|---|---|---|---|---|"]
    for m, r, a, why in rows:
        exp = m["verdict"] + (" (%s)" % m["gate"] if m.get("gate") else "")
        gotv = r["verdict"] if r else "-"
        failed = ", ".join(r.get("failed") or []) if r else "-"
        cost = r.get("cost_s", {}).get("audit", "-") if r else "-"
        note = "; ".join(why) if why else ""
        if r and r.get("error"):
            note = (note + "; " if note else "") + "%s: %s" % (r["error"].get("stage"),
                                                              str(r["error"].get("message"))[:160])
        out.append("| %s |" % " | ".join(_cell(c) for c in (
            m["candidate"], m.get("lang", "-"), m.get("class", "-"), exp, gotv, failed or "-",
            _ratio(a), cost, note or "ok")))
    bad = [(m, r) for m, r, _, why in rows if why and r]
    if bad:
        out += ["", "## Evidence where the result differs from the manifest", ""]
        for m, r in bad:
            out.append("### %s" % m["candidate"])
            for e in (r.get("evidence") or [])[:4]:
                out.append("- %s: %s" % (e.get("gate"), _cell(str(e.get("message"))[:400])))
            if r.get("reason"):
                out.append("- reason: %s" % _cell(r["reason"]))
            if work:
                task, name = m["candidate"].split("/", 1)
                err = os.path.join(work, task, os.path.splitext(name)[0], "stderr.txt")
                if os.path.isfile(err):
                    with open(err, errors="replace") as f:
                        tail = f.read().splitlines()[-tails:]
                    out += ["", "```"] + tail + ["```"]
            out.append("")
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(prog="summarize_audit.py")
    p.add_argument("--corpus", required=True)
    p.add_argument("--audit", required=True, help="audit.jsonl")
    p.add_argument("--allclose", help="audit_gpu_allclose.py's JSON")
    p.add_argument("--work", help="the audit's -o folder (each candidate's stderr.txt)")
    p.add_argument("--times", default="", help="stage=seconds,... for the header")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    with open(os.path.join(a.corpus, "manifest.json")) as f:
        manifest = json.load(f)["candidates"]
    records = load_jsonl(a.audit) if os.path.exists(a.audit) else []
    allclose = None
    if a.allclose and os.path.exists(a.allclose):
        with open(a.allclose) as f:
            allclose = json.load(f)
    times = dict(kv.split("=", 1) for kv in a.times.split(",") if "=" in kv)
    rows = compare(manifest, records, allclose, a.corpus)
    lines, ok = verdict_lines(rows)
    text = markdown(rows, lines, times, a.work)
    with open(a.output, "w") as f:
        f.write(text)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
