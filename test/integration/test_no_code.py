"""Kernels kcheck has no code of to rewrite (cubins: Triton, ATen, cuBLAS):
the intra-block strategies cannot run there, so the first check of such a
signature adds race_no_code_strategies (green, smem: block order) and the
race entry says which strategies could not run and why. The stand-in loads
the test application's kernels from an ELF cubin (APP_IMAGE) the way Triton
loads its cubins; the stand-in re-runs a kernel in the same block order
unless a strategy changes it, as a short kernel on the GPU mostly does."""
import os

from conftest import ROOT, by_type, run
from cubin import app_kernel_names, make_cubin

CLEAN = {"block_disjoint", "atomic_sum", "shared_reverse"}


def name(rec):
    return rec["kernel_name"].split("(")[0]


def cubin(tmp_path):
    path = tmp_path / "app.cubin"
    path.write_bytes(make_cubin(app_kernel_names(os.path.join(ROOT, "test", "apps", "apps.h"))))
    return str(path)


def races(app, tmp_path, options=""):
    r = run([app("app_linked"), "races"], tmp_path, options=options, stock=True,
            env_extra={"APP_IMAGE": cubin(tmp_path), "HOME": str(tmp_path)})
    assert r.rc == 0, r.err
    recs = r.only_report()
    checks = {name(c): c for c in by_type(recs, "check")}
    found = {name(v): v for v in by_type(recs, "violation") if v["gate"] == "race"}
    return checks, found


def test_block_order_added_for_a_cubin(app, tmp_path):
    checks, found = races(app, tmp_path)
    race = checks["last_writer"]["gates"]["race"]
    why = "the image is a cubin (SASS only)"
    assert race["no_code"].startswith("the image is a cubin (SASS only)"), race
    for s in ("jitter", "warporder", "accesses"):
        assert race["not_run"][s].startswith(why), race
    # last_writer has no shared memory: scrub did not run either
    assert race["not_run"]["scrub"] == "the kernel uses no shared memory", race
    assert race["no_code_added"] == "green,smem"
    assert list(race["strategies"]) == ["scrub", "l2flush", "jitter", "warporder", "accesses",
                                        "green", "smem"]
    assert set(race["strategy_ms"]) == set(race["strategies"])
    # the lost update between blocks that scrub and l2flush leave alone
    assert race["strategies"]["l2flush"] == "same"
    assert {"last_writer", "neighbor_read"} <= set(found), sorted(found)
    assert found["last_writer"]["exposed_by"][0] in ("green", "smem")
    assert not set(found) & CLEAN, sorted(found)


def test_option_empty_adds_nothing(app, tmp_path):
    """Without the added strategies (the behaviour before them) the
    stand-in's order-dependent kernels go unflagged: what the default
    missed on cubins."""
    checks, found = races(app, tmp_path, "race_no_code_strategies=")
    race = checks["last_writer"]["gates"]["race"]
    assert "no_code_added" not in race and "green" not in race["strategies"], race
    assert race["no_code"].startswith("the image is a cubin")
    assert "last_writer" not in found and "neighbor_read" not in found, sorted(found)


def test_listed_strategies_not_added_twice(app, tmp_path):
    checks, _ = races(app, tmp_path, "race_strategies=l2flush,green")
    race = checks["last_writer"]["gates"]["race"]
    assert list(race["strategies"]) == ["l2flush", "green", "smem"], race
    assert race["no_code_added"] == "smem"
    # no intra-block strategy listed: the reason is the PTX that is missing
    assert race["no_code"].startswith("the image is a cubin"), race


def test_only_the_first_check_of_a_signature(app, tmp_path):
    """check_first=4: vecadd's signature is checked twice; the second
    check does not pay for the block-order runs again."""
    r = run([app("app_linked"), "basic"], tmp_path, stock=True,
            options="check_first=4:gates=race",
            env_extra={"APP_IMAGE": cubin(tmp_path), "HOME": str(tmp_path)})
    assert r.rc == 0, r.err
    vecadd = [c["gates"]["race"] for c in by_type(r.only_report(), "check")
              if name(c) == "vecadd"]
    assert len(vecadd) == 2, vecadd
    assert vecadd[0]["no_code_added"] == "green,smem"
    assert vecadd[1]["no_code_added"] == "none: not the first check of the signature"
    assert "green" not in vecadd[1]["strategies"], vecadd[1]


def test_kernels_with_ptx_unchanged(app, tmp_path):
    """A kernel with PTX gets the intra-block strategies, no addition."""
    r = run([app("app_linked"), "races"], tmp_path, stock=True)
    assert r.rc == 0, r.err
    for c in by_type(r.only_report(), "check"):
        race = c["gates"]["race"]
        assert "no_code" not in race and "no_code_added" not in race, race


