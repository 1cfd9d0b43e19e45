"""Inconclusive judgments counted and explained: the torch_summary record's
inconclusive_by_op (per op, each distinct (dtype, reason) with its count,
bounded), the binding's summary line naming the ops, and `kcheck report`'s
table of them.

On the CPU the ops below are judged under profiles with no finite bound
(a bf16 or fp16 matmul over K = 4096 accumulated in its own type, as
allow_bf16/fp16_reduced_precision_reduction allows; a bf16 scan of 300
terms) or where the input's type may overflow (nll_loss2d's total_weight
summed in bf16): inconclusive, each with the oracle's reason."""
import glob
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")
from conftest import ROOT  # noqa: E402
from test_torch import of, run_py  # noqa: E402

OPTIONS = ("torch=1:torch_devices=cuda,cpu:torch_budget=1:sample=1:kernel_clean_limit=1000:"
           "torch_workers=-1")

INCONCLUSIVE_PROG = """
import torch, torch.nn.functional as F
torch.use_deterministic_algorithms(True)
torch.manual_seed(0)
for dt in (torch.bfloat16, torch.float16):
    a = torch.randn(16, 4096, dtype=dt); b = torch.randn(4096, 16, dtype=dt)
    a @ b                                   # K = 4096 in a 16-bit accumulator
torch.randn(8, 64) @ torch.randn(64, 8)     # fp32: judged
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
a = torch.randn(16, 4096, dtype=torch.bfloat16); b = torch.randn(4096, 16, dtype=torch.bfloat16)
a @ b                                       # fp32 accumulation promised: judged
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
torch.cumsum(torch.rand(8, 300, dtype=torch.bfloat16) + 0.5, 1)
lp = torch.randn(2, 5, 20, 20, dtype=torch.bfloat16).log_softmax(1)
t = torch.randint(0, 5, (2, 20, 20))
F.nll_loss(lp, t, weight=torch.full((5,), 3e38, dtype=torch.bfloat16), reduction="mean")
print("done")
"""

CLEAN_PROG = """
import torch
torch.manual_seed(0)
x = torch.randn(8, 64) @ torch.randn(64, 8)
(x + 1).sum()
print("done")
"""

_NO_BOUND = "no finite bound for N element(s)"
_TOTAL_WEIGHT = "total_weight may overflow the input's type"


def _report(paths):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "report"] + paths,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    return r.stdout


def _summary_line(stderr):
    got = [ln for ln in stderr.splitlines() if ln.startswith("kcheck: torch: ") and "ops seen" in ln]
    assert len(got) == 1, stderr[-3000:]
    return got[0]


def test_inconclusive_judgments_by_op_dtype_and_reason(tmp_path):
    p, recs = run_py(tmp_path, INCONCLUSIVE_PROG, options=OPTIONS)
    assert p.returncode == 0, p.stderr[-3000:]
    s = of(recs, "torch_summary")[0]
    by_op = s["inconclusive_by_op"]
    # each op's count is its inconclusive op_check records' (the oracle's
    # judgment on the application's inputs), and each carries its reason
    want = {}
    for c in of(recs, "op_check"):
        g = (c.get("gates") or {}).get("oracle") or {}
        if not c.get("part") and g.get("class") == "inconclusive":
            assert g.get("reason"), g
            want[c["op"]] = want.get(c["op"], 0) + 1
    assert {op: row["count"] for op, row in by_op.items()} == want, (by_op, want)
    assert s["inconclusive"] == sum(want.values()) and s["inconclusive_ops_left_out"] == 0
    for row in by_op.values():
        assert row["count"] == sum(r["count"] for r in row["reasons"]) + row["reasons_left_out"]
    # the matmul: one row per dtype, the same reason (its element count left out)
    mm = by_op["aten::mm.default"]
    assert sorted(r["dtype"] for r in mm["reasons"]) == ["bf16", "fp16"], mm
    assert all(r["reason"].startswith(_NO_BOUND) and r["count"] == 1 for r in mm["reasons"]), mm
    assert mm["count"] == 2 and mm["reasons_left_out"] == 0
    scan = by_op["aten::cumsum.default"]["reasons"]
    assert [r["dtype"] for r in scan] == ["bf16"] and scan[0]["reason"].startswith(_NO_BOUND)
    nll = by_op["aten::nll_loss2d_forward.default"]
    assert nll["count"] == 1 and nll["reasons"][0]["dtype"] == "bf16"
    assert nll["reasons"][0]["reason"].startswith(_TOTAL_WEIGHT), nll
    # the fp32 matmul was judged, and the bf16 one where PyTorch promises
    # fp32 accumulation (reduced-precision reduction off)
    mms = [c for c in of(recs, "op_check") if c["op"] == "aten::mm.default"]
    assert any("float32" in c["key"] and c["gates"]["oracle"]["class"] in ("pass", "bitwise")
               for c in mms), mms
    assert any(c["profile"].startswith("tensorcore_fp32:in=bf16") and
               c["gates"]["oracle"]["class"] in ("pass", "bitwise") for c in mms), mms

    # a generated-input gate whose every run was inconclusive is not a
    # pass: inconclusive, with the runs' reason (the C gates' rule)
    undecided = 0
    for c in mms:
        for g in ("nonfinite", "precision", "extremes"):
            e = c["gates"].get(g) or {}
            classes = [r["class"] for r in e.get("runs") or []]
            if classes and all(k == "inconclusive" for k in classes):
                assert e["status"] == "inconclusive" and \
                    e["reason"].startswith("no run judged: no finite bound for "), (g, e)
                undecided += 1
            elif classes:
                assert e["status"] in ("pass", "fail"), (g, e)
    assert undecided >= 2, mms

    line = _summary_line(p.stderr)
    assert "; inconclusive: " in line, line
    assert "aten::mm.default 2 (bf16,fp16)" in line or "aten::mm.default 2 (fp16,bf16)" in line, line
    assert "aten::nll_loss2d_forward.default 1 (bf16)" in line, line
    assert "aten::cumsum.default 1 (bf16)" in line, line

    out = _report(glob.glob(str(tmp_path / "kc") + ".*.jsonl"))
    lines = out.splitlines()
    head = [i for i, ln in enumerate(lines) if "torch: inconclusive judgments" in ln]
    assert head, out
    table = lines[head[0] + 1:head[0] + 6]
    assert table[0].split() == ["op", "dtype", "count", "reason"], table
    rows = [ln.split(None, 3) for ln in table[1:]]
    assert ["aten::mm.default", "bf16", "1"] in [r[:3] for r in rows], table
    assert ["aten::mm.default", "fp16", "1"] in [r[:3] for r in rows], table
    nll_row = [r for r in rows if r[0] == "aten::nll_loss2d_forward.default"]
    assert nll_row and nll_row[0][1:3] == ["bf16", "1"] and \
        nll_row[0][3].startswith(_TOTAL_WEIGHT), table
    assert "not kept" not in out


