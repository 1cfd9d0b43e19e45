"""The pytest plugin (-p kcheck): a violation fails the test that was
running — in the test's own process, in a forked child and in a spawned
one — clean tests pass, --kcheck-mode=xfail/warn, --kcheck-report, and
pytest-xdist workers."""
import json
import os
import subprocess
import sys

import pytest

from conftest import ALL_STRATEGIES, ASAN_RT, LIB, ROOT, USE_SAN, base_env

APPS_DIR = os.path.join(ROOT, "test", "apps")

SUITE = r'''
import os, subprocess, sys
sys.path.insert(0, %(apps)r)
import app_ctypes


def launches(mode):
    sys.argv = ["app_ctypes", mode]
    assert app_ctypes.main() == 0


# First: a child forked after the parent used CUDA cannot use it (the
# driver's rule, kept by the stand-in), so this test forks before any other
# test initialises the driver in this process.
def test_racy_in_forked_child():
    pid = os.fork()
    if pid == 0:
        try:
            launches("races")
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert status == 0


def test_clean():
    launches("basic")


def test_racy():
    launches("races")


def test_racy_in_spawned_child():
    subprocess.run([sys.executable, %(app)r, "races"], check=True)


def test_clean_after():
    launches("basic")
''' % {"apps": APPS_DIR, "app": os.path.join(APPS_DIR, "app_ctypes.py")}


# Every strategy: the stand-in keeps block order unless one changes it
# (conftest.ALL_STRATEGIES), and the subject here is the plugin.
def pytest_under_kcheck(tmp_path, *args, options="check_first=100:clean_limit=-1:" + ALL_STRATEGIES):
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = base_env(tmp_path)
    env["LD_PRELOAD"] = ((ASAN_RT + " ") if USE_SAN else "") + LIB
    env["KCHECK_OPTIONS"] = "log_path=%s:%s" % (tmp_path / "kc", options)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "kcheck", "-p", "no:cacheprovider", "-q",
           "-rA", str(tmp_path / "test_suite.py")] + list(args)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(tmp_path),
                          timeout=300)


def outcomes(r):
    """nodeid suffix -> PASSED/FAILED/XFAIL... from pytest's -rA summary."""
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("PASSED", "FAILED", "XFAIL", "ERROR", "SKIPPED"):
            out[parts[1].split("::")[-1]] = parts[0]
    return out


def test_violations_fail_the_test_that_ran(tmp_path):
    summary = tmp_path / "per_test.json"
    r = pytest_under_kcheck(tmp_path, "--kcheck-report=%s" % summary)
    o = outcomes(r)
    assert o == {"test_clean": "PASSED", "test_racy": "FAILED",
                 "test_racy_in_forked_child": "FAILED", "test_racy_in_spawned_child": "FAILED",
                 "test_clean_after": "PASSED"}, r.stdout[-4000:] + r.stderr[-2000:]
    # the failure shows the finding
    assert "kcheck violation(s) during this test" in r.stdout
    assert "kcheck: violation in last_writer(int*) [race]" in r.stdout
    # the finding block printed at detection is in the test's captured stderr
    assert "kcheck: ==== violation in last_writer(int*) [race]" in r.stdout
    data = json.loads(summary.read_text())
    assert data["active"] is True
    tests = {k.split("::")[-1]: v for k, v in data["tests"].items()}
    assert tests["test_clean"]["violations"] == []
    assert {v["gate"] for v in tests["test_racy"]["violations"]} == {"race"}
    fork_pids = {v["pid"] for v in tests["test_racy_in_forked_child"]["violations"]}
    spawn_pids = {v["pid"] for v in tests["test_racy_in_spawned_child"]["violations"]}
    own_pids = {v["pid"] for v in tests["test_racy"]["violations"]}
    assert fork_pids and spawn_pids and not (fork_pids & own_pids) and not (spawn_pids & own_pids)


def test_xfail_and_warn_modes(tmp_path):
    x = pytest_under_kcheck(tmp_path, "--kcheck-mode=xfail", "-k", "racy or clean")
    o = outcomes(x)
    assert o["test_racy"] == "XFAIL" and o["test_clean"] == "PASSED", x.stdout[-3000:]
    w = pytest_under_kcheck(tmp_path, "--kcheck-mode=warn", "-k", "test_racy and not child")
    assert outcomes(w)["test_racy"] == "PASSED", w.stdout[-3000:]
    assert "PytestWarning" in w.stdout and "last_writer(int*)" in w.stdout


def test_inactive_without_kcheck(tmp_path):
    (tmp_path / "test_suite.py").write_text("def test_nothing():\n    pass\n")
    env = base_env(tmp_path)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "kcheck", "-q",
                        "--kcheck-report=%s" % (tmp_path / "s.json"), str(tmp_path / "test_suite.py")],
                       env=env, capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((tmp_path / "s.json").read_text())["active"] is False


def test_xdist_workers(tmp_path):
    pytest.importorskip("xdist")
    summary = tmp_path / "per_test.json"
    r = pytest_under_kcheck(tmp_path, "-n", "2", "--kcheck-report=%s" % summary)
    o = outcomes(r)
    assert o.get("test_racy") == "FAILED" and o.get("test_clean") == "PASSED", \
        r.stdout[-4000:] + r.stderr[-2000:]
    assert o.get("test_racy_in_spawned_child") == "FAILED"
    data = json.loads(summary.read_text())
    tests = {k.split("::")[-1]: v for k, v in data["tests"].items()}
    assert tests["test_racy"]["violations"] and not tests["test_clean"]["violations"]


