"""audit.html from hand-made audit.jsonl records (no audit run): the
summary by verdict, failed gate and task family, each task's tier, each
candidate's verdict, allclose and evidence, everything escaped."""
import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck.audit.driver import summary  # noqa: E402
from kcheck.audit.html import audit_html  # noqa: E402


def _records():
    task = {"type": "audit_task", "schema": "kcheck.audit/1", "task": "/c/relu/reference.py",
            "tier": "A", "family": "activation", "contract": {"op": "relu", "profile": "fp32"}}
    comp = {"type": "audit_task", "schema": "kcheck.audit/1", "task": "/c/mse/reference.py",
            "tier": "composition", "family": "loss", "reason": "no single oracle op <mse>"}
    good = {"type": "audit_candidate", "task": task["task"], "candidate": "/c/relu/correct.py",
            "tier": "A", "verdict": "clean", "allclose": True, "failed": [], "evidence": []}
    bad = {"type": "audit_candidate", "task": task["task"], "candidate": "/c/relu/nan.py",
           "tier": "A", "verdict": "broken", "allclose": True, "failed": ["nonfinite"],
           "evidence": [{"gate": "nonfinite", "line": "nan.py:12",
                         "message": "NaN in, 0 <out>", "worst": "x[3]=nan -> 0"}]}
    unj = {"type": "audit_candidate", "task": comp["task"], "candidate": "/c/mse/correct.py",
           "tier": "composition", "verdict": "unjudged", "allclose": True, "failed": [],
           "evidence": [], "reason": "composition"}
    recs = [task, good, bad, comp, unj]
    return recs + [summary(recs)]


def test_audit_html_summary_tasks_and_evidence():
    page = audit_html(_records())
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "3 candidates; broken though KernelBench's allclose passed: <b>1</b>" in page
    for text in ("<td>nonfinite</td><td>1</td>", "<td>activation</td>", "<td>loss</td>",
                 "<code>correct.py</code>", "<code>nan.py</code>", "<code>nan.py:12</code>",
                 "NaN in, 0 &lt;out&gt;", "x[3]=nan -&gt; 0", "tier A: oracle op relu, profile fp32",
                 "unjudged: no single oracle op &lt;mse&gt;", '<span class="bad">broken</span>'):
        assert text in page, text
    assert "<mse>" not in page and "<out>" not in page
