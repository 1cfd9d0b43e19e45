"""What a check costs against its floor, on the CPU stand-in: the floor's
terms in each check record, the device costs behind them and how kcheck's
own kernels were loaded (summary), a strategy that cannot run on a kernel
costing no restore, the hash kernels publishing their sums (no copy
back a hash), the fatbin of kcheck's kernels (SASS for the common
architectures, PTX kept), and profile=1's stages of a check."""
import os
import re
import struct
import sys

from conftest import CTYPES_APP, FAKECUDA, ROOT, by_type, run


def checks_by_kernel(recs):
    return {c["kernel_name"].split("(")[0]: c for c in by_type(recs, "check")}


def test_floor_terms_and_device_costs(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="gates=race:race_strategies=scrub")
    assert r.rc == 0, r.err
    recs = r.only_report()
    own = by_type(recs, "summary")[0]["own_kernels"]
    # the stand-in refuses the fatbin (no SASS runs on a CPU): the PTX is loaded
    assert own["form"] == "ptx" and own["load_ms"] >= 0, own
    assert own["copy_gbps"] > 0 and own["sync_us"] > 0, own
    assert own["l2_bytes"] == 62914560, own  # the stand-in's L2, as the H200's: 60 MiB
    assert own["l2flush_bytes"] == own["l2_bytes"], own  # the flush writes one L2
    # kcheck's one-time device setup, timed apart just before the first check
    checks = sorted(by_type(recs, "check"), key=lambda c: c["launch"])
    assert own["setup_ms"] > 0 and checks[0]["setup_ms"] == own["setup_ms"], (own, checks[0])
    assert not any("setup_ms" in c for c in checks[1:])
    for c in by_type(recs, "check"):
        t = c["floor_terms"]
        assert t["measured_device"] is True
        assert abs(t["kernels_ms"] - (1 + c["runs"]) * c["kernel_ms"]) < 1e-9
        # 2 x saved bytes at the measured bandwidth; one wait per kernel run
        assert abs(t["copies_ms"] - 2 * c["saved_bytes"] / (own["copy_gbps"] * 1e6)) <= 1e-6 * max(
            1.0, t["copies_ms"])
        assert abs(t["syncs_ms"] - (1 + c["runs"]) * own["sync_us"] / 1e3) < 1e-9
        # and the wait for the work the application queued before the launch
        assert t["queued_ms"] == max(c["wait_ms"], 0)
        assert abs(c["floor_ms"] - (t["kernels_ms"] + t["copies_ms"] + t["syncs_ms"] +
                                    t["queued_ms"])) < 1e-9
        assert abs(c["cost_over_floor"] - c["cost_ms"] / c["floor_ms"]) < 1e-6 * c["cost_over_floor"]


def test_hash_publish_saves_a_copy_back_per_hash(app, tmp_path):
    """hash_publish=1 (the default): the hash kernels write their sums into
    mapped host memory and leave their device slots zeroed, so no
    device-to-host copy is queued for a hash and no memset for a check;
    hash_publish=0 copies each hash's sums back and zeroes each check's
    slots. Same checks, runs and verdicts, and the application's results,
    either way; the copies saved are at least one a kernel run (each run's
    hash, and the application's), the memsets at least one a check."""
    got = {}
    for hp in ("0", "1"):
        for entry in ("cuMemcpyDtoHAsync_v2", "cuMemsetD8Async"):
            d = tmp_path / (hp + entry)
            d.mkdir()
            r = run([app("app_linked"), "races"], d,
                    options="gates=race,determinism:race_strategies=scrub,l2flush:hash_publish=" + hp,
                    env_extra={"FAKECUDA_FAIL_ENTRY": entry,
                               "FAKECUDA_CALLS_OUT": str(d / "calls.txt")})
            assert r.rc == 0, r.err
            checks = sorted(by_type(r.only_report(), "check"), key=lambda c: c["launch"])
            assert checks and all(c["compare"] == "hash" for c in checks)
            calls = int(open(d / "calls.txt").read().split()[1])
            got[hp, entry] = (checks, calls, r.out)
    for entry in ("cuMemcpyDtoHAsync_v2", "cuMemsetD8Async"):
        (c0, n0, out0), (c1, n1, out1) = got["0", entry], got["1", entry]
        assert [(c["kernel_name"], c["runs"], c["violations"]) for c in c0] == \
            [(c["kernel_name"], c["runs"], c["violations"]) for c in c1]
        assert any(c["violations"] for c in c1) and any(not c["violations"] for c in c1)
        # a clean check's hashes all match: nothing sent word by word
        assert all(c["hash_differed"] == 0 for c in c1 if not c["violations"])
        assert out0 == out1
        saved = sum(1 + c["runs"] for c in c1) if entry.startswith("cuMemcpy") else len(c1)
        assert n0 - n1 >= saved, (entry, n0, n1, saved)


