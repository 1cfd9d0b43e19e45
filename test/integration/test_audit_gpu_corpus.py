"""The GPU audit corpus (test/audit_gpu) checked without a GPU: every
candidate file has a manifest row and every row a file, the rows name
known gates and classes, the CUDA candidates call functions the one
extension binds, the Triton candidates parse, each reference traces here
to the tier its rows assume, and the runner's summarizer
(test/gpu/summarize_audit.py) turns audit.jsonl into PASS and FAIL lines.
Running the corpus needs a GPU: test/gpu/run_gpu_audit.sh."""
import ast
import glob
import json
import os
import re
import sys

import pytest

from conftest import ROOT

CORPUS = os.path.join(ROOT, "test", "audit_gpu")
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import summarize_audit  # noqa: E402

GATES = set(re.findall(r"^KC_GATE\((\w+),", open(os.path.join(ROOT, "gates", "gates.def")).read(),
                       re.M)) | {"exact", "run_to_run"}
CLASSES = {"nonfinite", "fp16_accumulation", "reduced_precision", "other_shapes", "layouts",
           "nondeterminism", "mutated_input", "wrong_value", "out_of_bounds"}
FAMILIES = {"activation", "matmul", "convolution", "pooling", "normalization", "reduction", "loss"}


def _manifest():
    with open(os.path.join(CORPUS, "manifest.json")) as f:
        return json.load(f)["candidates"]


def _files():
    return sorted(os.path.relpath(p, CORPUS) for p in glob.glob(os.path.join(CORPUS, "*", "*.py"))
                  if os.path.basename(p) != "reference.py" and
                  os.path.isfile(os.path.join(os.path.dirname(p), "reference.py")))


def test_every_candidate_has_a_row_and_every_row_a_file():
    rows = _manifest()
    names = [r["candidate"] for r in rows]
    assert len(names) == len(set(names)), "a candidate listed twice"
    assert set(names) == set(_files()), (set(names) ^ set(_files()))
    assert len(rows) >= 60
    for r in rows:
        assert r["verdict"] in ("clean", "broken", "unjudged", "partial", "error"), r
        assert r["lang"] in ("cuda", "triton") and r["family"] in FAMILIES, r
        if r["verdict"] == "broken":
            assert r["gate"] in GATES and r["class"] in CLASSES and r["bug"], r
        else:
            assert "gate" not in r, r
    assert {r["family"] for r in rows} == FAMILIES
    assert {r["class"] for r in rows if r["verdict"] == "broken"} >= CLASSES - {"wrong_value"}
    assert sum(1 for r in rows if r["lang"] == "triton") >= 15
    # each family has a correct candidate and a planted bug
    for fam in FAMILIES:
        got = {r["verdict"] for r in rows if r["family"] == fam}
        assert "broken" in got and got & {"clean", "unjudged"}, (fam, got)


def test_candidates_are_kernelbench_files_reaching_their_kernels():
    bound = set(re.findall(r'm\.def\("(\w+)"', open(os.path.join(CORPUS, "_ext", "bindings.cpp")).read()))
    defined = set()
    for cu in glob.glob(os.path.join(CORPUS, "_ext", "*.cu")):
        defined |= set(re.findall(r"^at::Tensor (\w+)\(", open(cu).read(), re.M))
    assert bound == defined, bound ^ defined
    for r in _manifest():
        src = open(os.path.join(CORPUS, r["candidate"])).read()
        tree = ast.parse(src)
        assert any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body), r
        if r["lang"] == "cuda":
            assert "from gpu_ext import ext" in src, r
            called = set(re.findall(r"\bext\.(\w+)\(", src))
            assert called and called <= bound, (r, called - bound)
        else:
            assert "@triton.jit" in src and "load_inline" not in src, r


def test_references_trace_to_the_tiers_the_rows_assume():
    """On the CPU here: a row expecting a gate that needs the contract
    (oracle, nonfinite, precision, extremes, shapes, layouts) sits in a
    tier-A task, 'exact' in a tier-C one, 'unjudged' in a composition."""
    pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")
    from kcheck.audit.task import Task
    from kcheck.audit.trace import Trace
    tiers = {}
    for ref in sorted(glob.glob(os.path.join(CORPUS, "*", "reference.py"))):
        t = Task(ref)
        tr = Trace(t.build("cpu").eval(), t.inputs(0))
        # an op the binding judges on CUDA only (gelu's erf form: ATen's
        # vectorized CPU erf has no documented accuracy) is tier A there
        cuda_only = tr.tier == "composition" and "CPU" in (tr.reason or "")
        tiers[os.path.basename(os.path.dirname(ref))] = "A" if cuda_only else tr.tier
    contract = {"oracle", "nonfinite", "precision", "extremes", "shapes", "layouts"}
    for r in _manifest():
        tier = tiers[r["candidate"].split("/")[0]]
        if r.get("gate") in contract or r["verdict"] == "clean":
            assert tier in ("A", "C"), (r, tier)
        if r.get("gate") in contract:
            assert tier == "A", (r, tier)
        if r.get("gate") == "exact":
            assert tier == "C", (r, tier)
        if r["verdict"] == "unjudged":
            assert tier == "composition", (r, tier)
    assert tiers["max_pool2d"] == "C" and tiers["amax"] == "C"
    assert tiers["conv2d"] == "A" and tiers["avg_pool2d"] == "A" and tiers["nll_loss"] == "A"


