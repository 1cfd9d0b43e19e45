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
