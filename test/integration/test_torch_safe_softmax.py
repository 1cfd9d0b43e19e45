"""_safe_softmax (SDPA's math path under a mask) judged as softmax whose
rows of -inf give zeros (the oracle's masked_row=zero): PyTorch's own
result passes, a kernel that leaves such a row NaN is flagged."""
import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")
from test_torch import of, run_py  # noqa: E402

PROG = """
import torch
torch.manual_seed(0)

@torch.library.custom_op("kcs::nan_rows", mutates_args=())
def nan_rows(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)                      # NaN where a row is all -inf

x = torch.randn(4, 8, 16)
x[1, 3, :] = float("-inf")
x[2, :, 5:] = float("-inf")
torch.ops.aten._safe_softmax(x, -1)
nan_rows(x)                                         # LINE nan_rows
print("done")
"""

YAML = """
contracts:
  - {torch_op: "kcs::nan_rows", op: softmax, args: {x: x}, attrs: {axis: 2}, profile: "fp32:masked_row=zero"}
"""


def test_safe_softmax_judged_with_masked_rows(tmp_path):
    (tmp_path / "c.yaml").write_text(YAML)
    p, recs = run_py(tmp_path, PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "gates=oracle:torch_workers=-1:contracts=%s" % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr
    safe = [c for c in of(recs, "op_check") if c["op"].startswith("aten::_safe_softmax")]
    assert safe and safe[0]["gates"]["oracle"]["status"] in ("bitwise", "pass"), safe
    assert "masked_row=zero" in safe[0]["gates"]["oracle"].get("profile", "") or \
        "masked_row=zero" in str(safe[0]), safe[0]
    viol = [v for v in of(recs, "violation") if v["gate"] == "oracle"]
    assert [v["op"] for v in viol] == ["kcs::nan_rows.default"], [v.get("message") for v in viol]