def test_settled_check_ends_without_a_device_wide_wait(app, tmp_path):
    """A check whose runs were all waited for on its own stream (l2flush:
    the run and the comparison's hash queue there) ends without a
    device-wide wait; one whose run put work on a helper stream (hammer)
    still waits at the end: one cuCtxSynchronize more a check, same
    results."""
    got = {}
    for st in ("l2flush", "hammer"):
        d = tmp_path / st
        d.mkdir()
        r = run([app("app_linked"), "races"], d, options="gates=race:race_strategies=" + st,
                env_extra={"FAKECUDA_FAIL_ENTRY": "cuCtxSynchronize",
                           "FAKECUDA_CALLS_OUT": str(d / "calls.txt")})
        assert r.rc == 0, r.err
        checks = by_type(r.only_report(), "check")
        assert checks and all(c["runs"] == 1 and c["gates"]["race"]["strategies"] == {st: "same"}
                              for c in checks), checks
        got[st] = (len(checks), int(open(d / "calls.txt").read().split()[1]), r.out)
    assert got["l2flush"][0] == got["hammer"][0]
    assert got["hammer"][1] - got["l2flush"][1] == got["hammer"][0], got
    assert got["l2flush"][2] == got["hammer"][2]


def test_strategy_that_cannot_run_costs_no_restore(app, tmp_path):
    """accesses cannot run on block_disjoint (its PTX has no memory access to log):
    the check restores nothing for it, so it copies back exactly what the
    same check without it does."""
    alone = run([app("app_linked"), "races"], tmp_path,
                options="gates=race:race_strategies=l2flush")
    assert alone.rc == 0, alone.err
    a = checks_by_kernel(alone.only_report())["block_disjoint"]
    more = run([app("app_linked"), "races"], tmp_path,
               options="gates=race:race_strategies=l2flush,accesses")
    assert more.rc == 0, more.err
    b = checks_by_kernel(more.only_report())["block_disjoint"]
    assert b["gates"]["race"]["strategies"]["accesses"] == \
        "the kernel has no memory access kcheck can log"
    assert a["runs"] == b["runs"] and a["restored_bytes"] > 0
    assert b["restored_bytes"] == a["restored_bytes"], (a["restored_bytes"], b["restored_bytes"])


def fatbin_entries(blob):
    """(kind, arch) of each entry: kind 1 PTX, 2 ELF (SASS)."""
    magic, _version, hsize, fsize = struct.unpack_from("<IHHQ", blob, 0)
    assert magic == 0xBA55ED50, hex(magic)
    out, at, end = [], hsize, hsize + fsize
    while at < end:
        kind, _u, ehsize, payload = struct.unpack_from("<HHIQ", blob, at)
        arch = struct.unpack_from("<I", blob, at + 28)[0]
        out.append((kind, arch))
        at += ehsize + payload
    return out


def test_own_kernels_fatbin_has_sass_and_ptx():
    with open(os.path.join(ROOT, "libkcheck", "exec", "kernels", "perturb_kernels.fatbin"), "rb") as f:
        entries = fatbin_entries(f.read())
    sass = {a for k, a in entries if k == 2}
    ptx = {a for k, a in entries if k == 1}
    assert {80, 86, 89, 90, 100, 120} <= sass, entries
    assert 80 in ptx, entries  # JIT-compiled where no SASS matches


def prof_stages():
    with open(os.path.join(ROOT, "libkcheck", "findings", "prof.def")) as f:
        return re.findall(r"^KC_PROF_STAGE\((\w+),", f.read(), re.M)


def test_profile_times_every_stage_and_the_findings_of_a_check(tmp_path):
    """profile=1: the exit record names every stage of prof.def; each check
    counts one chk_begin, and chk_findings counts the gates that reported
    violations (annotate: launches that break their contracts, each found
    by several gates), none in a program without findings."""
    lib = FAKECUDA + "/libcuda.so.1"
    found = run([sys.executable, CTYPES_APP, "annotate", "--lib", lib], tmp_path,
                options="profile=1:print_limit=0", stock=True)
    assert found.rc == 0, found.err
    recs = found.only_report()
    prof = [p for p in by_type(recs, "profile") if p["at"] == "exit"]
    assert len(prof) == 1
    st = prof[0]["stages"]
    assert set(st) == set(prof_stages())
    checks = by_type(recs, "check")
    assert st["chk_begin"]["n"] == len(checks) > 0
    with_findings = sum(1 for c in checks for g in c["gates"].values() if g.get("status") == "fail")
    assert with_findings > 0
    assert st["chk_findings"]["n"] == with_findings
    assert st["chk_findings"]["ns"] > 0
    assert prof[0]["launches"] == by_type(recs, "summary")[-1]["launches"]
    d = tmp_path / "clean"
    d.mkdir()
    clean = run([sys.executable, CTYPES_APP, "basic", "--lib", lib], d, options="profile=1",
                stock=True)
    assert clean.rc == 0, clean.err
    recs = clean.only_report()
    st = [p for p in by_type(recs, "profile") if p["at"] == "exit"][0]["stages"]
    assert not by_type(recs, "violation")
    assert st["chk_begin"]["n"] == len(by_type(recs, "check")) > 0
    assert st["chk_findings"]["n"] == 0


