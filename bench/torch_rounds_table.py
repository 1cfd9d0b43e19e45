#!/usr/bin/env python3
"""bench/torch_rounds_table.py — the PyTorch binding's bench over every
round of one device call: each round's ratios to the plain run of that
round, and their medians (the figure the bench's goals are read from; the
plain runs alone spread 10-30% between processes, so one round says little).

  torch_rounds_table.py ROUNDDIR... -- CONFIG...

Each ROUNDDIR holds one round's bench_<config>.out (bench/transformer_step.py's
output; test/gpu/run_gpu_torch.sh writes round 1 in its log folder and round
r in r<r>/). Ratios: first 5 steps (means), steady (mean of steps 6-N, as
the per-round tables), late (LATE_MEDIAN_MS's step, steps N/3+1..N, when
the first checks are long done). Then, per run and free of the speed
differences between processes, the median of its steps 6..N/3 over the
median of its late steps: what the binding's judgments still running in
the early steady state add inside one process (plain's own figure beside
it). With CALIB_MS in the runs' output, also the late steps over each
process's own CPU speed, as ratios (calibrated). Exits 1 when a round has
no plain run."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bench_table import late, mean, steps, tagged  # noqa: E402


def calib(rounddir, config):
    """CALIB_MS of one run (the process's CPU speed: bench/transformer_step.py's
    calibrate()), or None."""
    for line in tagged(os.path.join(rounddir, "bench_%s.out" % config), "CALIB_MS"):
        return float(line.split()[0])
    return None


def pearson(xs, ys):
    """Pearson's r of paired values, None with fewer than 3 pairs or no spread."""
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sx = sum((x - mx) ** 2 for x in xs) ** 0.5
    sy = sum((y - my) ** 2 for y in ys) ** 0.5
    return sxy / (sx * sy) if sx and sy else None


def figures(rounddir, config):
    """(first, steady, late) ms/step of one run, None where it has none."""
    path = os.path.join(rounddir, "bench_%s.out" % config)
    st = steps(path)
    lt, _ = late(path)
    return (mean(st[:5]) if st else None, mean(st[5:]) if len(st) > 5 else None,
            lt.get("step") if lt else None)


def in_process(rounddir, config):
    """median(steps 6..N/3) / median(steps N/3+1..N) of one run, or None."""
    st = steps(os.path.join(rounddir, "bench_%s.out" % config))
    cut = max(5, len(st) // 3)
    if len(st) < cut + 5 or cut <= 5:
        return None
    return statistics.median(st[5:cut]) / statistics.median(st[cut:])


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x):
    return "-" if x is None else "%.2f" % x


def thread_cpu(rounddir, config):
    """CPU ms per late step of the program's main thread and of the autograd
    thread (pt_autograd_*, or py:Dummy-* where Python ran on it), from the
    THREAD_CPU_MS lines over the late steps; (None, None) when absent."""
    path = os.path.join(rounddir, "bench_%s.out" % config)
    _, span = late(path)
    try:
        a, b = (int(x) for x in span.split("-"))
    except (AttributeError, ValueError):
        return None, None
    main = auto = None
    for line in tagged(path, "THREAD_CPU_MS"):
        f = line.split()  # <ms> of <wall> <name> <tid>
        if len(f) < 4:
            continue
        ms, name = float(f[0]) / (b - a + 1), f[3]
        if "MainThread" in name:
            main = ms
        elif name.startswith("pt_autograd") or name.startswith("py:Dummy"):
            auto = ms if auto is None else max(auto, ms)
    return main, auto


def threads(rounds, configs):
    """Medians over the rounds of the program's threads' CPU per late step:
    where a difference in the late steps is spent."""
    rows = []
    for c in ["plain"] + configs:
        got = [thread_cpu(d, c) for d in rounds]
        m = [g[0] for g in got if g[0] is not None]
        a = [g[1] for g in got if g[1] is not None]
        if m or a:
            rows.append("| %s | %s | %s | %d |" % (c, fmt(statistics.median(m)) if m else "-",
                                                 fmt(statistics.median(a)) if a else "-", len(got)))
    if rows:
        print("\nCPU ms per late step of the program's threads (medians over the rounds):\n")
        print("| configuration | main thread | autograd thread | rounds |")
        print("|---|---:|---:|---:|")
        print("\n".join(rows))


def spread(xs):
    return max(xs) / min(xs) if xs and min(xs) > 0 else None


