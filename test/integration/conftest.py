"""Shared helpers for the integration tests: run a test application under
LD_PRELOAD=libkcheck.so on the CPU stand-in driver and read its report."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("KCHECK_TEST_BUILD", os.path.join(ROOT, "build"))
ASAN_RT = os.environ.get("KCHECK_TEST_ASAN_RT", "")
# The sanitizer build of libkcheck is the one under test when its runtime is
# known (make test); the release build otherwise.
SAN_LIB = os.path.join(BUILD, "san", "libkcheck.so")
USE_SAN = bool(ASAN_RT) and os.path.exists(ASAN_RT) and os.path.exists(SAN_LIB)
LIB = SAN_LIB if USE_SAN else os.path.join(BUILD, "libkcheck.so")
FAKECUDA = os.path.join(BUILD, "fakecuda")
APPS = os.path.join(BUILD, "test")
CTYPES_APP = os.path.join(ROOT, "test", "apps", "app_ctypes.py")

# The tests read reports with the package's one report reader.
sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck.report import read_records  # noqa: E402


class Run:
    def __init__(self, proc, reports):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr
        self.reports = reports

    def records(self, i=0):
        return read_records(self.reports[i])

    def only_report(self):
        assert len(self.reports) == 1, "expected one report, got %r\n%s" % (self.reports, self.err)
        return self.records(0)


_GENERATE_CHILD = r"""
import ctypes, json, sys
a = json.loads(sys.argv[1])
f = ctypes.CDLL(a["lib"]).kcheck_generate
f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
              ctypes.c_longlong, ctypes.c_longlong, ctypes.c_ulonglong, ctypes.c_void_p]
buf = (getattr(ctypes, a["ctype"]) * (a["rows"] * a["cols"]))()
enc = lambda v: None if v is None else v.encode()
rc = f(enc(a["gen"]), enc(a["transform"]), enc(a["fmt"]), a["role"], a["rows"], a["cols"],
       a["seed"], buf)
print(json.dumps([rc, list(buf)]))
"""


def kcheck_generate(gen, transform, fmt, role, rows, cols, seed, ctype="c_float"):
    """(status, values) of libkcheck's kcheck_generate, called in a child
    process: the library is never loaded into the pytest process, which
    also imports torch (two intermittent crashes of that process, one in
    torch.cuda.is_available(), one at its exit, while it held both)."""
    import json
    arg = dict(lib=os.path.join(BUILD, "libkcheck.so"), gen=gen, transform=transform, fmt=fmt,
               role=role, rows=rows, cols=cols, seed=seed, ctype=ctype)
    p = subprocess.run([sys.executable, "-c", _GENERATE_CHILD, json.dumps(arg)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rc, vals = json.loads(p.stdout)
    return rc, vals


def base_env(tmp_path):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("KCHECK_") or k.startswith("FAKECUDA_"):
            del env[k]
    env["LD_LIBRARY_PATH"] = FAKECUDA
    # Host programs (python) leak by design; kcheck's own leaks are not the
    # subject of these tests. Everything else ASan finds aborts the run.
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0:exitcode=86"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1:exitcode=87"
    return env


# The stand-in re-runs a kernel in the same block order unless a strategy
# changes it (green, smem), while the default race strategies (scrub,
# l2flush) were chosen on the H200, where order-dependent kernels already
# differ under plain repetition. Tests about what happens to findings run
# every strategy; stock=True runs the default (test_default_strategies).
ALL_STRATEGIES = "race_strategies=scrub,green,smem,hammer,l2flush"


def run(cmd, tmp_path, options="", kcheck=True, env_extra=None, timeout=120, stock=False):
    """Runs cmd (list); with kcheck, its report prefix is tmp_path/kc."""
    env = base_env(tmp_path)
    prefix = str(tmp_path / "kc")
    if kcheck:
        env["LD_PRELOAD"] = ((ASAN_RT + " ") if USE_SAN else "") + LIB
        if not stock and "race_strategies=" not in options:
            options = ALL_STRATEGIES + (":" + options if options else "")
        opts = "log_path=" + prefix + (":" + options if options else "")
        env["KCHECK_OPTIONS"] = opts
    if env_extra:
        env.update(env_extra)
    for old in glob.glob(prefix + ".*.jsonl"):
        os.unlink(old)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=str(tmp_path))
    reports = sorted(glob.glob(prefix + ".*.jsonl"))
    return Run(proc, reports)


def by_type(records, t):
    return [r for r in records if r["type"] == t]


def sweep(fn, ns):
    """Runs fn(n) for every n in parallel (one process per CPU); returns the
    results in order. Fault sweeps are many short independent processes."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return list(pool.map(fn, ns))


@pytest.fixture
def app():
    def path(name):
        p = os.path.join(APPS, name)
        if not os.path.exists(p):
            pytest.fail("test application %s not built (make test-apps)" % p)
        return p
    return path