def test_sass_read_only_when_a_rerun_differs_and_once_per_image(app, tmp_path):
    """Every kernel of the races program lives in one cubin image. A
    SASS-only kernel's code is read only when a re-run of the determinism
    or race gate differs (reading it inflates the image's cubin); a kernel
    whose re-runs agree keeps it unread, and the nondeterminism gate (run
    after them) says so. The image's cubin is read once: the other kernels
    that need it take it from the cache (summary cubin_cache)."""
    r = run([app("app_linked"), "races"], tmp_path, stock=True,
            env_extra={"APP_IMAGE": cubin(tmp_path), "HOME": str(tmp_path)})
    assert r.rc == 0, r.err
    recs = r.only_report()
    checks = {name(c): c for c in by_type(recs, "check")}
    differed = {name(v) for v in by_type(recs, "violation")}
    assert {"last_writer", "neighbor_read"} <= differed and not differed & CLEAN, differed
    for k in CLEAN:
        nd = checks[k]["gates"]["nondeterminism"]
        assert nd["status"] == "pass" and "SASS is read only when a re-run differs" in nd["reason"], nd
        assert nd["atomics"]["sass"].startswith("not read"), nd
    for k in differed:
        nd = checks[k]["gates"]["nondeterminism"]
        assert "float_atomic_adds" in nd["atomics"], nd  # read: the stand-in's SASS has none
    assert list(checks["last_writer"]["gates"])[:3] == ["determinism", "race", "nondeterminism"]
    cache = by_type(recs, "summary")[0]["cubin_cache"]
    assert cache["misses"] == 1 and cache["hits"] + 1 == len(differed), (cache, differed)


def test_a_difference_from_float_atomics_in_sass_is_named_nondeterminism(app, tmp_path):
    """float_accum's SASS (in a stand-in cubin) holds a float atomic add: the
    race gate's differing re-run is read then and handed to the
    nondeterminism gate, which names it atomic-order; the race gate says
    it was not its to judge. Without the instruction the same difference
    is a race."""
    from cubin import SASS_FLOAT_ATOMIC_ADD
    names = app_kernel_names(os.path.join(ROOT, "test", "apps", "apps.h"))
    path = tmp_path / "fa.cubin"
    fa_name = [n for n in names if "float_accum" in n][0]  # the mangled entry
    path.write_bytes(make_cubin(names, text={fa_name: SASS_FLOAT_ATOMIC_ADD * 4}))
    r = run([app("app_linked"), "races"], tmp_path, stock=True,
            env_extra={"APP_IMAGE": str(path), "HOME": str(tmp_path)})
    assert r.rc == 0, r.err
    recs = r.only_report()
    fa = [c for c in by_type(recs, "check") if name(c) == "float_accum"][0]["gates"]
    assert fa["race"]["status"] == "not run" and "nondeterminism gate" in fa["race"]["reason"], fa
    assert fa["nondeterminism"]["status"] == "fail", fa
    assert fa["nondeterminism"]["atomics"]["float_atomic_adds"] == 4, fa
    assert fa["nondeterminism"]["runs_of"] in ("determinism", "race"), fa
    v = [v for v in by_type(recs, "violation") if name(v) == "float_accum"]
    assert [x["gate"] for x in v] == ["nondeterminism"] and v[0]["cause"] == "atomic-order", v
    assert v[0]["evidence"]["atomics"]["float_atomic_adds"] == 4, v[0]
    # the same program without the instruction: a race
    (tmp_path / "plain").mkdir()
    checks, found = races(app, tmp_path / "plain")
    assert found["float_accum"]["cause"] == "unordered-access"


def test_green_runs_a_large_grid_on_a_quarter_of_the_sms(app, tmp_path):
    """On green_sms (8) SMs a grid of many waves runs far longer than the
    application's launch (a GEMM about 16 x on an H100): where it would
    need more than 4 x the application's waves, green runs on a quarter of
    the device's SMs in groups of 8 (32 of the stand-in's 132). bigalloc's
    vecadd: 8192 blocks of 128 threads, 16 a SM: 4 waves on 132 SMs, 64 on
    8. The races kernels (8 blocks) keep the option's 8."""
    r = run([app("app_linked"), "bigalloc"], tmp_path, stock=True,
            options="gates=race:race_strategies=green")
    assert r.rc == 0, r.err
    (vecadd,) = [c["gates"]["race"] for c in by_type(r.only_report(), "check")]
    assert vecadd["green_sms"] == 32, vecadd
    assert vecadd["strategies"] == {"green": "same"}, vecadd
    (tmp_path / "small").mkdir()
    (tmp_path / "opt").mkdir()
    r = run([app("app_linked"), "races"], tmp_path / "small", stock=True,
            options="gates=race:race_strategies=green")
    assert r.rc == 0, r.err
    small = [c["gates"]["race"] for c in by_type(r.only_report(), "check")]
    assert small and all(e["green_sms"] == 8 for e in small), small
    r = run([app("app_linked"), "bigalloc"], tmp_path / "opt", stock=True,
            options="gates=race:race_strategies=green:green_sms=48")
    assert r.rc == 0, r.err
    (vecadd,) = [c["gates"]["race"] for c in by_type(r.only_report(), "check")]
    assert vecadd["green_sms"] == 48, vecadd  # wider than a quarter already
