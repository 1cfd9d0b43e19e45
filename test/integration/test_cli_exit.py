"""`kcheck run` and `kcheck report` never let an unchecked run read as a
pass: nothing checked is exit 5, a report without a summary exit 1,
--allow-unchecked opts out; --lib, --log-file and --error-exitcode work as
compute-sanitizer's do (options after the verb, a missing library is an
error, violations give the chosen status)."""
import os
import subprocess
import sys

from conftest import APPS, BUILD, ROOT, base_env

KCHECK = [sys.executable, os.path.join(ROOT, "scripts", "kcheck")]
# kcheck run puts the library first in LD_PRELOAD: the release build (the
# sanitizer build would need its runtime first).
LIB = os.path.join(BUILD, "libkcheck.so")


def kcheck(tmp_path, *args, env_extra=None):
    env = base_env(tmp_path)
    env["KCHECK_OPTIONS"] = "log_path=%s/kc" % tmp_path
    if env_extra:
        env.update(env_extra)
    return subprocess.run(KCHECK + list(args), capture_output=True, text=True, env=env,
                          cwd=str(tmp_path), timeout=120)


def app(name):
    return os.path.join(APPS, name)


def test_a_checked_clean_run_exits_0(tmp_path):
    r = kcheck(tmp_path, "run", "--lib", LIB, "--", app("app_linked"), "basic")
    assert r.returncode == 0 and "basic ok" in r.stdout, r.stderr[-2000:]


def test_nothing_checked_is_exit_5_unless_allowed(tmp_path):
    r = kcheck(tmp_path, "run", "--lib", LIB, "-o", "gates=none", "--", app("app_linked"), "basic")
    assert r.returncode == 5, r.stderr[-2000:]
    assert "nothing was checked: 0 checks of" in r.stderr and "--allow-unchecked" in r.stderr
    ok = kcheck(tmp_path, "run", "--lib", LIB, "--allow-unchecked", "-o", "gates=none", "--",
                app("app_linked"), "basic")
    assert ok.returncode == 0, ok.stderr[-2000:]
    # the report says the same
    reports = sorted(str(p) for p in tmp_path.glob("kc.*.jsonl"))
    rep = kcheck(tmp_path, "report", reports[0])
    assert rep.returncode == 5 and "verdict: none: nothing was checked" in rep.stdout, rep.stdout
    assert kcheck(tmp_path, "report", "--allow-unchecked", reports[0]).returncode == 0


def test_a_program_that_never_used_cuda_is_exit_5(tmp_path):
    r = kcheck(tmp_path, "run", "--lib", LIB, "--", "true")
    assert r.returncode == 5 and "no report (no process made a CUDA call)" in r.stderr, r.stderr


def test_the_programs_own_failure_wins(tmp_path):
    r = kcheck(tmp_path, "run", "--lib", LIB, "--", "sh", "-c", "exit 3")
    assert r.returncode == 3, r.stderr


def test_error_exitcode_on_violations(tmp_path):
    races = [app("app_linked"), "races"]
    opts = ["-o", "race_strategies=scrub,green,smem,hammer,l2flush"]
    r = kcheck(tmp_path, "run", "--lib", LIB, "--error-exitcode", "7", *opts, "--", *races)
    assert r.returncode == 7, r.stderr[-2000:]
    plain = kcheck(tmp_path, "run", "--lib", LIB, *opts, "--", *races)
    assert plain.returncode == 0 and "violation" in plain.stderr, plain.stderr[-2000:]
    # each finding of the report with the line that silences it
    rep = kcheck(tmp_path, "report", *sorted(str(p) for p in tmp_path.glob("kc.*.jsonl"))[:1])
    assert rep.returncode == 1 and "    suppress: race:last_writer(*" in rep.stdout, rep.stdout
    clean = kcheck(tmp_path, "run", "--lib", LIB, "--error-exitcode", "7", "--",
                   app("app_linked"), "basic")
    assert clean.returncode == 0, clean.stderr[-2000:]


