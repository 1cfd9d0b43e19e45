"""kcheck audit on the CPU corpus (test/audit): every planted bug caught
by the gate its manifest names, every correct candidate clean, the
composition task unjudged, the candidate that raises an error, the ones
that cache a weight copy at __init__ or whose parameters are not aligned
judged with the weights as constants (and at the shapes of the dims
no weight has), the one whose weights match nothing partial; the
layouts gate's empty variant against the reference's result there; the
audit.jsonl schema and the exit statuses. Tasks whose reference views its
input before its one op (test/audit_views) run apart, as a small run of
their own.

The binding judges CPU tensors here (the audit's --device cpu sets
torch_devices=cuda,cpu) on the CPU stand-in driver, as test_torch.py does;
the CUDA path (load_inline and Triton candidates) is not tested here.
The whole corpus runs once (about 1.5 minutes on 2 cores, --jobs 2)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, FAKECUDA, ROOT

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

LIB = os.path.join(BUILD, "libkcheck.so")
PY = os.path.join(ROOT, "python")
CORPUS = os.path.join(ROOT, "test", "audit")
sys.path.insert(0, PY)


def audit(out, *paths, extra=()):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KCHECK_", "FAKECUDA_", "PYTHONPATH", "LD_PRELOAD"))}
    env["LD_LIBRARY_PATH"] = FAKECUDA
    env["PYTHONPATH"] = PY
    cmd = [sys.executable, "-m", "kcheck", "--lib", LIB, "audit", "--device", "cpu",
           "-o", str(out)] + list(extra) + list(paths)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    recs = []
    jl = os.path.join(str(out), "audit.jsonl")
    if os.path.exists(jl):
        with open(jl) as f:
            recs = [json.loads(line) for line in f]
    return p, recs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("audit")
    return audit(out, CORPUS, extra=["--jobs", "2", "--timeout", "300"])


def _manifest():
    with open(os.path.join(CORPUS, "manifest.json")) as f:
        return json.load(f)["candidates"]


def test_every_planted_bug_caught_by_its_gate_every_correct_candidate_clean(corpus):
    p, recs = corpus
    got = {os.path.relpath(r["candidate"], CORPUS): r for r in recs
           if r["type"] == "audit_candidate"}
    want = _manifest()
    assert set(got) == {m["candidate"] for m in want}, (set(got), p.stderr[-2000:])
    wrong = []
    for m in want:
        r = got[m["candidate"]]
        if r["verdict"] != m["verdict"] or (m.get("gate") and m["gate"] not in r["failed"]) or \
                (m.get("weights") and m["weights"] != r["weights"]) or \
                (m.get("stage") and m["stage"] != (r.get("error") or {}).get("stage")):
            wrong.append((m["candidate"], m, r["verdict"], r["failed"], r.get("error")))
    assert not wrong, wrong
    # tier C's bitwise check on the task's inputs and on the specials generator
    for m in want:
        if m.get("exposed_by"):
            ev = [e for e in got[m["candidate"]]["evidence"] if e["gate"] == m["gate"]]
            how = ev[0]["exposed_by"]
            assert (how.get("generator") or how["inputs"]) == m["exposed_by"], (m, ev)
    # each planted bug passes KernelBench's allclose at the task's inputs:
    # the audit finds what that check does not
    for m in want:
        if m["verdict"] == "broken":
            assert got[m["candidate"]]["allclose"] is True, m


def test_corpus_covers_the_tiers_and_families(corpus):
    _, recs = corpus
    tasks = {os.path.basename(os.path.dirname(r["task"])): r for r in recs
             if r["type"] == "audit_task"}
    assert len(tasks) >= 12
    assert tasks["cat"]["tier"] == "C"
    assert tasks["rms_norm"]["tier"] == "composition"
    assert "aten::rsqrt.default" in tasks["rms_norm"]["reason"]
    tier_a = {n: t["contract"]["op"] for n, t in tasks.items() if t["tier"] == "A"}
    assert {"relu", "softmax", "log_softmax", "matmul", "layer_norm", "sum", "mean",
            "nll_loss", "linear", "gemm_relu"} <= set(tier_a)
    # the contract is the reference's own op, with its parameters as arguments
    ln = tasks["layer_norm"]["contract"]
    assert ln["torch_op"] == "kcheck_audit::candidate" and ln["op"] == "layer_norm"
    assert ln["args"] == {"x": "in0", "weight": "p_ln_weight", "bias": "p_ln_bias"}
    assert ln["profile"].endswith(":norm=welford")
    assert tasks["softmax"]["contract"]["attrs"] == {"axis": 1}
    assert tasks["mean_dim0"]["contract"]["attrs"] == {"axis": 0}
    # nn.Linear: addmm of the transposed weight and the expanded bias,
    # folded into one matmul contract
    lin = tasks["linear"]["contract"]
    assert (lin["op"], lin["args"], lin["attrs"]) == (
        "matmul", {"a": "in0", "b": "p_linear_weight", "bias": "p_linear_bias"}, {"transpose_b": True})
    # and a relu after it, the matmul's epilogue
    assert tasks["gemm_relu"]["contract"]["attrs"] == {"transpose_b": True, "activation": "relu"}


def test_generated_contracts_pass_lint(corpus):
    _, recs = corpus
    files = [r["contract_file"] for r in recs if r["type"] == "audit_task" and r.get("contract")]
    assert files
    r = subprocess.run([sys.executable, "-m", "kcheck", "--lib", LIB, "contract", "lint"] + files,
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PY))
    assert r.returncode == 0, r.stderr


def test_jsonl_schema_table_and_exit_status(corpus):
    p, recs = corpus
    assert p.returncode == 1, p.stderr[-2000:]  # broken candidates
    assert all(r.get("schema") == "kcheck.audit/1" for r in recs)
    assert [r["type"] for r in recs][-1] == "audit_summary"
    assert recs[0]["type"] == "audit_task"
    for r in recs:
        if r["type"] == "audit_candidate":
            assert r["verdict"] in ("clean", "partial", "broken", "error", "unjudged")
            for k in ("task", "candidate", "tier", "failed", "allclose"):
                assert k in r, (k, r)
            if r["verdict"] == "broken":
                ev = r["evidence"][0]
                assert ev["gate"] in r["failed"] and ev["message"]
                assert ev["line"].startswith(os.path.basename(r["candidate"]) + ":")
            if r["verdict"] in ("clean", "broken") and r["tier"] == "A":
                assert r["gates"]["oracle"]["status"] in ("pass", "bitwise", "fail")
    s = recs[-1]
    cands = [r for r in recs if r["type"] == "audit_candidate"]
    assert s["candidates"] == len(cands)
    assert sum(s["by_verdict"].values()) == len(cands)
    assert s["allclose_pass_broken"] == sum(1 for r in cands
                                            if r["verdict"] == "broken" and r["allclose"])
    # one table line per candidate, its verdict beside its name
    for r in cands:
        line = [ln for ln in p.stdout.splitlines()
                if ln.split()[:2] == [os.path.basename(r["candidate"]), r["verdict"]]]
        assert line, (r["candidate"], p.stdout)
    # audit.html beside audit.jsonl: every candidate, its verdict, and a
    # broken one's evidence line
    where = [ln for ln in p.stdout.splitlines() if ln.startswith("kcheck: audit: ")][0]
    page = open(where.split(", ")[-1]).read()
    for r in cands:
        assert "<code>%s</code>" % os.path.basename(r["candidate"]) in page
        if r["verdict"] == "broken":
            assert r["evidence"][0]["line"] in page, r
    assert "broken though KernelBench's allclose passed: <b>%d</b>" % s["allclose_pass_broken"] in page


def test_exit_status_clean_unjudged_and_usage(tmp_path):
    relu = os.path.join(CORPUS, "relu")
    p, recs = audit(tmp_path / "a", os.path.join(relu, "reference.py"),
                    os.path.join(relu, "correct.py"), extra=["--junit", str(tmp_path / "j.xml")])
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    assert '<testcase name="correct.py"' in (tmp_path / "j.xml").read_text()
    assert [r["verdict"] for r in recs if r["type"] == "audit_candidate"] == ["clean"]
    rms = os.path.join(CORPUS, "rms_norm")
    p, recs = audit(tmp_path / "b", os.path.join(rms, "reference.py"),
                    os.path.join(rms, "correct.py"))
    assert p.returncode == 5, p.stdout + p.stderr[-2000:]
    p, _ = audit(tmp_path / "c", os.path.join(rms, "reference.py"),
                 os.path.join(rms, "correct.py"), extra=["--allow-unchecked"])
    assert p.returncode == 0
    p, _ = audit(tmp_path / "d", str(tmp_path / "missing"))
    assert p.returncode == 2 and "expected TASK.py" in p.stderr


def test_function_candidate(tmp_path):
    """A candidate given as file:function is called with the task's inputs."""
    f = tmp_path / "ext.py"
    f.write_text("import torch\n\n\ndef relu_ok(x):\n    return torch.clamp(x, min=0.0)\n\n\n"
                 "def relu_nan(x):\n    return torch.where(x > 0, x, torch.zeros_like(x))\n")
    relu = os.path.join(CORPUS, "relu")
    p, recs = audit(tmp_path / "out", os.path.join(relu, "reference.py"), "%s:relu_ok" % f,
                    "%s:relu_nan" % f, extra=["--jobs", "2"])
    got = {r["candidate"].rsplit(":", 1)[1]: r for r in recs if r["type"] == "audit_candidate"}
    assert got["relu_ok"]["verdict"] == "clean", (got["relu_ok"], p.stderr[-2000:])
    assert got["relu_nan"]["verdict"] == "broken" and "nonfinite" in got["relu_nan"]["failed"]
    assert os.path.isdir(tmp_path / "out" / "relu" / "ext_relu_ok")
    assert p.returncode == 1


