"""Shadow execution on the CPU stand-in: the determinism and race gates on
planted kernels, the application's memory after a check, the policy, and
faults in the executor's driver calls."""
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, by_type, run, sweep


def app_lines(text):
    return [l for l in text.splitlines() if l.startswith("app_")]


def checks_by_kernel(recs):
    return {c["kernel_name"].split("(")[0]: c for c in by_type(recs, "check")}


RACY = {"last_writer", "neighbor_read", "float_accum", "uninit_shared"}
# float_accum's code adds with a float atomic: the nondeterminism gate's.
ATOMIC_ORDER = {"float_accum"}
CLEAN = {"block_disjoint", "atomic_sum", "shared_reverse"}


def test_racy_kernels_flagged_clean_ones_not(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    viol = by_type(recs, "violation")
    flagged = {v["kernel_name"].split("(")[0] for v in viol}
    assert flagged == RACY, flagged
    for v in viol:
        k = v["kernel_name"].split("(")[0]
        assert v["gate"] == ("nondeterminism" if k in ATOMIC_ORDER else "race"), v["gate"]
    checks = checks_by_kernel(recs)
    assert RACY | CLEAN <= set(checks)
    for name in CLEAN:
        assert checks[name]["violations"] == 0
        assert checks[name]["gates"]["race"]["status"] == "pass"
        assert checks[name]["gates"]["determinism"]["status"] == "pass"
    for v in [v for v in viol if v["gate"] == "race"]:
        ev = v["evidence"]
        assert v["exposed_by"] and ev["strategy"] in v["exposed_by"]
        assert ev["differing_words"] > 0 and ev["pointed_to_by"]
        assert set(ev["expected"]) >= {"fp32", "int32", "fp16", "bf16"}
        assert ev["expected"] != ev["got"]
        assert v["stack"]["host"]
    # Block order (green context, fewer blocks per SM) exposes the order-
    # dependent kernels; the scrub exposes the read of never-written shared.
    by = {v["kernel_name"].split("(")[0]: v for v in viol}
    assert "green" in by["last_writer"]["exposed_by"]
    assert "scrub" in by["uninit_shared"]["exposed_by"]
    assert "SUMMARY: kcheck: 4 violations in 7 checks" in r.err


def test_default_strategies(app, tmp_path):
    """The default race strategies are scrub and l2flush (the cheapest
    between-block ones at the same measured recall) and the intra-block
    ones (jitter, warporder, accesses): the read of never-written shared
    memory is still flagged; the stand-in's order-dependent kernels re-run
    identically without a block-order strategy (and its copy of a kernel
    is the kernel itself), so they are not. The determinism gate makes one
    identical run (determinism_runs' default)."""
    r = run([app("app_linked"), "races"], tmp_path, stock=True)
    assert r.rc == 0, r.err
    recs = r.only_report()
    passed_runs = []
    for c in by_type(recs, "check"):
        race = c["gates"]["race"]
        if c["kernel_name"].startswith("float_accum"):
            # the nondeterminism gate's: the race gate runs only the
            # access-level check (racing plain accesses beside the atomics)
            assert race["status"] == "not run" and list(race["strategies"]) == ["accesses"], race
            nd = c["gates"]["nondeterminism"]
            assert "accesses" not in nd.get("strategies", {}), nd
            continue
        assert list(race["strategies"]) == ["scrub", "l2flush", "jitter", "warporder", "accesses"]
        # determinism_runs defaults to 1: one identical run a clean check
        det = c["gates"]["determinism"]
        if det["status"] == "pass":
            passed_runs.append(det["runs"])
        assert set(race["strategy_ms"]) == set(race["strategies"])
        assert all(ms >= 0 for ms in race["strategy_ms"].values())
    assert passed_runs and set(passed_runs) == {1}, passed_runs
    by = {v["kernel_name"].split("(")[0]: v for v in by_type(recs, "violation")}
    assert "scrub" in by["uninit_shared"]["exposed_by"]
    assert not set(by) & CLEAN


def test_application_memory_unchanged_by_checks(app, tmp_path):
    """The application reads back every output (racy ones included) after
    the checks: it must see exactly what it sees without kcheck."""
    plain = run([app("app_linked"), "races"], tmp_path, kcheck=False)
    checked = run([app("app_linked"), "races"], tmp_path)
    assert plain.rc == 0 and checked.rc == 0
    # uninit_shared prints whatever earlier kernels left in shared memory:
    # undefined by CUDA, and changed by kcheck's own scrub kernel. Every
    # defined result must be identical, racy ones included.
    defined = lambda out: [l for l in app_lines(out) if "uninit_shared" not in l]
    assert defined(checked.out) == defined(plain.out)
    assert len(defined(plain.out)) >= 7
    runtime_plain = run([app("app_runtime"), "all"], tmp_path, kcheck=False)
    runtime_checked = run([app("app_runtime"), "all"], tmp_path, options="sample=1:clean_limit=-1")
    assert runtime_plain.rc == 0 and runtime_checked.rc == 0, runtime_checked.err
    assert defined(runtime_checked.out) == defined(runtime_plain.out)


def test_determinism_gate_catches_run_to_run_variation(app, tmp_path):
    """With the stand-in's order jitter (like a GPU where plain repetition
    varies), identical re-runs differ for the order-dependent kernels."""
    r = run([app("app_linked"), "races"], tmp_path, options="gates=determinism",
            env_extra={"FAKECUDA_ORDER_JITTER": "1"})
    assert r.rc == 0, r.err
    recs = r.only_report()
    flagged = {v["kernel_name"].split("(")[0] for v in by_type(recs, "violation")}
    assert {"last_writer", "neighbor_read", "float_accum"} <= flagged
    assert not flagged & CLEAN
    assert {v["gate"] for v in by_type(recs, "violation")} == {"determinism"}
    # Without jitter the same kernels re-run identically: no determinism finding.
    r = run([app("app_linked"), "races"], tmp_path, options="gates=determinism")
    assert not by_type(r.only_report(), "violation")


def test_gate_selection(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="gates=none")
    recs = r.only_report()
    assert not by_type(recs, "check") and not by_type(recs, "violation")
    r = run([app("app_linked"), "races"], tmp_path, options="gates=race:race_strategies=green")
    checks = by_type(r.only_report(), "check")
    assert checks and all(set(c["gates"]) == {"race"} for c in checks)
    assert all(set(c["gates"]["race"]["strategies"]) == {"green"} for c in checks)
    r = run([app("app_linked"), "races"], tmp_path, options="gates=determinsm")
    assert "unknown gate 'determinsm' (did you mean 'determinism'?)" in r.err


def test_signature_policy(app, tmp_path):
    # app_runtime launches vecadd twice with one signature (kernelParams and
    # extra forms): by default only the first is checked.
    r = run([app("app_runtime"), "basic"], tmp_path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    names = [c["kernel_name"] for c in by_type(recs, "check")]
    assert len(names) == len(set(zip(names, [c["signature"] for c in by_type(recs, "check")])))
    skips = by_type(recs, "skip")
    assert any(s["reason"] == "not sampled" for s in skips)
    # The captured launch is never synchronized or checked: it is counted as
    # captured, and its kernel runs (and is judged) as a node of the graph.
    summary = by_type(recs, "summary")[-1]
    assert summary["captured_launches"] == 1
    assert summary["graphs"]["kernel_launches"] == 2 and summary["graphs"]["replayed"] == 1
    # max_checks caps the number of checks.
    r = run([app("app_linked"), "races"], tmp_path, options="max_checks=2")
    assert len(by_type(r.only_report(), "check")) == 2


def test_clean_limit_stops_checking_a_signature(app, tmp_path):
    r = run([app("app_runtime"), "all"], tmp_path, options="sample=1:clean_limit=1")
    recs = r.only_report()
    sigs = [c["signature"] for c in by_type(recs, "check")]
    assert len(sigs) == len(set(sigs))
    assert any(s["reason"].startswith("signature already checked clean") for s in by_type(recs, "skip"))


def test_memory_budget_skip(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="mem_budget=1K")
    assert r.rc == 0
    recs = r.only_report()
    reasons = {s["reason"] for s in by_type(recs, "skip")}
    assert "snapshot larger than mem_budget" in reasons
    # Small snapshots still fit and are checked.
    assert by_type(recs, "check")


def test_save_all_snapshots_every_allocation(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="save_all=1:max_checks=3")
    checks = by_type(r.only_report(), "check")
    assert checks and all(c["regions"] >= 3 for c in checks)


def test_exitcode_and_halt_on_error(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="exitcode=3")
    assert r.rc == 3
    r = run([app("app_linked"), "races"], tmp_path, options="halt_on_error=1")
    assert r.rc == 1
    recs = r.only_report()
    assert len(by_type(recs, "violation")) == 1
    assert by_type(recs, "summary")


def read_calls(path):
    total, failed = 0, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if p[0] == "calls":
                total = int(p[1])
            elif p[0] == "failed" and p[1] != "none":
                failed = p[2]
    return total, failed


def fault_sweep(app, tmp_path, mode, opts, ignore="\0"):
    """Fails each driver call of a checked app_linked run in turn: the
    application never crashes; when its own calls all succeed it prints
    exactly an unchecked run's results (lines containing `ignore` aside),
    else it names the call that failed. Returns the clean run."""
    calls = str(tmp_path / "calls.txt")
    plain = run([app("app_linked"), mode], tmp_path, kcheck=False)
    clean = run([app("app_linked"), mode], tmp_path, options=opts,
                env_extra={"FAKECUDA_CALLS_OUT": calls})
    assert clean.rc == 0
    total, _ = read_calls(calls)
    absorbed = 0

    def one(n):
        d = tmp_path / ("n%d" % n)
        d.mkdir()
        r = run([app("app_linked"), mode], d, options=opts,
                env_extra={"FAKECUDA_FAIL_AT": str(n), "FAKECUDA_CALLS_OUT": str(d / "calls.txt")})
        return n, r, read_calls(str(d / "calls.txt"))[1]

    want = [l for l in app_lines(plain.out) if ignore not in l]
    for n, r, failed in sweep(one, range(1, total + 1)):
        assert r.rc in (0, 1), "call %d: exit %d\n%s" % (n, r.rc, r.err[-2000:])
        if r.rc == 0:
            absorbed += 1
            got = [l for l in app_lines(r.out) if ignore not in l]
            assert got == want, "call %d (%s)" % (n, failed)
        else:
            base = re.sub(r"(_v\d+|_ptsz)+$", "", failed)
            assert base in r.err, "call %d (%s):\n%s" % (n, failed, r.err[-1500:])
    assert absorbed > total // 2
    return clean


def test_fault_sweep_over_the_executor(app, tmp_path):
    """Over the shadow executor's snapshot, re-runs and restore."""
    fault_sweep(app, tmp_path, "races", "race_strategies=scrub,green,smem:determinism_runs=1",
                ignore="uninit_shared")


def test_gates_listed(tmp_path):
    import subprocess
    import sys
    from conftest import LIB, ROOT
    out = subprocess.run([sys.executable, ROOT + "/scripts/kcheck", "--lib",
                          LIB.replace("/san/", "/"), "gates"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert re.search(r"determinism\s+error\s+an identical re-run", out.stdout)
    assert re.search(r"race\s+error\s+re-runs under each timing perturbation", out.stdout)


def test_fault_sweep_over_the_contract_gates(app, tmp_path):
    """Over a contracted launch's shadow buffers, generated trials and
    relaunches at other shapes (coverage, nonfinite, shapes on
    tiled_add_bug)."""
    from test_contract_gates import CONTRACTS
    clean = fault_sweep(app, tmp_path, "contracts",
                        "contracts=%s:gates=coverage,nonfinite,shapes:kernel_include=tiled_add_bug"
                        % CONTRACTS)
    assert "1 violation in 1 check" in clean.err


def test_check_records_carry_their_floor(app, tmp_path):
    """Each check measures its kernel and its snapshot with device events;
    its floor is (1 + runs) x kernel + 2 x saved bytes at the device's
    measured copy bandwidth + one measured wait per kernel run + the wait
    for the application's queued work (the terms in floor_terms;
    test_check_cost.py checks them against the summary's device costs),
    and cost_over_floor is cost_ms over it."""
    r = run([app("app_linked"), "basic"], tmp_path)
    assert r.rc == 0, r.err
    checks = by_type(r.only_report(), "check")
    assert checks
    for c in checks:
        assert c["kernel_ms"] >= 0 and c["snapshot_ms"] >= 0
        assert 0 <= c["wait_ms"] <= c["cost_ms"]
        t = c["floor_terms"]
        assert abs(t["kernels_ms"] - (1 + c["runs"]) * c["kernel_ms"]) <= 1e-9
        floor = t["kernels_ms"] + t["copies_ms"] + t["syncs_ms"] + t["queued_ms"]
        assert t["copies_ms"] >= 0 and t["syncs_ms"] > 0
        assert abs(c["floor_ms"] - floor) <= 1e-9 * max(1.0, floor)
        if floor > 0:
            assert abs(c["cost_over_floor"] - c["cost_ms"] / floor) <= 1e-6 * c["cost_over_floor"]


def test_only_what_may_have_changed_is_restored(app, tmp_path):
    """vecadd reads a and b and writes c (three allocations): the
    application's launch leaves a and b unchanged, so each run restores
    only c, and the end copies back only what the last comparison found
    different (nothing, for a clean kernel)."""
    r = run([app("app_linked"), "basic"], tmp_path, options="kernel_include=vecadd")
    assert r.rc == 0, r.err
    checks = [c for c in by_type(r.only_report(), "check") if c["kernel_name"].startswith("vecadd")]
    assert checks
    for c in checks:
        assert c["regions"] == 3 and c["violations"] == 0 and c["runs"] >= 2
        out_bytes = c["saved_bytes"] // 3
        # Before each run but the first: c holds the previous run's result.
        assert 0 < c["restored_bytes"] <= c["runs"] * out_bytes, c


def test_staging_memory_given_back_when_the_application_needs_it(app, tmp_path):
    """kcheck keeps its staging buffer between checks; an allocation of the
    application that fails for lack of memory gets it back and is retried."""
    env = {"FAKECUDA_MEM_GB": "1"}
    plain = run([app("app_linked"), "bigalloc"], tmp_path, kcheck=False, env_extra=env)
    assert plain.rc == 0 and "bigalloc ok" in plain.out, plain.err
    r = run([app("app_linked"), "bigalloc"], tmp_path, options="gates=determinism", env_extra=env)
    assert r.rc == 0 and "bigalloc ok" in r.out, r.out + r.err
    checks = by_type(r.only_report(), "check")
    assert checks and checks[0]["saved_bytes"] >= 12 << 20


def test_launch_reaching_more_regions_than_one_comparison_takes(app, tmp_path):
    """70 allocations reached by one launch: the comparison takes them in
    two launches of kc_compare_table (64 regions at most each), so what
    the launch changed and what a re-run changed are found in either; the
    application's tensors end as its own launch left them (the app checks
    all 70), and a last writer in the 70th tensor, which only the second
    comparison launch sees, is flagged there."""
    r = run([app("app_linked"), "many"], tmp_path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    ck = checks_by_kernel(recs)["multi_ptr"]
    assert ck["regions"] == 70 and ck["violations"] == 0, ck
    # only the 35 written tensors (1 KiB each) are ever restored
    assert ck["restored_bytes"] > 0 and ck["restored_bytes"] % (35 * 1024) == 0, ck
    assert not by_type(recs, "violation")
    r = run([app("app_linked"), "many_racy"], tmp_path)
    assert r.rc == 0, r.err
    viol = [v for v in by_type(r.only_report(), "violation") if v["kernel_name"].startswith("multi_ptr")]
    assert viol, r.only_report()
    for v in viol:
        ev = v["evidence"]
        assert [p["param_offset"] for p in ev["pointed_to_by"]] == [24 + 8 * 69], ev
        # word 0 (the byte of its half that differs: fp16 reading)
        assert ev["offset"] in (0, 2) and ev["differing_words"] == 1, ev


def _verdicts(recs):
    out = {}
    for v in by_type(recs, "violation"):
        ev = v.get("evidence") or {}
        out[(v["gate"], v["kernel_name"])] = (ev.get("offset"), ev.get("differing_words"),
                                              ev.get("expected"), ev.get("got"),
                                              ev.get("strategy"),
                                              (ev.get("allocation") or {}).get("size"))
    return out


def test_reruns_compared_by_hash_give_the_word_by_word_verdicts(app, tmp_path):
    """hash_compare=1 (the default) hashes each re-run's regions (one read)
    and compares word by word only a region whose hash differs from the
    application's result's; hash_compare=0 compares every region word by
    word. Same violations, same evidence (first differing word, count,
    values), same clean checks; the check records say which was used."""
    (tmp_path / "h").mkdir()
    (tmp_path / "w").mkdir()
    hashed = run([app("app_linked"), "races"], tmp_path / "h")
    words = run([app("app_linked"), "races"], tmp_path / "w", options="hash_compare=0")
    assert hashed.rc == 0 and words.rc == 0, hashed.err + words.err
    h, w = hashed.only_report(), words.only_report()
    assert {c["compare"] for c in by_type(h, "check")} == {"hash"}
    assert {c["compare"] for c in by_type(w, "check")} == {"words"}
    assert _verdicts(h) == _verdicts(w) and len(_verdicts(h)) == 4
    for k in ("last_writer", "neighbor_read", "uninit_shared"):
        rh, rw = checks_by_kernel(h)[k]["gates"]["race"], checks_by_kernel(w)[k]["gates"]["race"]
        assert (rh["status"], rh["strategies"]) == (rw["status"], rw["strategies"])
    for name in CLEAN:  # every re-run's hash equal to the application's result's
        assert checks_by_kernel(h)[name]["violations"] == 0
        assert checks_by_kernel(h)[name]["hash_differed"] == 0
    for k in RACY:  # a differing result reached the word-by-word comparison
        assert checks_by_kernel(h)[k]["hash_differed"] > 0
    assert app_lines(hashed.out) == app_lines(words.out)  # the application's results


@pytest.mark.parametrize("unwatched_min", ["64M", "0"])
def test_rerun_that_writes_its_input(app, tmp_path, unwatched_min):
    """scribble writes a word of its input on every execution after the
    application's: the determinism gate reports that word (the input
    allocation, offset 28, 21 expected); in the race gate the l2flush run
    differs the same way, and so does the scrub run after it (scribble has
    static shared memory), which started from the input restored. The
    application's input and output stay as its launch left them. With
    unwatched_min=0 the input (which the application's launch left alone)
    is not hashed after each run but once after the gates: that hash
    differs, and the gates run again hashing every region after every
    run, with the same verdicts."""
    r = run([app("app_rerun")], tmp_path,
            options="gates=determinism,race:race_strategies=l2flush,scrub:determinism_runs=2:"
            "unwatched_min=" + unwatched_min)
    assert r.rc == 0, r.err  # the app checks its buffers
    recs = r.only_report()
    viol = {v["gate"]: v for v in by_type(recs, "violation")}
    assert set(viol) == {"determinism", "race"}, viol
    for v in viol.values():
        ev = v["evidence"]
        assert ev["offset"] == 28 and ev["expected"]["int32"] == 21
        assert ev["got"]["int32"] > 1000
        assert ev["pointed_to_by"] == [{"param_offset": 0, "alloc_offset": 0}]
    assert viol["race"]["exposed_by"] == ["l2flush", "scrub"]
    (c,) = by_type(recs, "check")
    assert c["gates"]["race"]["strategies"] == {"l2flush": "differs", "scrub": "differs"}
    assert c["gates"]["race"]["runs"] == 2 and c["gates"]["determinism"]["runs"] == 1
    if unwatched_min != "0":
        # the application's run, one identical run, l2flush, scrub
        assert re.search(r"scribble executions 4\b", r.out), r.out
        assert "unwatched_write" not in c and c["runs"] == 3
    else:
        # the first pass: two identical runs, l2flush, scrub (none sees
        # the input); the second: one identical run, l2flush, scrub
        assert re.search(r"scribble executions 8\b", r.out), r.out
        assert c["unwatched_write"] is True and c["runs"] == 7


def test_memory_left_alone_hashed_once_after_the_gates(app, tmp_path):
    """unwatched_min=0: a re-run's result is hashed only in what the
    application's launch changed; the rest once after the gates. A clean
    kernel whose input is never written (atomic_sum) then reads less than
    every region after every run, with the default's verdicts.
    uninit_shared's application launch leaves its output as it was
    (zeros): the scrub run's writes there are no run's comparison's, the
    hash after the gates finds them and the gates run again hashing every
    region; the scrub pattern the first pass left in shared memory then
    shows in the determinism gate's identical re-run too. The application's
    results are its own either way."""
    (tmp_path / "d").mkdir()
    (tmp_path / "u").mkdir()
    default = run([app("app_linked"), "races"], tmp_path / "d")
    once = run([app("app_linked"), "races"], tmp_path / "u", options="unwatched_min=0")
    assert default.rc == 0 and once.rc == 0, default.err + once.err
    d, u = checks_by_kernel(default.only_report()), checks_by_kernel(once.only_report())
    for name in CLEAN:
        assert u[name]["violations"] == 0 and "unwatched_write" not in u[name]
        assert u[name]["hashed_bytes"] <= d[name]["hashed_bytes"]
    c = u["atomic_sum"]
    assert c["hashed_bytes"] < d["atomic_sum"]["hashed_bytes"], (c, d["atomic_sum"])
    assert c["hashed_bytes"] < c["runs"] * c["saved_bytes"], c
    assert all(d[k]["hashed_bytes"] == d[k]["runs"] * d[k]["saved_bytes"] for k in CLEAN)
    assert u["uninit_shared"]["unwatched_write"] is True
    assert "unwatched_write" not in d["uninit_shared"]
    flagged = {(v["gate"], v["kernel_name"].split("(")[0]) for v in by_type(once.only_report(), "violation")}
    assert ("race", "uninit_shared") in flagged and ("determinism", "uninit_shared") in flagged
    for k in ("last_writer", "neighbor_read"):
        assert u[k]["gates"]["race"]["strategies"] == d[k]["gates"]["race"]["strategies"]
    assert app_lines(default.out) == app_lines(once.out)  # the application's results


def test_restore_check_compares_the_memory_a_check_leaves(app, tmp_path):
    """restore_check=1 compares every saved region word by word with the
    application's own result after each check (summary restore_check).
    Clean: 0 differed, with word-by-word and hash comparisons. A restore
    copy the stand-in drops without an error (FAKECUDA_FAIL_SILENT) leaves
    the racy kernel's re-run result in the application's memory: for the
    copy that is the check's last restore, restore_check says so (an
    internal error, differed 1), and without the option nothing does."""
    opts = "race_strategies=green:kernel_include=last_writer:gates=race:restore_check=1"
    entry = {"FAKECUDA_FAIL_ENTRY": "cuMemcpyDtoDAsync_v2"}
    for hc in ("0", "1"):
        (tmp_path / hc).mkdir()
        r = run([app("app_linked"), "races"], tmp_path / hc, options=opts + ":hash_compare=" + hc,
                env_extra=dict(entry, FAKECUDA_CALLS_OUT=str(tmp_path / hc / "calls.txt")))
        assert r.rc == 0, r.err
        recs = r.only_report()
        summ = by_type(recs, "summary")[0]
        assert summ["restore_check"] == {"checks": 1, "differed": 0}, summ
        assert by_type(recs, "check")[0]["violations"] == 1
        assert summ["internal_errors"] == 0
    n = int(open(tmp_path / "0" / "calls.txt").read().split()[1])
    assert n >= 3

    def dropped(k, options=opts):
        d = tmp_path / ("drop%d%s" % (k, "" if options == opts else "_off"))
        d.mkdir()
        r = run([app("app_linked"), "races"], d, options=options,
                env_extra=dict(entry, FAKECUDA_FAIL_AT=str(k), FAKECUDA_FAIL_SILENT="1"))
        assert r.rc == 0, r.err
        return r, by_type(r.only_report(), "summary")[0]

    caught = [k for k, (r, s) in zip(range(1, n + 1), sweep(dropped, range(1, n + 1)))
              if s["restore_check"]["differed"] == 1 and s["internal_errors"] == 1
              and "restoring the application's memory after a check failed" in r.err]
    assert caught, "no dropped restore copy was caught"
    r, s = dropped(caught[0], opts.replace(":restore_check=1", ""))
    assert "restore_check" not in s and s["internal_errors"] == 0


def faulting_waits(app, tmp_path, waits, sticky=False):
    """[(n, run)]: the races app under kcheck with CUDA_ERROR_ILLEGAL_ADDRESS
    (700) injected into the stand-in's n-th stream wait, for each n of
    waits, in parallel; sticky: every later call fails too, as after a
    device fault (FAKECUDA_FAIL_STICKY)."""
    opts = "race_strategies=scrub,green,smem:determinism_runs=1"

    def one(n):
        d = tmp_path / ("n%d" % n)
        d.mkdir()
        env = {"FAKECUDA_FAIL_ENTRY": "cuStreamSynchronize*", "FAKECUDA_FAIL_AT": str(n),
               "FAKECUDA_FAIL_CODE": "700"}
        if sticky:
            env["FAKECUDA_FAIL_STICKY"] = "1"
        r = run([app("app_linked"), "races"], d, options=opts, env_extra=env)
        assert r.rc in (0, 1), r.err[-2000:]
        return n, r

    return sweep(one, waits)


def test_a_faulting_rerun_names_its_perturbation_and_says_the_context_is_at_risk(app, tmp_path):
    """A re-run whose wait reports an illegal address (the stand-in's
    cuStreamSynchronize failing with CUDA_ERROR_ILLEGAL_ADDRESS, 700): the
    gate's entry says why and under which perturbation, and stderr says
    once that kcheck's re-run faulted and what that does to the context
    (docs/safety.md). The application's own run passes through."""
    faulted = []
    # the stand-in's waits of the app's first six kernels' checks
    for n, r in faulting_waits(app, tmp_path, range(1, 61)):
        entries = [(g, e) for c in by_type(r.only_report(), "check")
                   for g, e in (c.get("gates") or {}).items()
                   if isinstance(e, dict) and e.get("error") == "the shadow run faulted"]
        if entries:
            faulted.append((n, r, entries))
    assert faulted, "no injected failure landed on a re-run's wait"
    gates = {g for _, _, entries in faulted for g, _ in entries}
    assert {"race", "nondeterminism"} <= gates, gates
    strategies = {"identical", "scrub", "green", "smem", "l2flush"}
    for n, r, entries in faulted:
        for gate, e in entries:
            assert gate in ("determinism", "race", "nondeterminism"), (n, gate, e)
            assert e.get("error_run") in strategies, (n, gate, e)
            # a failed run stopped the gate's runs: a finding before it
            # stands, else the entry is an error, never a pass
            assert e["status"] in ("error", "fail"), (n, gate, e)
        said = [l for l in r.err.splitlines() if "re-run of" in l and "faulted" in l]
        assert len(said) == 1, (n, r.err[-1500:])
        assert "(%s)" % entries[0][1]["error_run"] in said[0], said[0]
        assert "docs/safety.md" in said[0]
    # kcheck report lists them
    n, r, entries = faulted[0]
    rep = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "report",
                          r.reports[0]], capture_output=True, text=True, timeout=60)
    gate, e = entries[0]
    assert re.search(r"\d+ gate entr(y|ies) failed to run", rep.stdout), rep.stdout
    assert "%s (%s run): the shadow run faulted" % (gate, e["error_run"]) in rep.stdout, rep.stdout
    # the app's planted races are found all the same, the failed entries beside them
    assert re.search(r"verdict: \d+ violations? in .*; \d+ gate entr(y|ies) failed to run "
                     r"\(listed above\)", rep.stdout), rep.stdout


def test_a_scrub_run_that_faults_is_a_race_finding(app, tmp_path):
    """scrub changes nothing but the contents of shared memory nothing has
    written: a re-run that faults under it where the application's run did
    not read such memory and used it as an address. The stand-in's fault
    is sticky here (FAKECUDA_FAIL_STICKY: every later call fails, as a
    device fault ends the context), injected at each of the races app's
    stream waits in turn: where it lands on a scrub run, the race entry is
    a finding (cause uninit-shared-memory, exposed by scrub, the run and
    its seed) beside its error; a scrub run stopped by an earlier run's
    fault, or a fault under another strategy, is no such finding."""
    found = 0
    for n, r in faulting_waits(app, tmp_path, range(1, 91), sticky=True):
        recs = r.only_report()
        races = [(c["kernel_name"], c["gates"]["race"]) for c in by_type(recs, "check")
                 if isinstance((c.get("gates") or {}).get("race"), dict)]
        faults = [v for v in by_type(recs, "violation")
                  if (v.get("evidence") or {}).get("verdict") == "faulted"]
        own = [(k, e) for k, e in races if e.get("error_run") == "scrub" and
               e.get("error") == "the shadow run faulted"]
        assert len(faults) == len(own), (n, faults, races)
        for (kernel, e), v in zip(own, faults):
            found += 1
            assert e["status"] == "fail" and e["strategies"]["scrub"] == "faulted", (n, e)
            assert v["gate"] == "race" and v["kernel_name"] == kernel, (n, v)
            assert v["cause"] == "uninit-shared-memory" and v["exposed_by"] == ["scrub"], (n, v)
            ev = v["evidence"]
            assert ev["faulted"] == "the shadow run faulted" and ev["strategy"] == "scrub", ev
            assert ev["run"] == 1 and isinstance(ev["seed"], int), ev
            assert "never-written shared memory" in v["message"], v
            said = [l for l in r.err.splitlines() if "re-run of" in l and "(scrub) faulted" in l]
            assert len(said) == 1, (n, r.err[-1500:])
        if any(e.get("error") == "the shadow run faulted" for c in by_type(recs, "check")
               for e in (c.get("gates") or {}).values() if isinstance(e, dict)):
            # the restore after a fault fails with the context; the fault was
            # said, and is no internal error of kcheck's
            assert by_type(recs, "summary")[-1]["internal_errors"] == 0, (n, r.err[-1500:])
            assert "internal error:" not in r.err, (n, r.err[-1500:])
        for kernel, e in races:
            if e.get("error_run") == "scrub" and e.get("error") != "the shadow run faulted":
                # stopped by a fault before its own run: an error, no finding
                assert e["status"] == "error", (n, kernel, e)
    assert found, "no injected fault landed on a scrub run"
