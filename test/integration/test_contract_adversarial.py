"""Contract gates on generated inputs and shapes (nonfinite, precision,
extremes, shapes) on the CPU stand-in. Each planted bug is right on the
application's own inputs and shape, and caught by its gate with evidence
naming what exposed it: rowmax_fmaxf (fmaxf drops NaN) by nonfinite,
tiled_add_bug (wrong partial last tile) by shapes, softmax_nomax (no max
subtracted) by extremes, layernorm_onepass (E[x^2] - mean^2) and
gemm_fp16acc (fp16 accumulator) by precision. The correct counterparts are
silent under every gate, and the application's outputs stay the same."""
import math
import os

import pytest

from conftest import APPS, ROOT, by_type, kcheck_generate, run
from test_contract_gates import CONTRACTS, LAUNCHED, gates_fired, name

ROWS, COLS = 16, 1000  # app_contracts(): row kernels' shape
# `app_linked vectors`: exp_inf_zero and exp_correct on a vector of n = 1000
VECTOR_CONTRACTS = os.path.join(ROOT, "test", "integration", "data", "contracts_vector.yaml")
TILED_N = 1024         # app_contracts(): tiled_add_bug's n, a multiple of its 64-element tile
TRIAL_GATES = {"nonfinite", "precision", "extremes", "shapes"}
# Planted bug -> the gate that must catch it.
CAUGHT_BY = {"rowmax_fmaxf": "nonfinite", "tiled_add_bug": "shapes",
             "softmax_nomax": "extremes", "layernorm_onepass": "precision",
             "gemm_fp16acc": "precision"}
CORRECT = ["vecadd", "rowmax", "softmax_rows", "layernorm_twopass", "gemm_fp32acc", "exp_correct"]
CONTRACT_GATES = ["coverage", "immutability", "bounds", "oracle"] + sorted(TRIAL_GATES)
FAILING = {"fail_precision", "fail_value", "fail_special"}
EVIDENCE_KEYS = {"tensor", "index", "verdict", "op", "profile", "kernel", "exact", "bound",
                 "error", "ratio", "shape", "n_fail", "exposed_by"}


def contracts_run(tmp_path, options):
    app = os.path.join(APPS, "app_linked")
    if not os.path.exists(app):
        pytest.fail("test application %s not built (make test-apps)" % app)
    r = run([app, "contracts"], tmp_path, options="contracts=" + CONTRACTS + ":" + options)
    assert r.rc == 0, r.err
    return r, r.only_report()


@pytest.fixture(scope="module")
def all_gates(tmp_path_factory):
    """One run with every gate (shapes is not in the default list)."""
    return contracts_run(tmp_path_factory.mktemp("all"), "gates=all")


def first_violation(recs, kernel, gate):
    for v in by_type(recs, "violation"):
        if name(v) == kernel and v["gate"] == gate:
            return v
    raise AssertionError("no %s violation in %s: %s" % (gate, kernel, gates_fired(recs)[kernel]))


def checks(recs):
    return {name(c): c for c in by_type(recs, "check")}


def test_each_bug_caught_by_its_gate(all_gates):
    r, recs = all_gates
    fired = gates_fired(recs)
    for k, gate in CAUGHT_BY.items():
        assert gate in fired[k], (k, fired[k])
    c = checks(recs)
    for k, gate in CAUGHT_BY.items():
        assert c[k]["gates"][gate]["status"] == "fail", (k, c[k]["gates"][gate])
    for v in by_type(recs, "violation"):
        if v["gate"] in TRIAL_GATES:
            ev = v["evidence"]
            if ev["verdict"] == "out_of_bounds":  # shapes: a guard zone changed
                assert v["gate"] == "shapes" and ev["guard_damage"]["tensor"], ev
            else:
                assert EVIDENCE_KEYS <= set(ev), (v["gate"], name(v), ev)
                assert ev["verdict"] in FAILING
            if ev.get("stage") == "calibration":  # shapes' run at the application's shape
                assert v["gate"] == "shapes" and ev["exposed_by"]["inputs"] == "application", ev
                continue
            assert ev["exposed_by"]["inputs"] == "generated"
            for key in ("generator", "seed", "scalars", "grid", "block"):
                assert key in ev["exposed_by"], (key, ev["exposed_by"])
            if ev["verdict"] == "fail_precision":
                assert ev["explained_by"], ev
    assert "SUMMARY: kcheck: %d violations in %d checks" % (
        len(by_type(recs, "violation")), len(by_type(recs, "check"))) in r.err


