"""Contract gates (coverage, immutability, bounds, oracle) on the CPU
stand-in: each planted contract bug is caught by its gate, and among these
four by its gate alone (but for ALSO), with evidence; the correct kernels and kernels
without a contract stay silent; the application's outputs are the same with
and without kcheck. The bugs only generated inputs or shapes show (the
nonfinite, precision, extremes and shapes gates) are tested in
test_contract_adversarial.py; here they must stay invisible to these four
gates on the application's own inputs."""
import collections
import math
import os
import subprocess
import sys

from conftest import ROOT, by_type, run

sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck import _defs  # noqa: E402  (the gates' evidence fields, gates/gates.def)

CONTRACTS = os.path.join(ROOT, "test", "integration", "data", "contracts_planted.yaml")
CONTRACT_GATES = {"coverage", "immutability", "bounds", "oracle"}
# Every gate that runs only on launches with a contract.
ALL_CONTRACT_GATES = CONTRACT_GATES | {"nonfinite", "precision", "extremes", "shapes"}
N = 1000  # app_linked contracts: n, not a multiple of 128
# Planted bug -> the gate of these four that must catch it on the
# application's own launch (other gates may catch it too).
CAUGHT_BY = {"tail_unwritten": "coverage", "input_scratch": "immutability",
             "oob_tail_write": "bounds", "exp_fast_wrong": "oracle", "gemm_fp16acc": "oracle"}
# Gates of these four that also catch a bug: the tail tail_unwritten leaves
# keeps the oracle gate's NaN poison, which is a wrong value of x + 1 too.
ALSO = {"tail_unwritten": {"oracle"}}
# Bugs the application's inputs and shapes hide from these four gates.
HIDDEN = {"rowmax_fmaxf", "tiled_add_bug", "softmax_nomax", "layernorm_onepass"}
CORRECT = {"vecadd", "exp_correct", "gemm_fp32acc", "rowmax", "softmax_rows", "layernorm_twopass"}
# Every kernel app_contracts() launches, in launch order.
LAUNCHED = ["vecadd", "tail_unwritten", "input_scratch", "oob_tail_write", "exp_fast_wrong",
            "exp_correct", "gemm_fp16acc", "gemm_fp32acc", "tiled_add_bug", "rowmax_fmaxf",
            "rowmax", "softmax_nomax", "softmax_rows", "layernorm_onepass", "layernorm_twopass",
            "fill_i32"]


def name(rec):
    return rec["kernel_name"].split("(")[0]


def gates_fired(recs):
    """kernel -> set of gates with a violation in it."""
    fired = collections.defaultdict(set)
    for v in by_type(recs, "violation"):
        fired[name(v)].add(v["gate"])
    return fired


def contracts_run(app, tmp_path, options=""):
    opts = "contracts=" + CONTRACTS + (":" + options if options else "")
    r = run([app("app_linked"), "contracts"], tmp_path, options=opts)
    assert r.rc == 0, r.err
    return r, r.only_report()


