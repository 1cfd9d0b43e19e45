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


def tps(tag):
    m = re.search(r"tokens_per_s=([\d.]+)", read(os.path.join(logs, tag + ".out")))
    return float(m.group(1)) if m else None


rows, ok = [], True


def row(name, good, detail, required=True):
    global ok
    ok = ok and (good or not required)
    rows.append("| %s | %s | %s |" % ("PASS" if good else ("FAIL" if required else "below goal"),
                                      name, detail))


plain = [v for v in (tps("tput.plain.%d" % i) for i in (1, 2)) if v]
serv = [v for v in (tps("tput.serving.%d" % i) for i in (1, 2)) if v]
if plain and serv:
    ratio = statistics.median(serv) / statistics.median(plain)
    row("throughput under --serving (goal >= 0.95 of plain)", ratio >= 0.95,
        "plain %s tokens/s, serving %s tokens/s, ratio of medians %.3f" % (plain, serv, ratio),
        required=False)
else:
    row("throughput runs", False, "missing results: plain %s serving %s" % (plain, serv))
for i in (1, 2):
    r = recs("tput.serving.%d" % i)
    wins = [w for w in r if w.get("type") == "budget_window"]
    s = ([x for x in r if x.get("type") == "summary"] or [{}])[-1]
    g = s.get("graphs", {})
    row("serving run %d: coverage and budget per window" % i,
        bool(wins) and s.get("violations", 1) == 0,
        "windows %s; checks %s of %s eager launches; kernel launches inside graphs %s, checked %s;"
        " graph launches %s, replayed %s" % (
            [(w["window"], round(w["fraction"], 3), w["checks"]) for w in wins], s.get("checks"),
            s.get("launches"), g.get("kernel_launches"), g.get("kernels_checked"),
            g.get("launches"), g.get("replayed")))
sha = lambda t: re.findall(r"tokens sha256 (\w+)", read(os.path.join(logs, t + ".out")))
row("tokens bitwise equal plain vs --serving", sha("bits.plain") and
    sha("bits.plain") == sha("bits.serving"), "%s vs %s" % (sha("bits.plain"), sha("bits.serving")))
for bug, gate in (("graph_race", "race"), ("missing_wait", "stream_order"),
                  ("record_stream", "stream_order")):
    for form in (bug, bug + "_ok"):
        r = recs("bug." + form)
        v = [x for x in r if x.get("type") == "violation"]
        gates = sorted({x["gate"] for x in v})
        done = "RESULT harness" in read(os.path.join(logs, "bug.%s.out" % form))
        if form == bug:
            hit = [x for x in v if x["gate"] == gate and (gate != "race" or x.get("graph"))]
            row("planted %s found [%s]" % (bug, gate), done and bool(hit),
                "violations %s; first: %s" % (gates, (hit[0].get("message") or
                                                      hit[0].get("kernel_name", ""))[:160]
                                              if hit else "-"))
        else:
            summ = [x for x in r if x.get("type") == "summary"]
            row("correct form %s silent" % form, done and bool(summ) and not v,
                "violations %s; checks %s" % (gates, summ[-1].get("checks") if summ else "no report"))
text = ["# Serving harness on the GPU", "",
        "%s. Produced by test/gpu/serving/run_serving_harness.sh." %
        datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "",
        "```", read(os.path.join(logs, "env.txt")).strip(), "```", "",
        "| result | check | numbers |", "|---|---|---|"] + rows + ["", "Overall: %s" %
                                                                  ("PASS" if ok else "FAIL"), ""]
open(out, "w").write("\n".join(text))
sys.exit(0 if ok else 1)