def test_nonfinite_judges_every_specials_row_kind(tmp_path):
    """silu as x e^x / (1 + e^x): NaN at +Inf. The trial's judgment
    samples rows of the [16, 1024] output; the specials generator's +Inf
    and -Inf rows must be among them (rows 0, 5, 10, 15 were not)."""
    f = tmp_path / "ratio.py"
    f.write_text("import torch\n\n\ndef silu_ratio(x):\n    e = torch.exp(x)\n"
                 "    return x * e / (1 + e)\n")
    silu = os.path.join(CORPUS, "silu")
    p, recs = audit(tmp_path / "out", os.path.join(silu, "reference.py"), "%s:silu_ratio" % f)
    c = [r for r in recs if r["type"] == "audit_candidate"][0]
    assert c["verdict"] == "broken" and "nonfinite" in c["failed"], (c, p.stderr[-2000:])
    ev = [e for e in c["evidence"] if e["gate"] == "nonfinite"][0]
    assert "kernel=-nan exact=inf" in ev["message"] or "exact=inf" in json.dumps(ev), ev


LAYOUT_CANDIDATES = """import torch
import torch.nn.functional as F


def relu_ok(x):
    return torch.clamp(x, min=0.0)


def relu_rows_packed(x):
    # the bug: a last-dim stride of 1 taken to mean packed rows; an
    # expanded input's rows share one row's storage
    if x.stride(-1) != 1:
        x = x.contiguous()
    return torch.clamp(x.as_strided(x.shape, (x.shape[-1], 1), x.storage_offset()), min=0.0)


def relu_fp32_only(x):
    if x.dtype != torch.float32:
        raise RuntimeError("relu_fp32_only: expected float32")
    return torch.clamp(x, min=0.0)


def silu_ok(x):
    return F.silu(x)


def silu_in_fp32(x):
    # the bug: computed in float32 whatever the dtype
    return F.silu(x.float()).to(x.dtype)
"""


