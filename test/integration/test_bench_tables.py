"""The benchmarks' table makers read bench/transformer_step.py's output as it
is printed now: a table of dashes from a format the reader no longer knows
hid a whole device call's targets once (STEP lines gained their phases)."""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TABLE = os.path.join(ROOT, "bench", "targets_table.py")


def step_lines(ms_of_step, n=12):
    """STEP lines as transformer_step.py prints them: index, ms, forward,
    backward, optimizer, thread CPU, process CPU."""
    out = []
    for i in range(n):
        ms = ms_of_step(i)
        out.append("STEP %d %.3f %.3f %.3f %.3f %.3f %.3f" % (i + 1, ms, ms / 3, ms / 2, ms / 6, ms, ms))
    return "\n".join(out) + "\nFINAL_LOSS 0x1.8p+0\n"


def make_logs(tmp_path, fmt=step_lines):
    logs, reps = tmp_path / "logs", tmp_path / "reports"
    logs.mkdir()
    reps.mkdir()
    (logs / "env.txt").write_text("date: test\n")
    # plain 10 ms a step after the first three, default 12 ms, none 10.1, trace=1 11
    steady = {"plain": 10.0, "none": 10.1, "default": 12.0, "trace1": 11.0}
    for c, ms in steady.items():
        (logs / ("%s_r1.out" % c)).write_text(fmt(lambda i, ms=ms: 100.0 if i < 3 else ms))
    with open(reps / "default_r1.1.jsonl", "w") as f:
        f.write(json.dumps({"type": "check", "kernel": "k", "launch": 7, "runs": 4, "cost_ms": 1.0,
                            "wait_ms": 0.1, "floor_ms": 0.5, "saved_bytes": 1 << 20,
                            "floor_terms": {"kernels_ms": 0.3, "copies_ms": 0.1, "syncs_ms": 0.1,
                                            "measured_device": True}}) + "\n")
    return logs, reps


def run_table(logs, reps):
    return subprocess.run([sys.executable, TABLE, str(logs), str(reps), "1", "12", "3",
                           'declare -A WALL=([plain_r1]="2.00" [default_r1]="3.00" )'],
                          capture_output=True, text=True, timeout=60)


ROUNDS_TABLE = os.path.join(ROOT, "bench", "torch_rounds_table.py")


def round_dirs(tmp_path, rounds, n=12, span="6-12"):
    """One folder per round, r1, r2, ...: rounds is [{config: (late ms, extra
    output lines)}]; each run's steps 1-5 take 100 ms and the rest the late
    ms, with a LATE_MEDIAN_MS line over span."""
    dirs = []
    for i, configs in enumerate(rounds):
        d = tmp_path / ("r%d" % (i + 1))
        d.mkdir()
        for c, (ms, extra) in configs.items():
            text = step_lines(lambda k, ms=ms: 100.0 if k < 5 else ms, n=n)
            text += "LATE_MEDIAN_MS step=%.3f forward=1 backward=1 optimizer=1 thread_cpu=1 " \
                    "process_cpu=1 (steps %s)\n%s" % (ms, span, extra)
            (d / ("bench_%s.out" % c)).write_text(text)
        dirs.append(str(d))
    return dirs


def rounds_table(dirs):
    return subprocess.run([sys.executable, ROUNDS_TABLE] + dirs + ["--", "plain", "torch"],
                          capture_output=True, text=True, timeout=60)


def row(out, label):
    for line in out.splitlines():
        if line.startswith("| %s |" % label):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError("no row %r in\n%s" % (label, out))


def test_targets_table_reads_the_step_lines_with_phases(tmp_path):
    r = run_table(*make_logs(tmp_path))
    assert r.returncode == 0, r.stderr
    plain, default = row(r.stdout, "plain"), row(r.stdout, "default options")
    assert plain[3] == "10.00" and plain[4] == "1.000"
    assert default[3] == "12.00" and default[4] == "1.200"
    assert default[5] == "3.00" and default[6] == "1.500"  # wall from the WALL declaration
    assert default[7] == "[1]"  # the check record counted
    assert row(r.stdout, "`gates=none:trace=1`")[4] == "1.100"


def test_targets_table_fails_on_step_lines_it_cannot_read(tmp_path):
    def two_fields(ms_of_step, n=12):
        return "\n".join("STEP %d" % (i + 1) for i in range(n)) + "\n"
    r = run_table(*make_logs(tmp_path, two_fields))
    assert r.returncode == 1
    assert "cannot read" in r.stderr and "plain_r1" in r.stderr


