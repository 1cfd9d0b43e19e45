"""`nondeterminism: allowed` in a contract: for a kernel whose code has
order-dependent atomics (float_accum's red.add.f32) the determinism, race
and nondeterminism gates answer "allowed" and run nothing; a kernel whose
code has none (neighbor_read) is still flagged as a race: the declaration
accepts atomic order, never a race. Without a contract the nondeterminism
gate reports float_accum with cause atomic-order, apart from the races, and
the summary counts them apart; the gate adds the green strategy (block
order), which exposes float_accum where the default strategies do not.
Coverage still finds unwritten outputs (an element counts as unwritten
when it kept both runs' poison)."""
import os

from conftest import ROOT, by_type, run

CONTRACTS = os.path.join(ROOT, "test", "integration", "data", "contracts_nondet.yaml")


def name(rec):
    return rec["kernel_name"].split("(")[0]


def test_allowed_nondeterminism_is_not_a_violation(app, tmp_path):
    opts = "gates=determinism,race"
    plain = run([app("app_linked"), "races"], tmp_path, options=opts + ":contracts=none")
    assert plain.rc == 0, plain.err
    plain_recs = plain.only_report()  # the next run reuses the report prefix
    allowed = run([app("app_linked"), "races"], tmp_path,
                  options=opts + ":contracts=" + CONTRACTS)
    assert allowed.rc == 0, allowed.err
    allowed_recs = allowed.only_report()
    flagged = lambda recs: {name(v) for v in by_type(recs, "violation")}
    assert {"float_accum", "neighbor_read"} <= flagged(plain_recs)
    assert flagged(allowed_recs) == flagged(plain_recs) - {"float_accum"}
    (chk,) = [c for c in by_type(allowed_recs, "check") if name(c) == "float_accum"]
    for g in ("determinism", "race"):
        assert chk["gates"][g]["status"] == "allowed"
        assert chk["gates"][g]["contract"] == CONTRACTS + ":6"
        assert chk["gates"][g]["cause"] == "atomic-order"
        assert "runs" not in chk["gates"][g]


def test_allowed_nondeterminism_never_accepts_a_race(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path,
            options="gates=nondeterminism,determinism,race:contracts=" + CONTRACTS)
    assert r.rc == 0, r.err
    recs = r.only_report()
    (v,) = [v for v in by_type(recs, "violation") if name(v) == "neighbor_read"]
    assert v["gate"] == "race" and v["cause"] == "unordered-access"
    (chk,) = [c for c in by_type(recs, "check") if name(c) == "neighbor_read"]
    assert chk["gates"]["nondeterminism"]["status"] == "pass"
    (fa,) = [c for c in by_type(recs, "check") if name(c) == "float_accum"]
    assert fa["gates"]["nondeterminism"]["status"] == "allowed"


def test_atomic_order_reported_apart_from_races(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="contracts=none")
    assert r.rc == 0, r.err
    recs = r.only_report()
    viol = by_type(recs, "violation")
    by = {name(v): v for v in viol}
    nd = by["float_accum"]
    assert nd["gate"] == "nondeterminism" and nd["severity"] == "warning"
    assert nd["cause"] == "atomic-order"
    assert nd["evidence"]["atomics"]["float_atomic_adds"] == 1
    assert nd["evidence"]["atomics"]["first"].startswith("red.global.add.f32")
    # integer atomics (atomic_sum's red.add.u64) are order-independent
    (chk,) = [c for c in by_type(recs, "check") if name(c) == "atomic_sum"]
    assert chk["gates"]["nondeterminism"]["status"] == "pass"
    assert chk["gates"]["race"]["status"] == "pass"
    (fa,) = [c for c in by_type(recs, "check") if name(c) == "float_accum"]
    assert fa["gates"]["race"]["status"] == "not run"
    assert {by[k]["gate"] for k in by if k != "float_accum"} == {"race"}
    (summary,) = by_type(recs, "summary")
    assert summary["violations_by_gate"] == {"race": 3, "nondeterminism": 1}
    assert "violations by gate: race 3, nondeterminism 1" in r.err


def test_atomic_order_runs_a_block_order_strategy(app, tmp_path):
    """The default race strategies leave the order of blocks as it was, and
    with it the order float_accum's partial sums land in: all of them give
    identical bytes. The gate adds green (fewer SMs: the stand-in, like the
    driver, schedules blocks differently there), which exposes it; a list
    that has green already runs it once."""
    r = run([app("app_linked"), "races"], tmp_path,
            options="contracts=none:gates=nondeterminism", stock=True)
    assert r.rc == 0, r.err
    recs = r.only_report()
    (fa,) = [c for c in by_type(recs, "check") if name(c) == "float_accum"]
    nd = fa["gates"]["nondeterminism"]
    assert nd["order_added"] == "green"
    assert list(nd["strategies"])[-1] == "green"
    assert {k: v for k, v in nd["strategies"].items() if v in ("same", "differs")} == {
        "l2flush": "same", "jitter": "same", "warporder": "same", "green": "differs"}
    (v,) = [v for v in by_type(recs, "violation") if name(v) == "float_accum"]
    assert v["gate"] == "nondeterminism" and v["exposed_by"] == ["green"]
    assert v["evidence"]["strategy"] == "green"
    # green listed already: not added, run once
    r = run([app("app_linked"), "races"], tmp_path,
            options="contracts=none:gates=nondeterminism:race_strategies=l2flush,green")
    (fa,) = [c for c in by_type(r.only_report(), "check") if name(c) == "float_accum"]
    nd = fa["gates"]["nondeterminism"]
    assert "order_added" not in nd
    assert nd["strategies"] == {"l2flush": "same", "green": "differs"}


def test_coverage_under_allowed_nondeterminism(app, tmp_path):
    r = run([app("app_linked"), "contracts"], tmp_path,
            options="gates=coverage:contracts=" + CONTRACTS)
    assert r.rc == 0, r.err
    (v,) = by_type(r.only_report(), "violation")
    assert name(v) == "tail_unwritten" and v["gate"] == "coverage"
    assert v["evidence"]["unwritten"] == 1000 % 128
    assert v["evidence"]["first_unwritten"] == [1000 - 1000 % 128]
