"""Contracts and the application's own launch, on the CPU stand-in: extents
set by the launch (gridDim/blockDim in shape expressions), a launch outside
the contract's domain or unlike its launch section reported as "contract
does not apply" (no contract gate judges it), and constant operands from
the attrs (lhs, rhs)."""
import sys

from conftest import CTYPES_APP, by_type, run

# rowmax(x, out, rows, cols) runs one block per row (grid 16, block 128):
# the rows extent is the grid's.
ROWMAX = """contracts:
  - kernel: {name: _Z6rowmaxPKfPfii}
    params:
      - {name: x, tensor: {role: in, format: fp32, shape: [gridDim.x, cols]}}
      - {name: out, tensor: {role: out, format: fp32, shape: [%s]}}
      - {name: rows, scalar: i32}
      - {name: cols, scalar: i32}
    op: max
    attrs: {axis: 1}
    profile: fp32
    domain: ["blockDim.x == 128"]
"""

# vecadd(a, b, c, n) runs at n = 1000, grid 8, block 128.
VECADD = """contracts:
  - kernel: {name: _Z6vecaddPKfS0_Pfi}
    params:
      - {name: a, tensor: {role: in, format: fp32, shape: [n]}}
      - {name: b, tensor: {role: in, format: fp32, shape: [n]}}
      - {name: c, tensor: {role: out, format: fp32, shape: [n]}}
      - {name: n, scalar: i32}
    op: add
    profile: fp32
%s"""


def linked(app, tmp_path, text, gates):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    r = run([app("app_linked"), "contracts"], tmp_path,
            options="gates=%s:contracts=%s" % (gates, path))
    assert r.rc == 0, r.err
    return r.only_report()


def kernel_recs(recs, t, kernel):
    return [c for c in by_type(recs, t) if c["kernel_name"].split("(")[0] == kernel]


def test_shapes_from_the_launch(app, tmp_path):
    recs = linked(app, tmp_path, ROWMAX % "gridDim.x", "coverage,bounds,oracle")
    (chk,) = kernel_recs(recs, "check", "rowmax")
    assert "contract_not_applied" not in chk
    assert chk["gates"]["oracle"]["status"] == "bitwise", chk["gates"]["oracle"]
    assert chk["gates"]["coverage"]["status"] == "pass", chk["gates"]["coverage"]
    assert not kernel_recs(recs, "violation", "rowmax")
    # must fire: twice the grid's rows, half of them never written
    recs = linked(app, tmp_path, ROWMAX % "gridDim.x * 2", "coverage")
    (v,) = kernel_recs(recs, "violation", "rowmax")
    assert v["gate"] == "coverage" and v["evidence"]["shape"] == [32], v


def test_launch_unlike_the_launch_section_is_not_judged(app, tmp_path):
    same = 'launch: {grid: ["ceil_div(n, 128)"], block: [128]}\n'
    other = 'launch: {grid: ["ceil_div(n, 64)"], block: [64]}\n'
    recs = linked(app, tmp_path, VECADD % ("    " + same), "oracle,determinism")
    (chk,) = kernel_recs(recs, "check", "vecadd")
    assert "contract_not_applied" not in chk and chk["gates"]["oracle"]["status"] == "bitwise"
    recs = linked(app, tmp_path, VECADD % ("    " + other), "oracle,determinism")
    (chk,) = kernel_recs(recs, "check", "vecadd")
    why = chk["contract_not_applied"]
    assert "does not apply" in why and "the launch is grid (8,1,1) block (128,1,1)" in why, why
    assert "says grid (16,1,1) block (64,1,1)" in why, why
    assert "oracle" not in chk["gates"] and "determinism" in chk["gates"]
    assert not kernel_recs(recs, "violation", "vecadd")
    # only contract gates enabled: the refusal is the launch's skip record
    recs = linked(app, tmp_path, VECADD % ("    " + other), "oracle")
    assert not kernel_recs(recs, "check", "vecadd")
    (skip,) = kernel_recs(recs, "skip", "vecadd")
    assert "does not apply" in skip["reason"], skip


def test_launch_outside_the_domain_is_not_judged(app, tmp_path):
    recs = linked(app, tmp_path, VECADD % '    domain: ["n % 128 == 0"]\n', "oracle,determinism")
    (chk,) = kernel_recs(recs, "check", "vecadd")
    why = chk["contract_not_applied"]
    assert "outside its domain" in why and "n % 128 == 0" in why, why
    assert "oracle" not in chk["gates"]
    recs = linked(app, tmp_path, VECADD % '    domain: ["n % 8 == 0"]\n', "oracle,determinism")
    (chk,) = kernel_recs(recs, "check", "vecadd")
    assert "contract_not_applied" not in chk and chk["gates"]["oracle"]["status"] == "bitwise"


SCALE = """contracts:
  - kernel: {name: _Z5scalePffi}
    params:
      - {name: x, tensor: {role: inout, format: fp32, shape: [n]}}
      - {name: s, scalar: f32}
      - {name: n, scalar: i32}
    op: %s
    attrs: {%s}
    profile: fp32
"""


def scale(tmp_path, op, attrs):
    path = tmp_path / "scale.yaml"
    path.write_text(SCALE % (op, attrs))
    r = run([sys.executable, CTYPES_APP, "basic"], tmp_path,
            options="gates=oracle:contracts=%s" % path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    (chk,) = [c for c in by_type(recs, "check") if c["kernel_name"].startswith("scale")]
    return chk, by_type(recs, "violation")


def test_constant_operands(tmp_path):
    # scale computes x * -2: a constant rhs of -2 says so, in place of the scalar
    chk, viol = scale(tmp_path, "mul", "rhs: -2")
    assert chk["gates"]["oracle"]["status"] == "bitwise", chk["gates"]["oracle"]
    assert not viol
    chk, viol = scale(tmp_path, "mul", "rhs: 3")
    assert chk["gates"]["oracle"]["status"] == "fail"
    (v,) = [v for v in viol if v["gate"] == "oracle"]
    ev = v["evidence"]
    assert ev["inputs"]["rhs"] == 3.0 and ev["exact"] == ev["inputs"]["x"] * 3.0, ev
    chk, viol = scale(tmp_path, "sub", "lhs: 0")  # 0 - x is not x * -2
    assert chk["gates"]["oracle"]["status"] == "fail"
    (v,) = [v for v in viol if v["gate"] == "oracle"]
    assert v["evidence"]["exact"] == -v["evidence"]["inputs"]["x"], v["evidence"]
