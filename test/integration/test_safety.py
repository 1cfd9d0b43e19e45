"""Safety: faults in any driver call never crash the application or change
what it receives; fork; processes that never touch CUDA; options."""
import os
import re
import signal

import pytest

from conftest import by_type, run, sweep


def calls_file(tmp_path):
    return str(tmp_path / "calls.txt")


def read_calls(path):
    total, failed = 0, None
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "calls":
                total = int(parts[1])
            elif parts[0] == "failed" and parts[1] != "none":
                failed = parts[2]
    return total, failed


def base_name(entry):
    return re.sub(r"(_v\d+|_ptsz|_ptds)+$", "", entry)


@pytest.mark.parametrize("mode", ["app_runtime", "app_linked"])
def test_fault_sweep_application_gets_real_results(app, tmp_path, mode):
    """Fails the N-th driver call, for every N, with kcheck loaded (trace=1,
    so kcheck makes driver calls of its own; gates off here, the executor has
    its own sweep). The application never crashes; it either finishes with
    exactly the results of a clean run, or reports the failure of the very
    call that failed."""
    opts = "trace=1:gates=none"
    clean = run([app(mode), "basic"], tmp_path, options=opts,
                env_extra={"FAKECUDA_CALLS_OUT": calls_file(tmp_path)})
    assert clean.rc == 0, clean.err
    total, _ = read_calls(calls_file(tmp_path))
    assert total > 50
    want = sorted(l for l in clean.out.splitlines() if "checksum" in l)

    def one(n):
        d = tmp_path / ("n%d" % n)
        d.mkdir()
        r = run([app(mode), "basic"], d, options=opts,
                env_extra={"FAKECUDA_FAIL_AT": str(n), "FAKECUDA_CALLS_OUT": calls_file(d)})
        return n, r, read_calls(calls_file(d))[1]

    kcheck_own = 0
    for n, r, failed in sweep(one, range(1, total + 1)):
        assert r.rc in (0, 1), "call %d: exit %d (signal?)\n%s" % (n, r.rc, r.err[-2000:])
        assert failed, "call %d: the stand-in did not fail anything" % n
        if r.rc == 0:
            # The failure hit one of kcheck's own calls: invisible to the app.
            kcheck_own += 1
            assert sorted(l for l in r.out.splitlines() if "checksum" in l) == want, n
        else:
            assert "(999)" in r.err and base_name(failed) in r.err, \
                "call %d (%s) failed but the app reported something else:\n%s" % (n, failed, r.err[-1500:])
    # kcheck made driver calls of its own, and their failures were absorbed.
    assert kcheck_own > 0


def test_fork_child_gets_its_own_report(app, tmp_path):
    r = run([app("app_linked"), "basic", "--fork"], tmp_path, options="trace=1")
    assert r.rc == 0, r.err
    assert len(r.reports) == 2, r.reports
    runs = [r.records(i)[0] for i in range(2)]
    pids = {x["pid"] for x in runs}
    assert len(pids) == 2
    child = [x for x in runs if "parent_pid" in x]
    # The fork happens before any driver call: both processes activate kcheck
    # on their own; a child forked after activation carries parent_pid.
    for i in range(2):
        recs = r.records(i)
        assert by_type(recs, "summary")[-1]["launches"] > 0
    assert len(child) <= 1


def test_non_cuda_process_gets_no_report(tmp_path):
    r = run(["/bin/sh", "-c", "ls / >/dev/null; echo hi"], tmp_path, options="trace=1")
    assert r.rc == 0 and r.out.strip() == "hi"
    assert r.reports == []
    assert "kcheck" not in r.err


def test_unknown_option_and_variable_warned(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="trcae=1",
            env_extra={"KCHECK_TRACE": "1"})
    assert r.rc == 0
    assert "unknown option 'trcae' (did you mean 'trace'?)" in r.err
    assert "unknown variable KCHECK_TRACE (did you mean KCHECK_OPTIONS=trace=...?)" in r.err


def test_bad_value_reported_with_source(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="sample=2")
    assert r.rc == 0
    assert "KCHECK_OPTIONS: bad value '2' for option 'sample'" in r.err
    assert r.only_report()[0]["options"]["sample"] == 0.0


