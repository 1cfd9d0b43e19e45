"""Annotations (kcheck_annotate_*, kcheck.h) drive the contract gates: a
launch that takes every annotated tensor is checked against the declared
op and profile as if a contract file described it; launches on other
buffers and launches after kcheck_annotate_clear() are not."""
import sys

from conftest import CTYPES_APP, by_type, run

CONTRACT_GATES = {"coverage", "immutability", "bounds", "oracle", "nonfinite", "precision",
                  "extremes"}


def annotated_run(tmp_path, options=""):
    # Every launch checked; no contract files, so only annotations apply.
    r = run([sys.executable, CTYPES_APP, "annotate"], tmp_path,
            options="check_first=100:contracts=none" + (":" + options if options else ""))
    assert r.rc == 0, r.err
    return r, r.only_report()


def test_annotated_launches_are_checked_against_the_declared_op(tmp_path):
    r, recs = annotated_run(tmp_path)
    checks = sorted(by_type(recs, "check"), key=lambda c: c["launch"])
    names = [c["kernel_name"].split("(")[0] for c in checks]
    assert names == ["vecadd", "vecadd", "exp_fast_wrong", "vecadd", "gemm_fp16acc", "vecadd"]
    add, other, exp, sub, gemm, cleared = checks
    # A correct kernel under a right annotation: every contract gate ran, silent.
    assert CONTRACT_GATES <= set(add["gates"]) and add["violations"] == 0
    assert add["gates"]["oracle"]["status"] == "bitwise"
    assert add["gates"]["coverage"]["contract"].startswith("annotation #")
    assert "shapes" not in add["gates"]  # opt-in
    # Launches that do not take the annotated tensors, or after clear: no
    # contract gate at all.
    for c in (other, cleared):
        assert not CONTRACT_GATES & set(c["gates"]), c["gates"]
    # The check record says why the annotation in force did not apply.
    assert other["annotation"].startswith("not applied: the pointer of in0")
    assert "occurs 0 times" in other["annotation"] and "annotation" not in cleared
    viol = by_type(recs, "violation")
    by_launch = {}
    for v in viol:
        by_launch.setdefault(v["launch"], set()).add(v["gate"])
    assert by_launch[exp["launch"]] >= {"oracle"}
    assert by_launch[sub["launch"]] >= {"oracle"}  # vecadd computes add, declared sub
    assert by_launch[gemm["launch"]] >= {"oracle", "precision"}
    assert set(by_launch) == {exp["launch"], sub["launch"], gemm["launch"]}
    ev = [v for v in viol if v["launch"] == gemm["launch"] and v["gate"] == "precision"][0]
    ev = ev["evidence"]
    assert ev["verdict"] == "fail_precision" and ev["profile"] == "bf16_fp32acc"
    assert "fp16 accumulation" in ev["explained_by"]
    # The annotation's order is the op's order: A [64,256] . B [256,64].
    assert ev["exposed_by"]["shapes"] == {"in0": [64, 256], "in1": [256, 64], "out2": [64, 64]}
    ev = [v for v in viol if v["launch"] == sub["launch"] and v["gate"] == "oracle"][0]["evidence"]
    assert ev["op"] == "sub" and ev["verdict"] == "fail_value"
    assert ev["kernel"] == ev["inputs"]["in0"] + ev["inputs"]["in1"]
    assert ev["exact"] == ev["inputs"]["in0"] - ev["inputs"]["in1"]


def test_annotations_change_no_result(tmp_path):
    plain = run([sys.executable, CTYPES_APP, "annotate"], tmp_path, kcheck=False)
    checked, _ = annotated_run(tmp_path)
    assert plain.rc == 0
    lines = lambda out: [l for l in out.splitlines() if " annotate " in l]
    assert lines(checked.out) == lines(plain.out) and len(lines(plain.out)) == 7