def test_layouts_expanded_and_dtypes_and_profile(tmp_path):
    """The layouts gate's expanded and dtype variants on the wrapper op,
    and --profile. A candidate that takes a last-dim stride of 1 for packed
    rows fails the expanded variant; one computing in float32 whatever the
    dtype fails float64 (judged at the reference's fp64 profile, not
    --profile's); one refusing other dtypes is unsupported there, listed;
    the correct ones are clean with every variant judged. --profile's
    spec is the contract's (contract.yaml, audit_task, the binding's
    op_check), the derived one recorded beside it; an unknown preset is a
    usage error naming the known ones, before anything runs."""
    f = tmp_path / "cands.py"
    f.write_text(LAYOUT_CANDIDATES)
    d = tmp_path / "runs"
    d.mkdir()
    rows = [("relu", n) for n in ("relu_ok", "relu_rows_packed", "relu_fp32_only")] + \
        [("silu", n) for n in ("silu_ok", "silu_in_fp32")]
    (d / "audit.jsonl").write_text("".join(
        json.dumps({"task": os.path.join(CORPUS, t, "reference.py"), "candidate": "%s:%s" % (f, n)})
        + "\n" for t, n in rows))
    p, recs = audit(tmp_path / "out", str(d), extra=["--jobs", "2", "--profile", "fp32:math=fast"])
    got = {r["candidate"].rsplit(":", 1)[1]: r for r in recs if r["type"] == "audit_candidate"}
    assert sorted(got) == sorted(n for _, n in rows), p.stderr[-3000:]
    verdicts = {n: (r["verdict"], r["failed"]) for n, r in got.items()}
    assert verdicts == {"relu_ok": ("clean", []), "relu_rows_packed": ("broken", ["layouts"]),
                        "relu_fp32_only": ("clean", []), "silu_ok": ("clean", []),
                        "silu_in_fp32": ("broken", ["layouts"])}, (verdicts, p.stderr[-3000:])

    def runs(name):
        return {r["variant"]: r for r in got[name]["gates"]["layouts"]["runs"]}
    dtypes = ("float16", "bfloat16", "float64")
    for name in ("relu_ok", "silu_ok"):
        assert all(runs(name)[v]["class"] in ("pass", "bitwise") for v in ("expanded",) + dtypes)
    # (each of the task's three calls is checked: a violation each)
    assert {e["gate"] for e in got["relu_rows_packed"]["evidence"]} == {"layouts"}
    ev = got["relu_rows_packed"]["evidence"][0]
    assert ev["exposed_by"]["variant"] == "expanded" and ev["worst"]["verdict"] == "fail_special"
    assert ev["exposed_by"]["layout"]["strides"] == [0, 1]
    assert [runs("relu_rows_packed")[v]["class"] for v in ("transposed", "strided", "offset1")] \
        == ["bitwise"] * 3
    ev = got["silu_in_fp32"]["evidence"][0]
    assert ev["exposed_by"]["variant"] == "float64" and ev["worst"]["profile"] == "fp64", ev
    assert ev["line"].startswith("cands.py:")
    only = got["relu_fp32_only"]["gates"]["layouts"]
    assert only["unsupported"] == 3 and [runs("relu_fp32_only")[v]["class"] for v in dtypes] == \
        ["unsupported"] * 3
    # listed, not a failure, unless --strict
    from kcheck.audit.driver import exit_status
    assert exit_status([got["relu_fp32_only"]]) == 0
    assert exit_status([got["relu_fp32_only"]], strict=True) == 1
    assert exit_status([got["relu_ok"]], strict=True) == 0
    # --profile: the contract's at the task's dtype, PyTorch's recorded beside it
    for t in (r for r in recs if r["type"] == "audit_task"):
        assert t["contract"]["profile"] == "fp32:math=fast", t
        assert t["profile_derived"] == "fp32:in=fp32:acc=fp32:out=fp32", t
        assert t["dtypes"]["float64"] == {"profile": "fp64", "out": "float64"}, t
        assert not t["dtypes_refused"], t
        assert 'profile: "fp32:math=fast"' in open(t["contract_file"]).read()
    from kcheck.report import read_records
    checks = [c for r in got["relu_ok"]["reports"] for c in read_records(r)
              if c.get("type") == "op_check" and c.get("op") == "kcheck_audit::candidate.default"]
    assert checks and {c["profile"] for c in checks} == {"fp32:math=fast"}, checks
    p, recs = audit(tmp_path / "bad", str(d), extra=["--profile", "tf16"])
    assert p.returncode == 2 and not recs, p.stderr
    assert "--profile tf16: unknown preset 'tf16'" in p.stderr and "tensorcore_tf32" in p.stderr


def test_bounds_not_run_on_the_cpu_device(corpus):
    """The bounds gate's guard zones are around CUDA allocations (the
    guard-zone allocator, kcheck.torch.guards): on the CPU device every
    judged candidate's gate is `not run`, with the reason, never a pass."""
    _, recs = corpus
    judged = [r for r in recs if r["type"] == "audit_candidate" and r["verdict"] != "error"]
    assert judged
    for r in judged:
        b = r["gates"].get("bounds")
        assert b and b["status"] == "not run", (r["candidate"], b)
        assert b["reason"] == "the device is cpu: the guard zones are around CUDA allocations", b
        assert "bounds" not in r["failed"], r


def test_bounds_left_out_keeps_pytorchs_allocator(tmp_path):
    """`--option gates=...` without bounds: the guard-zone allocator is not
    installed (a way out where it does not suit a program), and the gate
    says why it did not run."""
    task = os.path.join(CORPUS, "gelu")
    cands = sorted(f for f in os.listdir(task) if f != "reference.py" and f.endswith(".py"))
    p, recs = audit(tmp_path / "out", os.path.join(task, "reference.py"),
                    os.path.join(task, cands[0]),
                    extra=["--option", "gates=oracle,immutability,coverage"])
    judged = [r for r in recs if r["type"] == "audit_candidate"]
    assert judged, p.stderr
    b = judged[0]["gates"]["bounds"]
    assert b["status"] == "not run" and "not among the gates" in b["reason"], b


