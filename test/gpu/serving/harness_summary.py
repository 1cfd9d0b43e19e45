#!/usr/bin/env python3
"""test/gpu/serving/harness_summary.py — harness.md from the logs and reports
of run_serving_harness.sh: tokens/s plain and under the serving profile
(ratio of medians; goal >= 0.95), bitwise tokens, coverage after the run
(budget_window records), and each planted bug found / its correct form
silent. Exit status 1 when a requirement failed (the throughput goal is
reported, not required).
usage: harness_summary.py LOGS REPORTS OUT.md"""
import datetime
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "bench"))
import bootstrap  # noqa: E402  (bench/bootstrap.py)

logs, reps, out = sys.argv[1:4]


def read(p):
    try:
        return open(p, errors="replace").read()
    except OSError:
        return ""


def recs(tag):
    r = []
    for p in glob.glob(os.path.join(reps, tag + ".*.jsonl")):
        for line in read(p).splitlines():
            try:
                r.append(json.loads(line))
            except ValueError:
                r.append({"type": "broken"})
    return r


def tps(tag, key="tokens_per_s"):
    """A run's tokens/s over its whole window (key tokens_per_s) or over its
    second half (late_tokens_per_s), None when it printed none."""
    m = re.search(r"\b%s=([\d.]+)" % key, read(os.path.join(logs, tag + ".out")))
    return float(m.group(1)) if m and float(m.group(1)) > 0 else None


rows, ok = [], True


def row(name, good, detail, required=True):
    global ok
    ok = ok and (good or not required)
    rows.append("| %s | %s | %s |" % ("PASS" if good else ("FAIL" if required else "below goal"),
                                      name, detail))


ran = lambda tag: os.path.exists(os.path.join(logs, tag + ".out"))
def pairs():
    """The A/B pairs that ran, in order (KC_HARNESS_REPEAT of them)."""
    n = 1
    while ran("tput.plain.%d" % n):
        n += 1
    return range(1, n)


serving_opts = os.environ.get("KC_HARNESS_SERVING_OPTS", "")
serving_what = "--serving" + (" -o " + serving_opts if serving_opts else "")
plain = [v for v in (tps("tput.plain.%d" % i) for i in pairs()) if v]
serv = [v for v in (tps("tput.serving.%d" % i) for i in pairs()) if v]
if plain and serv:
    ratio = statistics.median(serv) / statistics.median(plain)
    row("throughput under %s (goal >= 0.95 of plain)" % serving_what, ratio >= 0.95,
        "plain %s tokens/s, serving %s tokens/s, ratio of medians %.3f" % (plain, serv, ratio),
        required=False)
elif ran("tput.plain.1"):
    row("throughput runs", False, "missing results: plain %s serving %s" % (plain, serv))
var = [v for v in (tps("tput.variant.%d" % i) for i in pairs()) if v]
if plain and var:
    row("throughput under --serving -o %s (reported)" % os.environ.get("KC_HARNESS_VARIANT", "?"),
        True,
        "%s tokens/s, ratio of medians %.3f" % (var, statistics.median(var) /
                                                statistics.median(plain)), required=False)


def paired(tag, key="tokens_per_s"):
    """serving/plain ratios of the pairs where both runs gave a result (the
    runs of a pair are back to back: machine drift between processes cancels)."""
    out = []
    for i in pairs():
        p, s = tps("tput.plain.%d" % i, key), tps("%s.%d" % (tag, i), key)
        if p and s:
            out.append(s / p)
    return out


for tag, what in (("tput.serving", serving_what),
                  ("tput.variant", "--serving -o %s" % os.environ.get("KC_HARNESS_VARIANT", "?"))):
    for key, span in (("tokens_per_s", "whole window"), ("late_tokens_per_s", "second half")):
        each = paired(tag, key)
        if len(each) < 2:
            continue
        # The median of the paired ratios with a bootstrap 95% interval
        # (bench/bootstrap.py, seeded): goal for --serving, its lower end
        # >= 0.97 over the whole window (the second half's, without most
        # first checks, beside it).
        med, lo, hi = bootstrap.median_ci(each)
        ps = [v for v in (tps("tput.plain.%d" % i, key) for i in pairs()) if v]
        row("throughput under %s, paired, %s (goal: interval's lower end >= 0.97)" % (what, span),
            lo >= 0.97, "median ratio %.3f, bootstrap 95%% interval %.3f-%.3f over %d pairs; per"
            " pair %s; plain %.0f-%.0f tokens/s (max/min %.3f)" % (
                med, lo, hi, len(each), [round(x, 3) for x in each], min(ps), max(ps),
                max(ps) / min(ps)), required=False)
for tag, what in (("tput.tracking", "--serving with stream_races=1:graph_uninit=1"),
                  ("tput.floor", "--serving with max_checks=0 (kcheck's floor)")):
    v = tps(tag)
    if plain and v:
        row("throughput under %s (reported)" % what, True,
            "%.1f tokens/s, %.3f of the plain median" % (v, v / statistics.median(plain)),
            required=False)