def test_profile_gives_each_check_its_stages(app, tmp_path):
    """profile=1: every check record carries stages_ms, its own share of
    each check stage (not the process's running totals), adding up to no
    more than its cost; a resource kcheck's setup did not make (chk_setup:
    with staging_reserve=0, the staging buffer) is made in the first check,
    not in the later ones of the same size. Without profile=1 no
    stages_ms."""
    r = run([app("app_linked"), "races"], tmp_path,
            options="gates=race:race_strategies=scrub:profile=1:staging_reserve=0")
    assert r.rc == 0, r.err
    checks = sorted(by_type(r.only_report(), "check"), key=lambda c: c["launch"])
    assert len(checks) >= 2
    check_stages = [s for s in prof_stages() if s.startswith("chk_")]
    for c in checks:
        sm = c["stages_ms"]
        assert set(sm) == set(check_stages), sm
        assert all(v >= 0 for v in sm.values())
        exclusive = sum(v for k, v in sm.items() if k != "chk_setup")
        assert 0 < exclusive <= c["cost_ms"] + 1e-6, (exclusive, c)
        assert sm["chk_setup"] <= exclusive
        # each gate's own wall time (its runs included), no more than the check's
        assert set(c["gates_ms"]) == set(c["gates"]), c
        assert 0 <= sum(c["gates_ms"].values()) <= c["cost_ms"] + 1e-6
    assert checks[0]["stages_ms"]["chk_setup"] > 0
    # later checks fit in the staging buffer made first (2 MiB at least):
    # they make nothing
    later = [c for c in checks[1:] if 2 * c["saved_bytes"] < 1 << 20]
    assert later and all(c["stages_ms"]["chk_setup"] == 0 for c in later), later
    d = tmp_path / "off"
    d.mkdir()
    off = run([app("app_linked"), "races"], d, options="gates=race:race_strategies=scrub")
    assert off.rc == 0, off.err
    assert all("stages_ms" not in c and "gates_ms" not in c for c in by_type(off.only_report(), "check"))


def test_scrub_not_run_on_a_kernel_without_shared_memory(app, tmp_path):
    """The scrub fills shared memory: on block_disjoint (no static or dynamic
    shared memory) its run would be an identical one, so it is not made and
    costs no restore; on uninit_shared (static shared memory) it runs and
    exposes the read of never-written shared memory."""
    r = run([app("app_linked"), "races"], tmp_path,
            options="gates=race:race_strategies=scrub")
    assert r.rc == 0, r.err
    checks = checks_by_kernel(r.only_report())
    d = checks["block_disjoint"]
    assert d["gates"]["race"]["strategies"]["scrub"] == "the kernel uses no shared memory"
    assert d["runs"] == 0 and d["restored_bytes"] == 0
    u = checks["uninit_shared"]
    assert u["gates"]["race"]["strategies"]["scrub"] == "differs"
    assert u["runs"] == 1


def test_staging_buffer_reserved_by_the_setup(app, tmp_path):
    """kcheck's one-time setup reserves the checks' staging buffer
    (staging_reserve, 64M by default): no check of a process whose
    snapshots fit in it makes or grows that buffer (profile=1's chk_setup
    is 0 in every check); with staging_reserve=0 the first check makes it.
    The same checks and verdicts either way."""
    got = {}
    for reserve in ("64M", "0"):
        d = tmp_path / reserve
        d.mkdir()
        r = run([app("app_linked"), "races"], d,
                options="gates=race,determinism:race_strategies=l2flush:profile=1:staging_reserve="
                + reserve)
        assert r.rc == 0, r.err
        checks = sorted(by_type(r.only_report(), "check"), key=lambda c: c["launch"])
        assert checks and checks[0]["setup_ms"] > 0
        got[reserve] = checks
    assert all(c["stages_ms"]["chk_setup"] == 0 for c in got["64M"]), got["64M"]
    assert got["0"][0]["stages_ms"]["chk_setup"] > 0, got["0"][0]
    assert [(c["kernel_name"], c["runs"], c["violations"]) for c in got["64M"]] == \
        [(c["kernel_name"], c["runs"], c["violations"]) for c in got["0"]]