def test_bounds_damage_is_a_broken_candidate():
    """A guard zone changed (kcheck_guard_check's JSON, attributed to the
    tensor whose storage it is): the gate fails with the tensor, its
    shape, the side and distance and the bytes written, and the candidate
    is broken; a damaged allocation no tensor holds is named by its size;
    a check the driver failed leaves the gate undecided (partial)."""
    import torch
    from kcheck.audit.verdict import judge
    from kcheck.torch import guards
    out, x = torch.zeros(4, 8), torch.zeros(16)
    past = {"ptr": out.untyped_storage().data_ptr(), "size": 128, "side": "after_end",
            "bytes_past_end": 0, "changed_bytes_before": 0, "changed_bytes_after": 4,
            "written": "00000000cbcbcbcbcbcbcbcbcbcbcbcb", "freed": False}
    before = {"ptr": 12345, "size": 4096, "side": "before_start", "bytes_before_start": 4,
              "changed_bytes_before": 4, "changed_bytes_after": 0, "written": "11111111",
              "freed": True}
    tensors = {"input 0": x, "output": out}
    ev = [guards.attribute(d, tensors) for d in (past, before)]
    assert ev[0]["tensor"] == "output" and ev[0]["shape"] == [4, 8] and ev[0]["dtype"] == "float32"
    assert ev[0]["bytes_past_end"] == 0 and ev[0]["written"].startswith("00000000"), ev
    assert ev[1]["tensor"] == "an allocation of 4096 bytes no input or output holds " \
        "(freed before the check)", ev
    base = {"allclose": True, "immutability": [], "exact": None, "error": None, "weights": None,
            "run_to_run": {"status": "pass", "calls": 3}}
    ok = {"op": "kcheck_audit::candidate.default", "type": "op_check",
          "gates": {"oracle": {"status": "pass"},
                    "bounds": {"status": "not_applicable", "reason": "no out= overload"}}}
    bounds = {"status": "fail", "checks": 2, "damaged": 2, "evidence": ev}
    verdict, f = judge("A", dict(base, bounds=bounds), [ok])
    assert verdict == "broken" and f["failed"] == ["bounds"], f
    assert f["gates"]["bounds"] == {"status": "fail", "checks": 2, "damaged": 2}, f["gates"]
    msgs = [e["message"] for e in f["evidence"] if e["gate"] == "bounds"]
    assert msgs[0] == "the candidate wrote outside a tensor: 4 guard bytes changed past the end " \
        "of output (shape (4, 8), float32, 128 bytes) (the first at end + 0); bytes written " \
        "from there: 00000000cbcbcbcbcbcbcbcbcbcbcbcb", msgs
    assert "before the start of an allocation of 4096 bytes" in msgs[1], msgs
    # intact zones: the gate passes; a driver failure: undecided
    verdict, f = judge("A", dict(base, bounds={"status": "pass", "checks": 4, "damaged": 0,
                                               "evidence": []}), [ok])
    assert verdict == "clean" and f["gates"]["bounds"]["status"] == "pass", f
    verdict, f = judge("A", dict(base, bounds={"status": "error", "reason": "reading the guard "
                                               "zones failed", "checks": 0}), [ok])
    assert verdict == "partial" and "bounds" in f["reason"], f


def test_bounds_checks_in_the_child(monkeypatch):
    """The child's check after a call (child._check_bounds, guards.check
    stubbed): the held tensors' damage first, a temporary's said to come
    from the calls' runs, every damaged allocation counted; a failed read
    is error, unless the gate had already failed; not run stays not run."""
    import torch
    from kcheck.audit import child
    from kcheck.torch import guards
    out = torch.zeros(16)
    tmp = {"ptr": 99, "size": 64, "side": "after_end", "bytes_past_end": 0,
           "changed_bytes_before": 0, "changed_bytes_after": 4, "written": "00", "freed": True}
    held = dict(tmp, ptr=out.untyped_storage().data_ptr(), freed=False)
    monkeypatch.setattr(guards, "check", lambda: (2, [tmp, held]))
    res = {"bounds": child._install_guards("cpu")}
    assert res["bounds"]["status"] == "not run", res
    child._check_bounds(res, {"inputs": "task", "seed": 0}, {"output": out})
    assert res["bounds"]["status"] == "not run" and "evidence" not in res["bounds"], res
    res = {"bounds": {"status": "pass", "checks": 0, "damaged": 0, "evidence": []}}
    child._check_bounds(res, {"inputs": "task", "seed": 0}, {"output": out})
    b = res["bounds"]
    assert b["status"] == "fail" and b["checks"] == 1 and b["damaged"] == 2, b
    assert [e["tensor"] for e in b["evidence"]] == [
        "output", "an allocation of 64 bytes no input or output holds (freed before the check)"]
    assert b["evidence"][0]["exposed_by"] == {"inputs": "task", "seed": 0}, b
    assert "generated, shape and layout runs" in b["evidence"][1]["exposed_by"]["note"], b

    def fails():
        raise guards.CheckError("reading the guard zones failed: {\"error\":700}")
    monkeypatch.setattr(guards, "check", fails)
    child._check_bounds(res, {"inputs": "run to run, specials"}, {})
    assert res["bounds"]["status"] == "fail", res
    res = {"bounds": {"status": "pass", "checks": 1, "damaged": 0, "evidence": []}}
    child._check_bounds(res, {"inputs": "run to run, specials"}, {})
    assert res["bounds"]["status"] == "error" and "700" in res["bounds"]["reason"], res


def test_cudnn_benchmark_off_under_the_guard_allocator(monkeypatch):
    """cuDNN's benchmark mode asks the allocator for cacheInfo, which
    CUDAPluggableAllocator refuses: under the guard-zone allocator the
    child turns it off and says so in the gate's entry; otherwise it is
    left alone."""
    import torch
    from kcheck.audit import child
    from kcheck.torch import guards
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", True)
    res = {"bounds": {"status": "not run", "reason": "cpu"}}
    child._cudnn_benchmark_off(res)
    assert torch.backends.cudnn.benchmark and "note" not in res["bounds"]
    monkeypatch.setattr(guards, "active", lambda: True)
    res = {"bounds": {"status": "pass", "checks": 0, "damaged": 0, "evidence": []}}
    child._cudnn_benchmark_off(res)
    assert not torch.backends.cudnn.benchmark and "cacheInfo" in res["bounds"]["note"], res