def _records(rows, tweak=None):
    """audit.jsonl records and allclose results as the manifest expects
    them (tweak(row, record, allclose) may change them)."""
    recs, ac = [], {}
    for m in rows:
        path = os.path.join(CORPUS, m["candidate"])
        r = {"type": "audit_candidate", "schema": "kcheck.audit/1", "candidate": path,
             "task": os.path.join(os.path.dirname(path), "reference.py"), "verdict": m["verdict"],
             "failed": [m["gate"]] if m.get("gate") else [], "cost_s": {"audit": 10.0},
             "evidence": [{"gate": m["gate"], "message": "planted",
                           "exposed_by": {"generator": m.get("exposed_by"), "inputs": "generated"}}]
             if m.get("gate") else []}
        a = {"allclose": True, "ratio": 0.5 if m.get("gate") else 1e-5, "seconds": 1.0, "error": None}
        if tweak:
            tweak(m, r, a)
        recs.append(r)
        ac[path] = a
    return recs, ac


def test_summarizer_passes_what_the_manifest_expects(tmp_path):
    rows = _manifest()
    recs, ac = _records(rows)
    (tmp_path / "audit.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "allclose.json").write_text(json.dumps(ac))
    out = tmp_path / "summary.md"
    rc = summarize_audit.main(["--corpus", CORPUS, "--audit", str(tmp_path / "audit.jsonl"),
                               "--allclose", str(tmp_path / "allclose.json"),
                               "--times", "build=60,audit=200", "-o", str(out)])
    text = out.read_text()
    assert rc == 0, text
    assert text.count("PASS: ") == 5 and "FAIL" not in text
    n = sum(1 for m in rows if m["verdict"] == "broken")
    assert "caught by its gate (%d/%d)" % (n, n) in text
    assert "median 10.0 s" in text and "build 60 s" in text
    table = [ln for ln in text.splitlines() if ln.startswith("| ") and "/" in ln.split("|")[1]]
    assert len(table) == len(rows)
    relu = [ln for ln in table if "relu/cuda_nan_swallowed.py" in ln][0]
    assert "broken (nonfinite)" in relu and "yes (0.5)" in relu


def test_summarizer_fails_on_a_miss_a_false_flag_and_an_allclose_reject(tmp_path):
    rows = _manifest()

    def tweak(m, r, a):
        if m["candidate"] == "relu/cuda_nan_swallowed.py":   # missed
            r.update(verdict="clean", failed=[], evidence=[])
        if m["candidate"] == "relu/cuda_correct.py":         # a false flag
            r.update(verdict="broken", failed=["layouts"],
                     evidence=[{"gate": "layouts", "message": "a false flag"}])
        if m["candidate"] == "sum/cuda_atomic.py":           # allclose rejects it
            a.update(allclose=False, ratio=3.2)
        if m["candidate"] == "amax/cuda_nan_swallowed.py":   # caught by another input
            r["evidence"][0]["exposed_by"] = {"inputs": "task"}
        if m["candidate"] == "conv2d/cuda_correct.py":       # silent, but partial
            r.update(verdict="partial", reason="undecided gates: precision")
    recs, ac = _records(rows, tweak)
    recs = [r for r in recs if not r["candidate"].endswith("mse_loss/cuda_atomic.py")]  # not run
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (tmp_path / "ac.json").write_text(json.dumps(ac))
    out = tmp_path / "s.md"
    rc = summarize_audit.main(["--corpus", CORPUS, "--audit", str(tmp_path / "a.jsonl"),
                               "--allclose", str(tmp_path / "ac.json"), "-o", str(out)])
    text = out.read_text()
    assert rc == 1
    lines = [ln for ln in text.splitlines() if ln.startswith(("PASS", "FAIL"))]
    bug_line, good_line, verdict_line, ac_line, _ = lines
    assert bug_line.startswith("FAIL") and "relu/cuda_nan_swallowed.py" in bug_line
    assert "amax/cuda_nan_swallowed.py" in bug_line and "mse_loss/cuda_atomic.py" in bug_line
    assert good_line.startswith("FAIL") and "relu/cuda_correct.py" in good_line
    assert "conv2d" not in good_line
    assert verdict_line.startswith("FAIL") and "conv2d/cuda_correct.py" in verdict_line
    assert ac_line.startswith("FAIL") and "sum/cuda_atomic.py" in ac_line
    assert "false flag: layouts" in text and "## Evidence where" in text