def test_each_bug_caught_by_its_gate(app, tmp_path):
    r, recs = contracts_run(app, tmp_path)
    fired = gates_fired(recs)
    assert [name(c) for c in by_type(recs, "check")] == LAUNCHED
    for k, gate in CAUGHT_BY.items():
        assert gate in fired[k], (k, fired[k])
        # Of the four gates here, only its own (and those ALSO names).
        assert fired[k] & CONTRACT_GATES == {gate} | ALSO.get(k, set()), (k, fired[k])
    for k in HIDDEN:
        assert not fired[k] & CONTRACT_GATES, (k, fired[k])
    for k in CORRECT | {"fill_i32"}:
        assert k not in fired, (k, fired[k])
    # The evidence below is the first violation of its gate in the kernel.
    viol = {}
    for v in by_type(recs, "violation"):
        if CAUGHT_BY.get(name(v)) == v["gate"]:
            viol.setdefault(name(v), v)

    ev = viol["tail_unwritten"]["evidence"]
    assert ev["tensor"] == "out"
    assert ev["first_unwritten"] == [N - N % 128]
    assert ev["unwritten"] == N % 128
    assert ev["shape"] == [N] and ev["verdict"] == "unwritten"
    # What exposed it: the application's own inputs at its own shape.
    exp = ev["exposed_by"]
    assert exp["inputs"] == "application" and exp["scalars"] == {"n": N}
    assert exp["shapes"] == {"a": [N], "out": [N]} and exp["grid"] == [(N + 127) // 128, 1, 1]
    for k in ("input_scratch", "oob_tail_write"):
        assert viol[k]["evidence"]["exposed_by"]["inputs"] == "application"
    assert viol["input_scratch"]["evidence"]["verdict"] == "input_modified"
    assert all(v["contract"].startswith(CONTRACTS + ":") for v in viol.values())
    assert viol["oob_tail_write"]["evidence"]["verdict"] == "out_of_bounds"

    ev = viol["input_scratch"]["evidence"]
    assert ev["tensor"] == "x"
    assert ev["index"] == [1]  # x[0] is 0.0: zeroing it changes nothing
    assert ev["changed"] == N - 1
    assert ev["before"]["value"] == 0.25 and ev["after"]["value"] == 0.0
    assert ev["before"]["hex"] == "0x3e800000" and ev["after"]["hex"] == "0x00000000"

    ev = viol["oob_tail_write"]["evidence"]
    assert ev["tensor"] == "out" and ev["side"] == "after_end"
    assert ev["bytes_past_end"] == 0 and ev["relative_to"] == "end"
    assert ev["tensor_bytes"] == 4 * N and ev["changed_bytes_after"] == 4
    assert ev["changed_bytes_before"] == 0 and ev["before"] != ev["after"]

    # Every field is one gates.def names for the gate at kernel level.
    for v in viol.values():
        declared = set(_defs.GATE[v["gate"]].kernel_evidence) | {"verdict", "exposed_by"}
        assert set(v["evidence"]) <= declared, (v["gate"], set(v["evidence"]) - declared)

    checks = {name(c): c for c in by_type(recs, "check")}
    for k, gate in (("tail_unwritten", "coverage"), ("input_scratch", "immutability"),
                    ("oob_tail_write", "bounds")):
        g = checks[k]["gates"]
        assert g[gate]["status"] == "fail"
        assert g[gate]["contract"].startswith(CONTRACTS + ":")
        for other in CONTRACT_GATES - {gate, "oracle"}:
            assert g[other]["status"] == "pass", (k, other, g[other])
        # Their contracts give the binary op's other operand as a constant
        # (x + 1, 2 * x, x - 1): the values they write are right, the
        # tail tail_unwritten leaves is the oracle gate's NaN poison.
        want = "fail" if k == "tail_unwritten" else "bitwise"
        assert g["oracle"]["status"] == want, (k, g["oracle"])
        # The timing gates see deterministic kernels: silent.
        assert g["determinism"]["status"] == "pass" and g["race"]["status"] == "pass"
    nviol, nchecks = len(by_type(recs, "violation")), len(by_type(recs, "check"))
    assert "SUMMARY: kcheck: %d violations in %d checks" % (nviol, nchecks) in r.err


def test_correct_kernel_silent_and_uncontracted_kernel_untouched(app, tmp_path):
    _, recs = contracts_run(app, tmp_path)
    checks = {name(c): c for c in by_type(recs, "check")}
    vecadd = checks["vecadd"]
    assert vecadd["gates"]["oracle"]["status"] == "bitwise"
    assert vecadd["gates"]["coverage"]["unwritten"] == {"c": 0}
    for k in CORRECT:
        assert checks[k]["violations"] == 0, checks[k]
        for g in CONTRACT_GATES - {"oracle"}:
            assert checks[k]["gates"][g]["status"] == "pass", (k, g, checks[k]["gates"][g])
        assert checks[k]["gates"]["oracle"]["status"] in ("pass", "bitwise"), (k, checks[k])
    # fill_i32 has no contract: no contract gate result at all.
    assert not ALL_CONTRACT_GATES & set(checks["fill_i32"]["gates"])
    assert checks["fill_i32"]["violations"] == 0


def test_no_contracts_no_contract_gate_results(app, tmp_path):
    r = run([app("app_linked"), "contracts"], tmp_path, options="contracts=none")
    assert r.rc == 0, r.err
    recs = r.only_report()
    assert not by_type(recs, "violation")
    for c in by_type(recs, "check"):
        assert not ALL_CONTRACT_GATES & set(c["gates"]), c
    # The default gates include the contract gates: silent without contracts.
    r = run([app("app_linked"), "races"], tmp_path, options="contracts=none")
    assert r.rc == 0, r.err
    # (float_accum's float atomic: the nondeterminism gate's)
    assert {v["gate"] for v in by_type(r.only_report(), "violation")} == {"race", "nondeterminism"}


def test_contract_gates_alone(app, tmp_path):
    """Selected alone, each contract gate still finds its bug, and nothing
    else on the application's inputs."""
    for gate, kernels in (("coverage", ["tail_unwritten"]), ("immutability", ["input_scratch"]),
                          ("bounds", ["oob_tail_write"]),
                          ("oracle", ["tail_unwritten", "exp_fast_wrong", "gemm_fp16acc"])):
        _, recs = contracts_run(app, tmp_path, "gates=" + gate)
        viol = by_type(recs, "violation")
        assert [(name(v), v["gate"]) for v in viol] == [(k, gate) for k in kernels]


def test_application_outputs_unchanged(app, tmp_path):
    plain = run([app("app_linked"), "contracts"], tmp_path, kcheck=False)
    checked, _ = contracts_run(app, tmp_path)
    assert plain.rc == 0
    lines = lambda out: [l for l in out.splitlines() if l.startswith("app_linked: contracts")]
    assert lines(checked.out) == lines(plain.out)
    assert len(lines(plain.out)) == len(LAUNCHED) + 1  # one per kernel, then "contracts ok"


def test_oracle_flags_numerical_bugs(app, tmp_path):
    _, recs = contracts_run(app, tmp_path, "gates=oracle")
    viol = {name(v): v for v in by_type(recs, "violation")}
    checks = {name(c): c["gates"]["oracle"] for c in by_type(recs, "check") if "oracle" in c["gates"]}

    ev = viol["gemm_fp16acc"]["evidence"]
    assert ev["verdict"] == "fail_precision" and ev["profile"] == "bf16_fp32acc"
    assert "fp16 accumulation" in ev["explained_by"]
    assert ev["tensor"] == "C" and ev["shape"] == [64, 64] and len(ev["index"]) == 2
    assert ev["ratio"] > 1 and ev["error"] > ev["bound"] and ev["n_fail"] > 0
    assert abs(ev["kernel"] - ev["exact"]) == ev["error"]
    g = checks["gemm_fp16acc"]
    assert g["status"] == "fail" and g["class"] == "fail_precision"
    assert g["verdict"].startswith("fail_precision matmul[bf16_fp32acc]")
    assert g["coverage"]["total"] == 4096 and g["coverage"]["checked"] == 4096

    ev = viol["exp_fast_wrong"]["evidence"]
    assert ev["verdict"] in ("fail_value", "fail_precision"), ev
    assert ev["op"] == "exp" and ev["shape"] == [N] and len(ev["index"]) == 1
    x = -8.0 + 16.0 * ev["index"][0] / (N - 1)
    assert abs(ev["inputs"]["x"] - x) < 1e-5  # the input at the worst index
    assert abs(ev["exact"] - math.exp(ev["inputs"]["x"])) <= 1e-6 * ev["exact"]
    assert ev["ratio"] > 1
    assert checks["exp_fast_wrong"]["status"] == "fail"

    # expf stays within the documented 2-ulp budget; fp32 GEMM within its bound.
    for k in ("exp_correct", "gemm_fp32acc"):
        assert checks[k]["status"] in ("pass", "bitwise"), checks[k]
        assert k not in viol
    assert "ratio=" in checks["exp_correct"]["verdict"]
    # The row kernels, correct or not, are right on the application's data:
    # max is exact, and the other bugs need inputs or shapes it never has.
    for k in ("rowmax", "rowmax_fmaxf", "tiled_add_bug"):
        assert checks[k]["status"] == "bitwise", (k, checks[k])
    for k in ("softmax_rows", "softmax_nomax", "layernorm_twopass", "layernorm_onepass"):
        assert checks[k]["status"] in ("pass", "bitwise"), (k, checks[k])
        assert checks[k]["coverage"]["checked"] == checks[k]["coverage"]["total"] == 16 * 1000
    # fill_i32 has no contract: no oracle result. tail_unwritten's constant
    # operand gives a verdict: the unwritten tail is the NaN poison.
    assert "fill_i32" not in checks
    assert checks["tail_unwritten"]["class"] == "fail_special", checks["tail_unwritten"]
    assert viol["tail_unwritten"]["evidence"]["inputs"]["rhs"] == 1.0


def test_a_non_finite_worst_error_is_not_a_gate_that_failed_to_run(app, tmp_path):
    """A value gate writes a worst error that is not finite as "nan" or
    "inf" (tail_unwritten's poison, exp_fast_wrong's overflow): judged
    entries, not ones that failed to run. `kcheck report` listed them as
    failed ("9 gate entries failed to run" on the demo's contracts)."""
    r, recs = contracts_run(app, tmp_path)
    strings = [(name(c), g, e["error"]) for c in by_type(recs, "check")
               for g, e in (c.get("gates") or {}).items()
               if isinstance(e, dict) and isinstance(e.get("error"), str)]
    assert strings and all(err in ("nan", "inf", "-inf") for _, _, err in strings), strings
    rep = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "report",
                          r.reports[0]], capture_output=True, text=True, timeout=60)
    assert "verdict:" in rep.stdout, rep.stdout
    assert "failed to run" not in rep.stdout, rep.stdout
