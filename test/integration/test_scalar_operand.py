"""Binary elementwise ops over one tensor and one float scalar parameter
(out = x * s), and in place (x inout, no `in` tensor): the value gates judge
them with the scalar as the second operand (first when declared first)."""
import sys

from conftest import CTYPES_APP, by_type, run

CONTRACT = """contracts:
  - kernel: {name: _Z5scalePffi}
    params:
      - {name: x, tensor: {role: inout, format: fp32, shape: [n]}}
      - {name: s, scalar: f32}
      - {name: n, scalar: i32}
    op: %s
    profile: fp32
"""


def scale_check(tmp_path, op):
    path = tmp_path / ("scale_%s.yaml" % op)
    path.write_text(CONTRACT % op)
    r = run([sys.executable, CTYPES_APP, "basic"], tmp_path,
            options="gates=oracle,precision:contracts=%s" % path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    (chk,) = [c for c in by_type(recs, "check") if c["kernel_name"].startswith("scale")]
    return chk, by_type(recs, "violation")


def test_in_place_times_scalar_is_judged(tmp_path):
    chk, viol = scale_check(tmp_path, "mul")
    assert chk["gates"]["oracle"]["status"] == "bitwise", chk["gates"]["oracle"]
    assert chk["gates"]["precision"]["status"] == "pass"
    assert not viol


def test_wrong_op_with_scalar_operand_is_flagged(tmp_path):
    chk, viol = scale_check(tmp_path, "sub")
    assert chk["gates"]["oracle"]["status"] == "fail"
    (v,) = [v for v in viol if v["gate"] == "oracle"]
    ev = v["evidence"]
    assert ev["op"] == "sub" and set(ev["inputs"]) == {"x", "s"} and ev["inputs"]["s"] == -2.0
    assert ev["kernel"] == ev["inputs"]["x"] * -2.0  # what scale computes
    assert ev["exact"] == ev["inputs"]["x"] - -2.0  # what the contract says
