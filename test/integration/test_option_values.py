"""Option values: out-of-range, overflowing and non-finite values are
reported with the range and the default kept (never a silent 0 or a
wrapped value); strict=1 makes every option problem fatal before the first
kernel; exitcode=N keeps the application's exit work; verbosity=0 prints
errors only; a report that cannot be opened says why."""
import os

import pytest

from conftest import by_type, read_records, run, sweep

DATA = os.path.join(os.path.dirname(__file__), "data", "repro")

BAD = [
    ("mem_budget=99999999999T", "mem_budget", "a size in bytes"),
    ("mem_budget=inf", "mem_budget", "a size in bytes"),
    ("mem_budget=1e20", "mem_budget", "a size in bytes"),
    ("green_sms=9223372036854775807", "green_sms", "[1, 1024]"),
    ("green_sms=4294967296", "green_sms", "[1, 1024]"),
    ("extra_shmem=4G", "extra_shmem", "[0, 262144]"),
    ("sample=nan", "sample", "a finite number in [0, 1]"),
    ("race_runs=0", "race_runs", "[1, 64]"),
]


@pytest.mark.parametrize("opt,name,expect", BAD)
def test_bad_value_reported_with_range_and_default_kept(app, tmp_path, opt, name, expect):
    r = run([app("app_linked"), "races"], tmp_path, options=opt)
    assert r.rc == 0, r.err[-2000:]
    assert "bad value" in r.err and ("option '%s'" % name) in r.err and expect in r.err, r.err
    recs = r.only_report()
    d = tmp_path / "defaults"
    d.mkdir()
    defaults = run([app("app_linked"), "basic"], d).only_report()[0]["options"]
    assert recs[0]["options"][name] == defaults[name]
    # The checks still ran (mem_budget did not become 0).
    assert by_type(recs, "check")


def test_seed_int64_max_is_no_overflow(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path,
            options="seed=9223372036854775807:sample=0.5:check_first=0")
    assert r.rc == 0 and "runtime error" not in r.err, r.err[-2000:]
    assert r.only_report()[0]["options"]["seed"] == 9223372036854775807


STRICT = [
    ("trcae=1", "unknown option"),
    ("sample=2", "bad value"),
    ("mem_budget=1e20", "bad value"),
    ("contracts=/dev/zero", "not a regular file"),
]


@pytest.mark.parametrize("opt,msg", STRICT)
def test_strict_makes_every_problem_fatal_before_the_first_kernel(app, tmp_path, opt, msg):
    r = run([app("app_linked"), "basic"], tmp_path, options="strict=1:" + opt)
    assert r.rc == 1, r.err[-2000:]
    assert msg in r.err and "strict=1" in r.err, r.err
    assert "vecadd ok" not in r.out  # stopped before the application's first kernel


@pytest.mark.parametrize("opt,msg", STRICT)
def test_without_strict_the_same_problems_are_warnings(app, tmp_path, opt, msg):
    r = run([app("app_linked"), "basic"], tmp_path, options=opt)
    assert r.rc == 0 and "basic ok" in r.out, r.err[-2000:]
    assert msg in r.err


# A list that names nothing or loses an entry would turn checks off while
# the run still reads "0 violations": fatal with or without strict=1, one
# line naming the entry (and the accepted ones), before the first kernel.
LIST_FATAL = [
    ("gates=racee", "gates: unknown gate 'racee' (did you mean 'race'?); accepted: all, none, "),
    ("gates=determinism,raec", "unknown gate 'raec' (did you mean 'race'?"),
    ("gates=", "gates='' names no gate"),
    ("gates=,", "gates=',' names no gate"),
    ("gates=none,race", "names gates and 'none'"),
    ("race_strategies=scrub,gren", "unknown race strategy 'gren' (did you mean 'green'?); "
                                   "accepted: all, scrub, green, smem, hammer, l2flush"),
    ("race_strategies=", "race_strategies='' names no strategy"),
    ("kernel_include_regex=f++++++++++++++++++++++", "nested repetition"),
    ("kernel_exclude_regex=(a", "no usable regex"),
    ("kernel_include=,", "names no kernel"),
    ("suppressions=/nonexistent/kc.supp", "suppressions=/nonexistent/kc.supp: not a readable"),
]


@pytest.mark.parametrize("opt,msg", LIST_FATAL)
def test_a_list_that_loses_an_entry_is_fatal_without_strict(app, tmp_path, opt, msg):
    r = run([app("app_linked"), "basic"], tmp_path, options=opt)
    assert r.rc == 1, r.err[-2000:]
    lines = [l for l in r.err.splitlines() if msg in l]
    assert len(lines) == 1 and lines[0].endswith("; exiting"), r.err
    assert "basic ok" not in r.out and not r.reports  # no kernel ran, no report claims a pass


