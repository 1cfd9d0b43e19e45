"""The layouts gate (gates/gates.def; docs/audit.md, "The layouts gate"):
at op level the PyTorch binding re-runs a covered op with each floating
input in turn transposed in memory, strided, at storage offset 1 element,
channels_last (4-D) and with a zero-size leading dim, and the oracle judges
each output; at kernel level the gate is not applicable and says why.

On the CPU stand-in driver (torch_devices=cuda,cpu), as test_torch.py. A
custom op that reads its input's storage as if it were contiguous (what a
kernel that ignores strides does) is caught, with the variant, the input and
the worst element; the same op written correctly, ATen ops (mm, softmax,
add, a 4-D relu) and an op that refuses non-contiguous inputs with a clean
exception (unsupported, listed) stay silent. A device fault and an empty
variant of the wrong shape are violations of their own."""
import os
import sys

import pytest

from conftest import ROOT, by_type, run

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(__file__))
from kcheck import _defs  # noqa: E402
from kcheck.torch import layouts  # noqa: E402
from test_torch import of, run_py  # noqa: E402

OPTS = "torch=1:torch_devices=cuda,cpu:torch_budget=1:gates=oracle,layouts:contracts=%s"

PROG = """
import torch


def contiguous_strides(shape):
    st, acc = [], 1
    for d in reversed(shape):
        st.append(acc)
        acc *= max(1, d)
    return tuple(reversed(st))


@torch.library.custom_op("kcl::scale_flat", mutates_args=())
def scale_flat(x: torch.Tensor) -> torch.Tensor:
    # the bug: x's storage read from its data pointer as if x were
    # contiguous (a kernel that ignores the strides it is given)
    return x.as_strided(x.shape, contiguous_strides(x.shape)) * 2.0


@torch.library.custom_op("kcl::scale_ok", mutates_args=())
def scale_ok(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0


@torch.library.custom_op("kcl::scale_strict", mutates_args=())
def scale_strict(x: torch.Tensor) -> torch.Tensor:
    if not x.is_contiguous():
        raise RuntimeError("scale_strict: expected contiguous input")
    return x * 2.0


x = torch.rand(16, 64)
scale_flat(x)                       # LINE 2-D
scale_ok(x)
scale_strict(x)
v = torch.rand(1000)
torch.ops.kcl.scale_flat(v)         # LINE 1-D: first caught strided
a, b = torch.rand(16, 32), torch.rand(32, 8)
y = torch.softmax(a @ b + 1.0, -1)
a.add(torch.rand(16, 32))
torch.relu(torch.randn(2, 3, 4, 5))
torch.neg(x, out=torch.empty(16, 64))
print("done")
"""

YAML = """
contracts:
  - {torch_op: 'kcl::scale_flat', op: mul, args: {x: x, s: '2.0'}, profile: fp32}
  - {torch_op: 'kcl::scale_ok', op: mul, args: {x: x, s: '2.0'}, profile: fp32}
  - {torch_op: 'kcl::scale_strict', op: mul, args: {x: x, s: '2.0'}, profile: fp32}
"""