def test_correct_counterparts_silent_under_every_gate(all_gates):
    _, recs = all_gates
    fired = gates_fired(recs)
    c = checks(recs)
    for k in CORRECT:
        assert k not in fired, (k, fired[k])
        assert c[k]["violations"] == 0
        # Judged, not merely skipped: every contract gate passed.
        for g in CONTRACT_GATES:
            assert c[k]["gates"][g]["status"] in ("pass", "bitwise"), (k, g, c[k]["gates"][g])
    # The kernel without a contract gets no contract gate result.
    assert not set(CONTRACT_GATES) & set(c["fill_i32"]["gates"])


def test_rowmax_fmaxf_drops_nan(all_gates):
    _, recs = all_gates
    ev = first_violation(recs, "rowmax_fmaxf", "nonfinite")["evidence"]
    assert ev["verdict"] == "fail_special"
    assert ev["op"] == "max" and ev["profile"] == "fp32"
    assert ev["tensor"] == "out" and ev["shape"] == [ROWS] and len(ev["index"]) == 1
    # The exact max of a row holding NaN is NaN; the kernel gave a number.
    assert ev["exact"] == "nan" and isinstance(ev["kernel"], float)
    ex = ev["exposed_by"]
    assert ex["generator"] == "specials"
    assert ex["scalars"] == {"rows": ROWS, "cols": COLS}
    assert ex["grid"] == [ROWS, 1, 1] and ex["block"] == [128, 1, 1]
    c = checks(recs)
    # On the application's data (no NaN) both maxima are exact.
    assert c["rowmax_fmaxf"]["gates"]["oracle"]["status"] == "bitwise"
    assert c["rowmax"]["gates"]["nonfinite"]["status"] == "pass"


def test_inf_on_a_vector_reaches_nonfinite(tmp_path):
    """A vector is one row to the specials generator, which once gave such
    an input NaN alone: exp_inf_zero (an infinite input gives 0; right on
    every finite input and on NaN) passed nonfinite. The gate now runs the
    specials trial once per rotation a vector needs (six: oc_specials_runs),
    one reaches +Inf, e^+Inf = +Inf against the kernel's 0 is fail_special,
    and exposed_by's seed gives back the vector holding that +Inf. The
    correct twin exp_correct passes all seven runs."""
    r = run([os.path.join(APPS, "app_linked"), "vectors"], tmp_path,
            options="contracts=%s:gates=nonfinite" % VECTOR_CONTRACTS)
    assert r.rc == 0, r.err
    recs = r.only_report()
    fired = gates_fired(recs)
    assert fired["exp_inf_zero"] == {"nonfinite"}, dict(fired)
    assert "exp_correct" not in fired, fired["exp_correct"]
    ev = first_violation(recs, "exp_inf_zero", "nonfinite")["evidence"]
    assert ev["verdict"] == "fail_special" and ev["op"] == "exp" and ev["shape"] == [1000]
    assert ev["kernel"] == 0 and ev["exact"] == "inf", ev
    ex = ev["exposed_by"]
    assert ex["generator"] == "specials" and ex["shapes"]["x"] == [1000]
    # kcheck_generate at that seed: one row of 1000, +Inf where the kernel was wrong
    rc, buf = kcheck_generate("specials", "none", "fp32", 0, 1, 1000, ex["seed"])
    assert rc == 0
    assert buf[ev["index"][0]] == math.inf and sum(v == math.inf for v in buf) == 1
    g = checks(recs)["exp_correct"]["gates"]["nonfinite"]
    assert g["status"] == "pass" and g["runs"] == 7, g
    runs = [(t["generator"], t.get("rotation", 0)) for t in g["trials"]]
    assert runs == [("specials", k) for k in range(6)] + [("uniform", 0)], runs
    assert all(t["class"] in ("pass", "bitwise") for t in g["trials"]), g["trials"]