def test_suppressions_file_with_a_bad_line_is_fatal(app, tmp_path):
    supp = tmp_path / "bad.supp"
    supp.write_text("# a comment\nrace:vecadd\njust-a-word\n")
    r = run([app("app_linked"), "basic"], tmp_path, options="suppressions=%s" % supp)
    assert r.rc == 1 and "bad.supp:3: error: expected gate:kernel-glob" in r.err, r.err
    assert "basic ok" not in r.out


def test_race_strategies_all_runs_every_strategy(app, tmp_path):
    # The README's own example: every strategy of perturb.def, in its order.
    r = run([app("app_linked"), "races"], tmp_path, options="gates=race:race_strategies=all")
    assert r.rc == 0 and "unknown" not in r.err, r.err[-2000:]
    checks = by_type(r.only_report(), "check")
    assert checks
    strategies = [s for c in checks
                  for s in (c["gates"].get("race") or {}).get("strategies", {})]
    for want in ("scrub", "green", "smem", "hammer", "l2flush"):
        assert want in strategies, strategies
    assert by_type(r.only_report(), "violation")


def test_gates_none_is_accepted_on_purpose(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="gates=none")
    assert r.rc == 0 and "basic ok" in r.out and "exiting" not in r.err, r.err[-2000:]


def test_regex_bomb_option_is_quick(app, tmp_path):
    import time
    t0 = time.time()
    r = run([app("app_linked"), "basic"], tmp_path,
            options="kernel_include_regex=f++++++++++++++++++++++")
    assert r.rc == 1 and time.time() - t0 < 30
    assert "nested repetition" in r.err


def test_exitcode_keeps_the_applications_exit_work(app, tmp_path):
    r = run([app("app_atexit")], tmp_path, options="exitcode=3")
    assert r.rc == 3, r.err[-2000:]
    # and the exit work of a library the program links, finalised after
    # libkcheck (its destructor and the atexit handler it registered)
    for line in ("main done", "handler registered after CUDA ran",
                 "handler registered before CUDA ran", "destructor ran",
                 "library destructor ran", "library's atexit handler ran"):
        assert "app_atexit: " + line in r.out, r.out
    assert by_type(r.only_report(), "violation")
    assert by_type(r.only_report(), "summary")


def test_exitcode_unused_without_violations(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="exitcode=3")
    assert r.rc == 0


def test_verbosity_0_prints_errors_only(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="verbosity=0:trcae=1:sample=2",
            env_extra={"KCHECK_TRACE": "1"})
    assert r.rc == 0
    assert r.err.strip() == "", r.err
    # Violations are errors: reported, with the summary.
    r = run([app("app_atexit")], tmp_path, options="verbosity=0:trcae=1")
    assert "violation" in r.err and "SUMMARY: kcheck: 1 violation" in r.err
    assert "unknown option 'trcae'" not in r.err  # (the finding's reproduce line names it)


def test_missing_log_folder_is_made_private(app, tmp_path):
    d = tmp_path / "missing" / "dir"
    r = run([app("app_linked"), "basic"], tmp_path, options="log_path=%s/kc" % d)
    assert r.rc == 0 and "basic ok" in r.out, r.err[-2000:]
    reports = list(d.glob("kc.*.jsonl"))
    assert len(reports) == 1 and by_type(read_records(str(reports[0])), "summary")
    assert (d.stat().st_mode & 0o777) == 0o700 and ((tmp_path / "missing").stat().st_mode & 0o777) == 0o700


def test_report_open_failure_names_the_reason_and_exits(app, tmp_path):
    # A file where a folder should be: the report cannot be made, and no
    # report would read as a clean run.
    (tmp_path / "afile").write_text("")
    for strict in ("", ":strict=1", ":strict=0"):
        r = run([app("app_linked"), "basic"], tmp_path,
                options="log_path=%s/afile/kc%s" % (tmp_path, strict))
        assert r.rc == 1 and "basic ok" not in r.out, r.err[-2000:]
        assert "cannot open report" in r.err and "Not a directory" in r.err and "exiting" in r.err, \
            r.err
    # kcheck's text log (log_file) that cannot be opened: stderr instead,
    # fatal under strict=1 like every option problem
    lf = run([app("app_linked"), "basic"], tmp_path,
             options="log_file=%s/afile/log:strict=1" % tmp_path)
    assert lf.rc == 1 and "basic ok" not in lf.out, lf.err[-2000:]
    assert "cannot open %s/afile/log" % tmp_path in lf.err and "strict=1: 1 option problem" in lf.err