def test_log_file_takes_kchecks_text(tmp_path):
    log = tmp_path / "kc-%p.log"
    r = kcheck(tmp_path, "run", "--lib", LIB, "--log-file", str(log), "-o",
               "race_strategies=scrub,green,smem,hammer,l2flush", "--", app("app_linked"), "races")
    assert r.returncode == 0, r.stderr[-2000:]
    logs = list(tmp_path.glob("kc-*.log"))
    assert len(logs) == 1 and logs[0].name != "kc-%p.log", logs
    text = logs[0].read_text()
    assert "violation" in text and "SUMMARY: kcheck:" in text, text[-2000:]
    assert "SUMMARY: kcheck:" not in r.stderr and "kcheck:" not in r.stderr, r.stderr[-2000:]


def test_lib_after_the_verb_and_a_missing_lib_is_an_error(tmp_path):
    r = kcheck(tmp_path, "run", "--lib", str(tmp_path / "nope.so"), "--", "true")
    assert r.returncode == 2 and "--lib %s: no such file" % (tmp_path / "nope.so") in r.stderr
    r = kcheck(tmp_path, "--lib", str(tmp_path / "nope.so"), "gates")
    assert r.returncode == 2 and "no such file" in r.stderr
    r = kcheck(tmp_path, "run", "--", "true", env_extra={"KCHECK_LIB": str(tmp_path / "x.so")})
    assert r.returncode == 2 and "KCHECK_LIB" in r.stderr and "no such file" in r.stderr
    r = kcheck(tmp_path, "gates", "--lib", LIB)
    assert r.returncode == 0 and "race" in r.stdout, r.stderr


def test_report_without_summary_is_exit_1_with_a_verdict_line(tmp_path):
    ok = kcheck(tmp_path, "run", "--lib", LIB, "--", app("app_linked"), "basic")
    assert ok.returncode == 0
    path = sorted(tmp_path.glob("kc.*.jsonl"))[0]
    r = kcheck(tmp_path, "report", str(path))
    assert r.returncode == 0 and "verdict: clean: no violation in" in r.stdout, r.stdout
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(l for l in path.read_text().splitlines(True) if '"summary"' not in l))
    r = kcheck(tmp_path, "report", str(cut))
    assert r.returncode == 1 and "verdict: none: the run did not finish" in r.stdout, r.stdout


def test_the_blocks_suppress_line_silences_its_finding(tmp_path):
    from conftest import by_type, run
    races = [app("app_linked"), "races"]
    r = run(races, tmp_path)
    lines = [l.split("suppress:", 1)[1].strip() for l in r.err.splitlines()
             if l.startswith("kcheck:   suppress:")]
    viol = by_type(r.only_report(), "violation")
    assert viol and len(lines) == len(viol), r.err[-3000:]
    assert "race:last_writer(*" in lines
    supp = tmp_path / "pasted.supp"
    supp.write_text("\n".join(lines) + "\n")
    again = run(races, tmp_path, options="suppressions=%s" % supp)
    recs = again.only_report()
    assert not by_type(recs, "violation") and len(by_type(recs, "suppressed")) == len(viol)


def test_run_refuses_a_fatal_list_before_starting_the_program(tmp_path):
    r = kcheck(tmp_path, "run", "--lib", LIB, "-o", "gates=racee", "--",
               "sh", "-c", "touch %s" % (tmp_path / "started"))
    assert r.returncode == 2 and not (tmp_path / "started").exists(), r.stderr
    assert "unknown gate 'racee' (did you mean 'race'?)" in r.stderr
    assert "1 problem above would stop the run; nothing was started" in r.stderr
    supp = kcheck(tmp_path, "run", "--lib", LIB, "-o", "suppressions=%s" % (tmp_path / "no.supp"),
                  "--", "true")
    assert supp.returncode == 2 and "no.supp: not a readable regular file" in supp.stderr
    # warnings (an unknown option name) are the run's: it starts
    ok = kcheck(tmp_path, "run", "--lib", LIB, "--allow-unchecked", "-o", "trcae=1", "--",
                "sh", "-c", "touch %s" % (tmp_path / "started"))
    assert ok.returncode == 0 and (tmp_path / "started").exists(), ok.stderr