def test_tiled_add_bug_wrong_at_other_shapes(all_gates):
    _, recs = all_gates
    fired = gates_fired(recs)
    # At n = 1024 (whole tiles) it is vecadd: only another shape shows it.
    assert fired["tiled_add_bug"] == {"shapes"}
    ev = first_violation(recs, "tiled_add_bug", "shapes")["evidence"]
    assert ev["verdict"] == "fail_value" and ev["op"] == "add" and ev["profile"] == "fp32"
    ex = ev["exposed_by"]
    n = ex["scalars"]["n"]
    assert n != TILED_N and n % 64 != 0, ex
    assert ev["shape"] == [n] and ev["tensor"] == "out"
    assert n // 64 * 64 <= ev["index"][0] < n  # inside the partial last tile
    # Relaunched with the contract's launch section.
    assert ex["grid"] == [math.ceil(n / 128), 1, 1] and ex["block"] == [128, 1, 1]
    c = checks(recs)["tiled_add_bug"]["gates"]
    assert c["oracle"]["status"] == "bitwise"
    for g in ("nonfinite", "precision", "extremes"):
        assert c[g]["status"] == "pass", (g, c[g])


def test_softmax_nomax_overflows_on_large_logits(all_gates):
    _, recs = all_gates
    ev = first_violation(recs, "softmax_nomax", "extremes")["evidence"]
    assert ev["verdict"] in FAILING
    assert ev["op"] == "softmax" and ev["profile"] == "fp32"
    assert ev["tensor"] == "y" and ev["shape"] == [ROWS, COLS]
    assert ev["exposed_by"]["generator"] == "large_logits"
    # The exact softmax of logits in [80, 100] is finite.
    assert isinstance(ev["exact"], float) and math.isfinite(ev["exact"])
    c = checks(recs)
    # Logits in [-2, 2]: within the fp32 bound without the max.
    assert c["softmax_nomax"]["gates"]["oracle"]["status"] in ("pass", "bitwise")
    assert c["softmax_rows"]["gates"]["extremes"]["status"] == "pass"


def test_layernorm_onepass_loses_variance_on_large_mean(all_gates):
    _, recs = all_gates
    ev = first_violation(recs, "layernorm_onepass", "precision")["evidence"]
    assert ev["verdict"] in ("fail_precision", "fail_value")
    assert ev["op"] == "layer_norm" and ev["profile"] == "fp32"
    assert ev["tensor"] == "y" and ev["shape"] == [ROWS, COLS]
    assert ev["exposed_by"]["generator"] == "large_mean"
    assert ev["ratio"] > 1 and ev["n_fail"] > 0
    c = checks(recs)
    assert c["layernorm_onepass"]["gates"]["oracle"]["status"] in ("pass", "bitwise")
    assert c["layernorm_twopass"]["gates"]["precision"]["status"] == "pass"


def test_gemm_fp16acc_fails_precision_with_profile_named(all_gates):
    _, recs = all_gates
    ev = first_violation(recs, "gemm_fp16acc", "precision")["evidence"]
    assert ev["verdict"] == "fail_precision"
    assert ev["profile"] == "bf16_fp32acc"
    assert "fp16 accumulation" in ev["explained_by"]
    assert ev["op"] == "matmul" and ev["tensor"] == "C" and ev["shape"] == [64, 64]
    assert ev["error"] > ev["bound"] and ev["ratio"] > 1
    assert ev["exposed_by"]["generator"] in ("all_positive", "stagnation", "fp16_overflow")
    assert ev["exposed_by"]["scalars"] == {"M": 64, "N": 64, "K": 256}
    c = checks(recs)
    assert c["gemm_fp16acc"]["gates"]["precision"]["class"] == "fail_precision"
    assert c["gemm_fp32acc"]["gates"]["precision"]["status"] == "pass"