def test_strict_makes_problems_fatal(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="strict=1:trcae=1")
    assert r.rc == 1
    assert "strict=1" in r.err


def test_help_prints_the_table(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="help=1")
    assert r.rc == 0
    for name in ("log_path", "trace", "kernel_include", "mem_budget", "exitcode", "cupti_audit"):
        assert re.search(r"^kcheck:\s+%s\s" % name, r.err, re.M), name


def test_rank_in_report_name(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, env_extra={"RANK": "3"})
    assert r.rc == 0 and len(r.reports) == 1
    assert r.reports[0].endswith(".rank3.jsonl")


def test_no_report_with_log_path_none(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="log_path=none")
    assert r.rc == 0 and r.reports == []
    assert "SUMMARY: kcheck:" in r.err


def test_cupti_audit_backs_off_cleanly(app, tmp_path):
    """On the stand-in CUPTI cannot attach (or is absent): the option says
    so and nothing else changes."""
    plain = run([app("app_linked"), "basic"], tmp_path, kcheck=False)
    r = run([app("app_linked"), "basic"], tmp_path, options="cupti_audit=1")
    assert r.rc == 0, r.err
    assert "cupti_audit=1" in r.err
    assert sorted(l for l in r.out.splitlines() if "checksum" in l) == \
        sorted(l for l in plain.out.splitlines() if "checksum" in l)


def test_dlsym_rtld_next_keeps_its_meaning(tmp_path):
    from conftest import BUILD
    exe = os.path.join(BUILD, "test", "dlsym", "next_main")
    plain = run([exe], tmp_path, kcheck=False)
    r = run([exe], tmp_path)
    assert plain.rc == 0, plain.out
    assert r.rc == 0 and "hello=41" in r.out, r.out + r.err


FORK_AFTER_ACTIVATION = r"""
import ctypes, os, sys
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
fn = ctypes.c_void_p()
# kcheck activates on the first call of an entry it interposes.
assert cuda.cuGetProcAddress_v2(b"cuInit", ctypes.byref(fn), 13000, 0, None) == 0
pid = os.fork()
if pid == 0:
    sys.exit(0)                      # a normal exit: atexit handlers run
_, status = os.waitpid(pid, 0)
print("parent", os.getpid(), "child", pid, "status", status)
"""


def test_fork_after_activation_rearms_the_child(tmp_path):
    """A child forked after kcheck activated gets a report of its own (new
    pid, parent_pid set, its own summary); the parent's report is intact."""
    import sys
    r = run([sys.executable, "-c", FORK_AFTER_ACTIVATION], tmp_path)
    assert r.rc == 0, r.err
    parent_pid, child_pid, status = [int(x) for x in r.out.split()[1::2]]
    assert status == 0
    assert len(r.reports) == 2, r.reports
    runs = {r.records(i)[0]["pid"]: r.records(i) for i in range(2)}
    assert set(runs) == {parent_pid, child_pid}
    assert runs[child_pid][0]["parent_pid"] == parent_pid
    assert "parent_pid" not in runs[parent_pid][0]
    for recs in runs.values():
        assert by_type(recs, "summary"), "report ends without a summary"


def test_fork_while_kcheck_threads_start_never_hangs(tmp_path):
    """kcheck starts its threads at activation, and this script forks right
    after it: a child copied while one of them was still starting inherited
    the runtime's locks held (AddressSanitizer's allocator, in `make test`)
    and its own first thread hung on them. The fork now waits for kcheck's
    threads to finish starting. 32 such processes, two at a time: the
    unfixed library hung in about one in thirty of them."""
    import sys

    def one(i):
        d = tmp_path / str(i)
        d.mkdir()
        return run([sys.executable, "-c", FORK_AFTER_ACTIVATION], d, timeout=30)

    for r in sweep(one, range(32)):
        assert r.rc == 0, r.err
        assert len(r.reports) == 2, r.reports


# ---- SIGKILL: findings are on disk before the launch that made them returns

RACY = {"races last_writer": "last_writer", "races neighbor_read": "neighbor_read",
        "races float_accum": "float_accum", "races uninit_shared": "uninit_shared"}