for tag in ["tput.serving.%d" % i for i in pairs()] + ["tput.variant.%d" % i for i in pairs()] + \
        ["tput.floor", "tput.tracking"]:
    if not ran(tag):
        continue
    r = recs(tag)
    wins = [w for w in r if w.get("type") == "budget_window"]
    s = ([x for x in r if x.get("type") == "summary"] or [{}])[-1]
    g = s.get("graphs", {})
    # Whole windows of the serving loop: not the first (start-up: imports,
    # graph capture) nor the last (cut short at exit).
    full = wins[1:-1] if len(wins) > 2 else wins
    per_min = lambda k: 60.0 * sum(w[k] for w in full) / max(sum(w["wall_s"] for w in full), 1e-9)
    row("%s: coverage and budget per window" % tag,
        bool(wins) and s.get("internal_errors", 1) == 0,
        "windows (index, wall_s, fraction of it spent by kcheck, of which outside checks, checks,"
        " graph kernels checked, skipped for the budget) %s; per minute (whole windows): %.0f"
        " checks, %.0f graph kernels checked, %.0f graph launches replayed of %.0f, %.0f eager"
        " launches; checks %s of %s eager launches; kernel launches inside graphs %s,"
        " checked %s; graph launches %s, replayed %s; violations %s" % (
            [(w["window"], round(w["wall_s"], 1), round(w["fraction"], 3),
              round(w.get("overhead_s", 0) / max(w["wall_s"], 1e-9), 4), w["checks"],
              w["graph_kernels_checked"], w["skipped_for_budget"]) for w in wins],
            per_min("checks"), per_min("graph_kernels_checked"),
            60.0 * sum(w.get("graph_replays", 0) for w in full) /
            max(sum(w["wall_s"] for w in full), 1e-9), per_min("graph_launches"),
            per_min("launches"), s.get("checks"),
            s.get("launches"), g.get("kernel_launches"), g.get("kernels_checked"),
            g.get("launches"), g.get("replayed"),
            sorted({x["gate"] for x in r if x.get("type") == "violation"})))
sha = lambda t: re.findall(r"tokens sha256 (\w+)", read(os.path.join(logs, t + ".out")))
if ran("bits.plain"):
    row("tokens bitwise equal plain vs --serving", sha("bits.plain") and
        sha("bits.plain") == sha("bits.serving"),
        "%s vs %s" % (sha("bits.plain"), sha("bits.serving")))
# (bug, the gates that find it, whether the finding must be in a graph node)
for bug, want, in_graph in (("graph_race", ("race", "determinism"), True),
                            ("graph_uninit", ("uninit",), True),
                            ("missing_wait", ("stream_order",), False),
                            ("record_stream", ("stream_order",), False)):
    for form in (bug, bug + "_ok"):
        if not ran("bug." + form):
            continue
        r = recs("bug." + form)
        v = [x for x in r if x.get("type") == "violation"]
        gates = sorted({x["gate"] for x in v})
        done = "RESULT harness" in read(os.path.join(logs, "bug.%s.out" % form))
        summ = [x for x in r if x.get("type") == "summary"]
        hit = [x for x in v if x["gate"] in want and (x.get("graph") or not in_graph)]
        if form == bug and bug == "missing_wait":
            dl = [x for x in v if x["gate"] == "stream_delay"]
            row("missing_wait's race shown as a changed result [stream_delay] (reported)",
                bool(dl), "%d stream_delay findings; first: %s" % (
                    len(dl), dl[0].get("message", "")[:200] if dl else "-"), required=False)
        if form == bug:
            row("planted %s found [%s]" % (bug, "/".join(want)), done and bool(hit),
                "violations %s; first: %s" % (gates, ("%s: %s" % (
                    hit[0].get("kernel_name", ""), hit[0].get("message", "")))[:200]
                    if hit else "-"))
        else:
            # Other gates' findings in PyTorch's own kernels are listed, not counted.
            row("correct form %s silent [%s]" % (form, "/".join(want)),
                done and bool(summ) and not hit,
                "violations of its gates %d; all violations %s; checks %s" % (
                    len(hit), gates, summ[-1].get("checks") if summ else "no report"))
ms = lambda t: re.findall(r"multistream sha256 (\w+)", read(os.path.join(logs, t + ".out")))
if os.path.exists(os.path.join(logs, "multistream.kc.out")):
    r = recs("multistream.kc")
    v = [x for x in r if x.get("type") == "violation"]
    so = [x for x in v if x["gate"] == "stream_order"]
    summ = [x for x in r if x.get("type") == "summary"]
    row("PyTorch multi-stream use (wait_stream, record_stream, events) silent under stream_races=1",
        bool(summ) and not so and bool(ms("multistream.plain")) and
        ms("multistream.plain") == ms("multistream.kc"),
        "stream_order violations %d (first: %s); all violations %s; sha256 %s vs %s" % (
            len(so), so[0].get("message", "")[:160] if so else "-",
            sorted({x["gate"] for x in v}), ms("multistream.plain"), ms("multistream.kc")))
text = ["# Serving harness on the GPU", "",
        "%s. Produced by test/gpu/serving/run_serving_harness.sh." %
        datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "",
        "```", read(os.path.join(logs, "env.txt")).strip(), "```", "",
        "| result | check | numbers |", "|---|---|---|"] + rows + ["", "Overall: %s" %
                                                                  ("PASS" if ok else "FAIL"), ""]
open(out, "w").write("\n".join(text))
sys.exit(0 if ok else 1)
