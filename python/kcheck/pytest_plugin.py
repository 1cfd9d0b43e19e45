"""pytest plugin: kcheck findings attributed to the test that was running.

Loaded by the `pytest11` entry point (`kcheck`) or `-p kcheck`; it acts only
when the run is under kcheck (libkcheck.so preloaded). Around each test it
names the test to libkcheck (kcheck_set_test; children inherit it through
KCHECK_TEST, so forked and spawned processes' violations carry it too) and
afterwards reads the reports of this process and of its children for
violations of that test: the test fails (--kcheck-mode=fail, the default),
is marked xfail, or gets a warning. --kcheck-report=FILE writes a per-test
summary (JSON) from the controller, xdist workers included.

kcheck/__init__.py holds the two entry hooks, so that `-p kcheck` works
from a source checkout; they import this module (and pytest) only then.
"""
import glob
import json
import os
import sys
import time
import warnings

import pytest

from kcheck import _lib
from kcheck import report as kr

_ENV = "KCHECK_TEST"


def addoption(parser):
    group = parser.getgroup("kcheck", "kcheck findings")
    group.addoption("--kcheck-mode", choices=("fail", "xfail", "warn"), default="fail",
                    help="what a kcheck violation during a test does to it (default: fail)")
    group.addoption("--kcheck-report", metavar="FILE", default=None,
                    help="write a per-test summary of kcheck's findings (JSON) to FILE")
    group.addoption("--kcheck-allow-unchecked", action="store_true", default=False,
                    help="do not fail the session when kcheck checked nothing (exit 5) or a "
                         "process's report has no summary (exit 1)")


def configure(config):
    if config.pluginmanager.has_plugin("kcheck-session"):
        return
    config.pluginmanager.register(_Session(config), "kcheck-session")


class _Reports:
    """Reads new records of every report of this run (this process and its
    children, which share the report prefix), incrementally."""

    def __init__(self, lib):
        self.lib = lib
        self.prefix = None
        self.offsets = {}
        self.since = time.time() - 1.0

    def _find_prefix(self):
        # libkcheck opens its report on the process's first CUDA call: ask
        # until it has one.
        p = self.lib.kcheck_report_path()
        if not p:
            # Not active in this process yet (a test that forks before its
            # first CUDA call): the prefix its children use.
            return log_path_from_env()
        path = p.decode()
        tail = ".%d." % os.getpid()
        at = path.rfind(tail)
        return path[:at] if at >= 0 else None

    def new_violations(self):
        if not self.prefix:
            self.prefix = self._find_prefix()
        if not self.prefix:
            return []
        out = []
        for path in glob.glob(glob.escape(self.prefix) + ".*.jsonl"):
            try:
                if path not in self.offsets and os.path.getmtime(path) < self.since:
                    continue
                with open(path, "rb") as f:
                    f.seek(self.offsets.get(path, 0))
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1  # a record still being written waits
            self.offsets[path] = self.offsets.get(path, 0) + end
            for line in data[:end].splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and rec.get("type") == "violation":
                    rec["_report"] = path
                    out.append(rec)
        return out


def log_path_from_env():
    """The report prefix KCHECK_OPTIONS gives (log_path, default "kcheck"),
    absolute; None for log_path=none."""
    prefix = "kcheck"
    for item in os.environ.get("KCHECK_OPTIONS", "").split(":"):
        if item.startswith("log_path="):
            prefix = item[len("log_path="):]
    if prefix == "none" or not prefix:
        return None
    return os.path.abspath(prefix)


def finding_text(v, test_location=None):
    """A finding block from a violation record (the test's failure text).
    test_location (file, line, name) of the test that ran: where the
    finding has no frame of the user's code (ctypes released the GIL, no
    symbols), the test's own line is where to look."""
    lines = ["kcheck: violation in %s [%s]" % (v.get("kernel_name", "?"), v.get("gate"))]
    if v.get("gate_contract"):
        lines.append("  contract:  %s" % v["gate_contract"])
    lines.append("  launch:    #%s, signature %s" % (v.get("launch"), v.get("signature")))
    for i, e in enumerate(kr.evidence_text(v)):
        lines.append(("  evidence:  " if i == 0 else "             ") + e)
    if v.get("contract"):
        lines.append("  contract file: %s" % v["contract"])
    where = kr.user_frame(v)
    # the test's own frame, where the stack has it: the line of the test
    # that led to the launch, rather than a helper it went through
    in_test = [f for f in (v.get("stack") or {}).get("python") or []
               if test_location and f.get("file")
               and os.path.realpath(f["file"]) == os.path.realpath(test_location[0])]
    # the test function's own frame first (helpers in its file are below it)
    in_test = [f for f in in_test if f.get("function") == test_location[2]] or in_test
    if in_test:
        lines.append("  at:        %s:%s in %s (the test)" % (
            in_test[0]["file"], in_test[0].get("line"), in_test[0].get("function")))
    elif where:
        lines.append("  at:        %s:%s in %s" % where)
    elif test_location:
        why = (v.get("stack") or {}).get("python_not_taken")
        lines.append("  at:        %s:%s in %s (the test; %s)" % (
            test_location + ("no frame of its own code was taken: " + why if why
                             else "no frame of its own code in the stack",)))
    if v.get("_report"):
        lines.append("  report:    %s" % v["_report"])
    lines.append("  suppress:  %s  (a line of a suppressions=FILE)"
                 % kr.suppression_line(v.get("gate"), v.get("kernel_name")))
    if v.get("reproduce"):
        lines.append("  reproduce: %s" % v["reproduce"])
    return "\n".join(lines)


