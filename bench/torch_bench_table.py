#!/usr/bin/env python3
"""bench/torch_bench_table.py — the table of the PyTorch binding's bench
(test/gpu/run_gpu_torch.sh, part "bench"): ratios to the plain run of the
same device call, and where the binding's time goes.

  torch_bench_table.py LOGDIR CONFIG...

Reads LOGDIR/bench_<config>.out (bench/transformer_step.py's STEP lines),
LOGDIR/commands.txt (each command's wall time, exit included) and the
torch_summary record of LOGDIR/bench_<config>.*.jsonl when there is one.
"""
import glob
import json
import os
import re
import statistics
import sys


def steps(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"STEP (\d+) ([0-9.]+)", line)
                if m:
                    out.append(float(m.group(2)))
    except OSError:
        pass
    return out


def walls(logdir):
    """{command name: seconds} from commands.txt."""
    w, name = {}, None
    try:
        with open(os.path.join(logdir, "commands.txt")) as f:
            for line in f:
                m = re.match(r"(\S+): ", line)
                if m and not line.startswith(" "):
                    name = m.group(1)
                m = re.match(r"\s+exit (\d+), ([0-9.]+) s", line)
                if m and name:
                    w[name] = (int(m.group(1)), float(m.group(2)))
    except OSError:
        pass
    return w


def tagged(path, tag):
    """The lines of path that start with tag (the tag removed)."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(tag + " "):
                    out.append(line[len(tag) + 1:].strip())
    except OSError:
        pass
    return out


def late(path):
    """LATE_MEDIAN_MS's fields as {name: ms}, and the steps they cover."""
    for line in tagged(path, "LATE_MEDIAN_MS"):
        kv = dict(m.groups() for m in re.finditer(r"(\w+)=([0-9.]+)", line))
        m = re.search(r"\(steps ([0-9-]+)\)", line)
        return {k: float(v) for k, v in kv.items()}, m.group(1) if m else "?"
    return None, None


def records(logdir, config, rtype):
    """The records of type rtype in the configuration's reports."""
    out = []
    for p in glob.glob(os.path.join(logdir, "bench_%s.*.jsonl" % config)):
        with open(p) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("type") == rtype:
                    out.append(r)
    return out


def summary(logdir, config):
    got = records(logdir, config, "torch_summary")
    return got[0] if got else None


def profiles(logdir, config):
    """libkcheck's profile=1 records of the configuration's report: {at:
    record}, "mark" (profile_mark's launch) and "exit"."""
    return {r.get("at", "exit"): r for r in records(logdir, config, "profile")}


def late_stages(prof):
    """ns per launch of each stage between the mark and the exit records,
    and the launches between (None when either record is missing)."""
    a, b = prof.get("exit"), prof.get("mark")
    if not a or not b or a["launches"] <= b["launches"]:
        return None, 0
    n = a["launches"] - b["launches"]
    return {k: (v["ns"] - b["stages"].get(k, {}).get("ns", 0)) / n
            for k, v in a["stages"].items()}, n


def blocks(logdir, config):
    """The live blocks bench/transformer_step.py --memory-out wrote, or None."""
    try:
        with open(os.path.join(logdir, "bench_%s.mem.json" % config)) as f:
            return [tuple(b) for b in json.load(f)]
    except (OSError, ValueError):
        return None


def diff(a, b):
    """The elements of multiset a not in multiset b."""
    left = {}
    for x in b:
        left[x] = left.get(x, 0) + 1
    out = []
    for x in a:
        if left.get(x, 0):
            left[x] -= 1
        else:
            out.append(list(x))
    return out


def mean(xs):
    return statistics.fmean(xs) if xs else float("nan")