def test_torch_bench_table_prints_libkcheck_cost_after_the_mark(tmp_path):
    """torch_prof/default_prof runs: ns per launch of each stage and the
    driver calls between the profile_mark record and the exit record."""
    for c in ("plain", "torch_prof"):
        (tmp_path / ("bench_%s.out" % c)).write_text(step_lines(lambda i: 10.0, n=8))

    def prof(at, launches, pointers_ns, calls):
        return {"type": "profile", "at": at, "launches": launches, "driver_calls_total": calls,
                "stages": {"pointers": {"ns": pointers_ns, "n": launches},
                           "launch": {"ns": 3 * pointers_ns, "n": launches}},
                "counts": {"ptr_driver": calls}}
    with open(tmp_path / "bench_torch_prof.7.jsonl", "w") as f:
        f.write(json.dumps(prof("mark", 1000, 100000, 10)) + "\n")
        f.write(json.dumps(prof("exit", 3000, 500000, 30)) + "\n")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "torch_bench_table.py"),
                        str(tmp_path), "plain", "torch_prof"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    # (500000 - 100000) ns over the 2000 launches after the mark: 200 ns
    assert "torch_prof, libkcheck per launch after launch 1000 (profile=1; 2000 launches): " \
        "launch 600 ns, pointers 200 ns" in r.stdout, r.stdout
    assert "driver calls per launch after the mark: 0.010" in r.stdout


def test_torch_rounds_table_takes_the_median_of_each_rounds_ratio(tmp_path):
    """Each round's ratio is to that round's plain run; the goal is read
    from their median, not from one round or from pooled times."""
    plain_ms, torch_ms = [10.0, 20.0, 10.0], [11.0, 30.0, 12.0]  # ratios 1.1, 1.5, 1.2
    dirs = round_dirs(tmp_path, [{"plain": (p, ""), "torch": (t, "")} for p, t in zip(plain_ms, torch_ms)])
    r = rounds_table(dirs)
    assert r.returncode == 0, r.stderr
    assert row(r.stdout, "torch | steady (6-N)") == ["torch", "steady (6-N)", "1.10", "1.50", "1.20",
                                                       "1.20"]
    assert row(r.stdout, "torch | late")[-1] == "1.20"
    assert row(r.stdout, "torch | first 5 steps")[-1] == "1.00"
    # inside each process: 12 steps leave no steps 6..N/3 -> no figure
    inside = r.stdout.split("Inside each process")[1]
    assert row(inside, "torch")[1:] == ["-", "-", "-", "-"]
    # a round whose plain run did not finish is left out, and named
    os.remove(os.path.join(dirs[1], "bench_plain.out"))
    r = rounds_table(dirs)
    assert r.returncode == 0, r.stderr
    assert "Left out, no plain run finished: %s" % dirs[1] in r.stdout
    assert row(r.stdout, "torch | steady (6-N)") == ["torch", "steady (6-N)", "1.10", "1.20", "1.15"]
    for d in (dirs[0], dirs[2]):
        os.remove(os.path.join(d, "bench_plain.out"))
    r = rounds_table(dirs)
    assert r.returncode == 1 and "no round has a plain run" in r.stderr