def test_reference_function_inputs_and_init(tmp_path):
    """--reference/--inputs/--init: a task built around functions; a
    function candidate gets the init values after the inputs too."""
    f = tmp_path / "fns.py"
    f.write_text("import torch\n\n\ndef ref(x, lo):\n    return torch.clamp(x, min=lo)\n\n\n"
                 "def inputs():\n    return [torch.randn(16, 256)]\n\n\n"
                 "def init():\n    return [0.0]\n\n\n"
                 "def ok(x, lo):\n    return torch.clamp(x, min=lo)\n\n\n"
                 "def nan_lost(x, lo):\n    return torch.where(x > lo, x, torch.full_like(x, lo))\n")
    p, recs = audit(tmp_path / "out", extra=["--reference", "%s:ref" % f, "--inputs", "%s:inputs" % f,
                                             "--init", "%s:init" % f, "--candidate", "%s:ok" % f,
                                             "--candidate", "%s:nan_lost" % f])
    got = {r["candidate"].rsplit(":", 1)[1]: r for r in recs if r["type"] == "audit_candidate"}
    assert got["ok"]["verdict"] == "clean", (got, p.stderr[-3000:])
    assert got["nan_lost"]["verdict"] == "broken" and "nonfinite" in got["nan_lost"]["failed"], got
    assert recs[0]["task"].endswith(os.path.join("tasks", "ref.py")) and recs[0]["tier"] == "A"
    p, _ = audit(tmp_path / "bad", extra=["--reference", "%s:ref" % f, "--candidate", "%s:ok" % f])
    assert p.returncode == 2 and "--inputs" in p.stderr


def test_manifest_directory(tmp_path):
    """DIR/audit.jsonl rows {task, candidate}, relative to DIR; an audit's
    own output is refused as a manifest."""
    from kcheck.audit.driver import discover
    relu = os.path.join(CORPUS, "relu")
    d = tmp_path / "runs"
    d.mkdir()
    (d / "audit.jsonl").write_text(
        json.dumps({"task": os.path.relpath(os.path.join(relu, "reference.py"), d),
                    "candidate": os.path.relpath(os.path.join(relu, "correct.py"), d)}) + "\n" +
        json.dumps({"task": os.path.join(relu, "reference.py"),
                    "candidate": os.path.join(relu, "nan_swallowed.py")}) + "\n")
    pairs = discover([str(d)])
    assert len(pairs) == 1 and [os.path.basename(c) for c in pairs[0][1]] == \
        ["correct.py", "nan_swallowed.py"], pairs
    (d / "audit.jsonl").write_text(json.dumps({"type": "audit_task", "task": "x"}) + "\n")
    with pytest.raises(ValueError, match="not a manifest"):
        discover([str(d)])
    (d / "audit.jsonl").write_text(json.dumps({"task": "missing.py", "candidate": "c.py"}) + "\n")
    with pytest.raises(ValueError, match="no such file"):
        discover([str(d)])


def test_timeout_ends_the_candidate_only(tmp_path):
    f = tmp_path / "slow.py"
    f.write_text("import time\n\n\ndef hangs(x):\n    time.sleep(600)\n")
    relu = os.path.join(CORPUS, "relu")
    p, recs = audit(tmp_path / "out", os.path.join(relu, "reference.py"), "%s:hangs" % f,
                    extra=["--timeout", "20"])
    (r,) = [r for r in recs if r["type"] == "audit_candidate"]
    assert r["verdict"] == "error" and r["error"]["stage"] == "timeout", r
    assert p.returncode == 1 and "error" in p.stdout


def test_tiers_of_the_corpus_traced_without_kcheck():
    """The tracer alone, in this process: the tier and contract of each
    reference (no run under kcheck)."""
    from kcheck.audit.task import Task
    from kcheck.audit.trace import Trace, contract_yaml
    tiers = {}
    for name in sorted(os.listdir(CORPUS)):
        ref = os.path.join(CORPUS, name, "reference.py")
        if os.path.isfile(ref):
            t = Task(ref)
            tr = Trace(t.build("cpu"), t.inputs(0))
            tiers[name] = tr.tier
            if tr.contract:
                y = contract_yaml(tr.contract)
                assert y.startswith("contracts:\n  - {torch_op: \"kcheck_audit::candidate\"")
    assert tiers["cat"] == "C" and tiers["rms_norm"] == "composition"
    assert sum(1 for t in tiers.values() if t == "A") == 14, tiers


