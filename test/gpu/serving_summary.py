#!/usr/bin/env python3
"""test/gpu/serving_summary.py — turns the logs and reports of
test/gpu/run_gpu_serving.sh into serving.md: one PASS/FAIL line per
requirement with the numbers behind it; exit status 1 when one failed.

usage: serving_summary.py LOGS REPORTS OUT.md
"""
import datetime
import glob
import json
import os
import re
import sys

logs, reps, out = sys.argv[1], sys.argv[2], sys.argv[3]


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def log(tag, ext="out"):
    return read(os.path.join(logs, "%s.%s" % (tag, ext)))


def records(tag):
    recs = []
    for p in sorted(glob.glob(os.path.join(reps, tag + ".*.jsonl"))):
        for line in read(p).splitlines():
            try:
                recs.append(json.loads(line))
            except ValueError:
                recs.append({"type": "broken"})
    return recs


def of(recs, t):
    return [r for r in recs if r.get("type") == t]


def summary(recs):
    s = of(recs, "summary")
    return s[-1] if s else {}


rows = []


def check(name, ok, detail):
    rows.append((name, bool(ok), detail))


def sums(text, racy=False):
    word = "racy" if racy else "checksum"
    return sorted(l for l in text.splitlines() if l.startswith("graphs:") and (" %s " % word) in l)


# 1. graphs.cu
p1, p2 = log("graphs.plain1"), log("graphs.plain2")
for tag in ("graphs.kc", "graphs.every"):
    o = log(tag)
    check("%s: buffers bitwise equal to the plain run" % tag,
          sums(o) and sums(o) == sums(p1) == sums(p2) and "host calls 2" in o,
          "%d checksum lines; host calls line %s" % (len(sums(o)), "host calls 2" in o))
    recs = records(tag)
    s = summary(recs)
    g = s.get("graphs", {})
    viol = of(recs, "violation")
    racy = sorted({v["kernel_name"].split("(")[0] for v in viol if v.get("graph")})
    clean = sorted({v["kernel_name"] for v in viol if not v["kernel_name"].startswith("racy_")})
    check("%s: racy kernels that only run inside a graph are found" % tag,
          racy == ["racy_last_writer", "racy_uninit_smem"] and not clean,
          "violations in graph nodes: %s; on clean kernels: %s; gates %s" %
          (racy, clean, sorted({v["gate"] for v in viol})))
    host = [r for r in of(recs, "graph") if not r.get("checkable")]
    check("%s: the host-node graph is reported not checkable, the others replayed" % tag,
          len(host) == 1 and "host node" in host[0].get("reason", "") and
          g.get("instantiated") == 5 and g.get("replayed", 0) >= 4,
          "graph records %d, not checkable %s; summary graphs %s" %
          (len(of(recs, "graph")), [h.get("reason") for h in host], g))
    check("%s: coverage counted, no internal error" % tag,
          g.get("kernel_launches", 0) > 0 and g.get("kernels_checked", 0) > 0 and
          s.get("internal_errors") == 0 and s.get("captured_launches", 0) > 0,
          "kernel launches inside graphs %s, checked %s, captured launches %s, eager launches %s,"
          " internal errors %s" % (g.get("kernel_launches"), g.get("kernels_checked"),
                                   s.get("captured_launches"), s.get("launches"),
                                   s.get("internal_errors")))

# 2. threads
for mode in ("shared", "graphs"):
    for cfg in ("plain", "kc", "every"):
        tag = "threads.%s.%s" % (mode, cfg)
        o = log(tag)
        m = re.search(r"wrong (\d+) launches (\d+)", o)
        if not m:
            check(tag, False, "no result line: %s" % log(tag, "err")[-300:])
            continue
        wrong, launches = int(m.group(1)), int(m.group(2))
        if cfg == "plain":
            check(tag + ": exact results", wrong == 0, "wrong %d of %d launches" % (wrong, launches))
            continue
        s = summary(records(tag))
        g = s.get("graphs", {})
        counted = s.get("launches") if mode == "shared" else g.get("launches")
        check(tag + ": exact results, every launch counted once, no violation",
              wrong == 0 and counted == launches and s.get("violations") == 0 and
              s.get("internal_errors") == 0,
              "wrong %d; app launches %d, kcheck counted %s; checks %s; violations %s; graphs %s" %
              (wrong, launches, counted, s.get("checks"), s.get("violations"), g or "-"))

# 3. torch
def shas(text):
    return sorted(l for l in text.splitlines() if "sha256" in l)


for tag, plain in (("torch.kc", "torch.plain"), ("torch.nccl.kc", "torch.nccl.plain")):
    o, p = log(tag), log(plain)
    recs = records(tag)
    s = summary(recs)
    g = s.get("graphs", {})
    check("%s: eager and graph-replay outputs bitwise equal to the plain run" % tag,
          shas(o) and shas(o) == shas(p),
          "%s vs %s" % (shas(o), shas(p)))
    nccl_in_graph = "nccl: in graph" in o
    if tag == "torch.kc":
        check("%s: kernels inside the captured graph checked, no violation" % tag,
              g.get("kernels_checked", 0) > 0 and s.get("violations") == 0 and
              s.get("internal_errors") == 0,
              "summary graphs %s; violations %s; checks %s" % (g, s.get("violations"),
                                                              s.get("checks")))
    else:
        comm = [c for c in of(recs, "check") if "nccl" in c.get("kernel_name", "").lower()]
        seen = [k["demangled"] for k in of(recs, "kernel") if "nccl" in k.get("demangled", "").lower()]
        reasons = [r.get("reason", "") for r in of(recs, "graph") if not r.get("checkable")]
        # At world size 1 NCCL may launch no kernel at all (nothing to reduce):
        # then there is no communication kernel to keep untouched.
        check("%s: no communication kernel re-run; a graph holding one is launched unchanged" % tag,
              "nccl:" in o and not comm and
              (not seen or not nccl_in_graph or any("communication" in x for x in reasons)),
              "nccl %s; NCCL kernels seen %d %s; checks of them %d; not-checkable graphs %s; "
              "graphs %s" % ("in graph" if nccl_in_graph else re.findall(r"nccl: .*", o),
                             len(seen), seen[:2], len(comm), reasons, g))

ok = all(r[1] for r in rows)
lines = ["# kcheck on serving-shaped programs (GPU)", "",
         "%s. Produced by test/gpu/run_gpu_serving.sh." %
         datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "",
         "```", read(os.path.join(logs, "env.txt")).strip(), "```", ""]
lines += ["| result | check | numbers |", "|---|---|---|"]
for name, good, detail in rows:
    lines.append("| %s | %s | %s |" % ("PASS" if good else "FAIL", name, detail.replace("|", "/")))
lines += ["", "Overall: %s (%d/%d)" % ("PASS" if ok else "FAIL", sum(r[1] for r in rows),
                                         len(rows)), ""]
lines += ["Commands: see commands.txt in serving-logs.tar.gz.", ""]
with open(out, "w") as f:
    f.write("\n".join(lines))
sys.exit(0 if ok else 1)