def main():
    logdir, configs = sys.argv[1], sys.argv[2:]
    w = walls(logdir)
    plain = steps(os.path.join(logdir, "bench_plain.out"))
    if not plain:
        print("no plain run: no ratios")
        return 1
    p5, ps, pall = mean(plain[:5]), mean(plain[5:]), sum(plain)
    print("| configuration | first 5 steps ms/step | ratio | steady ms/step (steps 6-N) | ratio | "
          "all steps s | ratio | process wall s (exit included) | checks done after step |")
    print("|---|---|---|---|---|---|---|---|---|")
    sums = {}
    for c in configs:
        t = steps(os.path.join(logdir, "bench_%s.out" % c))
        rc, wall = w.get("bench_" + c, (None, float("nan")))
        s = summary(logdir, c)
        if s:
            sums[c] = s
        if len(t) < len(plain):
            print("| %s | (%d of %d steps; exit %s) | | | | | | %.1f | |" % (c, len(t), len(plain),
                                                                           rc, wall))
            continue
        last = s.get("last_check_after_steps", "") if s else ""
        print("| %s | %.1f | %.2fx | %.2f | %.2fx | %.2f | %.2fx | %.1f | %s |" % (
            c, mean(t[:5]), mean(t[:5]) / p5, mean(t[5:]), mean(t[5:]) / ps, sum(t) / 1e3,
            sum(t) / pall, wall, last))
    lp, span = late(os.path.join(logdir, "bench_plain.out"))
    if lp:
        print()
        print("Late steps (%s; the first checks long done), medians in ms: the step, its host "
              "phases, the CPU time of the program's thread and of the whole process in it:" % span)
        print()
        print("| configuration | step | ratio | forward | backward | optimizer + sync | "
              "program thread CPU | process CPU |")
        print("|---|---|---|---|---|---|---|---|")
        for c in configs:
            lc, _ = late(os.path.join(logdir, "bench_%s.out" % c))
            if not lc:
                continue
            print("| %s | %.2f | %.2fx | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                c, lc["step"], lc["step"] / lp["step"], lc["forward"], lc["backward"],
                lc["optimizer"], lc["thread_cpu"], lc["process_cpu"]))
        print()
        for c in configs:
            th = tagged(os.path.join(logdir, "bench_%s.out" % c), "THREAD_CPU_MS")
            if th:
                print("- %s, busiest threads in those steps (CPU ms of wall ms, thread): %s" % (
                    c, "; ".join(" ".join(t.split()[:4]) for t in th[:6])))
            for tag in ("THREAD_SCHED", "LATE_PROCESS"):  # waiting for a CPU, faults, GC
                for t in tagged(os.path.join(logdir, "bench_%s.out" % c), tag)[:3]:
                    print("  - %s %s" % (c, t))
        for c in configs:
            pp = tagged(os.path.join(logdir, "bench_%s.out" % c), "PYPROF")
            tot = tagged(os.path.join(logdir, "bench_%s.out" % c), "PYPROF_TOTAL_MS_PER_STEP")
            if pp:
                print()
                print("%s under cProfile after the timed steps (%s ms a step; own time per step, "
                      "calls per step):" % (c, tot[0] if tot else "?"))
                print()
                for line in pp[:10]:
                    print("    " + line)
    print()
    print("torch.cuda memory at the end (the program's view: allocated, reserved, peaks):")
    print()
    for c in configs:
        try:
            with open(os.path.join(logdir, "bench_%s.out" % c)) as f:
                mem = [ln.split(None, 1)[1].strip() for ln in f if ln.startswith("MEMORY ")]
        except OSError:
            mem = []
        print("- %s: %s" % (c, mem[-1] if mem else "(none)"))
    plain_blocks = blocks(logdir, "plain")
    for c in configs:
        other = blocks(logdir, c)
        if c == "plain" or plain_blocks is None or other is None:
            continue
        extra, missing = diff(other, plain_blocks), diff(plain_blocks, other)
        print("- %s live blocks vs plain ([size, requested, pool]): %d more %s, %d fewer %s" % (
            c, len(extra), extra[:6], len(missing), missing[:6]))
    for c in configs:  # libkcheck's own cost per launch after the mark (profile=1 runs)
        st, n = late_stages(profiles(logdir, c))
        if st:
            print()
            print("%s, libkcheck per launch after launch %d (profile=1; %d launches): %s" % (
                c, profiles(logdir, c)["mark"]["launches"], n,
                ", ".join("%s %.0f ns" % kv for kv in sorted(st.items(), key=lambda kv: -kv[1])
                          if kv[1] >= 1)))
            pr = profiles(logdir, c)
            dc = pr["exit"].get("driver_calls_total", 0) - pr["mark"].get("driver_calls_total", 0)
            print("%s, libkcheck's driver calls per launch after the mark: %.3f" % (c, dc / n))
            counts = (pr["exit"].get("counts") or {})
            if counts:
                print("%s, counts at exit: %s" % (c, counts))
    for c, s in sums.items():
        print()
        print("%s: %d ops seen in %d optimizer steps (%d watched), %d covered, %d signatures "
              "checked, %d generated-input parts run later, %d deferred and never met again, "
              "%d violations, %d inconclusive, %d errors; program-thread check time %.2f s of "
              "%.2f s since install" % (
                  c, s["ops_seen"], s["optimizer_steps"], s["watched_steps"], s["ops_covered"],
                  s["ops_checked"], s.get("generated_part_deferred", 0),
                  s.get("signatures_deferred_unchecked", 0), s["violations"], s["inconclusive"],
                  s["errors"], s.get("program_thread_check_s", 0), s.get("since_install_s", 0)))
        cost = s.get("cost_s") or {}
        if cost:
            print()
            print("| phase (%s) | seconds |" % c)
            print("|---|---|")
            for k, v in sorted(cost.items(), key=lambda kv: -kv[1]):
                print("| %s | %.3f |" % (k, v))
        top = sorted((s.get("passed_through") or {}).items(), key=lambda kv: -kv[1])[:8]
        if top:
            print()
            print("passed through: " + ", ".join("%s %d" % kv for kv in top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
