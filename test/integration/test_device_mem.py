"""kcheck's own device memory: the summary's device_mem categories against
what the stand-in driver saw allocated, and the device_mem_budget cap."""
import os
import subprocess
import sys

from conftest import CTYPES_APP, FAKECUDA, ROOT, by_type, run


def allocated(path):
    """(allocations, bytes) the stand-in made for the whole process."""
    for line in open(path):
        parts = line.split()
        if parts[0] == "allocated":
            return int(parts[1]), int(parts[2])
    raise AssertionError("the stand-in wrote no allocation counts to %s" % path)


def plain_and_checked(app, tmp_path, mode, options):
    got = []
    for kc in (False, True):
        d = tmp_path / ("kc" if kc else "plain")
        d.mkdir()
        r = run([app("app_linked"), mode], d, options=options, kcheck=kc,
                env_extra={"FAKECUDA_CALLS_OUT": str(d / "calls.txt")})
        assert r.rc == 0, r.err
        got.append((r, allocated(str(d / "calls.txt"))))
    return got


def checksums(r):
    return sorted(l for l in r.out.splitlines() if "checksum" in l)


def alloc_categories(dm):
    return {k: v for k, v in dm["categories"].items() if v["how"] == "alloc"}


def test_categories_add_up_to_what_the_driver_allocated(app, tmp_path):
    """Every allocation kcheck made is in one category: what the process
    allocated under kcheck less what it allocates alone is exactly the sum
    of the categories' bytes, allocation for allocation. The strategies
    here load no instrumented copy, so no module variable is allocated."""
    (plain, (n0, b0)), (kc, (n1, b1)) = plain_and_checked(
        app, tmp_path, "races", "race_strategies=scrub,l2flush,hammer,green,smem")
    recs = kc.only_report()
    assert by_type(recs, "check")
    dm = by_type(recs, "summary")[-1]["device_mem"]
    cats = alloc_categories(dm)
    assert sum(c["allocated"] for c in cats.values()) == b1 - b0
    assert sum(c["count"] for c in cats.values()) == n1 - n0
    for name in ("staging", "l2flush", "hammer", "hash_slots"):
        assert cats[name]["allocated"] > 0 and cats[name]["peak"] > 0, name
    assert dm["peak"] >= max(c["peak"] for c in cats.values())
    assert dm["refused"] == 0 and dm["budget"] == 256 << 20
    assert checksums(kc) == checksums(plain)


def test_instrumented_copies_are_counted_as_modules(app, tmp_path):
    """The intra-block strategies load instrumented copies whose variables
    the driver allocates: measured under modules (the fall of free memory,
    whole pages on the stand-in), they close the gap to the driver's
    count; one access log serves every copy."""
    (plain, (n0, b0)), (kc, (n1, b1)) = plain_and_checked(
        app, tmp_path, "races", "race_strategies=jitter,warporder,accesses")
    dm = by_type(kc.only_report(), "summary")[-1]["device_mem"]
    cats = alloc_categories(dm)
    mods = dm["categories"]["modules"]
    assert mods["how"] == "measured" and mods["allocated"] > 0
    mine = sum(c["allocated"] for c in cats.values())
    assert mine < b1 - b0 <= mine + mods["allocated"]
    assert dm["categories"]["access_log"]["count"] == 1
    assert checksums(kc) == checksums(plain)


