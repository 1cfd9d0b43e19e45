"""Profile key partial=<format>: where a kernel rounds intermediate values
to a narrower type than its accumulator, the binding says so.

ATen's CUDA sigmoid_backward and tanh_backward compute in the tensor's
own 16-bit type (each step rounded to it): partial=<that type> there, and
only there (the CPU kernels convert to float first; fp32 and fp64 are
their own opmath); the bound is test/oracle/test_b_grad.c's
scalar_t_steps. Grouped-query SDPA backward: each query head's part of
dk and dv is rounded to the 16-bit output type before the group's sum
(test/oracle/test_b_attention_grad.c's grouped); dq and ungrouped
attention keep their profile."""
import types

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")


def _plan(op, device, dtype):
    from kcheck.torch import ops
    y = types.SimpleNamespace(device=types.SimpleNamespace(type=device), dtype=dtype)
    return ops._grad(op)({"grad_output": y, "output": y})


@pytest.mark.parametrize("op", ["sigmoid_backward", "tanh_backward"])
def test_cuda_16bit_activation_grads_judged_in_their_type(op):
    assert _plan(op, "cuda", torch.bfloat16).suffix == ":partial=bf16"
    assert _plan(op, "cuda", torch.float16).suffix == ":partial=fp16"
    for device, dtype in (("cpu", torch.bfloat16), ("cpu", torch.float16),
                          ("cuda", torch.float32), ("cuda", torch.float64)):
        assert _plan(op, device, dtype).suffix == ""


def test_other_activation_grads_keep_opmath():
    from kcheck.torch import ops
    y = types.SimpleNamespace(device=types.SimpleNamespace(type="cuda"), dtype=torch.bfloat16)
    p = ops._grad("silu_backward")({"grad_output": y, "self": y})
    assert p.suffix == ""


def _sdpa_grad_args(hq, hk, dtype):
    m = dict(device="meta", dtype=dtype)
    q, o, g = (torch.empty(2, hq, 16, 8, **m) for _ in range(3))
    k, v = torch.empty(2, hk, 16, 8, **m), torch.empty(2, hk, 16, 8, **m)
    return {"query": q, "key": k, "value": v, "out": o, "grad_out": g,
            "logsumexp": torch.empty(2, hq, 16, device="meta"), "is_causal": True}


def test_grouped_attention_grads_rounded_per_head():
    from kcheck.torch import ops
    p = ops._attention_backward(_sdpa_grad_args(4, 2, torch.bfloat16))
    suffix = {q.attrs["which"]: q.suffix for q in [p] + p.more}
    assert suffix == {"q": "", "k": ":partial=bf16", "v": ":partial=bf16"}
    for hq, hk, dtype in ((4, 4, torch.bfloat16), (4, 2, torch.float32)):
        p = ops._attention_backward(_sdpa_grad_args(hq, hk, dtype))
        assert all(q.suffix == "" for q in [p] + p.more)