SUITE2 = r'''
import sys
sys.path.insert(0, %(apps)r)
import app_ctypes


def launches(mode):
    sys.argv = ["app_ctypes", mode]
    assert app_ctypes.main() == 0


def test_cpu_only():
    assert sum(range(4)) == 6


def test_racy():
    launches("races")


def test_clean():
    launches("basic")
''' % {"apps": APPS_DIR}


def pytest_suite(tmp_path, suite, *args, options="check_first=100:clean_limit=-1:" + ALL_STRATEGIES):
    (tmp_path / "test_suite.py").write_text(suite)
    env = base_env(tmp_path)
    env["LD_PRELOAD"] = ((ASAN_RT + " ") if USE_SAN else "") + LIB
    env["KCHECK_OPTIONS"] = "log_path=%s:%s" % (tmp_path / "kc", options)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "kcheck", "-p", "no:cacheprovider", "-q",
           "-rA", str(tmp_path / "test_suite.py")] + list(args)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(tmp_path),
                          timeout=300)


def test_finding_block_is_in_the_tests_captured_output(tmp_path):
    r = pytest_suite(tmp_path, SUITE2)
    assert outcomes(r) == {"test_cpu_only": "PASSED", "test_racy": "FAILED",
                           "test_clean": "PASSED"}, r.stdout[-3000:] + r.stderr[-2000:]
    block = "kcheck: ==== violation in last_writer(int*) [race]"
    # not on pytest's own stderr (the progress line), but in the section of
    # the test's captured stderr
    assert block not in r.stderr, r.stderr[-3000:]
    section = r.stdout.split("Captured stderr call", 1)
    assert len(section) == 2 and block in section[1].split("=====")[0], r.stdout[-4000:]


def test_in_process_finding_points_at_the_test(tmp_path):
    r = pytest_suite(tmp_path, SUITE2, "-k", "racy")
    # ctypes released the GIL, and the frames were read without it: the
    # line of the test that led to the launch, not the helper's nor the
    # interpreter's C source
    line = 1 + SUITE2.splitlines().index("def test_racy():") + 1
    want = "  at:        %s:%d in test_racy (the test)" % (tmp_path / "test_suite.py", line)
    assert want in r.stdout, r.stdout[-4000:]
    assert "callproc.c" not in r.stdout.split("Captured stderr call")[0]
    # a ready-to-paste line that silences it
    assert "  suppress:  race:last_writer(*  (a line of a suppressions=FILE)" in r.stdout


def test_junit_lists_every_test_also_before_the_first_cuda_call(tmp_path):
    r = pytest_suite(tmp_path, SUITE2)
    assert "test_racy" in outcomes(r)
    reports = sorted(str(p) for p in tmp_path.glob("kc.*.jsonl"))
    junit = tmp_path / "j.xml"
    k = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "report",
                        "--junit", str(junit)] + reports, capture_output=True, text=True,
                       env=base_env(tmp_path), timeout=120)
    assert k.returncode == 1, k.stdout + k.stderr  # the race
    import xml.etree.ElementTree as ET
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    for t in ("test_cpu_only", "test_racy", "test_clean"):
        assert "test_suite.py::" + t in cases, sorted(cases)
    assert cases["test_suite.py::test_racy"].find("failure") is not None
    assert cases["test_suite.py::test_cpu_only"].find("failure") is None


def test_a_session_that_checked_nothing_fails_with_the_reason(tmp_path):
    r = pytest_suite(tmp_path, SUITE2, options="gates=none")
    assert r.returncode == 5, r.stdout[-3000:] + r.stderr[-2000:]
    assert "kcheck: nothing was checked during this session" in r.stdout, r.stdout[-3000:]
    # on a line of its own, not after the progress dots
    assert "\nkcheck: nothing was checked" in r.stdout, r.stdout[-3000:]
    ok = pytest_suite(tmp_path, SUITE2, "--kcheck-allow-unchecked", options="gates=none")
    assert ok.returncode == 0, ok.stdout[-3000:]
    # checks made: the session's own verdict stands
    clean = pytest_suite(tmp_path, SUITE2, "-k", "clean")
    assert clean.returncode == 0 and "nothing was checked" not in clean.stdout, clean.stdout[-3000:]


SUITE_LONG_ID = r'''
import sys
import pytest
sys.path.insert(0, %(apps)r)
import app_ctypes


# A parametrised id of 700 bytes (longer than any fixed buffer for it).
@pytest.mark.parametrize("label", ["x" * 700], ids=["x" * 700])
def test_racy_long(label):
    sys.argv = ["app_ctypes", "races"]
    assert app_ctypes.main() == 0
''' % {"apps": APPS_DIR}


def test_a_long_test_id_still_fails_the_test(tmp_path):
    # The violation carries the whole id, so the plugin matches it to the
    # test (a 511-byte cut once let this test pass).
    r = pytest_suite(tmp_path, SUITE_LONG_ID)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert "FAILED test_suite.py::test_racy_long[" + "x" * 700 + "]" in r.stdout, r.stdout[-3000:]
    assert "kcheck violation(s) during this test" in r.stdout