class _Session:
    def __init__(self, config):
        self.config = config
        self.mode = config.getoption("kcheck_mode")
        self.lib = _lib.loaded()
        self.reports = _Reports(self.lib) if self.lib is not None else None
        self.pending = []  # violations read but not yet of the current test
        self.per_test = {}

    def _set(self, nodeid):
        if self.lib is None:
            return
        self.lib.kcheck_set_test(nodeid.encode() if nodeid else None)
        if nodeid:
            os.environ[_ENV] = nodeid
        else:
            os.environ.pop(_ENV, None)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        # A hookwrapper by hand: set before the test's phases, clear after.
        self._set(item.nodeid)

    def pytest_runtest_logfinish(self, nodeid, location):
        self._set(None)

    # Inside pytest's capture of each phase (trylast: the innermost
    # wrapper): findings kcheck's thread is still symbolising print their
    # block now, into the test's captured output, not after the capture
    # ended (where it would land in the progress line).
    def _flush(self):
        flush = getattr(self.lib, "kcheck_flush", None) if self.lib is not None else None
        if flush is not None:
            flush()

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_setup(self, item):
        yield
        self._flush()

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_call(self, item):
        yield
        self._flush()

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item, nextitem):
        yield
        self._flush()

    def _of_test(self, nodeid):
        if self.reports is None:
            return []
        # Findings still being symbolised on kcheck's thread, and records
        # in its ring, reach the report file first.
        flush = getattr(self.lib, "kcheck_flush", None)
        if flush is not None:
            flush()
        self.pending += self.reports.new_violations()
        mine = [v for v in self.pending if v.get("test") == nodeid]
        self.pending = [v for v in self.pending if v.get("test") != nodeid]
        return mine

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        rep = outcome.get_result()
        if self.lib is None:
            return
        found = self._of_test(item.nodeid)
        if not found:
            return
        short = [{"gate": v.get("gate"), "kernel": v.get("kernel_name"), "launch": v.get("launch"),
                  "pid": _pid_of(v), "report": v.get("_report")} for v in found]
        rep.user_properties.append(("kcheck_violations", short))
        loc = _test_location(item)
        text = "\n\n".join(finding_text(v, loc if _pid_of(v) == os.getpid() else None)
                           for v in found)
        if self.mode == "warn":
            warnings.warn(pytest.PytestWarning(text))
            rep.sections.append(("kcheck", text))
            return
        if self.mode == "xfail" and rep.when == "call" and rep.outcome != "failed":
            rep.outcome = "skipped"
            rep.wasxfail = "kcheck: %d violation(s): %s" % (
                len(found), ", ".join("%s in %s" % (v.get("gate"), v.get("kernel_name"))
                                      for v in found))
            return
        if rep.outcome != "failed":
            rep.outcome = "failed"
            rep.longrepr = "%d kcheck violation(s) during this test:\n%s" % (len(found), text)
        else:
            rep.sections.append(("kcheck", text))

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        if "kcheck_violations" in props:
            t = self.per_test.setdefault(report.nodeid, {"violations": [], "outcome": None})
            t["violations"] += props["kcheck_violations"]
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.per_test.setdefault(report.nodeid, {"violations": [], "outcome": None})
            self.per_test[report.nodeid]["outcome"] = report.outcome

    def _unchecked(self):
        """(exit status, reason) when this session's reports give no
        verdict, else None: no check and no violation in any report of this
        process and its children, or the report of a process that has ended
        without its summary (it crashed or was killed)."""
        self._flush()
        prefix = self.reports.prefix or self.reports._find_prefix()
        if not prefix:
            return None  # log_path=none: nothing to read
        made, found = 0, 0
        for path in sorted(glob.glob(glob.escape(prefix) + ".*.jsonl")):
            try:
                if os.path.getmtime(path) < self.reports.since:
                    continue
            except OSError:
                continue
            rep = kr.read(path)
            made += rep.checks_made
            found += len(rep.violations)
            pid = rep.pid
            if not rep.finished and pid and pid != os.getpid() and not _alive(pid):
                return 1, ("kcheck: %s has no summary: process %d crashed or was killed before "
                           "kcheck finished" % (path, pid))
        if made or found:
            return None
        return 5, ("kcheck: nothing was checked during this session (no check in the reports "
                   "under %s; --kcheck-allow-unchecked accepts it)" % prefix)

    def pytest_terminal_summary(self, terminalreporter):
        line = getattr(self, "unchecked_line", None)
        if line:
            terminalreporter.write_line(line, red=True, bold=True)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if (self.lib is not None and not hasattr(self.config, "workerinput")
                and not self.config.getoption("kcheck_allow_unchecked")
                and session.exitstatus in (0, 1)):
            why = self._unchecked()
            if why:
                tr = self.config.pluginmanager.get_plugin("terminalreporter")
                if tr is not None:  # in the terminal summary, after the progress line ends
                    self.unchecked_line = why[1]
                else:
                    print(why[1], file=sys.stderr)
                if session.exitstatus == 0:
                    session.exitstatus = why[0]
        path = self.config.getoption("kcheck_report")
        if not path or hasattr(self.config, "workerinput"):
            return  # xdist workers send their results to the controller
        data = {"active": self.lib is not None or any(t["violations"] for t in self.per_test.values()),
                "mode": self.mode, "tests": self.per_test,
                "violations": sum(len(t["violations"]) for t in self.per_test.values())}
        from kcheck.report import write_file
        write_file(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def _test_location(item):
    """(absolute file, 1-based line, name) of the test function."""
    path, line, name = item.location
    return os.path.join(str(item.config.rootpath), path), (line or 0) + 1, name


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's: it exists
    return True


def _pid_of(v):
    base = os.path.basename(v.get("_report", ""))
    parts = base.split(".")
    for p in parts:
        if p.isdigit():
            return int(p)
    return None
