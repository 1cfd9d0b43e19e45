"""_fused_rms_norm called with eps=None uses the accumulate type's
epsilon (FLT_EPSILON for bf16 inputs), not finfo(bf16).eps: the binding's
mapper gives the oracle that eps (a false precision verdict on the H100's
bf16 rows before)."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")


def test_fused_rms_norm_default_eps_is_the_accumulate_types():
    from kcheck.torch import ops
    x = (torch.randn(8, 256) * 0.05).to(torch.bfloat16)  # mean(x^2) ~ 2.5e-3, below 2^-7
    w = torch.ones(256, dtype=torch.bfloat16)
    # ATen's own semantics, which the mapper follows
    y = torch.ops.aten._fused_rms_norm(x, [256], w, None)[0]
    flt = torch.ops.aten._fused_rms_norm(x, [256], w, torch.finfo(torch.float32).eps)[0]
    dt = torch.ops.aten._fused_rms_norm(x, [256], w, torch.finfo(torch.bfloat16).eps)[0]
    assert torch.equal(y, flt) and not torch.equal(y, dt)
    for t, want in ((x, torch.finfo(torch.float32).eps),
                    (x.double(), torch.finfo(torch.float64).eps)):
        plan = ops._rms_norm({"input": t, "normalized_shape": [256], "weight": None, "eps": None})
        assert plan.attrs["eps"] == want