def killed_run(app, tmp_path, trigger=None, delay=None):
    """app_linked races, stdout on a pty (line-buffered, so a line means
    the launches before it have returned); SIGKILL as soon as `trigger` is
    printed, or after `delay` seconds. Returns the stdout lines seen before
    the kill, the report's records and the report's path."""
    import pty
    import select
    import subprocess
    import time

    from conftest import ALL_STRATEGIES, ASAN_RT, LIB, USE_SAN, base_env
    from kcheck.report import read
    env = base_env(tmp_path)
    prefix = str(tmp_path / "kc")
    env["LD_PRELOAD"] = ((ASAN_RT + " ") if USE_SAN else "") + LIB
    env["KCHECK_OPTIONS"] = "log_path=%s:%s:check_first=1000000" % (prefix, ALL_STRATEGIES)
    master, slave = pty.openpty()
    p = subprocess.Popen([app("app_linked"), "races"], stdout=slave, stderr=subprocess.DEVNULL,
                         env=env, cwd=str(tmp_path))
    os.close(slave)
    seen, buf, t0 = [], b"", time.monotonic()
    try:
        while p.poll() is None:
            if delay is not None and time.monotonic() - t0 >= delay:
                break
            if select.select([master], [], [], 0.005)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                seen += [l.decode(errors="replace").strip() for l in lines]
                if trigger and any(trigger in l for l in seen):
                    break
        p.send_signal(signal.SIGKILL)
        p.wait()
    finally:
        os.close(master)
    import glob
    paths = glob.glob(prefix + ".*.jsonl")
    recs = read(paths[0]).records if paths else []
    return seen, recs, p.returncode


def findings_lost(seen, recs):
    """The racy kernels whose result line was printed before the kill (their
    launch had returned) but whose violation is not in the report, and how
    many were printed."""
    names = {r.get("kernel_name", "").split("(")[0] for r in by_type(recs, "violation")}
    printed = [kernel for key, kernel in RACY.items() if any(key in l for l in seen)]
    return [k for k in printed if k not in names], len(printed)


def test_sigkill_after_the_violation_keeps_it(app, tmp_path):
    """SIGKILL (the OOM killer, timeout -s KILL) right after main's last
    line: every violation is in the report, 10 kills out of 10 (the
    violation is written through as violation_pending before its launch
    returns; the findings thread's full record would come later). Then 60
    kills at random moments over the run: each violation whose kernel's
    result was printed is there (0 lost), and the report stays readable.
    About 50 s on two cores."""
    import random
    import time
    after_main, at_random = 10, 60
    # the run's length here (about 2 s under ASan on two busy cores, less
    # on a quiet machine): the random kills spread over all of it
    (tmp_path / "whole").mkdir()
    t0 = time.monotonic()
    killed_run(app, tmp_path / "whole")
    length = max(0.2, time.monotonic() - t0)

    def one(i):
        d = tmp_path / ("k%d" % i)
        d.mkdir()
        if i < after_main:
            return killed_run(app, d, trigger="races ok")
        return killed_run(app, d, delay=random.Random(i).uniform(0.05, 0.9 * length))

    results = sweep(one, range(after_main + at_random))
    lost, printed, killed = [], 0, 0
    for i, (seen, recs, rc) in enumerate(results):
        assert rc == -signal.SIGKILL or i >= after_main, (i, rc, seen)
        if i < after_main:
            assert any("races ok" in l for l in seen), seen
            assert len(by_type(recs, "violation")) == 4, (i, [r["type"] for r in recs])
        else:
            killed += rc == -signal.SIGKILL
        gone, n = findings_lost(seen, recs)
        lost += [(i, k) for k in gone]
        printed += n
    assert lost == [], lost
    # the random kills did land during the runs, with violations to lose
    assert killed >= at_random // 2 and printed >= 4 * after_main + at_random // 2, (killed, printed)


# ---- managed memory: CPU threads write it with no driver call

MANAGED_EVERY = "check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"


