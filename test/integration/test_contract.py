"""Contracts: `kcheck contract lint` on good and broken files, loading with
KCHECK_OPTIONS=contracts=... into a stand-in application (the kernel record
names the matching contract), and the annotation API through ctypes."""
import os
import subprocess
import sys

from conftest import BUILD, ROOT, by_type, run

sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck import _defs  # noqa: E402

# the linter's list of known ops: oracle/ops.def's rows, in order
KNOWN_OPS = ", ".join(o.name for o in _defs.ORACLE_OPS)

KCHECK = os.path.join(ROOT, "scripts", "kcheck")
EXAMPLES = os.path.join(ROOT, "examples", "contracts")
BROKEN = os.path.join(ROOT, "test", "integration", "data", "broken_contract.yaml")
RELEASE_LIB = os.path.join(BUILD, "libkcheck.so")
VECADD = "vecadd(float const*, float const*, float*, int)"


def lint(*paths):
    return subprocess.run([sys.executable, KCHECK, "--lib", RELEASE_LIB, "contract", "lint"] +
                          list(paths), capture_output=True, text=True, timeout=60)


def test_lint_accepts_the_examples():
    r = lint(*sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES)
                     if f.endswith((".yaml", ".yml"))))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert lint(EXAMPLES).returncode == 0  # a directory: every *.yaml in it


def test_lint_reports_every_error_with_its_position():
    r = lint(BROKEN)
    assert r.returncode == 1
    f = BROKEN
    assert r.stderr.splitlines() == [
        f + ":6:36: error: unknown format 'fp23' for tensor 'a' (expected fp64, fp32, tf32, fp16, "
        "bf16, e4m3fn, e5m2, int8, int16, int32, int64, uint8, uint16, uint32, uint64 or bool)",
        f + ":8:17: error: tensor 'b' has no role (expected role: in, out or inout)",
        f + ":8:40: error: shape expression 'm': unknown scalar 'm' (scalars: n; launch: "
        "gridDim.x/y/z, blockDim.x/y/z) at column 1 of the expression",
        f + ":9:15: error: duplicate parameter name 'a' (first at line 5)",
        f + ":10:54: error: shape expression 'n +': expected a number, a scalar name or '(', "
        "found end of expression at column 4 of the expression",
        f + ":13:9: error: unknown op 'softmaks' (did you mean 'softmax'? known: %s)" % KNOWN_OPS,
        f + ":14:14: error: bad profile 'fp32:math=sloppy': bad value 'sloppy' for key 'math' "
        "(expected precise, fast or triton)",
        f + ":15:5: error: unknown key 'nondeterminsm' in contract (did you mean "
        "'nondeterminism'? expected one of: kernel, params, op, attrs, profile, nondeterminism, "
        "domain, launch, shapes, torch_op, args)",
        f + ":16:21: error: domain constraint 'n % 8 = 0': unexpected '=' (expected an operator "
        "or end of expression) at column 7 of the expression",
        "9 errors",
    ]


def test_lint_missing_file():
    r = lint("/nonexistent/contract.yaml")
    assert r.returncode == 1 and "no such file" in r.stderr


def test_loaded_contract_is_named_in_the_kernel_record(app, tmp_path):
    path = os.path.join(EXAMPLES, "vecadd.yaml")
    r = run([app("app_runtime"), "basic"], tmp_path, options="contracts=" + path)
    assert r.rc == 0, r.err
    kernels = {k["demangled"]: k for k in by_type(r.only_report(), "kernel")}
    assert kernels[VECADD]["contract"] == path + ":4"
    others = [k for name, k in kernels.items() if name != VECADD]
    assert others and all(k["contract"] is None for k in others)


