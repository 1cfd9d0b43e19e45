"""Ops with several judged outputs (Plan.more): every output of one call
judged on the application's inputs, the worst verdict the call's, each
output named in the op_check record and in a violation's evidence. The
table's multi-output rows (norm and attention backward, _foreach_ lists,
optimizers, convolution backward) rely on this; here a stand-in row (add
judged twice) isolates the mechanism."""
import pytest

from test_torch import of, run_py

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

_PATCH = """
import torch
from kcheck.torch import ops
first = ops._BY_NAME["add"]

def twice(a):
    p = first(a)
    q = first(a)
    q.label = "again"
    if WRONG:
        q.out = lambda res: res + 1e-3  # a second output that is not the op's
    p.more = [q]
    return p

ops._BY_NAME["add"] = twice
x = torch.linspace(-1, 1, 64)
y = torch.linspace(0, 2, 64)
for _ in range(3):
    z = torch.add(x, y)
print(float(z.sum()))
"""


def test_every_output_judged_and_named(tmp_path):
    p, recs = run_py(tmp_path, "WRONG = False\n" + _PATCH)
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::add")]
    assert checks, recs
    oracle = checks[0]["gates"]["oracle"]
    assert [o["label"] for o in oracle["outputs"]] == ["out", "again"]
    assert all(o["oracle_op"] == "add" for o in oracle["outputs"])
    assert {o["class"] for o in oracle["outputs"]} <= {"bitwise", "pass"}, oracle
    assert not of(recs, "violation")


def test_a_wrong_second_output_fails_the_call_by_its_name(tmp_path):
    p, recs = run_py(tmp_path, "WRONG = True\n" + _PATCH)
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::add")]
    oracle = checks[0]["gates"]["oracle"]
    classes = {o["label"]: o["class"] for o in oracle["outputs"]}
    assert classes["out"] in ("bitwise", "pass") and classes["again"].startswith("fail"), oracle
    assert oracle.get("status") == "fail" or oracle.get("class", "").startswith("fail"), oracle
    v = [r for r in of(recs, "violation") if r.get("gate") == "oracle"]
    assert len(v) == 1, v
    assert v[0].get("output") == "again"
    assert v[0]["evidence"].get("tensor") == "again" or "again" in str(v[0]["evidence"]), v[0]