def test_weights_as_constants_and_the_caching_probe(corpus):
    """A copy of a weight derived at __init__ (transposed, fp16) is found
    by the caching probe and the candidate judged with the weights as
    constants: the correct one silent with every value gate judged, the
    fp16 one caught by precision; parameters under other names aligned
    by value; a fused buffer (not aligned) judged with its LayerNorm's
    values given to the reference; weights that match nothing partial,
    with the reference's tensor named. The probe and the matching
    themselves, in this process, without kcheck."""
    import torch
    from kcheck.audit import task as tk
    _, recs = corpus
    got = {os.path.relpath(r["candidate"], CORPUS): r for r in recs
           if r["type"] == "audit_candidate"}
    for name, verdict in (("linear/cached_transposed_weight.py", "clean"),
                          ("linear/fp16_cached_weight.py", "broken")):
        r = got[name]
        assert (r["verdict"], r["weights"], r["cached"]) == (verdict, "constants",
                                                             ["linear.weight"]), r
        assert r["weights_reason"].startswith("cached copy:") and \
            "judged with the weights as constants" in r["weights_reason"], r
        # judged by the binding, on generated inputs too, not let through
        for g in ("oracle", "nonfinite", "precision", "extremes", "coverage", "layouts"):
            assert r["gates"][g]["status"] in (("pass", "bitwise") if verdict == "clean"
                                               else ("pass", "bitwise", "fail")), (g, r["gates"])
    assert "precision" in got["linear/fp16_cached_weight.py"]["failed"]
    fused = got["layer_norm/fused_buffer.py"]
    assert (fused["verdict"], fused["weights"]) == ("clean", "constants"), fused
    assert fused["weights_reason"].startswith("not aligned:") and \
        fused["gates"]["oracle"]["status"] in ("pass", "bitwise"), fused
    own = got["layer_norm/own_parameter_names.py"]
    assert (own["verdict"], own["weights"]) == ("clean", "value") and "weights_reason" not in own
    assert got["linear/correct.py"]["weights"] == "name" and \
        "shapes" in got["linear/correct.py"]["gates"]
    un = got["layer_norm/unaligned_parameters.py"]
    assert un["verdict"] == "partial" and "oracle" not in un["gates"], un
    assert "reference's ln.weight" in un["reason"] and "cannot be given its weights" in un["reason"]

    def built(task, cand):
        t = tk.Task(os.path.join(CORPUS, task, "reference.py"))
        ref = t.build("cpu").eval()
        m = tk.Candidate(os.path.join(CORPUS, task, cand)).build(t, "cpu").eval()
        snap = tk.snapshot(m)
        how, names = tk.align(ref, m)
        return t, ref, m, snap, how, names
    for cand, cached in (("correct.py", []), ("fp16_accumulation.py", []),
                         ("cached_transposed_weight.py", ["linear.weight"])):
        t, ref, m, _, how, names = built("linear", cand)
        assert how == "name" and tk.probe_cached(ref, m, names, t.inputs(0)) == cached, cand
    _, ref, m, snap, how, _ = built("layer_norm", "unaligned_parameters.py")
    matched, unmatched = tk.match_values(ref, snap)
    assert how == "constants" and sorted(matched) == ["ln.bias"] and unmatched == ["ln.weight"]
    # held: the candidate gets its construction values back, the reference
    # the matched ones (here by name, where the reference's differ)
    t, ref, m, snap, how, _ = built("layer_norm", "correct.py")
    assert not torch.equal(snap["ln.weight"], tk.tensors(ref)["ln.weight"])
    matched, unmatched = tk.match_values(ref, snap)
    tk.hold(ref, m, snap, matched)
    assert not unmatched and torch.equal(tk.tensors(ref)["ln.weight"], snap["ln.weight"]) and \
        torch.equal(tk.tensors(m)["ln.weight"], snap["ln.weight"])
    # the child's decision: held (the contract's p_ arguments as constants),
    # or not where a cached copy's construction values are not the
    # reference's (a copy made at the first call would hold the latter)
    from kcheck.audit.child import _weights
    t, ref, m, snap, how, names = built("linear", "cached_transposed_weight.py")
    res = {"weights": how}
    held = _weights(res, t, ref, m, snap, names, "cpu")
    assert sorted(held) == ["p_linear_bias", "p_linear_weight"] and res["weights_held"], res
    t, ref, m, snap, how, names = built("linear", "cached_transposed_weight.py")
    with torch.no_grad():
        snap["linear.weight"].mul_(2.0)  # as if the candidate had drawn its own
    res = {"weights": how}
    assert _weights(res, t, ref, m, snap, names, "cpu") is None and \
        res["weights_held"] is False and res["weights"] == "constants", res
    assert "gave linear.weight differ from the reference's" in res["weights_reason"], res
    t, ref, m, snap, how, names = built("linear", "correct.py")
    res = {"weights": how}
    assert _weights(res, t, ref, m, snap, names, "cpu") is None and res == {"weights": "name"}


def _runs(rec, gate):
    return {r.get("variant") or r.get("shape"): r for r in rec["gates"][gate].get("runs", [])}


def test_empty_variant_against_the_reference(corpus):
    """The layouts gate's empty variant on the wrapper op: the candidate at
    an empty leading dim against the reference's result there (the child
    runs the reference: the wrapper op has no meta kernel). A mean over
    the emptied dim must give the reference's NaN, a Linear [0, n_out];
    every other correct candidate of a tier-A task passes it, or it is
    not applicable with the reason."""
    _, recs = corpus
    got = {os.path.relpath(r["candidate"], CORPUS): r for r in recs
           if r["type"] == "audit_candidate"}
    ok = _runs(got["mean_dim0/correct.py"], "layouts")["empty"]
    assert (ok["class"], ok["shape"]) == ("pass", [16]), ok
    bug = got["mean_dim0/empty_gives_zero.py"]
    assert bug["failed"] == ["layouts"], bug
    ev = bug["evidence"][0]
    assert ev["exposed_by"]["variant"] == "empty" and ev["exposed_by"]["layout"]["shape"] == [0, 16]
    assert ev["worst"] == {"verdict": "wrong_value", "tensor": "out", "shape": [16], "index": [0],
                           "kernel": 0.0, "exact": "nan", "n_fail": 16}, ev
    assert ev["line"] == "empty_gives_zero.py:5", ev
    ev = got["linear/empty_returns_input.py"]["evidence"][0]
    assert ev["worst"] == {"verdict": "wrong_shape", "tensor": "out", "shape": [0, 512],
                           "expected_shape": [0, 64]}, ev
    assert "not the reference's [0, 64] float32" in ev["message"]
    tier_a = {os.path.basename(os.path.dirname(r["task"])) for r in recs
              if r["type"] == "audit_task" and r["tier"] == "A"}
    for m in _manifest():
        r = got[m["candidate"]]
        if m["verdict"] != "clean" or m["candidate"].split("/")[0] not in tier_a:
            continue
        empty = _runs(r, "layouts").get("empty") if "runs" in r["gates"].get("layouts", {}) \
            else None
        if empty is not None:  # nll_loss: the layouts gate not applicable (an index input)
            assert empty["class"] in ("pass", "not_applicable"), (m, empty)
            assert "meta kernel" not in (empty.get("reason") or ""), (m, empty)