def test_tiny_budget_turns_checks_into_skips(app, tmp_path):
    """A budget smaller than any snapshot: the checks become skips whose
    reason names the category, the bytes and the budget; strategies whose
    buffers do not fit are skipped inside a check that fits; the
    application's results are unchanged and kcheck's own allocations stay
    inside the budget."""
    (plain, _), (kc, (n1, b1)) = plain_and_checked(app, tmp_path, "races",
                                                   "device_mem_budget=4K")
    recs = kc.only_report()
    skips = [s for s in by_type(recs, "skip") if s["reason"].startswith("device_mem_budget:")]
    assert skips, [s["reason"] for s in by_type(recs, "skip")]
    assert all("staging needs" in s["reason"] and "of 4096" in s["reason"] for s in skips)
    dm = by_type(recs, "summary")[-1]["device_mem"]
    assert dm["budget"] == 4096 and dm["refused"] >= len(skips)
    assert dm["categories"]["staging"]["refused"] >= len(skips)
    for name, c in alloc_categories(dm).items():
        assert c["peak"] <= 4096, (name, c)
    assert dm["peak"] <= 4096 + dm["categories"]["modules"]["allocated"]
    for c in by_type(recs, "check"):
        st = c["gates"].get("race", {}).get("strategies", {})
        assert st.get("l2flush", "").startswith("device_mem_budget: l2flush needs"), st
    assert checksums(kc) == checksums(plain)
    # kcheck report: the peak against the budget, each category used or refused
    out = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "report",
                          kc.reports[0]], capture_output=True, text=True, timeout=60).stdout
    assert "budget 4.0 KiB, %d refused" % dm["refused"] in out, out
    staging = next(l for l in out.splitlines() if l.strip().startswith("staging "))
    assert "%d refused" % dm["categories"]["staging"]["refused"] in staging, staging


def test_budget_zero_is_unlimited(app, tmp_path):
    """device_mem_budget=0: no refusal, and the same checks as with a
    budget far above what the run needs."""
    def one(sub, budget):
        d = tmp_path / sub
        d.mkdir()
        r = run([app("app_linked"), "races"], d, options="device_mem_budget=" + budget)
        assert r.rc == 0, r.err
        recs = r.only_report()
        dm = by_type(recs, "summary")[-1]["device_mem"]
        return recs, dm, r

    recs0, dm0, r0 = one("zero", "0")
    recs1, dm1, _ = one("big", "1T")
    assert dm0["budget"] == 0 and dm0["refused"] == 0 and dm1["refused"] == 0
    assert not [s for s in by_type(recs0, "skip") if "device_mem_budget" in s["reason"]]
    assert [c["kernel_name"] for c in by_type(recs0, "check")] == \
        [c["kernel_name"] for c in by_type(recs1, "check")]
    assert by_type(recs0, "check") and dm0["peak"] > 0
    for c in by_type(recs0, "check"):
        st = c["gates"].get("race", {}).get("strategies", {})
        assert not any("device_mem_budget" in v for v in st.values()), st


POOL_PROG = r"""
import ctypes, sys
sys.path.insert(0, %r)
from kcheck import _lib
lib = _lib.prototyped(ctypes.CDLL(None))
ctypes.CDLL("libcuda.so.1").cuInit(0)
why = ctypes.create_string_buffer(256)
print("fits", lib.kcheck_torch_pool(512 << 10, 1, why, 256), why.value.decode())
print("over", lib.kcheck_torch_pool(3 << 20, 1, why, 256), why.value.decode())
lib.kcheck_torch_pool(768 << 10, 0, None, 0)   # the pool held 768 KiB at its end
lib.kcheck_torch_pool(0, 0, None, 0)           # then gone
lib.kcheck_torch_pool(256 << 10, 0, None, 0)   # a second op's re-runs
"""