def test_targets_table_takes_wall_times_kept_in_the_logs(tmp_path):
    logs, reps = make_logs(tmp_path)
    (logs / "walls.txt").write_text("plain_r1 4.00\ndefault_r1 5.00\n")
    r = subprocess.run([sys.executable, TABLE, str(logs), str(reps), "1", "12", "3", "declare -A WALL=()"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert row(r.stdout, "default options")[5:7] == ["5.00", "1.250"]


def test_torch_rounds_table_in_process_ratio(tmp_path):
    """Steps 6..N/3 against the later steps of the same process: 30 steps,
    steps 6-10 at 11 ms and 11-30 at 10 ms give 1.10 whatever the process's speed."""
    d = tmp_path / "r1"
    d.mkdir()
    for c in ("plain", "torch"):
        slow = 1.1 if c == "torch" else 1.0
        (d / ("bench_%s.out" % c)).write_text(
            step_lines(lambda k, s=slow: 100.0 if k < 5 else (10.0 * s if k < 10 else 10.0), n=30))
    r = rounds_table([str(d)])
    assert r.returncode == 0, r.stderr
    inside = r.stdout.split("Inside each process")[1]
    assert row(inside, "torch")[1:] == ["1.10", "1.10"]
    assert row(inside, "plain")[1:] == ["1.00", "1.00"]


def test_torch_rounds_table_divides_out_each_process_speed(tmp_path):
    """Calibrated: each run's late ms/step over its own CALIB_MS, as ratios to
    the round's plain run. Processes whose speed alone differs (plain and
    torch twice as slow in round 2, the calibration too) give the same
    calibrated ratio; r and the spreads say how well the calibration tracks
    the step. Runs without CALIB_MS: no calibrated table."""
    plain = [(10.0, 2.0), (20.0, 4.0), (12.0, 2.0)]  # (late ms, CALIB_MS)
    torch_ = [(10.5, 2.0), (30.0, 5.0), (12.0, 2.4)]  # calibrated ratios 1.05, 1.2, 0.8333
    calib = "CALIB_MS %.3f samples=3\n"
    dirs = round_dirs(tmp_path, [{"plain": (p[0], calib % p[1]), "torch": (t[0], calib % t[1])}
                                 for p, t in zip(plain, torch_)])
    r = rounds_table(dirs)
    assert r.returncode == 0, r.stderr
    cal = r.stdout.split("Calibrated:")[1]
    assert row(cal, "torch | late over CALIB_MS") == ["torch", "late over CALIB_MS", "1.05", "1.20",
                                                       "0.83", "1.05"]
    assert row(cal, "plain | CALIB_MS")[2:] == ["2.00", "4.00", "2.00", "2.00"]
    # plain: late 10, 20, 12 against 2, 4, 2 -> spread 2.00 raw, 1.20 over CALIB_MS
    assert "plain: r 0.98 over 3 processes, late ms/step spread 2.00, over CALIB_MS 1.20" in cal, cal
    for d in dirs:
        for c in ("plain", "torch"):
            p = os.path.join(d, "bench_%s.out" % c)
            text = open(p).read().split("CALIB_MS")[0]
            open(p, "w").write(text)
    r = rounds_table(dirs)
    assert r.returncode == 0 and "Calibrated" not in r.stdout, r.stdout


def test_torch_rounds_table_splits_the_late_cpu_by_thread(tmp_path):
    """The program's main and autograd threads' CPU per late step, medians
    over the rounds (THREAD_CPU_MS over the LATE_MEDIAN_MS span); an
    autograd thread that ran Python shows as py:Dummy-N and still counts."""
    threads = "THREAD_CPU_MS %.1f of 2000 py:MainThread 11\nTHREAD_CPU_MS %.1f of 2000 %s 12\n"
    dirs = round_dirs(tmp_path, [{"plain": (10.0, threads % (pm, pa, "pt_autograd_0")),
                                  "torch": (10.0, threads % (tm, ta, "py:Dummy-1"))}
                                 for pm, pa, tm, ta in [(500, 400, 600, 700), (700, 600, 800, 500)]],
                      n=300, span="101-300")
    r = rounds_table(dirs)
    assert r.returncode == 0, r.stderr
    cpu = r.stdout.split("CPU ms per late step")[1]
    # 200 late steps: plain main (500+700)/2/200 = 3.00, autograd 2.50; torch 3.50, 3.00
    assert row(cpu, "plain")[1:] == ["3.00", "2.50", "2"]
    assert row(cpu, "torch")[1:] == ["3.50", "3.00", "2"]


def test_targets_table_prices_the_device_work_of_each_check(tmp_path):
    """The device work a check needs, priced as copies at its measured copy
    bandwidth with no host time, over its floor: 1 MiB saved, 0.5 MiB
    changed (restored_bytes = runs x changed), 0.1 ms a MiB copied, kernel
    0.05 ms, 0.01 ms a wait; fixed 0.05 + 0.2 + 0.05 + 0.01, each of the two
    runs 0.05 + 0.05 + 0.1 + 0.01, and the l2flush kernel's 2 x 4 MiB of
    writes the traffic of a 4 MiB copy (0.4 ms): 1.13 ms over a 0.5 ms floor."""
    logs, reps = make_logs(tmp_path)
    mib = 1 << 20

    def check(l2flush):
        return {"type": "check", "kernel": "k", "launch": 7, "runs": 2, "cost_ms": 1.5, "wait_ms": 0.0,
                "floor_ms": 0.5, "kernel_ms": 0.05, "saved_bytes": mib, "restored_bytes": mib,
                "gates": {"race": {"strategies": {"l2flush": l2flush}}},
                "floor_terms": {"kernels_ms": 0.15, "copies_ms": 0.2, "syncs_ms": 0.03,
                                "measured_device": True}}
    with open(reps / "default_r1.1.jsonl", "w") as f:
        f.write(json.dumps({"type": "summary", "own_kernels": {"l2_bytes": 4 * mib}}) + "\n")
        for st in ("same", "same", "the kernel uses no shared memory"):
            f.write(json.dumps(check(st)) + "\n")
    r = run_table(logs, reps)
    assert r.returncode == 0, r.stderr
    line = [x for x in r.stdout.splitlines() if "the device work these checks need" in x]
    assert line and "(L2 4 MiB)" in line[0], r.stdout
    assert "median 2.26, 90th percentile 2.26" in line[0], line[0]


HARNESS_SUMMARY = os.path.join(ROOT, "test", "gpu", "serving", "harness_summary.py")


def harness_logs(tmp_path, pairs):
    """The throughput runs' logs as run_serving_harness.sh leaves them: pairs
    is [(plain (whole, late), serving (whole, late))] tokens/s."""
    logs, reps = tmp_path / "logs", tmp_path / "reports"
    logs.mkdir()
    reps.mkdir()
    (logs / "env.txt").write_text("date: test\n")
    for i, (p, s) in enumerate(pairs, 1):
        for tag, (whole, late) in (("plain", p), ("serving", s)):
            (logs / ("tput.%s.%d.out" % (tag, i))).write_text(
                "RESULT harness requests=9 tokens=900 wall_s=20.000 tokens_per_s=%.1f "
                "late_tokens_per_s=%.1f bug=none\n" % (whole, late))
        with open(reps / ("tput.serving.%d.1.jsonl" % i), "w") as f:
            for w in range(3):
                f.write(json.dumps({"type": "budget_window", "window": w, "wall_s": 5.0,
                                    "fraction": 0.03, "overhead_s": 0.01, "checks": 4,
                                    "graph_kernels_checked": 1, "skipped_for_budget": 0,
                                    "launches": 100, "graph_launches": 10,
                                    "graph_replays": 1}) + "\n")
            f.write(json.dumps({"type": "summary", "internal_errors": 0, "checks": 12}) + "\n")
    return logs, reps


def test_serving_pairs_median_interval_whole_and_second_half(tmp_path):
    """Each pair's ratio (serving over the plain run beside it), their
    median with the bootstrap interval, the second half's apart: the
    whole window's first checks and the late rate tell different things."""
    pairs = [((1000.0 + 10 * i, 1000.0), (900.0 + 10 * i, 990.0)) for i in range(6)]
    logs, reps = harness_logs(tmp_path, pairs)
    out = tmp_path / "harness.md"
    r = subprocess.run([sys.executable, HARNESS_SUMMARY, str(logs), str(reps), str(out)],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, KC_HARNESS_SERVING_OPTS="stream_races=1"))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    whole = [l for l in text.splitlines() if "paired, whole window" in l]
    late = [l for l in text.splitlines() if "paired, second half" in l]
    assert len(whole) == 1 and len(late) == 1, text
    assert "--serving -o stream_races=1" in whole[0]
    # whole: ratios (900+10i)/(1000+10i), all below 0.97: below the goal
    assert whole[0].startswith("| below goal |") and "over 6 pairs" in whole[0], whole[0]
    assert "median ratio 0.90" in whole[0], whole[0]
    # second half: every ratio 0.99: the interval is 0.990-0.990, the goal met
    assert late[0].startswith("| PASS |") and "median ratio 0.990" in late[0], late[0]
    assert "interval 0.990-0.990" in late[0], late[0]
    # the late field is not read as the whole window's (its name ends alike)
    assert "plain [1000.0, 1010.0" in text, text


def test_serving_pairs_need_both_runs(tmp_path):
    """A pair whose serving run printed no rate counts in neither figure."""
    pairs = [((1000.0, 1000.0), (980.0, 990.0))] * 3
    logs, reps = harness_logs(tmp_path, pairs)
    (logs / "tput.serving.2.out").write_text("Traceback: died\n")
    out = tmp_path / "harness.md"
    subprocess.run([sys.executable, HARNESS_SUMMARY, str(logs), str(reps), str(out)],
                   capture_output=True, text=True, timeout=60)
    whole = [l for l in out.read_text().splitlines() if "paired, whole window" in l]
    assert whole and "over 2 pairs" in whole[0], out.read_text()