def test_shapes_with_weights_as_constants(corpus):
    """A candidate judged with the weights as constants gets the shapes
    gate's variants of the dims no weight has: a Linear's batch (each
    M x K x N row's M, the weight's K and N kept), a layer norm's rows
    (its length kept). The correct ones pass each; rows computed in whole
    tiles of 16 are caught at one row. Where every dim is tied to a held
    weight the gate is not applicable, saying so (the shaper, in this
    process)."""
    import torch
    from kcheck.torch import mode
    _, recs = corpus
    got = {os.path.relpath(r["candidate"], CORPUS): r for r in recs
           if r["type"] == "audit_candidate"}
    lin = got["linear/cached_transposed_weight.py"]["gates"]["shapes"]
    assert lin["status"] == "pass" and [(r["shape"], r["class"] in ("pass", "bitwise"))
                                        for r in lin["runs"]] == [
        ("1xKxN", True), ("3xKxN", True), ("17xKxN", True), ("(M+1)xKxN", True)], lin
    ln = got["layer_norm/fused_buffer.py"]["gates"]["shapes"]
    assert ln["status"] == "pass" and [r["shape"] for r in ln["runs"]] == \
        ["1xN", "5xN", "3xN", "2xN"], ln
    bug = got["linear/cached_weight_whole_tiles.py"]
    assert bug["weights"] == "constants" and bug["failed"] == ["shapes"], bug
    ev = bug["evidence"][0]
    assert ev["exposed_by"]["shape"] == "1xKxN" and ev["worst"]["kernel"] == 0, ev
    # the shaper: a Linear's K and N and a norm's length stay, an
    # elementwise op with a weight of the input's shape has nothing left
    c = {"op": "matmul", "args": {"a": "in0", "b": "p_w", "bias": "p_b"},
         "attrs": {"transpose_b": True}}
    held = {"p_w": torch.rand(64, 512), "p_b": torch.rand(64)}
    sh = mode.held_shaper(c, held)
    got = [(lab, tuple(ch["in0"].shape), sorted(ch)) for lab, ch in sh({"in0": torch.rand(1, 512)})]
    assert got == [("3xKxN", (3, 512), ["in0"]), ("17xKxN", (17, 512), ["in0"]),
                   ("(M+1)xKxN", (2, 512), ["in0"])], got  # M = 1: the 1x1x1 row is the call's
    c = {"op": "mul", "args": {"x": "in0", "y": "p_s"}}
    sh = mode.held_shaper(c, {"p_s": torch.rand(16, 64)})
    assert sh({"in0": torch.rand(16, 64)}) == [] and "p_s, held as constants" in sh.none_reason


def test_undecided_layout_variants_counted(corpus):
    """Every candidate's layouts entry counts its unsupported and its
    inconclusive variants (judged without a finite bound at that dtype):
    the gate passes on what was decided; --strict fails a candidate with
    either."""
    from kcheck.audit.driver import exit_status
    _, recs = corpus
    inconclusive = 0
    for r in (r for r in recs if r["type"] == "audit_candidate"):
        lay = (r.get("gates") or {}).get("layouts")
        if not lay or "runs" not in lay:
            continue
        for cls in ("unsupported", "inconclusive"):
            n = sum(v["class"] == cls for v in lay["runs"])
            assert lay.get(cls, 0) == n, (r["candidate"], cls, lay)
        inconclusive += lay.get("inconclusive", 0)
    print("inconclusive layout variants in the corpus:", inconclusive)
    rec = {"type": "audit_candidate", "verdict": "clean",
           "gates": {"layouts": {"status": "pass", "inconclusive": 1}}}
    assert exit_status([rec]) == 0 and exit_status([rec], strict=True) == 1


def test_junit_and_strict(corpus):
    import xml.etree.ElementTree as ET
    from kcheck.audit.driver import exit_status
    from kcheck.audit.junit import junit
    _, recs = corpus
    cands = [r for r in recs if r["type"] == "audit_candidate"]
    root = ET.fromstring(junit(recs))
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(cands)
    n = {v: sum(1 for r in cands if r["verdict"] == v) for v in ("broken", "error")}
    assert sum(int(s.get("failures")) for s in root) == n["broken"]
    assert sum(int(s.get("errors")) for s in root) == n["error"]
    assert any(f.get("type") == "shapes" for f in root.iter("failure"))
    # partial is 0, or a failure with --strict
    ln = [r for r in recs if r["type"] == "audit_task" or
          r.get("candidate", "").endswith(("layer_norm/correct.py", "unaligned_parameters.py"))]
    assert sorted(r["verdict"] for r in ln if r["type"] == "audit_candidate") == ["clean", "partial"]
    assert exit_status(ln) == 0 and exit_status(ln, strict=True) == 1


VIEWS = os.path.join(ROOT, "test", "audit_views")


def test_view_chains(tmp_path):
    """Tasks whose reference views its input before its one op
    (test/audit_views, a run of its own beside the corpus): tier A, the
    contract naming the oracle input through a view chain; the correct
    candidates clean with the oracle's verdict, each planted bug caught by
    its manifest's gate; the shapes gate's variants mapped back through a
    transpose (a row past 1024 of x's dim 1 caught there), and not
    applicable, saying why, where the chain has sizes written as numbers;
    the generated contracts pass lint."""
    p, recs = audit(tmp_path / "out", VIEWS, extra=["--jobs", "2"])
    got = {os.path.relpath(r["candidate"], VIEWS): r for r in recs
           if r["type"] == "audit_candidate"}
    with open(os.path.join(VIEWS, "manifest.json")) as f:
        want = json.load(f)["candidates"]
    assert set(got) == {m["candidate"] for m in want}, (set(got), p.stderr[-2000:])
    for m in want:
        r = got[m["candidate"]]
        assert r["verdict"] == m["verdict"] and r["tier"] == "A", (m, r)
        assert r["gates"]["oracle"]["status"] in ("pass", "bitwise", "fail"), r
        assert r["allclose"] is True, r
        if m.get("gate"):
            assert m["gate"] in r["failed"], (m, r["failed"])
    tasks = {os.path.basename(os.path.dirname(r["task"])): r for r in recs
             if r["type"] == "audit_task"}
    sm, mm = tasks["softmax_transposed"]["contract"], tasks["matmul_reshaped"]["contract"]
    assert (sm["op"], sm["args"], sm["attrs"]) == (
        "softmax", {"x": {"arg": "in0", "view": [["transpose", 1, 2]]}}, {"axis": 2})
    assert (mm["op"], mm["args"]) == (
        "matmul", {"a": {"arg": "in0", "view": [["view", -1, 256]]}, "b": "in1"})
    shapes = got["softmax_transposed/correct.py"]["gates"]["shapes"]
    assert shapes["status"] == "pass" and len(shapes["runs"]) >= 4, shapes
    assert "1x4097" in _runs(got["softmax_transposed/correct.py"], "shapes")
    shapes = got["matmul_reshaped/correct.py"]["gates"]["shapes"]
    assert shapes["status"] == "not_applicable" and \
        "in0.view(-1, 256)) has sizes written as numbers" in shapes["reason"], shapes
    files = [r["contract_file"] for r in tasks.values()]
    r = subprocess.run([sys.executable, "-m", "kcheck", "--lib", LIB, "contract", "lint"] + files,
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=PY))
    assert r.returncode == 0, r.stderr


