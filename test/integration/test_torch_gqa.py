"""Grouped-query attention (fewer key/value heads than query heads,
SDPA's enable_gqa; Llama-style models under bf16 take cuDNN's kernel,
which reads the key/value heads in groups): the binding judges it with
query and output split into (key heads, group) and key/value broadcast
over the group — never the output's head read against another head's
keys. On the CPU, SDPA's flash kernel takes GQA natively."""
import pytest

from test_torch import of, run_py

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

_CODE = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
q = torch.randn(2, 4, 16, 8)
k = torch.randn(2, KV, 16, 8)
v = torch.randn(2, KV, 16, 8)
for causal in (False, True):
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=KV != 4)
print(float(o.sum()))
"""


@pytest.mark.parametrize("kv", [2, 1, 4])
def test_grouped_query_attention_judged_and_passing(tmp_path, kv):
    p, recs = run_py(tmp_path, "KV = %d\n" % kv + _CODE)
    assert p.returncode == 0, p.stderr
    att = [c for c in of(recs, "op_check") if c.get("oracle_op") == "attention"]
    assert len(att) == 2, [c.get("op") for c in of(recs, "op_check")]
    for c in att:
        assert c["gates"]["oracle"].get("class") in ("pass", "bitwise"), c["gates"]["oracle"]
    assert not [v for v in of(recs, "violation") if v.get("gate") == "oracle"]


def test_a_head_read_against_the_wrong_keys_fails(tmp_path):
    """The grouping is the oracle's, not the kernel's: an output computed
    with key head h % KV instead of h // G (interleaved, not grouped) is a
    violation."""
    code = """
import torch
import torch.nn.functional as F
from kcheck.torch import ops
first = ops._BY_NAME["_scaled_dot_product_flash_attention_for_cpu"]

def wrong(a):
    p = first(a)
    q, k, v = a["query"], a["key"], a["value"]
    kk = k.repeat(1, 2, 1, 1)  # heads 0,1,0,1: interleaved
    vv = v.repeat(1, 2, 1, 1)
    with torch.utils._python_dispatch._disable_current_modes():
        bad = F.scaled_dot_product_attention(q, kk, vv)
    p.out = lambda res: bad.unflatten(-3, (2, 2))
    return p

ops._BY_NAME["_scaled_dot_product_flash_attention_for_cpu"] = wrong
torch.manual_seed(0)
q, k, v = torch.randn(2, 4, 16, 8), torch.randn(2, 2, 16, 8), torch.randn(2, 2, 16, 8)
F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
"""
    p, recs = run_py(tmp_path, code)
    assert p.returncode == 0, p.stderr
    v = [r for r in of(recs, "violation") if r.get("gate") == "oracle"]
    assert v and v[0]["evidence"]["verdict"].startswith("fail"), recs
