"""The nonfinite gate on a 1-D tensor at op level: a vector is one row to
the specials generator, which once gave such an input NaN alone, so an op
mishandling +Inf on a vector passed. The binding now runs the specials
trial once per rotation the input needs (trials.specials_seeds, six for a
vector, as the C gates): a custom op that maps +Inf to 0 is caught, its
correct twin stays silent through every run."""
import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")
from test_torch import of, run_py  # noqa: E402

PROG = """
import torch
torch.manual_seed(0)


@torch.library.custom_op("kcv::relu_posinf_zero", mutates_args=())
def relu_posinf_zero(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x == float("inf"), torch.zeros_like(x), torch.relu(x))   # +Inf -> 0


@torch.library.custom_op("kcv::relu_ok", mutates_args=())
def relu_ok(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x)


x = torch.randn(1000)
relu_posinf_zero(x)
relu_ok(x)
print("done")
"""

YAML = """
contracts:
  - {torch_op: "kcv::relu_posinf_zero", op: relu, args: {x: x}, profile: fp32}
  - {torch_op: "kcv::relu_ok", op: relu, args: {x: x}, profile: fp32}
"""


def test_posinf_on_a_vector_caught_by_nonfinite(tmp_path):
    (tmp_path / "c.yaml").write_text(YAML)
    p, recs = run_py(tmp_path, PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "gates=oracle,nonfinite:torch_workers=-1:contracts=%s" % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr
    assert "done" in p.stdout
    viol = [v for v in of(recs, "violation") if v["op"].startswith("kcv::")]
    assert [(v["op"], v["gate"]) for v in viol] == [("kcv::relu_posinf_zero.default",
                                                     "nonfinite")], viol
    ev = viol[0]["evidence"]
    assert ev["verdict"] == "fail_special" and ev["kernel"] == 0 and ev["exact"] == "inf", ev
    checks = {}  # op -> gate -> result, whichever record (the call's, a later part) has it
    for c in of(recs, "op_check"):
        for gate, r in c["gates"].items():
            if c["op"].startswith("kcv::") and r.get("status") != "deferred":
                checks.setdefault(c["op"], {})[gate] = r
    # the application's own call is right: only a generated +Inf shows the bug
    assert checks["kcv::relu_posinf_zero.default"]["oracle"]["status"] in ("pass", "bitwise")
    g = checks["kcv::relu_ok.default"]["nonfinite"]
    assert g["status"] == "pass", g
    specials = [r for r in g["runs"] if r["generator"] == "specials"]
    assert [r.get("rotation", 0) for r in specials] == list(range(6)), g["runs"]
    assert len({r["seed"] for r in specials}) == 6
    assert all(r["class"] in ("pass", "bitwise") for r in g["runs"]), g["runs"]


def test_specials_seeds_match_the_generator():
    """trials.specials_seeds (the binding's copy of oc_specials_runs and
    oc_specials_seed) gives inputs of 1 to 5 rows, input k at seed + k,
    NaN, +Inf, -Inf, -0 and a subnormal through kcheck_generate, one kind
    a row; from 6 rows on, one run. In fp64: kcheck_generate makes the
    values in fp64 and rounds them to the format, so the subnormal row
    (fp64's smallest subnormals) is a row of +-0 in the narrower formats."""
    import math
    from conftest import kcheck_generate
    from kcheck.torch import trials
    cols = 32
    for rows in range(1, 6):
        for k in range(3):
            kinds = set()
            for seed in trials.specials_seeds(172487885537778, rows):
                rc, buf = kcheck_generate("specials", "none", "fp64", trials.role(k), rows, cols,
                                          seed + k, ctype="c_double")
                assert rc == 0
                for r in range(rows):
                    row = buf[r * cols:(r + 1) * cols]
                    got = {"nan" if v != v else "+inf" if v == math.inf else "-inf"
                           if v == -math.inf else "-0" if v == 0 and math.copysign(1, v) < 0
                           else "sub" if v != 0 and abs(v) < 2.0 ** -1022 else None for v in row}
                    assert not ({"nan"} <= got and got & {"+inf", "-inf"}), (rows, k, row)
                    kinds |= got
            assert kinds >= {"nan", "+inf", "-inf", "-0", "sub"}, (rows, k, kinds)
    assert trials.specials_seeds(5, 6) == [5] and trials.specials_seeds(5, 0) == [5]
    assert trials.specials_seeds(5, 1) == [5, 6, 7, 8, 9, 10]
    assert trials.specials_seeds(5, 2) == [5, 7, 9]