def test_view_chains_traced_and_mapped():
    """The tracer's view chains without kcheck: the views (and copies) from
    a task tensor to the one op's input, a reshape of a non-contiguous
    tensor (clone and _unsafe_view) included, beside the folded
    transposed weight; a view that selects elements leaves the task a
    composition. The binding's mapper applies a chain to give the
    reference's own input, and the shapes are mapped back through it."""
    import torch
    from kcheck.audit.trace import Trace
    from kcheck.torch import ops

    class Lin(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 5, bias=False)

        def forward(self, x):
            return x.view(-1, 8) @ self.lin.weight.t()

    def fn(f):
        m = torch.nn.Module()
        m.forward = f
        return m
    x = torch.randn(4, 6, 8)
    tr = Trace(Lin(), [x])
    assert tr.tier == "A" and tr.contract["args"] == {
        "a": {"arg": "in0", "view": [["view", -1, 8]]}, "b": "p_lin_weight"}
    assert tr.contract["attrs"] == {"transpose_b": True}
    tr = Trace(fn(lambda x: torch.softmax(x.transpose(1, 2).reshape(4, -1).unsqueeze(0), -1)),
               [x])
    chain = [["transpose", 1, 2], ["contiguous"], ["reshape", 4, 48], ["unsqueeze", 0]]
    assert tr.tier == "A" and tr.contract["args"] == {"x": {"arg": "in0", "view": chain}}, \
        tr.reason
    plan = ops._contract_mapper(tr.contract)({"in0": x})
    assert torch.equal(plan.inputs[0][1], x.transpose(1, 2).reshape(4, -1).unsqueeze(0))
    tr = Trace(fn(lambda x: torch.softmax(x[:, 1:], -1)), [x])
    assert tr.tier == "composition" and "is not a task tensor or a view chain" in tr.reason
    # the result viewed back: not named by the contract, a composition
    tr = Trace(fn(lambda x, w: (x.view(-1, 8) @ w).view(4, 6, 5)), [x, torch.randn(8, 5)])
    assert tr.tier == "composition" and "is a view of its result, [24, 5]" in tr.reason, tr.reason
    tr = Trace(fn(lambda x: x.transpose(1, 2).contiguous()), [x])
    assert tr.tier == "C"  # a copy alone: exact, as before
    # a chain that does not apply to an argument: not judged, saying why
    c = {"op": "sum", "args": {"x": {"arg": "in0", "view": [["view", -1, 7]]}}, "where": "w:1"}
    with pytest.raises(ops.Skip, match="in0.view\\(-1, 7\\) does not apply"):
        ops._contract_mapper(c)({"in0": x})
    # shapes back through the chain: each step undone and checked forward
    t2 = [["transpose", 1, 2], ["unsqueeze", 0], ["squeeze", 0]]
    assert ops.unview_shape((1, 3, 5), t2, x) == (1, 5, 3)
    assert ops.unview_shape((3, 8), [["view", -1, 8]], x) is None
    assert ops.unview_shape((3, 5), [["view", -1, 5]], x) is None
    assert ops.unview_shape((2, 3), [["permute", 1, 0]], torch.zeros(3, 2)) == (3, 2)
    assert ops.unview_shape((2, 3), [["transpose", 5, 0]], torch.zeros(3, 2)) is None
    # the shaper: an elementwise class's sizes at the oracle input's rank,
    # mapped back to the argument; sizes written as numbers: none, saying why
    c = {"op": "relu", "args": {"self": {"arg": "in0", "view": [
        ["transpose", 0, 1], ["contiguous"], ["unsqueeze", 0]]}}}
    sh = ops.contract_shaper(c)
    got = {lab: tuple(ch["in0"].shape) for lab, ch in sh({"in0": torch.zeros(64, 48)})}
    assert got["4097"] == (4097, 1) and set(got) == {"1", "3", "1023", "4097"}, got
    sh = ops.contract_shaper({"op": "sum", "attrs": {"axis": -1},
                              "args": {"x": {"arg": "in0", "view": [["view", 4, -1]]}}})
    assert sh({"in0": x}) == [] and "in0.view(4, -1)) has sizes written as numbers" in \
        sh.none_reason


def test_view_chain_lint(tmp_path):
    """Malformed view chains in a torch_op contract's args: lint rejects
    each with its reason."""
    bad = tmp_path / "v.yaml"
    bad.write_text(
        "contracts:\n"
        "  - {torch_op: 'm::a', op: softmax, profile: fp32,"
        " args: {x: {arg: x, view: [[roll, 1]]}}}\n"
        "  - {torch_op: 'm::b', op: softmax, profile: fp32, args: {x: {arg: x, view: [[t, 1]]}}}\n"
        "  - {torch_op: 'm::c', op: softmax, profile: fp32,\n"
        "     args: {x: {arg: x, view: [[transpose, 0, one]]}}}\n"
        "  - {torch_op: 'm::d', op: softmax, profile: fp32, args: {x: {view: [[t]]}}}\n")
    good = tmp_path / "g.yaml"
    good.write_text("contracts:\n  - {torch_op: 'm::a', op: softmax, profile: fp32,"
                    " attrs: {axis: -1}, args: {x: {arg: x, view: [[transpose, 1, 2],"
                    " [contiguous], [view, -1, 64]]}}}\n")
    kc = [sys.executable, "-m", "kcheck", "--lib", LIB, "contract", "lint"]
    env = dict(os.environ, PYTHONPATH=PY)
    r = subprocess.run(kc + [str(good)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(kc + [str(bad)], capture_output=True, text=True, env=env)
    assert r.returncode == 1
    for msg in ("v.yaml:2:", "unknown view op 'roll'", "v.yaml:3:",
                "view op 't' takes 0 integers; the step gives 1", "v.yaml:5:",
                "view op 'transpose': argument 2 is not an integer", "v.yaml:6:",
                "expected {arg: NAME, view: [[op, int...], ...]}"):
        assert msg in r.stderr, (msg, r.stderr)