@pytest.mark.parametrize("gate", sorted(TRIAL_GATES))
def test_gate_alone(gate, tmp_path):
    """Selected alone, each gate still finds its bugs and spares the
    correct kernels."""
    _, recs = contracts_run(tmp_path, "gates=" + gate)
    fired = gates_fired(recs)
    assert {g for gs in fired.values() for g in gs} <= {gate}
    for k, g in CAUGHT_BY.items():
        if g == gate:
            assert gate in fired[k], (k, fired[k])
    for k in CORRECT:
        assert k not in fired, (k, fired[k])


@pytest.mark.parametrize("seed", [1, 7])
def test_correct_counterparts_silent_at_other_seeds(seed, tmp_path):
    _, recs = contracts_run(tmp_path, "gates=all:seed=%d" % seed)
    fired = gates_fired(recs)
    for k in CORRECT:
        assert k not in fired, (seed, k, fired[k])
    for k, gate in CAUGHT_BY.items():
        assert gate in fired[k], (seed, k, fired[k])


def test_application_outputs_unchanged(all_gates, tmp_path):
    app = os.path.join(APPS, "app_linked")
    plain = run([app, "contracts"], tmp_path, kcheck=False)
    checked, _ = all_gates
    assert plain.rc == 0
    lines = lambda out: [l for l in out.splitlines() if l.startswith("app_linked: contracts")]
    assert lines(checked.out) == lines(plain.out)
    assert len(lines(plain.out)) == len(LAUNCHED) + 1  # one per kernel, then "contracts ok"
    # On the application's data each bug gives what its counterpart gives.
    out = {l.split()[2]: l.split()[4] for l in lines(plain.out) if " out " in l}
    assert out["rowmax_fmaxf"] == out["rowmax"]


def test_evidence_quotes_the_input_slices(all_gates):
    """Row ops quote the input row the worst element depends on, matmul the
    row of A and the column of B: where, length, range, NaN/Inf, first values."""
    _, recs = all_gates
    ev = first_violation(recs, "rowmax_fmaxf", "nonfinite")["evidence"]
    (x,) = ev["input_slices"]
    assert x["tensor"] == "x" and x["at"] == [ev["index"][0], None] and x["length"] == 1000
    assert x["nan"] >= 1 and len(x["head"]) == 8  # the NaN the kernel dropped is in this row
    ev = first_violation(recs, "layernorm_onepass", "precision")["evidence"]
    (x,) = ev["input_slices"]
    assert x["at"] == [ev["index"][0], None] and 900 < x["min"] <= x["max"] < 1100  # large mean
    ev = first_violation(recs, "gemm_fp16acc", "precision")["evidence"]
    a, b = ev["input_slices"]
    i, j = ev["index"]
    assert (a["tensor"], a["at"], a["length"]) == ("A", [i, None], 256)
    assert (b["tensor"], b["at"], b["length"]) == ("B", [None, j], 256)
    assert 0.5 <= a["min"] and b["max"] < 1  # all_positive: products all add up


def test_shapes_calibration_sees_a_store_past_the_extent(all_gates):
    """oob_tail_write stores out[n] whenever n % 128 != 0, the application's
    n too: the shapes gate's calibration run at the application's shape
    sees the guard zone after `out` changed and runs no other shape (a guard
    zone changed at another shape only: test_contract_safety.py)."""
    _, recs = all_gates
    ev = first_violation(recs, "oob_tail_write", "shapes")["evidence"]
    assert ev["verdict"] == "out_of_bounds" and ev["stage"] == "calibration"
    g = ev["guard_damage"]
    n = ev["exposed_by"]["scalars"]["n"]
    assert g["tensor"] == "out" and g["side"] == "after_end"
    assert g["bytes_past_end"] == 0 and g["changed_bytes"] >= 1  # out[n], right after the end
    assert g["tensor_bytes"] == 4 * n and n % 128 != 0