@pytest.mark.parametrize("save_all", [0, 1])
def test_managed_memory_never_restored(app, tmp_path, save_all):
    """app_shared managed: three threads store into and load from their
    slices of one cuMemAllocManaged allocation with plain CPU stores while
    the fourth's launches on its slice would be checked (every launch). A
    check that saved and restored the allocation reverted their stores (5
    of 10 runs wrong with the defaults before); now such a launch is not
    checked (a skip record says why) and, with save_all=1, the checks of
    the device-buffer launches leave the managed allocation out (recorded).
    25 runs each: 0 wrong results."""
    def one(i):
        d = tmp_path / ("m%d" % i)
        d.mkdir()
        r = run([app("app_shared"), "managed", "4", "10"], d,
                options=MANAGED_EVERY + ":gates=race,determinism:save_all=%d" % save_all)
        return r.rc, r.out, r.err, r.only_report()

    for rc, out, err, recs in sweep(one, range(25)):
        assert rc == 0 and "wrong 0" in out, out + err[-2000:]
        skips = by_type(recs, "skip")
        assert len(skips) == 10 and all("managed memory" in s["reason"] for s in skips), skips
        checks = by_type(recs, "check")
        assert len(checks) == 10, [r["type"] for r in recs]
        if save_all:
            assert all(c["left_out"]["managed_allocations"] == 1 for c in checks), checks
        else:
            assert not any("left_out" in c for c in checks), checks


# ---- files: never written through a name someone else planted

def test_planted_symlinks_are_never_followed(app, tmp_path):
    """Another user's symlinks in a shared folder, planted at the names
    kcheck will write (the report <log_path>.<pid>.jsonl and the first
    bundle's folder): the files they point at stay as they were; the
    report is kcheck's own file (0600) under that name, the planted bundle
    name is refused (bundle_skipped), other bundles are new 0700 folders of
    0600 files."""
    import stat
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.chmod(victim, 0o600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = ("ln -s %s kc.$$.jsonl && mkdir rb && ln -s %s rb/bundle-$$-0-race && exec %s races"
              % (victim, elsewhere, app("app_linked")))
    r = run(["sh", "-c", script], tmp_path, options="repro_dir=%s" % (tmp_path / "rb"))
    assert r.rc == 0, r.err[-2000:]
    assert victim.read_text() == "precious\n"
    assert os.listdir(elsewhere) == []
    assert len(r.reports) == 1
    st = os.lstat(r.reports[0])
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode)
    vs = by_type(r.only_report(), "violation")
    first = [v for v in vs if v["launch"] == 0 and v["gate"] == "race"]
    assert first and "exists already" in first[0]["bundle_skipped"], first
    made = [v["bundle"] for v in vs if "bundle" in v]
    assert made, vs
    for b in made:
        assert stat.S_IMODE(os.lstat(b).st_mode) == 0o700
        for f in os.listdir(b):
            assert stat.S_IMODE(os.lstat(os.path.join(b, f)).st_mode) == 0o600, f


def test_new_folders_are_private(app, tmp_path):
    """A repro_dir that does not exist is made 0700; one that is a symlink
    is refused (not followed)."""
    import stat
    r = run([app("app_linked"), "races"], tmp_path, options="repro_dir=%s" % (tmp_path / "new"))
    assert r.rc == 0
    assert stat.S_IMODE(os.lstat(tmp_path / "new").st_mode) == 0o700
    d = tmp_path / "d2"
    d.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    os.symlink(target, d / "link")
    r = run([app("app_linked"), "races"], d, options="repro_dir=%s" % (d / "link"))
    assert r.rc == 0
    assert os.listdir(target) == []
    vs = by_type(r.only_report(), "violation")
    assert vs and all("not a folder of this user's own" in v["bundle_skipped"] for v in vs), vs


def test_unwritable_report_is_fatal_with_or_without_strict(app, tmp_path):
    """A report that cannot be made (a file where its folder should be)
    stops the run before the application's first kernel, strict=1 or not:
    a run without its report would read as clean. (A folder that does not
    exist is made: test_option_values.)"""
    (tmp_path / "afile").write_text("")
    bad = str(tmp_path / "afile" / "kc")
    for opts in ("log_path=" + bad, "strict=1:log_path=" + bad):
        r = run([app("app_linked"), "basic"], tmp_path, options=opts)
        assert r.rc == 1 and "cannot open report" in r.err, (opts, r.err[-2000:])
        assert "basic ok" not in r.out, opts
