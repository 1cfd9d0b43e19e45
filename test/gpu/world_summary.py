#!/usr/bin/env python3
"""test/gpu/world_summary.py — turns the logs and reports of
test/gpu/run_gpu_world.sh into world.md; exit status 1 when a requirement
failed (a wrong result or a violation in a run with the lock, fewer runs
than asked, PyTorch results that differ with kcheck).

usage: world_summary.py LOGS REPORTS OUT.md RUNS
"""
import collections
import datetime
import glob
import json
import os
import re
import statistics
import sys

logs, reps, out, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def records(tag):
    recs = []
    for p in glob.glob(os.path.join(reps, tag + ".*.jsonl")):
        for line in read(p).splitlines():
            try:
                recs.append(json.loads(line))
            except ValueError:
                recs.append({"type": "broken"})
    return recs


def results(text):
    """RESULT <variant> k=v ... lines -> {(variant, k): float}."""
    d = {}
    for line in text.splitlines():
        p = line.split()
        if len(p) >= 3 and p[0] == "RESULT":
            for kv in p[2:]:
                k, _, v = kv.partition("=")
                try:
                    d[(p[1], k)] = float(v)
                except ValueError:
                    d[(p[1], k)] = v
    return d


lines = ["# The world lock on the GPU", "",
         "%s. Commit and machine: see env below. Produced by test/gpu/run_gpu_world.sh."
         % datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), ""]
env = read(os.path.join(logs, "env.txt")).strip()
lines += ["```", env, "```", ""]
ok = True

# 1. cost
wl = results(read(os.path.join(logs, "world_lock.out")))
lines += ["## Cost", "", "bench/world_lock: ns per shared enter/leave pair (best of 3 reps of "
          "2,000,000 pairs per thread, all threads at once, no check running unless said):", "",
          "| variant | threads | ns/pair |", "|---|---:|---:|"]
for line in read(os.path.join(logs, "world_lock.out")).splitlines():
    m = re.match(r"RESULT (\S+) threads=(\d+) ns_per_pair=([\d.]+)", line)
    if m:
        lines.append("| %s | %s | %s |" % m.groups())
lines.append("")
vals = collections.defaultdict(list)
for cfg in ("plain", "lock1", "lock0"):
    for r in (1, 2, 3):
        for (var, k), v in results(read(os.path.join(logs, "launch.r%d.%s.out" % (r, cfg)))).items():
            if k == "ns_per_launch":
                vals[(var, cfg)].append(v)
lines += ["bench/launch_overhead (100,000 launches of a 1-block kernel, best of 3 reps per "
          "process; median of 3 rounds): kcheck default options with the lock (check_lock=1) "
          "and without it (check_lock=0).", "",
          "| launch path | without kcheck | kcheck, check_lock=0 | kcheck, check_lock=1 | lock cost |",
          "|---|---:|---:|---:|---:|"]
for var in ("runtime", "driver"):
    a, b, c = (vals.get((var, x), []) for x in ("plain", "lock0", "lock1"))
    if a and b and c:
        ma, mb, mc = statistics.median(a), statistics.median(b), statistics.median(c)
        lines.append("| %s | %.1f ns | %.1f ns | %.1f ns | %+.1f ns |" % (var, ma, mb, mc, mc - mb))
    lines.append("")
    lines.append("raw %s: plain %s / lock0 %s / lock1 %s" % (var, a, b, c))
lines.append("")

# 2. app_shared
lines += ["## Threads sharing one allocation; threads that allocate and free", "",
          "test/apps/app_shared.c on the real driver (2, 4 or 8 threads in turn). `def`: kcheck "
          "default options (churn: save_all=1); `every`: every launch checked "
          "(check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1); `plain`: "
          "no kcheck; `nolock`: every launch checked with check_lock=0 (what the lock prevents).",
          "", "| group | runs | exit 0 | runs with wrong results | wrong values | violations | checks |",
          "|---|---:|---:|---:|---:|---:|---:|"]
groups = collections.OrderedDict()
for p in sorted(glob.glob(os.path.join(logs, "*.rc"))):
    tag = os.path.basename(p)[:-3]
    if tag.startswith(("shared.", "churn.", "managed.")):
        groups.setdefault(tag.rsplit(".", 1)[0], []).append(tag)
for g, tags in groups.items():
    n = len(tags)
    rc0 = wrong_runs = wrong = viol = checks = 0
    for t in tags:
        rc = read(os.path.join(logs, t + ".rc")).strip()
        m = re.search(r"wrong (\d+)", read(os.path.join(logs, t + ".out")))
        w = int(m.group(1)) if m else None
        recs = records(t)
        v = sum(r.get("type") == "violation" for r in recs)
        c = sum(r.get("type") == "check" for r in recs)
        rc0 += rc == "0"
        wrong_runs += (w is None) or w > 0
        wrong += w or 0
        viol += v
        checks += c
    lines.append("| %s | %d | %d | %d | %d | %d | %d |" % (g, n, rc0, wrong_runs, wrong, viol, checks))
    if g.endswith((".def", ".every")):
        if n < runs or rc0 != n or wrong_runs or viol or not checks:
            ok = False
            lines.append("| FAIL ^ | | | | | | |")
    if g.endswith(".plain") and (rc0 != n or wrong_runs):
        ok = False
lines.append("")

# 3. PyTorch
def thread_lines(tag):
    return [l for l in read(os.path.join(logs, tag + ".out")).splitlines()
            if l.startswith(("THREAD", "DONE", "INCOMPLETE"))]


plain = sorted(glob.glob(os.path.join(logs, "torch.plain.*.rc")))
kc = sorted(glob.glob(os.path.join(logs, "torch.kcheck.*.rc")))
ref = thread_lines("torch.plain.1")
plain_same = all(thread_lines(os.path.basename(p)[:-3]) == ref for p in plain)
same = rc0 = viol = checks = 0
for p in kc:
    t = os.path.basename(p)[:-3]
    rc0 += read(p).strip() == "0"
    same += thread_lines(t) == ref and bool(ref) and ref[-1] == "DONE"
    recs = records(t)
    viol += sum(r.get("type") == "violation" for r in recs)
    checks += sum(r.get("type") == "check" for r in recs)
lines += ["## PyTorch, two threads, each its own model on its own stream", "",
          "test/gpu/torch_threads.py (30 SGD steps per thread), kcheck default options.", "",
          "- runs without kcheck: %d, identical among themselves: %s" % (len(plain), plain_same),
          "- runs with kcheck: %d, exit 0: %d, bitwise identical to the runs without: %d"
          % (len(kc), rc0, same),
          "- checks made in the runs with kcheck: %d; violations reported: %d" % (checks, viol),
          "", "reference lines:", "```"] + ref + ["```", ""]
if not plain or not plain_same or not ref or ref[-1] != "DONE" or len(kc) < runs or same != len(kc) or rc0 != len(kc):
    ok = False
lines.append("RESULT: %s" % ("PASS" if ok else "FAIL"))
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
sys.exit(0 if ok else 1)
