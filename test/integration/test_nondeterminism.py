"""`nondeterminism: allowed` in a contract: the determinism and race gates
answer "allowed" for that kernel and run nothing; other racy kernels are
still flagged; coverage still finds unwritten outputs (an element counts as
unwritten when it kept both runs' poison)."""
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
    assert "float_accum" in flagged(plain_recs)
    assert flagged(allowed_recs) == flagged(plain_recs) - {"float_accum"}
    (chk,) = [c for c in by_type(allowed_recs, "check") if name(c) == "float_accum"]
    for g in ("determinism", "race"):
        assert chk["gates"][g]["status"] == "allowed"
        assert chk["gates"][g]["contract"] == CONTRACTS + ":6"
        assert "runs" not in chk["gates"][g]


def test_coverage_under_allowed_nondeterminism(app, tmp_path):
    r = run([app("app_linked"), "contracts"], tmp_path,
            options="gates=coverage:contracts=" + CONTRACTS)
    assert r.rc == 0, r.err
    (v,) = by_type(r.only_report(), "violation")
    assert name(v) == "tail_unwritten" and v["gate"] == "coverage"
    assert v["evidence"]["unwritten"] == 1000 % 128
    assert v["evidence"]["first_unwritten"] == [1000 - 1000 % 128]
