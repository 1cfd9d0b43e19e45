"""Attention's backward under the binding on the CPU: ATen's
_scaled_dot_product_flash_attention_for_cpu_backward judged by the
oracle's attention_backward (dq the primary output, dk and dv beside it),
causal and not, grouped-query heads too, every output passing; a planted custom backward that
drops the D_i = rowsum(dO o) term, declared by a torch_op contract,
flagged with its line, its correct twin silent. The CUDA kernels (flash,
memory-efficient, cuDNN) at a GPT step's sizes: test/gpu/torch_attention_grad.py."""
import pytest

from test_torch import of, run_py

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

SDPA = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
for causal in (False, True):
    q, k, v = (torch.randn(2, 4, 48, 32, requires_grad=True) for _ in range(3))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    (o * torch.randn_like(o)).sum().backward()
# grouped-query attention: 4 query heads over 2 key/value heads
q = torch.randn(2, 4, 40, 32, requires_grad=True)
k, v = (torch.randn(2, 2, 40, 32, requires_grad=True) for _ in range(2))
o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
(o * torch.randn_like(o)).sum().backward()
print("ran")
"""


def _bwd(recs):
    return [c for c in of(recs, "op_check")
            if c["op"].startswith("aten::_scaled_dot_product_flash_attention_for_cpu_backward")]


def test_cpu_sdpa_backward_judged_every_output_passes(tmp_path):
    p, recs = run_py(tmp_path, SDPA)
    assert p.returncode == 0, p.stderr
    checks = _bwd(recs)
    # is_causal False and True, and grouped-query heads: three signatures, each judged
    assert len(checks) == 3, [c["op"] for c in of(recs, "op_check")]
    for c in checks:
        oracle = c["gates"]["oracle"]
        outs = oracle["outputs"]
        assert [o["label"] for o in outs] == ["dq", "dk", "dv"], oracle
        assert all(o["oracle_op"] == "attention_backward" for o in outs), oracle
        assert {o["class"] for o in outs} <= {"pass", "bitwise"}, oracle
        assert "attention_backward[q]" in oracle["verdict"], oracle
        # generated inputs would not be the forward's output and logsumexp
        for gate in ("nonfinite", "precision", "extremes"):
            if gate in c["gates"]:
                assert c["gates"][gate]["status"] == "not_applicable", c["gates"][gate]
    assert not [r for r in of(recs, "violation") if "attention" in r.get("op", "")]


PLANTED = """
import torch

def _grads(q, k, v, o, g, lse, scale, drop_d):
    qd, kd, vd, od, gd = (t.double() for t in (q, k, v, o, g))
    n = q.shape[-2]
    s = qd @ kd.transpose(-1, -2) * scale
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    p = torch.exp(s - lse.double().unsqueeze(-1))
    dp = gd @ vd.transpose(-1, -2)
    d = (gd * od).sum(-1, keepdim=True)
    ds = p * dp if drop_d else p * (dp - d)   # the bug: D_i dropped
    return ((ds @ kd) * scale).float(), ((ds.transpose(-1, -2) @ qd) * scale).float(), \\
        (p.transpose(-1, -2) @ gd).float()

@torch.library.custom_op("kcab::attn_bwd_nod", mutates_args=())
def attn_bwd_nod(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                 g: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _grads(q, k, v, o, g, lse, 0.125, True)

@torch.library.custom_op("kcab::attn_bwd_ok", mutates_args=())
def attn_bwd_ok(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                g: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return _grads(q, k, v, o, g, lse, 0.125, False)

torch.manual_seed(0)
q, k, v = (torch.randn(1, 2, 40, 64) for _ in range(3))
o, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, is_causal=True)
g = torch.randn_like(o)
attn_bwd_nod(q, k, v, o, g, lse)                        # the planted bug
attn_bwd_ok(q, k, v, o, g, lse)
print("ran")
"""

CONTRACTS = """
contracts:
  - {torch_op: "kcab::attn_bwd_nod", op: attention_backward, args: {q: q, k: k, v: v, o: o, g: g, lse: lse, out: "0"}, attrs: {which: q, causal: true, scale: 0.125}, profile: fp32}
  - {torch_op: "kcab::attn_bwd_ok", op: attention_backward, args: {q: q, k: k, v: v, o: o, g: g, lse: lse, out: "0"}, attrs: {which: q, causal: true, scale: 0.125}, profile: fp32}
"""


def test_planted_backward_without_d_is_flagged_by_the_oracle(tmp_path):
    (tmp_path / "c.yaml").write_text(CONTRACTS)
    p, recs = run_py(tmp_path, PLANTED,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr
    checks = {c["op"]: c for c in of(recs, "op_check")}
    assert {"kcab::attn_bwd_nod.default", "kcab::attn_bwd_ok.default"} <= set(checks), checks
    ok = checks["kcab::attn_bwd_ok.default"]["gates"]["oracle"]
    assert ok.get("class") in ("pass", "bitwise"), ok
    viol = [r for r in of(recs, "violation") if r.get("op") == "kcab::attn_bwd_nod.default"]
    assert viol and viol[0]["gate"] == "oracle", of(recs, "violation")
    assert viol[0]["evidence"]["verdict"].startswith("fail"), viol[0]["evidence"]
    lines = [f.get("line") for f in viol[0]["stack"]["python"]]
    line = next(i + 1 for i, t in enumerate(PLANTED.splitlines()) if "# the planted bug" in t)
    assert line in lines, viol[0]["stack"]
    assert not [r for r in of(recs, "violation") if r.get("op") == "kcab::attn_bwd_ok.default"]