def layouts_run(tmp_path, prog, yaml):
    (tmp_path / "c.yaml").write_text(yaml)
    p, recs = run_py(tmp_path, prog, options=OPTS % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "done" in p.stdout
    # kcheck's re-runs leave the program's output alone (an out= tensor
    # resized from elements to none would make PyTorch warn)
    assert "resized" not in p.stderr, p.stderr[-2000:]
    checks = {}
    for c in of(recs, "op_check"):
        checks.setdefault(c["op"], []).append(c["gates"])
    return recs, checks


def line(prog, mark):
    """The line of prog marked `# LINE mark`."""
    (n,) = [i + 1 for i, ln in enumerate(prog.splitlines()) if "# LINE " + mark in ln]
    return n


def classes(entry):
    return [(r["input"], r["variant"], r["class"]) for r in entry["runs"]]


def run_of(entry, variant):
    """The gate entry's one run of `variant`."""
    (r,) = [r for r in entry["runs"] if r["variant"] == variant]
    return r


@pytest.fixture(scope="module")
def prog_run(tmp_path_factory):
    """PROG under gates=oracle,layouts, run once for the two tests below."""
    return layouts_run(tmp_path_factory.mktemp("layouts"), PROG, YAML)


def test_layouts_gate_catches_a_kernel_that_ignores_strides(prog_run):
    recs, checks = prog_run
    viol = of(recs, "violation")
    # One violation per checked signature of the op that ignores strides,
    # none elsewhere (the oracle on the call's own, contiguous, inputs is
    # right for it).
    got = sorted((v["op"], v["gate"], v["exposed_by"]["variant"],
                  v["stack"]["python"][-1]["line"]) for v in viol)
    assert got == [("kcl::scale_flat.default", "layouts", "strided", line(PROG, "1-D")),
                   ("kcl::scale_flat.default", "layouts", "transposed", line(PROG, "2-D"))], got
    v = [v for v in viol if v["exposed_by"]["variant"] == "transposed"][0]
    exp = v["exposed_by"]
    assert exp["input"] == "x" and exp["inputs"] == "application"
    assert exp["layout"] == {"shape": [16, 64], "strides": [1, 16], "storage_offset": 0}
    ev = v["evidence"]
    # the worst element as the oracle reports it
    assert ev["verdict"] == "fail_value" and ev["tensor"] == "out" and ev["op"] == "mul"
    assert len(ev["index"]) == 2 and ev["kernel"] != ev["exact"] and ev["n_fail"] > 0
    declared = set(_defs.GATE["layouts"].op_evidence) | {"verdict", "exposed_by"}
    assert set(ev) <= declared, set(ev) - declared
    for gates in checks["kcl::scale_flat.default"]:
        assert gates["oracle"]["status"] in ("bitwise", "pass")
        assert gates["layouts"]["status"] == "fail"
    # Every variant listed with its class, the failures after the first too
    # (judged, not reported again); the storage offset is honoured by a
    # kernel that reads from the data pointer; the expanded input's storage
    # read as dense gives the NaN behind its one row; no meta kernel to
    # accept the empty variant, no reference for other dtypes: not run
    # (skipped).
    first, second = checks["kcl::scale_flat.default"]
    assert classes(first["layouts"]) == [
        ("x", "transposed", "fail_value"), ("x", "strided", "fail_special"),
        ("x", "offset1", "bitwise"), ("x", "expanded", "fail_special"),
        ("x", "empty", "skipped")] + [
        ("x", d, "skipped") for d in ("float16", "bfloat16", "float64")], first["layouts"]
    assert classes(second["layouts"])[:3] == [
        ("x", "strided", "fail_special"), ("x", "offset1", "bitwise"),
        ("x", "expanded", "fail_special")], second["layouts"]
    assert "no reference" in first["layouts"]["runs"][-1]["reason"]


def test_layouts_gate_silent_on_correct_ops(prog_run):
    recs, checks = prog_run
    assert not [v for v in of(recs, "violation") if v["op"] != "kcl::scale_flat.default"]
    ok = checks["kcl::scale_ok.default"][0]["layouts"]
    assert ok["status"] == "pass" and "unsupported" not in ok
    # the expanded input's values (not the call's) are the ones judged
    assert [c for _, _, c in classes(ok)] == ["bitwise"] * 4 + ["skipped"] * 4
    assert "meta kernel" in run_of(ok, "empty")["reason"]
    # ATen ops: every variant judged pass, the empty one (the first input's
    # leading dim) of the meta kernel's shape.
    mm = checks["aten::mm.default"][0]["layouts"]
    assert mm["status"] == "pass", mm
    assert classes(mm)[:9] == [(i, v, "pass") for i in ("self", "mat2")
                               for v in ("transposed", "strided", "offset1", "expanded")] + [
        ("self", "empty", "pass")], mm
    assert run_of(mm, "empty")["shape"] == [0, 8] and "with" not in run_of(mm, "empty")
    # and at the other float dtypes, both operands converted
    assert [(i, v) for i, v, _ in classes(mm)[9:]] == [
        ("self", d) for d in ("float16", "bfloat16", "float64")], mm
    assert {c for _, _, c in classes(mm)[9:]} <= {"pass", "bitwise"}, mm
    assert run_of(mm, "float64")["with"] == ["mat2"]
    sm = checks["aten::_softmax.default"][0]["layouts"]
    assert sm["status"] == "pass" and {c for _, v, c in classes(sm)
                                       if v not in layouts.DTYPES} <= {"pass", "bitwise"}
    # ATen's CPU softmax sums a 16-bit type in that type, which no profile
    # states: those dtypes are not judged (the mapper says why), float64 is
    assert run_of(sm, "float64")["class"] in ("pass", "bitwise")
    for d in ("float16", "bfloat16"):
        assert run_of(sm, d)["class"] == "skipped" and "not mapped" in run_of(sm, d)["reason"]
    # an elementwise op's operands of one shape are emptied together
    scalar, add = [g["layouts"] for g in checks["aten::add.Tensor"]]
    assert scalar["status"] == "pass" and "with" not in run_of(scalar, "empty")
    assert add["status"] == "pass" and len(add["runs"]) == 12
    assert run_of(add, "empty")["class"] == "pass" and run_of(add, "empty")["with"] == ["other"], add
    neg = checks["aten::neg.out"][0]["layouts"]
    assert neg["status"] == "pass" and classes(neg) == [
        ("self", v, "bitwise") for v in ("transposed", "strided", "offset1", "expanded")] + [
        ("self", "empty", "pass")] + [
        ("self", d, "bitwise") for d in ("float16", "bfloat16", "float64")], neg
    relu = checks["aten::relu.default"][0]["layouts"]
    assert relu["status"] == "pass"
    assert [v for _, v, _ in classes(relu)] == ["transposed", "strided", "offset1", "expanded",
                                                "channels_last", "empty", "float16",
                                                "bfloat16", "float64"]
    cl = [r for r in relu["runs"] if r["variant"] == "channels_last"][0]
    assert cl["layout"]["strides"] == [60, 1, 15, 3]
    # A clean refusal of a layout is unsupported: listed, not a failure.
    strict = checks["kcl::scale_strict.default"][0]["layouts"]
    assert strict["status"] == "pass" and strict["unsupported"] == 3, strict
    assert [c for _, _, c in classes(strict)][:3] == ["unsupported", "unsupported", "bitwise"]
    assert "expected contiguous" in strict["runs"][0]["reason"]


DTYPE_PROG = """
import torch

from kcheck.torch import layouts, profiles


@torch.library.custom_op("kcl::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3.0


@torch.library.custom_op("kcl::triple_in_fp32", mutates_args=())
def triple_in_fp32(x: torch.Tensor) -> torch.Tensor:
    # the bug: computed in float32 whatever the input's dtype (a kernel
    # written for float only, its input converted to it)
    return (x.float() * 3.0).to(x.dtype)


@torch.library.custom_op("kcl::triple_fp32_only", mutates_args=())
def triple_fp32_only(x: torch.Tensor) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise RuntimeError("triple_fp32_only: expected a float32 input")
    return x * 3.0


@torch.library.custom_op("kcl::triple_returns_fp32", mutates_args=())
def triple_returns_fp32(x: torch.Tensor) -> torch.Tensor:
    # float32 whatever the input's dtype: at the others not the
    # reference's arithmetic (unsupported there), nor wrong
    return (x.double() * 3.0).float()


@torch.library.custom_op("kcl::triple_no_reference", mutates_args=())
def triple_no_reference(x: torch.Tensor) -> torch.Tensor:
    return x.float().to(x.dtype) * 3.0


# what the reference (torch's x * 3.0) is judged at in each other dtype
s = profiles.settings()
ref = {name: {"profile": profiles.profile("elementwise", profiles.fmt(dt), profiles.fmt(dt), s),
              "out": name}
       for name, dt in layouts.DTYPES.items() if dt != torch.float32}
for op in ("kcl::triple", "kcl::triple_in_fp32", "kcl::triple_fp32_only",
           "kcl::triple_returns_fp32"):
    layouts.reference_dtypes(op, ref)
layouts.reference_dtypes("kcl::triple_no_reference", {"float64": ref["float64"]})
x = torch.rand(8, 32)
triple(x)
triple_in_fp32(x)                    # LINE fp32
triple_fp32_only(x)
triple_returns_fp32(x)
triple_no_reference(x)
print("done")
"""

DTYPE_YAML = "contracts:\n" + "".join(
    "  - {torch_op: 'kcl::%s', op: mul, args: {x: x, s: '3.0'}, profile: fp32}\n" % op
    for op in ("triple", "triple_in_fp32", "triple_fp32_only", "triple_returns_fp32",
               "triple_no_reference"))


def test_layouts_gate_other_dtypes_judged_at_the_references_profile(tmp_path):
    """The dtype variants (float16, bfloat16, float64 for a float32 call):
    a torch_op contract states its profile at one dtype, so they run at
    the dtypes its reference accepts (layouts.reference_dtypes), judged at
    the reference's profile there. An op that computes in float32 whatever
    the dtype fails at float64 (the call's line); one that refuses another
    dtype with a clean exception is unsupported there (listed, counted),
    as is one that returns float32 where the reference returns that
    dtype; the correct op passes at each; a dtype the reference does not
    accept is not run."""
    recs, checks = layouts_run(tmp_path, DTYPE_PROG, DTYPE_YAML)
    dtypes = ["float16", "bfloat16", "float64"]
    viol = of(recs, "violation")
    assert [(v["op"], v["exposed_by"]["variant"]) for v in viol] == [
        ("kcl::triple_in_fp32.default", "float64")], [v["message"] for v in viol]
    (v,) = viol
    assert v["gate"] == "layouts" and v["stack"]["python"][-1]["line"] == line(DTYPE_PROG, "fp32")
    assert v["evidence"]["verdict"] == "fail_value" and v["evidence"]["profile"] == "fp64", v
    assert v["exposed_by"]["layout"]["shape"] == [8, 32]
    bug = checks["kcl::triple_in_fp32.default"][0]["layouts"]
    assert bug["status"] == "fail"
    # the float32 product of a 16-bit value is exact, rounded once to its
    # dtype: those pass; float64's values are the call's float32 ones, whose
    # triples need more than float32's 24 bits
    assert [(d, run_of(bug, d)["class"]) for d in dtypes] == [
        ("float16", "bitwise"), ("bfloat16", "bitwise"), ("float64", "fail_value")], bug
    ok = checks["kcl::triple.default"][0]["layouts"]
    assert ok["status"] == "pass" and "unsupported" not in ok
    assert [run_of(ok, d)["class"] for d in dtypes] == ["bitwise"] * 3, ok
    only = checks["kcl::triple_fp32_only.default"][0]["layouts"]
    assert only["status"] == "pass" and only["unsupported"] == 3, only
    assert [run_of(only, d)["class"] for d in dtypes] == ["unsupported"] * 3
    assert "expected a float32 input" in run_of(only, "float16")["reason"]
    f32 = checks["kcl::triple_returns_fp32.default"][0]["layouts"]
    assert f32["status"] == "pass" and f32["unsupported"] == 3, f32
    assert run_of(f32, "float64")["reason"] == \
        "returned float32 where the reference returns float64", f32
    no_ref = checks["kcl::triple_no_reference.default"][0]["layouts"]
    assert [run_of(no_ref, d)["class"] for d in dtypes] == ["skipped", "skipped", "bitwise"]
    assert "does not accept float16" in run_of(no_ref, "float16")["reason"]


FAULT_PROG = """
import torch


@torch.library.custom_op("kcl::scale_fault", mutates_args=())
def scale_fault(x: torch.Tensor) -> torch.Tensor:
    if x.storage_offset() % 4:
        # what a vectorised load of a misaligned pointer does on the GPU
        raise RuntimeError("CUDA error: misaligned address")
    return x * 2.0


@torch.library.custom_op("kcl::rows", mutates_args=())
def rows(x: torch.Tensor) -> torch.Tensor:
    # the bug: an empty input gives one row of zeros
    return x * 2.0 if x.shape[0] else x.new_zeros((1,) + tuple(x.shape[1:]))


@rows.register_fake
def _(x):
    return torch.empty_like(x)


lib = torch.library.Library("kcl", "FRAGMENT")
lib.define("tail.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")


def tail_out(x, *, out):
    # the bug: a non-contiguous input leaves the output's last row unwritten
    n = out.shape[0] - (0 if x.is_contiguous() else 1)
    out[:n] = x[:n] * 2.0
    return out


lib.impl("tail.out", tail_out, "CPU")
x = torch.rand(8, 16)
scale_fault(x)                      # LINE fault
rows(x)                             # LINE rows
torch.ops.kcl.tail.out(x, out=torch.empty(8, 16))   # LINE tail
print("done")
"""

FAULT_YAML = """
contracts:
  - {torch_op: 'kcl::scale_fault', op: mul, args: {x: x, s: '2.0'}, profile: fp32}
  - {torch_op: 'kcl::rows', op: mul, args: {x: x, s: '2.0'}, profile: fp32}
  - {torch_op: 'kcl::tail', op: mul, args: {x: x, s: '2.0', out: out}, profile: fp32}
"""


def test_layouts_gate_faults_wrong_shapes_and_unwritten_elements(tmp_path):
    recs, checks = layouts_run(tmp_path, FAULT_PROG, FAULT_YAML)
    viol = {v["op"]: v for v in of(recs, "violation")}
    assert sorted(viol) == ["kcl::rows.default", "kcl::scale_fault.default",
                            "kcl::tail.out"], [v.get("message") for v in viol.values()]
    assert all(v["gate"] == "layouts" for v in viol.values())
    declared = set(_defs.GATE["layouts"].op_evidence) | {"verdict", "exposed_by"}
    # A device fault: a violation with the variant that caused it; no run after it.
    v = viol["kcl::scale_fault.default"]
    assert v["evidence"]["verdict"] == "crash" and "misaligned" in v["evidence"]["detail"]
    assert v["exposed_by"]["variant"] == "offset1" and v["exposed_by"]["input"] == "x"
    assert v["stack"]["python"][-1]["line"] == line(FAULT_PROG, "fault")
    entry = checks["kcl::scale_fault.default"][0]["layouts"]
    assert classes(entry)[-1] == ("x", "offset1", "fail") and entry["status"] == "fail"
    # The empty variant's shape against the op's meta kernel (register_fake).
    v = viol["kcl::rows.default"]
    assert v["exposed_by"]["variant"] == "empty"
    assert v["evidence"] == {"verdict": "wrong_shape", "tensor": "out", "shape": [1, 16],
                             "expected_shape": [0, 16]}, v["evidence"]
    assert [c for _, _, c in classes(checks["kcl::rows.default"][0]["layouts"])][:5] == [
        "bitwise", "bitwise", "bitwise", "bitwise", "fail"]
    # An out= tensor is poisoned with NaN first: an element the op leaves
    # unwritten for a strided input fails the oracle.
    v = viol["kcl::tail.out"]
    assert v["exposed_by"]["variant"] == "transposed"
    assert v["evidence"]["verdict"] == "fail_special" and v["evidence"]["kernel"] == "nan"
    assert v["evidence"]["index"][0] == 7
    for v in viol.values():
        assert set(v["evidence"]) <= declared, set(v["evidence"]) - declared


EMPTY_PROG = """
import torch
from kcheck.torch import layouts


@torch.library.custom_op("kcl::colsum", mutates_args=())
def colsum(x: torch.Tensor) -> torch.Tensor:
    return x.double().sum(0).to(x.dtype)


@torch.library.custom_op("kcl::colsum_one", mutates_args=())
def colsum_one(x: torch.Tensor) -> torch.Tensor:
    # the bug: an accumulator started at the first row's index 0 read as
    # 1 when there is none
    return x.double().sum(0).to(x.dtype) if x.shape[0] else x.new_ones(x.shape[1:])


@torch.library.custom_op("kcl::colsum_f64", mutates_args=())
def colsum_f64(x: torch.Tensor) -> torch.Tensor:
    # the bug: an empty input's zeros made in float64
    return x.double().sum(0).to(x.dtype) if x.shape[0] else x.new_zeros(x.shape[1:]).double()


@torch.library.custom_op("kcl::colsum_rejected", mutates_args=())
def colsum_rejected(x: torch.Tensor) -> torch.Tensor:
    return x.double().sum(0).to(x.dtype)


def ref_colsum(x):
    return torch.sum(x, 0)


def ref_rejects_empty(x):
    if not x.shape[0]:
        raise RuntimeError("ref_rejects_empty: no rows")
    return torch.sum(x, 0)


for op in ("kcl::colsum", "kcl::colsum_one", "kcl::colsum_f64"):
    layouts.reference_call(op, ref_colsum)
layouts.reference_call("kcl::colsum_rejected", ref_rejects_empty)
x = torch.rand(16, 8)
colsum(x)
colsum_one(x)                       # LINE one
colsum_f64(x)                       # LINE f64
colsum_rejected(x)
print("done")
"""

EMPTY_YAML = "contracts:\n" + "".join(
    "  - {torch_op: 'kcl::%s', op: sum, args: {x: x}, attrs: {axis: 0}, profile: fp32}\n" % op
    for op in ("colsum", "colsum_one", "colsum_f64", "colsum_rejected"))


def test_layouts_gate_empty_variant_against_the_references_result(tmp_path):
    """The empty variant of a torch_op contract's op whose reference can
    be run (layouts.reference_call): the op's result at the empty input
    against the reference's there, its shape, dtype and, for a reduction
    over the emptied dim, its values (an empty column's sum is 0). The
    correct op passes; one giving 1 fails (wrong_value, with the index and
    both values), one giving float64 fails (wrong_dtype); where the
    reference rejects the empty input the variant is not applicable, said
    so, and no violation."""
    recs, checks = layouts_run(tmp_path, EMPTY_PROG, EMPTY_YAML)
    viol = {v["op"]: v for v in of(recs, "violation")}
    assert sorted(viol) == ["kcl::colsum_f64.default", "kcl::colsum_one.default"], \
        [v.get("message") for v in viol.values()]
    declared = set(_defs.GATE["layouts"].op_evidence) | {"verdict", "exposed_by"}
    v = viol["kcl::colsum_one.default"]
    assert v["gate"] == "layouts" and v["exposed_by"]["variant"] == "empty"
    assert v["exposed_by"]["layout"]["shape"] == [0, 8]
    assert v["evidence"] == {"verdict": "wrong_value", "tensor": "out", "shape": [8],
                             "index": [0], "kernel": 1.0, "exact": 0.0, "n_fail": 8}, v
    assert v["stack"]["python"][-1]["line"] == line(EMPTY_PROG, "one")
    assert "empty gave 1.0 at [0], not the reference's [8] float32 (0.0 at [0])" in v["message"]
    v = viol["kcl::colsum_f64.default"]
    assert v["evidence"] == {"verdict": "wrong_dtype", "tensor": "out", "shape": [8],
                             "dtype": "float64", "expected_dtype": "float32"}, v
    for v in viol.values():
        assert set(v["evidence"]) <= declared, set(v["evidence"]) - declared
    ok = run_of(checks["kcl::colsum.default"][0]["layouts"], "empty")
    assert (ok["class"], ok["shape"]) == ("pass", [8]), ok
    na = checks["kcl::colsum_rejected.default"][0]["layouts"]
    assert na["status"] == "pass", na
    assert run_of(na, "empty")["class"] == "not_applicable"
    assert run_of(na, "empty")["reason"] == \
        "the reference rejects the empty input: RuntimeError: ref_rejects_empty: no rows"


def test_layouts_gate_opt_in_and_not_applicable_at_kernel_level(app, tmp_path):
    """Not in the default gates (as shapes); at kernel level a launch has
    no tensor layout to vary: a contracted launch's check record says
    not_applicable with the reason, and no violation comes of it; with no
    kernel-level gate enabled beside it the launch is skipped, saying
    why."""
    import re
    with open(os.path.join(ROOT, "gates", "gate_options.def")) as f:
        default = re.search(r'KC_OPT\(STR, gates, "([^"]*)"', f.read()).group(1)
    assert "layouts" not in default.split(",") and "oracle" in default.split(",")
    assert _defs.GATE["layouts"].levels == ("op",) and _defs.GATE["layouts"].op == "layouts"
    contracts = os.path.join(ROOT, "test", "integration", "data", "contracts_planted.yaml")
    r = run([app("app_linked"), "contracts"], tmp_path,
            options="contracts=%s:gates=oracle,layouts" % contracts)
    assert r.rc == 0, r.err
    recs = r.only_report()
    checks = [c for c in by_type(recs, "check") if "layouts" in c.get("gates", {})]
    assert checks, [c.get("gates") for c in by_type(recs, "check")][:3]
    for c in checks:
        g = c["gates"]["layouts"]
        assert g["status"] == "not_applicable" and "no tensor layout" in g["reason"], g
        assert "oracle" in c["gates"]
    assert not [v for v in by_type(recs, "violation") if v["gate"] == "layouts"]
    # alone, no shadow check is spent on it: a skip record says why
    r = run([app("app_linked"), "contracts"], tmp_path,
            options="contracts=%s:gates=layouts" % contracts)
    assert r.rc == 0, r.err
    recs = r.only_report()
    assert not by_type(recs, "check") and not by_type(recs, "violation")
    skips = by_type(recs, "skip")
    assert skips and {s["reason"] for s in skips} == {
        "only op-level gates are enabled (not applicable to launches)"}, skips[:2]
    # the default gate list leaves it out
    r = run([app("app_linked"), "contracts"], tmp_path, options="contracts=%s" % contracts)
    assert r.rc == 0, r.err
    assert not [c for c in by_type(r.only_report(), "check")
                if "layouts" in c.get("gates", {})]


LATER_PROG = """
import torch


@torch.library.custom_op("kcl::scale_flat", mutates_args=())
def scale_flat(x: torch.Tensor) -> torch.Tensor:
    return x.as_strided(x.shape, (x.shape[1], 1)) * 2.0    # ignores x's strides


x = torch.rand(8, 32)
scale_flat(x)                       # LINE call
print("done")
"""


def test_layouts_gate_part_run_later_on_generated_values(tmp_path):
    """torch_budget spent: the layouts part runs at the exit from the call's
    layouts (its values gone), on generated uniform values, regenerable
    with kcheck gen; the finding still names the call's line."""
    (tmp_path / "c.yaml").write_text(
        "contracts:\n"
        "  - {torch_op: 'kcl::scale_flat', op: mul, args: {x: x, s: '2.0'}, profile: fp32}\n")
    p, recs = run_py(tmp_path, LATER_PROG, options="torch=1:torch_devices=cuda,cpu:"
                     "torch_budget=0.000001:gates=oracle,layouts:contracts=%s"
                     % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr[-3000:]
    first, later = of(recs, "op_check")
    assert first["gates"]["layouts"]["status"] == "deferred"
    assert later["part"] == "generated" and later["run_at"] == "exit"
    assert later["gates"]["layouts"]["status"] == "fail"
    (v,) = of(recs, "violation")
    assert v["gate"] == "layouts" and v["stack"]["python"][-1]["line"] == line(LATER_PROG, "call")
    exp = v["exposed_by"]
    assert exp["inputs"] == "generated" and exp["seed"] == _defs.SEED_LAYOUTS
    assert exp["variant"] == "transposed" and exp["input"] == "x"
    assert v["regenerate"] == ["kcheck gen -g uniform -t none -s %d -f fp32 --shape 8,32 --role 0"
                               % _defs.SEED_LAYOUTS]


SDPA_PROG = """
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import _disable_current_modes

torch.manual_seed(0)
q, k, v = (torch.randn(2, 2, 16, 8) for _ in range(3))
with _disable_current_modes():  # PyTorch's own answer, unseen by kcheck
    f = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    ref = f(q, k, v, 0.0, True)[0]
    diff = (f(q.mT.contiguous().mT, k, v, 0.0, True)[0] - ref).abs().max().item()
print("BUG" if not diff < 1e-3 else "OK")
F.scaled_dot_product_attention(q, k, v, is_causal=True)     # LINE sdpa
print("done")
"""


def test_layouts_gate_agrees_with_pytorch_on_cpu_flash_attention(tmp_path):
    """An ATen kernel, unplanted: CPU flash attention ignores the stride of
    the query's innermost dim in some PyTorch versions (pytorch/pytorch
    #187506, "incorrect results when inputs' innermost dim is not
    contiguous"; 2.15 has it). The gate fires exactly when PyTorch's own
    two answers differ, naming the query transposed in memory (the call's
    line); the key's and value's strided and misaligned layouts are
    judged clean either way."""
    (tmp_path / "c.yaml").write_text("contracts: []\n")
    p, recs = run_py(tmp_path, SDPA_PROG, options=OPTS % (tmp_path / "c.yaml"))
    assert p.returncode == 0 and "done" in p.stdout, p.stderr[-3000:]
    bug = "BUG" in p.stdout.split()
    (entry,) = [c["gates"]["layouts"] for c in of(recs, "op_check")
                if c["op"] == "aten::_scaled_dot_product_flash_attention_for_cpu.default"]
    runs = {(r["input"], r["variant"]): r["class"] for r in entry["runs"]}
    for i in ("key", "value"):
        assert runs[(i, "strided")] in ("pass", "bitwise"), runs
        assert runs[(i, "offset1")] in ("pass", "bitwise"), runs
    viol = of(recs, "violation")
    if not bug:
        assert not viol and entry["status"] == "pass", (viol, runs)
        return
    # the stride-blind kernel's result is wrong, but not the same wrong
    # from run to run: in repeated runs it was sometimes non-finite where
    # the exact value is finite (fail_special), sometimes finite and off
    # (fail_value); either class names the bug
    assert entry["status"] == "fail", runs
    assert runs[("query", "transposed")] in ("fail_value", "fail_special"), runs
    (v,) = viol
    assert v["gate"] == "layouts" and v["exposed_by"]["variant"] == "transposed"
    assert v["exposed_by"]["input"] == "query"
    assert v["stack"]["python"][-1]["line"] == line(SDPA_PROG, "sdpa")


def test_variants_keep_values_and_change_layouts():
    """The variants themselves: the same values, the layout each names; one
    that would change nothing is left out; the empty variant empties the
    first floating input with those of its rank and leading size."""
    from kcheck.torch import layouts
    x = torch.randn(2, 3, 4, 5)
    want = {"transposed": ((60, 20, 1, 4), 0), "strided": ((120, 40, 10, 2), 0),
            "offset1": ((60, 20, 5, 1), 1), "channels_last": ((60, 1, 15, 3), 0)}
    for name, (strides, offset) in want.items():
        v = layouts.variant(x, name)
        assert (v.stride(), v.storage_offset()) == (strides, offset), name
        assert torch.equal(v, x), name
    assert layouts.variant(x, "empty").shape == (0, 3, 4, 5)
    assert layouts.variant(torch.randn(5), "transposed") is None
    assert layouts.variant(torch.randn(3, 1), "transposed") is None  # a 1-wide matrix
    assert layouts.variant(torch.randn(2, 1, 4, 5), "channels_last") is None  # one channel
    assert layouts.variant(torch.randn(3, 4), "channels_last") is None
    assert layouts.variant(torch.randn(3, 4), "offset1").data_ptr() % 16 == 4
    q, k, w = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2)
    bound = {"q": q, "k": k, "w": w, "i": torch.ones(2, dtype=torch.long), "s": 2.0,
             "lst": [torch.randn(2, 3), torch.randn(5)]}
    cases = layouts.cases(bound)
    assert [(c[0], c[1]) for c in cases] == [
        ("transposed", "q"), ("strided", "q"), ("offset1", "q"), ("expanded", "q"),
        ("transposed", "k"), ("strided", "k"), ("offset1", "k"), ("expanded", "k"),
        ("strided", "w"), ("offset1", "w"), ("expanded", "w"),
        ("transposed", "lst[0]"), ("strided", "lst[0]"), ("offset1", "lst[0]"),
        ("expanded", "lst[0]"),
        ("empty", "q"), ("float16", "q"), ("bfloat16", "q"), ("float64", "q")]
    vname, label, changes, v, also = cases[15]
    assert also == ["k"] and sorted(changes) == [("k", None), ("q", None)]
    b = layouts.apply(bound, changes)
    assert b["q"].shape == (0, 4, 8) and b["k"].shape == (0, 6, 8) and b["w"] is w
    b = layouts.apply(bound, cases[11][2])
    assert b["lst"][0].stride() == (1, 2) and b["lst"][1] is bound["lst"][1]
    assert layouts.crashed(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not layouts.crashed(RuntimeError("expected contiguous input"))


def test_expanded_and_dtype_variants():
    """The expanded variant: stride 0 along the first dim of more than one
    element, that dim's first slice repeated (values not the call's), NaN
    behind it in a storage as large as a dense tensor's; never an input
    the op writes. The dtype variants convert every floating input of the
    call's dtype together (a list's every tensor, an out= tensor); a
    contract op's dtypes and profiles are its reference's."""
    x = torch.randn(3, 4)
    v = layouts.variant(x, "expanded")
    assert v.stride() == (0, 1) and v.storage_offset() == 0
    assert torch.equal(v, x[:1].expand_as(x)) and not torch.equal(v, x)
    dense = torch.empty(0).set_(v.untyped_storage(), 0, (12,), (1,))
    assert torch.equal(dense[:4], x[0]) and dense[4:].isnan().all()
    assert layouts.variant(torch.randn(1, 1, 5), "expanded").stride() == (5, 5, 0)
    assert layouts.variant(torch.randn(1, 1), "expanded") is None  # one element
    bound = {"self": torch.rand(2, 3), "other": torch.rand(2, 3), "out": torch.empty(2, 3)}
    names = [(c[0], c[1]) for c in layouts.cases(bound, written={"self"})]
    assert ("expanded", "self") not in names and ("expanded", "other") in names, names
    assert names[-3:] == [("float16", "self"), ("bfloat16", "self"), ("float64", "self")]
    vname, label, changes, v, also = layouts.cases(bound)[-1]
    assert (vname, also, v.dtype) == ("float64", ["other"], torch.float64)
    assert sorted(changes) == [("other", None), ("out", None), ("self", None)]
    assert all(t.dtype == torch.float64 for t in changes.values())
    assert torch.equal(changes[("self", None)], bound["self"].double())
    mixed = {"q": torch.rand(2, 3, dtype=torch.bfloat16), "lse": torch.rand(2),
             "lst": [torch.rand(2, dtype=torch.bfloat16), torch.rand(3, dtype=torch.bfloat16)]}
    ch = layouts.in_dtype(mixed, torch.bfloat16, torch.float16)
    assert sorted(ch) == [("lst", 0), ("lst", 1), ("q", None)]  # the float32 one stays
    assert layouts.in_dtype(mixed, torch.bfloat16, torch.bfloat16) == {}
    assert [c[0] for c in layouts.cases(mixed)][-3:] == ["float16", "float32", "float64"]
    layouts.reference_dtypes("kcl::unit", {"float64": {"profile": "fp64", "out": "float64"}})
    assert layouts.dtype_reference({"torch_op": "kcl::unit"}, "float64") == (
        {"profile": "fp64", "out": "float64"}, None)
    ref, why = layouts.dtype_reference({"torch_op": "kcl::unit"}, "float16")
    assert ref is None and "does not accept float16" in why
    ref, why = layouts.dtype_reference({"torch_op": "kcl::other"}, "float16")
    assert ref is None and "one dtype" in why