def test_contract_directory_and_broken_files_are_skipped(app, tmp_path):
    d = tmp_path / "contracts"
    d.mkdir()
    (d / "a.yaml").write_text(open(os.path.join(EXAMPLES, "vecadd.yaml")).read())
    (d / "b.yml").write_text(open(BROKEN).read())
    (d / "notes.txt").write_text("not a contract")
    r = run([app("app_runtime"), "basic"], tmp_path, options="contracts=" + str(d))
    assert r.rc == 0, r.err
    assert "kcheck: %s:13:9: error: unknown op 'softmaks'" % (d / "b.yml") in r.err
    assert "kcheck: 9 contract problems; the contracts with problems are skipped" in r.err
    kernels = {k["demangled"]: k for k in by_type(r.only_report(), "kernel")}
    assert kernels[VECADD]["contract"] == str(d / "a.yaml") + ":4"
    # strict=1 makes contract problems fatal, like option problems.
    r = run([app("app_runtime"), "basic"], tmp_path, options="strict=1:contracts=" + str(d))
    assert r.rc == 1 and "strict=1" in r.err


def test_default_directory_and_none(app, tmp_path):
    cfg = tmp_path / "cfg"
    (cfg / "kcheck" / "contracts").mkdir(parents=True)
    (cfg / "kcheck" / "contracts" / "v.yaml").write_text(
        "contracts:\n  - kernel: {glob: 'vecadd*'}\n    params:\n"
        "      - {name: a, tensor: {role: in, format: fp32, shape: [n]}}\n"
        "      - {name: b, tensor: {role: in, format: fp32, shape: [n]}}\n"
        "      - {name: c, tensor: {role: out, format: fp32, shape: [n]}}\n"
        "      - {name: n, scalar: i32}\n    op: add\n")
    env = {"XDG_CONFIG_HOME": str(cfg)}
    r = run([app("app_runtime"), "basic"], tmp_path, env_extra=env)
    assert r.rc == 0, r.err
    kernels = {k["demangled"]: k for k in by_type(r.only_report(), "kernel")}
    assert kernels[VECADD]["contract"] == str(cfg / "kcheck" / "contracts" / "v.yaml") + ":2"
    r = run([app("app_runtime"), "basic"], tmp_path, options="contracts=none", env_extra=env)
    kernels = {k["demangled"]: k for k in by_type(r.only_report(), "kernel")}
    assert kernels[VECADD]["contract"] is None


ANNOTATE = r"""
import ctypes, sys
lib = ctypes.CDLL(None)
assert lib.kcheck_api_version() == 4  # KCHECK_API_VERSION in include/kcheck.h
L = ctypes.c_long * 2
buf = ctypes.create_string_buffer(512)
assert lib.kcheck_annotate_begin(b"softmax", b"fp32:softmax=online") == 0
assert lib.kcheck_annotate_tensor(b"in", ctypes.c_void_p(0x1000), b"fp32", 2, L(4, 8), None) == 0
assert lib.kcheck_annotate_tensor(b"out", ctypes.c_void_p(0x2000), b"bf16", 2, L(4, 8), L(16, 1)) == 0
assert lib.kcheck_annotation_describe(buf, 512) == 0  # not in force before end
assert lib.kcheck_annotate_end() == 0
n = lib.kcheck_annotation_describe(buf, 512)
print(buf.value.decode())
assert lib.kcheck_annotate_begin(b"softmaks", None) == -1
assert lib.kcheck_annotate_tensor(b"in", None, b"fp33", 0, None, None) == -1
lib.kcheck_annotate_clear()
assert lib.kcheck_annotation_describe(buf, 512) == 0
assert lib.kcheck_contract_register_yaml(
    b"contracts:\n  - {kernel: {name: k}, op: exp, params: [{name: x, tensor: "
    b"{role: inout, format: fp32, shape: [4]}}]}\n", b"inline") == 1
assert lib.kcheck_contract_register_yaml(b"contracts: [{op: exp}]\n", b"inline-bad") == -1
"""


def test_annotation_api_through_ctypes(tmp_path):
    r = run([sys.executable, "-c", ANNOTATE], tmp_path)
    assert r.rc == 0, r.err
    assert r.out.strip() == ("softmax profile=fp32:softmax=online tensors=2 "
                             "in:fp32:0x1000:[4,8/8,1] out:bf16:0x2000:[4,8/16,1]")
    assert "kcheck: kcheck_annotate_begin: unknown op 'softmaks'" in r.err
    assert "kcheck: inline-bad:1:13: error: contract has no kernel" in r.err