def test_no_inconclusive_judgment_gives_an_empty_field(tmp_path):
    p, recs = run_py(tmp_path, CLEAN_PROG, options=OPTIONS)
    assert p.returncode == 0, p.stderr[-3000:]
    s = of(recs, "torch_summary")[0]
    assert s["ops_checked"] >= 2 and s["inconclusive"] == 0, s
    assert s["inconclusive_by_op"] == {} and s["inconclusive_ops_left_out"] == 0
    line = _summary_line(p.stderr)
    assert "0 inconclusive" in line and "; inconclusive:" not in line, line
    out = _report(glob.glob(str(tmp_path / "kc") + ".*.jsonl"))
    assert "ops seen" in out and "inconclusive judgments" not in out, out


def test_inconclusive_by_op_is_bounded(tmp_path):
    """More ops than the record keeps, and more (dtype, reason) pairs in
    one op: the excess is counted, never kept, and said in the summary
    line and the report."""
    from kcheck.torch import mode
    st = mode.Stats()
    nops, nreasons = mode._INC_OPS + 5, mode._INC_REASONS + 3
    for i in range(nops):
        st.inconclusive_("aten::op%d.default" % i, "fp32", "the one reason")
    big = "aten::op0.default"
    for i in range(nreasons):
        for _ in range(2):  # each reason twice: the kept ones' counts grow, the others' are left out
            st.inconclusive_(big, "bf16", "reason %c" % chr(ord("a") + i))
    st.inconclusive_(big, "bf16", "miss probability 0.0012 > 1e-06")
    st.inconclusive_(big, "bf16", "miss probability 0.5 > 1e-06")  # the same reason (numbers as N)
    rec = st.record()
    by_op = rec["inconclusive_by_op"]
    assert len(by_op) == mode._INC_OPS, len(by_op)
    assert rec["inconclusive_ops_left_out"] == nops - mode._INC_OPS
    row = by_op[big]
    assert list(by_op)[0] == big  # the most frequent first
    assert len(row["reasons"]) == mode._INC_REASONS, row
    # kept: fp32's "the one reason" and the first _INC_REASONS - 1 bf16 reasons, twice each
    assert row["reasons"][0]["count"] == 2 and row["reasons"][0]["dtype"] == "bf16", row
    left = 2 * (nreasons - (mode._INC_REASONS - 1)) + 2
    assert row["reasons_left_out"] == left, row
    assert row["count"] == 1 + 2 * nreasons + 2
    assert rec["inconclusive"] == nops + 2 * nreasons + 2
    assert rec["inconclusive"] == sum(r["count"] for r in by_op.values()) + \
        rec["inconclusive_ops_left_out"]
    assert mode._reason("miss probability 0.0012 > 1e-06") == "miss probability N > N"
    assert mode._reason("no rounding bound (gamma_n undefined: n u >= 1)").endswith("n u >= 1)")
    assert mode._reason(None) == "no reason given"
    # the summary line: the top ops, then how many more (some beyond the cap)
    tail = mode.inconclusive_ops(rec)
    assert tail.startswith("; inconclusive: %s %d (bf16,fp32)" % (big, row["count"])), tail
    assert "%d+ more ops" % (mode._INC_OPS - 4) in tail, tail
    # kcheck report: the table and what the bounds left out
    path = tmp_path / "kc.1.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (
        {"type": "run", "seq": 0, "t": 0, "schema": "kcheck.report/2", "pid": 1},
        dict(rec, type="torch_summary", seq=1, t=1))) + "\n")
    out = _report([str(path)])
    assert "torch: inconclusive judgments" in out, out
    assert "not kept (the record's bounds): %d judgments with further reasons, %d of further ops" % (
        left, nops - mode._INC_OPS) in out, out
    assert "more rows" in out, out