def calibrated(rounds, configs, plain):
    """The late steps over each process's own CPU speed (CALIB_MS), as
    ratios to the plain run of the round: the speed differences between
    processes divided out. How far that holds is printed with it: across
    the processes of a configuration, Pearson's r of late ms/step and
    CALIB_MS, and the spread (max/min) of the late steps before and after
    dividing."""
    pc = [calib(d, "plain") for d in rounds]
    if not any(pc):
        return
    print("\nCalibrated: the late steps (N/3+1..N) over the process's CALIB_MS "
          "(bench/transformer_step.py calibrate(): host work on CPU tensors, no CUDA call, "
          "run with no dispatch mode on), as ratios to the round's plain run.\n")
    print("| configuration | figure | " + " | ".join("round %d" % (i + 1) for i in range(len(rounds)))
          + " | median |")
    print("|---|---|" + "---:|" * (len(rounds) + 1))
    print("| plain | CALIB_MS | " + " | ".join(fmt(c) for c in pc) + " | %s |"
          % fmt(statistics.median([c for c in pc if c]) if any(pc) else None))
    fit = []
    for c in ["plain"] + configs:
        cs = [calib(d, c) for d in rounds]
        got = [figures(d, c)[2] for d in rounds]
        pairs = [(g, k) for g, k in zip(got, cs) if g and k]
        r = pearson([g for g, _ in pairs], [k for _, k in pairs])
        raw, norm = spread([g for g, _ in pairs]), spread([g / k for g, k in pairs])
        fit.append("%s: r %s over %d processes, late ms/step spread %s, over CALIB_MS %s" % (
            c, fmt(r), len(pairs), fmt(raw), fmt(norm)))
        if c == "plain":
            continue
        print("| %s | CALIB_MS | %s | %s |" % (c, " | ".join(fmt(x) for x in cs), fmt(
            statistics.median([x for x in cs if x])) if any(cs) else "-"))
        rs = [ratio(g / k if g and k else None, p[2] / q if p[2] and q else None)
              for g, k, p, q in zip(got, cs, plain, pc)]
        have = [x for x in rs if x is not None]
        print("| %s | late over CALIB_MS | %s | %s |" % (c, " | ".join(fmt(x) for x in rs),
                                                        fmt(statistics.median(have)) if have else "-"))
    print("\n" + "; ".join(fit) + ".")


def main(argv):
    if "--" not in argv:
        sys.stderr.write(__doc__)
        return 2
    cut = argv.index("--")
    rounds, configs = argv[:cut], [c for c in argv[cut + 1:] if c != "plain"]
    plain = [figures(d, "plain") for d in rounds]
    # A round whose plain run did not finish (a budget that ran out) has no
    # ratios: it is left out, and said so.
    missing = [d for d, p in zip(rounds, plain) if p[1] is None]
    if missing:
        print("Left out, no plain run finished: %s\n" % ", ".join(missing))
        rounds = [d for d, p in zip(rounds, plain) if p[1] is not None]
        plain = [p for p in plain if p[1] is not None]
    if not rounds:
        sys.stderr.write("torch_rounds_table.py: no round has a plain run\n")
        return 1
    print("Every round's ratio to the plain run of the same round (%d rounds); medians last.\n"
          % len(rounds))
    print("| configuration | figure | " + " | ".join("round %d" % (i + 1) for i in range(len(rounds)))
          + " | median |")
    print("|---|---|" + "---:|" * (len(rounds) + 1))
    print("| plain | steady ms/step | " + " | ".join(fmt(p[1]) for p in plain) + " | %s |"
          % fmt(statistics.median(p[1] for p in plain)))
    for c in configs:
        got = [figures(d, c) for d in rounds]
        for k, name in enumerate(("first 5 steps", "steady (6-N)", "late")):
            rs = [ratio(g[k], p[k]) for g, p in zip(got, plain)]
            have = [r for r in rs if r is not None]
            print("| %s | %s | %s | %s |" % (c, name, " | ".join(fmt(r) for r in rs),
                                             fmt(statistics.median(have)) if have else "-"))
    calibrated(rounds, configs, plain)
    threads(rounds, configs)
    print("\nInside each process: median of steps 6..N/3 over the median of its later steps.\n")
    print("| configuration | " + " | ".join("round %d" % (i + 1) for i in range(len(rounds)))
          + " | median |")
    print("|---|" + "---:|" * (len(rounds) + 1))
    for c in ["plain"] + configs:
        rs = [in_process(d, c) for d in rounds]
        have = [r for r in rs if r is not None]
        print("| %s | %s | %s |" % (c, " | ".join(fmt(r) for r in rs),
                                    fmt(statistics.median(have)) if have else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