def test_binding_pool_is_accounted_and_capped(tmp_path):
    """The PyTorch binding's private pool (kcheck_torch_pool, category
    torch_pool, how reported): a re-run that would not fit
    device_mem_budget is refused with the reason (and counted), what the
    pool held is accounted with its peak, and what it holds at exit stays
    in the summary's current."""
    from conftest import BUILD, FAKECUDA
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KCHECK_", "LD_PRELOAD"))}
    env.update(LD_PRELOAD=os.path.join(BUILD, "libkcheck.so"), LD_LIBRARY_PATH=FAKECUDA,
               KCHECK_OPTIONS="log_path=%s:device_mem_budget=2M" % (tmp_path / "kc"))
    p = subprocess.run([sys.executable, "-c", POOL_PROG % os.path.join(ROOT, "python")],
                       env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert lines[0] == "fits 0 ", lines
    assert lines[1].startswith("over -1 device_mem_budget: torch_pool needs 3145728 bytes"), lines
    import glob
    import json
    (rep,) = glob.glob(str(tmp_path / "kc.*.jsonl"))
    summ = [json.loads(l) for l in open(rep) if '"summary"' in l][-1]
    pool = summ["device_mem"]["categories"]["torch_pool"]
    assert pool["how"] == "reported", pool
    assert pool["peak"] == 768 << 10 and pool["current"] == 256 << 10, pool
    assert pool["count"] == 2 and pool["refused"] == 1, pool
    assert summ["device_mem"]["refused"] == 1


def test_a_kernel_refused_for_memory_at_every_step_stops_being_asked(app, tmp_path):
    """A training loop's kernel with a per-step scalar (steps100's scale, a
    learning rate) is a new signature at every step; where device_mem_budget
    refuses its check, each step's refusal resolved its pointers under the
    world lock and wrote a skip record (an optimizer's multi-tensor kernels
    on the H200: a few ms a step). After kernel_clean_limit refusals the
    kernel's launches are only sampled, with one skip record saying why;
    kernel_clean_limit=-1 keeps asking."""
    def skips(options, sub):
        d = tmp_path / sub
        d.mkdir()
        r = run([app("app_linked"), "steps100"], d, options=options)
        assert r.rc == 0, r.err
        return [s["reason"] for s in by_type(r.only_report(), "skip")
                if s["kernel_name"].startswith("scale")]

    got = skips("device_mem_budget=4K", "limit")
    refused = [s for s in got if s.startswith("device_mem_budget:")]
    assert len(refused) == 8, got
    assert got.count("kernel's checks refused for device memory kernel_clean_limit times") == 1, got
    assert len(got) == 9, got
    got = skips("device_mem_budget=4K:kernel_clean_limit=3", "three")
    assert len([s for s in got if s.startswith("device_mem_budget:")]) == 3, got
    got = skips("device_mem_budget=4K:kernel_clean_limit=-1", "never")
    assert len([s for s in got if s.startswith("device_mem_budget:")]) == 100, got


def test_a_check_the_cap_refuses_asks_the_driver_about_no_word(tmp_path):
    """A check resolves the launch's pointers under the world lock, first
    from kcheck's allocation map alone: when those allocations already need
    more than device_mem_budget, it is refused there, and the driver is not
    asked about the struct's other address-like words (an optimizer's
    multi-tensor struct has ~90, asked at every step's refusal before).
    The junk struct: three real pointers among 125 such int pairs a
    variant. Without the cap, the same checks ask the driver about them."""
    def run_junk(sub, options):
        d = tmp_path / sub
        d.mkdir()
        r = run([sys.executable, CTYPES_APP, "junk", "--lib", FAKECUDA + "/libcuda.so.1"], d,
                options="profile=1:" + options, stock=True)
        assert r.rc == 0, r.err
        recs = r.only_report()
        end = [p for p in by_type(recs, "profile") if p["at"] == "exit"][0]
        queries = end["driver_calls"].get("cuMemGetAddressRange_v2", {}).get("n", 0)
        ti = lambda t: [x for x in by_type(recs, t) if "ti_add_kernel" in x["kernel_name"]]
        return queries, ti("check"), [s["reason"] for s in ti("skip")]

    queries, checks, skips = run_junk("open", "")
    assert checks and queries >= 125 * len(checks), (queries, len(checks), skips)
    queries, checks, skips = run_junk("capped", "device_mem_budget=1")
    assert not checks, skips
    assert [s for s in skips if s.startswith("device_mem_budget:")], skips
    assert queries == 0, (queries, skips)
