"""The PyTorch binding without a GPU: activation paths, the op table,
profiles from PyTorch's settings, the policy, the op-level gates and
pass-through counting.

The CUDA path cannot run here, so the binding checks CPU tensors
(torch_devices=cuda,cpu, an option meant for exactly this) on the CPU
stand-in driver; what differs on the GPU (CUDA kernels, kernel names inside
an op, Triton custom ops, bitwise-equal training) is tested by
test/gpu/run_gpu_torch.sh. The release libkcheck.so is used: PyTorch under
the ASan runtime is outside what these tests are about. torch is a test
dependency (scripts/install-deps installs it); without it these tests skip.
"""
import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, FAKECUDA, ROOT

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

LIB = os.path.join(BUILD, "libkcheck.so")
PY = os.path.join(ROOT, "python")
sys.path.insert(0, PY)


def run_py(tmp_path, code, options="torch=1:torch_devices=cuda,cpu:torch_budget=1", preload=True, env_extra=None,
           args=(), timeout=240):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KCHECK_", "FAKECUDA_", "PYTHONPATH", "LD_PRELOAD"))}
    env["LD_LIBRARY_PATH"] = FAKECUDA
    prefix = str(tmp_path / "kc")
    if preload:
        env["LD_PRELOAD"] = LIB
        env["KCHECK_OPTIONS"] = "log_path=%s:%s" % (prefix, options)
    env.update(env_extra or {})
    script = tmp_path / "prog.py"
    script.write_text(code)
    p = subprocess.run([sys.executable, str(script)] + list(args), env=env, capture_output=True,
                       text=True, timeout=timeout, cwd=str(tmp_path))
    recs = []
    for f in sorted(glob.glob(prefix + ".*.jsonl")):
        with open(f) as fh:
            recs += [json.loads(line) for line in fh]
    return p, recs


def of(recs, t):
    return [r for r in recs if r["type"] == t]


def run_opinfo_cpu(tmp_path, names, seconds):
    """PyTorch's OpInfo samples of `names` (','-separated OpInfo names) on
    the CPU under the binding, every signature judged inline
    (test/gpu/torch_opinfo.py): (process, records), every sample run."""
    code = ("import runpy, sys\nsys.argv = ['torch_opinfo.py', '--device', 'cpu', '--only', %r,"
            " '--seconds', '%d']\nrunpy.run_path(%r, run_name='__main__')\n"
            % (names, seconds, os.path.join(ROOT, "test", "gpu", "torch_opinfo.py")))
    p, recs = run_py(tmp_path, code, timeout=900,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:gates=oracle:"
                     "kernel_clean_limit=-1:op_clean_limit=-1:sample=1:torch_workers=-1")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "LEFT 0" in p.stdout, p.stdout[-2000:]
    return p, recs


def assert_planted_flagged(tmp_path, prog, contracts_yaml, twin):
    """prog's custom ops declared by contracts_yaml: exactly those on lines
    marked `# LINE name` flagged by the oracle at that line, and the
    correct twin op `twin` judged clean."""
    (tmp_path / "c.yaml").write_text(contracts_yaml)
    p, recs = run_py(tmp_path, prog,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr
    viol = [v for v in of(recs, "violation") if v["gate"] == "oracle"]
    lines = {v["op"]: v["stack"]["python"][-1]["line"] for v in viol}
    marked = {"kcb::%s.default" % ln.split("# LINE ")[1]: i + 1
              for i, ln in enumerate(prog.splitlines()) if "# LINE " in ln}
    assert lines == marked, [v.get("message") for v in viol]
    ok = [c for c in of(recs, "op_check") if c["op"] == twin]
    assert ok and ok[0]["gates"]["oracle"]["status"] in ("bitwise", "pass"), ok


# ------------------------------------------------------------ activation

def test_never_imports_torch_untouched(tmp_path):
    p, recs = run_py(tmp_path, "import sys\nprint('torch' in sys.modules)\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"
    assert not of(recs, "torch_summary")


def test_boot_folder_on_pythonpath_only_with_torch_option(tmp_path):
    code = "import os\nprint(os.environ.get('PYTHONPATH', ''))\n"
    p, _ = run_py(tmp_path, code)
    assert os.path.join("kcheck", "_boot") in p.stdout
    p, _ = run_py(tmp_path, code, options="gates=none")
    assert "_boot" not in p.stdout


def test_boot_folder_found_beside_the_library_wherever_it_is(tmp_path):
    """Without KCHECK_PYTHON the library finds the binding's boot folder
    from its own location: in the Python package (kcheck/lib/libkcheck.so
    -> kcheck/_boot) and in a build folder one level deeper than build/
    (BUILD=out/gpu -> ../../python)."""
    import shutil
    code = "import os\nprint(os.environ.get('PYTHONPATH', ''))\n"
    boot = os.path.join(PY, "kcheck", "_boot")
    layouts = {"package": ("site/kcheck/lib", "site/kcheck/_boot"),
               "nested build": ("src/out/gpu", "src/python/kcheck/_boot")}
    for name, (libdir, bootdir) in layouts.items():
        (tmp_path / libdir).mkdir(parents=True)
        shutil.copy(LIB, tmp_path / libdir / "libkcheck.so")
        shutil.copytree(boot, tmp_path / bootdir)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("KCHECK_", "PYTHONPATH", "LD_PRELOAD"))}
        env.update(LD_PRELOAD=str(tmp_path / libdir / "libkcheck.so"), LD_LIBRARY_PATH=FAKECUDA,
                   KCHECK_OPTIONS="log_path=%s:torch=1" % (tmp_path / "kc"))
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=120, cwd=str(tmp_path))
        assert p.returncode == 0, (name, p.stderr[-2000:])
        assert str((tmp_path / bootdir).resolve()) in p.stdout.strip().split(":"), (name, p.stdout,
                                                                            p.stderr[-1000:])


def test_import_torch_installs_binding(tmp_path):
    p, recs = run_py(tmp_path, "import torch\nprint(float((torch.ones(4, 4) @ torch.ones(4, 4)).sum()))\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "64.0"
    s = of(recs, "torch_summary")
    assert s and s[0]["ops_checked"] >= 1
    assert "kcheck: torch:" in p.stderr


def test_chains_existing_sitecustomize(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.KC_OTHER_SITE = 1\n")
    p, recs = run_py(tmp_path, "import builtins, torch\nprint(getattr(builtins, 'KC_OTHER_SITE', 0))\n"
                     "torch.ones(3).sum()\n", env_extra={"PYTHONPATH": str(other)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "1"
    assert of(recs, "torch_summary")


def test_multiprocessing_spawn_child_has_binding(tmp_path):
    code = ("import torch, torch.multiprocessing as mp\n"
            "def w(i):\n    (torch.ones(8, 8) @ torch.ones(8, 8)).sum()\n"
            "if __name__ == '__main__':\n    mp.spawn(w, nprocs=1)\n")
    p, recs = run_py(tmp_path, code)
    assert p.returncode == 0, p.stderr
    pids = {r["pid"] for r in of(recs, "run")}
    assert len(pids) >= 2  # parent and the spawned child, each with its report
    assert len(of(recs, "torch_summary")) >= 2


def test_without_libkcheck_import_is_noop(tmp_path):
    code = ("import sys\nsys.path.insert(0, %r)\nimport kcheck, kcheck.torch, torch\n"
            "print(kcheck.active(), kcheck.torch.install())\n" % PY)
    p, _ = run_py(tmp_path, code, preload=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False None"


# ------------------------------------------------------------ op table, profiles

def test_every_row_maps_real_overloads():
    from kcheck.torch import ops
    for names, oracle, _, _ in ops.ROWS:
        for n in names:
            packet = getattr(torch.ops.aten, n)
            ov = packet.overloads()
            assert ov, n
            mapped = [o for o in ov if ops.entry_for(getattr(packet, o)) is not None]
            assert mapped, "no overload of %s is mapped" % n
    assert ops.entry_for(torch.ops.aten.div.Tensor_mode) is None
    assert ops.entry_for(torch.ops.aten.index_add.default) is None


def test_markdown_table_lists_every_row():
    from kcheck.torch import ops
    md = ops.markdown()
    for names, _, _, _ in ops.ROWS:
        assert "`%s`" % names[0] in md


def base_settings(**kw):
    s = {"allow_tf32": False, "float32_matmul_precision": "highest",
         "allow_fp16_reduced_precision_reduction": True,
         "allow_bf16_reduced_precision_reduction": True}
    s.update(kw)
    return s


def test_profiles_follow_pytorch_settings():
    from kcheck.torch import profiles as P
    assert P.profile("matmul", "fp32", "fp32", base_settings()) == "fp32:in=fp32:out=fp32"
    tf = P.profile("matmul", "fp32", "fp32", base_settings(allow_tf32=True))
    assert tf.startswith("tensorcore_tf32")
    assert P.profile("matmul", "fp32", "fp32",
                     base_settings(float32_matmul_precision="high")).startswith("tensorcore_tf32")
    with pytest.raises(P.Unsupported):
        P.profile("matmul", "fp32", "fp32", base_settings(float32_matmul_precision="medium"))
    assert P.profile("matmul", "bf16", "bf16", base_settings()).startswith("bf16_bf16acc")
    assert P.profile("matmul", "bf16", "bf16", base_settings(
        allow_bf16_reduced_precision_reduction=False)).startswith("tensorcore_fp32:in=bf16:out=bf16")
    assert P.profile("matmul", "fp16", "fp16", base_settings(
        allow_fp16_reduced_precision_reduction=False)).startswith("tensorcore_fp32:in=fp16")
    assert "softmax=online" in P.profile("softmax", "bf16", "fp32", base_settings())
    assert "norm=welford" in P.profile("norm", "fp32", "fp32", base_settings())
    assert P.profile("reduce", "fp64", "fp64", base_settings()) == "fp64"



def profiles_the_oracle_refuses(tmp_path, specs):
    """The profile specs libkcheck's judge cannot parse, as printed by a
    program that asks it (kcheck_op_judge) for each of specs."""
    code = ("import ctypes, sys\nlib = ctypes.CDLL(%r)\n" % LIB +
            "import json\nbad = []\n"
            "for s in json.loads(sys.argv[1]):\n"
            "    c = (ctypes.c_char * 256)()\n"
            "    r = lib.kcheck_op_judge(b'oracle', b'relu', s.encode(), b'', 0, None, None, 0,"
            " None, c, 256)\n"
            "    if b'bad profile' in c.value or b'unknown' in c.value: bad.append((s, c.value))\n"
            "print(bad)\n")
    p, _ = run_py(tmp_path, code, args=[json.dumps(sorted(specs))])
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()

def test_every_profile_parses_in_the_oracle(tmp_path):
    """Each spec the mapping can produce is accepted by libkcheck's parser
    (a wrong declaration by kcheck is a bug, not a finding)."""
    from kcheck.torch import profiles as P
    specs = set()
    for klass in ("matmul", "attention", "softmax", "norm", "reduce", "elementwise"):
        for i in ("fp32", "bf16", "fp16", "fp64"):
            for s in (base_settings(), base_settings(allow_tf32=True),
                      base_settings(allow_bf16_reduced_precision_reduction=False,
                                    allow_fp16_reduced_precision_reduction=False)):
                try:
                    specs.add(P.profile(klass, i, i, s))
                except P.Unsupported:
                    pass
    assert profiles_the_oracle_refuses(tmp_path, specs) == "[]"


def test_op_judge_dispatches_through_the_ops_table(tmp_path):
    """kcheck_op_judge reaches every class of ops.def through gates/judge.c:
    clamp (min/max attributes), an alias (gelu = gelu_erf), matmul with
    transpose_b; a wrong output is a violation, an unknown op an error."""
    code = """
import ctypes, json, torch
from kcheck import _api
lib = _api.api()
def T(name, t):
    t = t.contiguous()
    sh = (ctypes.c_long * t.dim())(*t.shape); st = (ctypes.c_long * t.dim())(*t.stride())
    keep.append((t, sh, st))
    return _api.Tensor(name.encode(), t.data_ptr(), b"fp32", t.dim(), sh, st)
def judge(op, attrs, ins, out):
    arr = (_api.Tensor * len(ins))(*[T(n, x) for n, x in ins])
    res = ctypes.create_string_buffer(4096)
    r = lib.kcheck_op_judge(b"oracle", op.encode(), b"fp32", attrs.encode(), len(ins), arr,
                            ctypes.byref(T("out", out)), 0, b"{}", res, len(res))
    return r, json.loads(res.value.decode()).get("class", json.loads(res.value.decode()).get("reason"))
keep = []
torch.manual_seed(0)
x = torch.randn(8, 16)
w = torch.randn(12, 16)
bad = x.clamp(-0.5, 0.5).clone(); bad[3, 4] = 0.75
print(json.dumps([
    judge("clamp", "min=-0.5 max=0.5", [("x", x)], x.clamp(-0.5, 0.5)),
    judge("clamp", "min=-0.5 max=0.5", [("x", x)], bad),
    judge("gelu", "", [("x", x)], torch.nn.functional.gelu(x.double()).float()),
    judge("matmul", "transpose_b=1", [("a", x), ("b", w)], (x.double() @ w.double().t()).float()),
    judge("nosuchop", "", [("x", x)], x)]))
"""
    p, _ = run_py(tmp_path, code, options="torch=1")
    assert p.returncode == 0, p.stderr
    (ok, c1), (viol, c2), (g, c3), (mm, c4), (err, why) = json.loads(p.stdout.strip().splitlines()[-1])
    assert (ok, c1) == (0, "bitwise")
    assert viol == 1 and c2.startswith("fail")
    assert g == 0 and c3 in ("bitwise", "pass")
    assert mm == 0 and c4 in ("bitwise", "pass")
    assert err == -1 and "not checked by the oracle" in why


def test_op_judge_leaves_the_matmul_screen_out_for_infinite_inputs(tmp_path):
    """The Freivalds screen sums whole rows: an infinite input (a -inf mask)
    makes them NaN. kcheck_op_judge scans a matmul's inputs (on the
    binding's worker, not the program's thread) and judges such a call
    without the screen; finite inputs keep it. Both verdicts pass."""
    code = """
import ctypes, json, torch
from kcheck import _api
lib = _api.api()
keep = []
def T(name, t):
    sh = (ctypes.c_long * t.dim())(*t.shape); st = (ctypes.c_long * t.dim())(*t.stride())
    keep.append((t, sh, st))
    return _api.Tensor(name.encode(), t.data_ptr(), b"fp32", t.dim(), sh, st)
def judge(a, b):
    out = (a.double() @ b.double()).float()
    arr = (_api.Tensor * 2)(T("a", a), T("b", b))
    res = ctypes.create_string_buffer(4096)
    r = lib.kcheck_op_judge(b"oracle", b"matmul", b"fp32", b"", 2, arr, ctypes.byref(T("out", out)),
                            0, b"{}", res, len(res))
    d = json.loads(res.value.decode())
    return r, d.get("class"), d.get("coverage", {}).get("screen_vectors")
torch.manual_seed(0)
a = torch.randn(320, 64); b = torch.randn(64, 256)   # 81920 outputs: sampled, screened
inf = a.clone(); inf[5, 7] = float("-inf")
print(json.dumps([judge(a, b), judge(inf, b)]))
"""
    p, _ = run_py(tmp_path, code, options="torch=1")
    assert p.returncode == 0, p.stderr
    (r1, c1, s1), (r2, c2, s2) = json.loads(p.stdout.strip().splitlines()[-1])
    assert r1 == 0 and c1 in ("bitwise", "pass") and s1 > 0
    assert r2 == 0 and c2 in ("bitwise", "pass") and s2 == 0


def test_large_attention_and_elementwise_outputs_sampled_within_the_cap():
    """One slice of dim 0 above the cap (attention's heads of one batch row,
    the sequence of one elementwise row): dim 1 is sampled too, so the
    judged output stays within the cap; key/value with fewer heads (GQA)
    keep dim 1 whole, and so do the query and output."""
    from kcheck.torch import judge, ops

    def job(klass, op, shapes, out_shape, cap):
        ins = [judge.HostTensor(n, torch.zeros(s)) for n, s in shapes]
        out = judge.HostTensor("out", torch.zeros(out_shape))
        plan = ops.Plan(op, [], None, {}, klass)
        j = judge.Job(None, "oracle", 0, plan, ins, out, "fp32", {}, {}, cap, None)
        n = 1
        for d in range(j.cout.rank):
            n *= j.cout.shape[d]
        return j.ctx.get("sampled_rows"), n

    att = [("q", (4, 4, 8, 2)), ("k", (4, 4, 8, 2)), ("v", (4, 4, 8, 2))]
    rows, n = job("attention", "attention", att, (4, 4, 8, 2), 32)
    assert rows == {"dim": 0, "judged": 1, "of": 4, "dim1": {"judged": 2, "of": 4}} and n == 32
    gqa = [("q", (4, 4, 8, 2)), ("k", (4, 2, 8, 2)), ("v", (4, 2, 8, 2))]
    rows, n = job("attention", "attention", gqa, (4, 4, 8, 2), 32)
    assert rows == {"dim": 0, "judged": 1, "of": 4} and n == 64
    # a bias broadcast along dims 0 and 1 ([16] against [4, 8, 16])
    ew = [("a", (4, 8, 16)), ("b", (16,))]
    rows, n = job("elementwise", "add", ew, (4, 8, 16), 64)
    assert rows == {"dim": 0, "judged": 1, "of": 4, "dim1": {"judged": 3, "of": 8}} and n == 48
    rows, n = job("elementwise", "add", ew, (4, 8, 16), 1 << 16)
    assert rows is None and n == 512
    # the rows kept never exceed the cap (a step rounded down kept 64 of 64)
    rows, n = job("elementwise", "add", [("a", (64, 16)), ("b", (64, 16))], (64, 16), 672)
    assert rows == {"dim": 0, "judged": 32, "of": 64} and n == 512


def test_generated_inputs_sampled_within_the_cap_with_every_row_kind():
    """A trial on generated inputs (every row kind of the generators among
    the judged rows, judge.TRIAL_SAMPLING) whose dim 0 has fewer rows than
    the kinds: dim 0 stays whole, dim 1 is sampled with a step prime to the
    kinds, and an elementwise op's last dim too, so the output judged stays
    within the cap (a [8, 128, 1024] gelu_backward trial judged all its
    1,048,576 elements in MPFR before, 85 s at a program's exit)."""
    from kcheck.torch import judge, ops
    shapes = [("g", (8, 128, 1024)), ("x", (8, 128, 1024))]
    ins = [judge.HostTensor(n, torch.zeros(s)) for n, s in shapes]
    out = judge.HostTensor("out", torch.zeros(8, 128, 1024))
    plan = ops.Plan("gelu_erf_backward", [], None, {})
    j = judge.Job(None, "precision", 0, plan, ins, out, "fp32", {}, {}, judge.TRIAL_CAP, None,
                  judge.TRIAL_SAMPLING)
    rows = j.ctx["sampled_rows"]
    assert rows["dim"] == 0 and rows["judged"] == rows["of"] == 8, rows
    assert rows["dim1"]["judged"] >= 12 and rows["dim1"]["of"] == 128, rows
    assert rows["last"]["dim"] == 2 and rows["last"]["of"] == 1024, rows
    n = j.cout.shape[0] * j.cout.shape[1] * j.cout.shape[2]
    assert n <= judge.TRIAL_CAP, (n, rows)
    # the inputs follow the output's elements
    assert [j.arr[k].shape[d] for k in range(2) for d in range(3)] == \
        [j.cout.shape[d] for _ in range(2) for d in range(3)]


def test_sampled_last_dim_keeps_the_generated_special_values(tmp_path):
    """A trial of an elementwise op above the cap with a sampled last dim
    (a [16, 16384] relu: every 65th column): the specials generator puts
    each row's NaN or infinity at one seeded column, which the step skips
    most of the time, so a relu that turns NaN into 0 was judged clean (on
    the GPU corpus: relu/cuda_nan_swallowed, sigmoid and silu's Inf
    mishandled). The columns holding them are judged too: the wrong relu
    is a violation of the nonfinite gate, the right one passes, and the
    record says how many columns were added."""
    code = """
import json, torch
from kcheck import _api
from kcheck.torch import judge, ops, trials
lib = _api.api()
x = trials.generate(lib, "specials", "none", torch.empty(16, 16384), 0, 172487885537778)
plan = ops.Plan("relu", [], None, {}, "elementwise")
out = []
for name, y in (("swallows NaN", torch.where(x > 0, x, torch.zeros_like(x))),
                ("right", torch.relu(x))):
    j = judge.Job(lib, "nonfinite", 0, plan, [judge.HostTensor("x", x)],
                  judge.HostTensor("out", y), "fp32", {}, {}, judge.TRIAL_CAP, None,
                  judge.TRIAL_SAMPLING)
    status, res = j.run()
    out.append([name, status, res.get("class"), res["sampled_rows"]])
print(json.dumps(out))
"""
    p, _ = run_py(tmp_path, code, options="torch=1")
    assert p.returncode == 0, p.stderr
    (_, bad, bad_class, rows), (_, good, good_class, rows2) = \
        json.loads(p.stdout.strip().splitlines()[-1])
    assert bad == 1 and bad_class == "fail_special", (bad, bad_class, rows)
    assert good == 0 and good_class in ("bitwise", "pass"), (good, good_class)
    last = rows["last"]
    assert last["of"] == 16384 and last["special_columns"] > 0, rows
    # every 65th column (253 of them) and the added ones, nothing else
    assert last["judged"] == 253 + last["special_columns"], rows
    assert rows2 == rows


def test_norm_gradient_rows_sampled_with_their_statistics():
    """layer_norm_backward above the cap: g, x and the saved mean and rstd
    are sampled along dim 0 together; the weight (1-D, here as long as the
    rows) is kept whole."""
    from kcheck.torch import judge, ops
    shapes = [("g", (16, 64)), ("x", (16, 64)), ("mean", (16, 1)), ("rstd", (16, 1)),
              ("weight", (16,))]
    ins = [judge.HostTensor(n, torch.zeros(sh)) for n, sh in shapes]
    out = judge.HostTensor("out", torch.zeros(16, 64))
    plan = ops.Plan("layer_norm_backward", [], None, {}, "norm_grad")
    j = judge.Job(None, "oracle", 0, plan, ins, out, "fp32", {}, {}, 256, None)
    assert j.ctx["sampled_rows"] == {"dim": 0, "judged": 4, "of": 16}
    assert [j.arr[k].shape[0] for k in range(5)] == [4, 4, 4, 4, 16]
    assert [j.arr[k].strides[0] for k in range(4)] == [64 * 5, 64 * 5, 5, 5]
    assert j.cout.shape[0] == 4 and j.cout.shape[1] == 64


# ------------------------------------------------------------ checks, policy, gates

OPS_PROG = """
import torch
torch.manual_seed(0)
a = torch.rand(32, 64); b = torch.rand(64, 16)
for _ in range(3):
    c = a @ b                      # same signature: checked once
d = torch.softmax(c, -1)
e = torch.tanh(d * 2.0)            # (CPU gelu gives NaN at +-inf: the nonfinite gate says so)
l = torch.nn.functional.layer_norm(e, (16,))
s = l.sum(); m = l.mean(-1); mx = l.amax(-1)
n = torch.linalg.vector_norm(l, dim=-1)
i = torch.arange(10) + 1           # int64: passes through
z = torch.ones(3, dtype=torch.complex64) * 2
meta = torch.empty(4, 4, device="meta") @ torch.empty(4, 4, device="meta")
sp = torch.ones(4, 4).to_sparse() * 2
print("done")
"""


def test_ops_checked_once_and_pass_through_counted(tmp_path):
    p, recs = run_py(tmp_path, OPS_PROG)
    assert p.returncode == 0, p.stderr
    checks = of(recs, "op_check")
    mm = [c for c in checks if c["op"] == "aten::mm.default"]
    assert len(mm) == 1  # check_first=1: one check per signature
    by = {c["oracle_op"] for c in checks}
    assert {"matmul", "softmax", "mul", "tanh", "layer_norm", "sum", "mean", "max",
            "norm2"} <= by
    assert not of(recs, "violation"), [v["message"] for v in of(recs, "violation")]
    for c in checks:
        assert c["gates"]["oracle"]["status"] in ("bitwise", "pass"), c
    s = of(recs, "torch_summary")[0]
    pt = s["passed_through"]
    # the second mm: the library's policy says no; the third: remembered
    assert pt.get("not sampled", 0) >= 1 and pt.get("signature done (policy)", 0) >= 1
    assert pt.get("dtype int64", 0) >= 1
    assert pt.get("complex dtype", 0) >= 1
    assert pt.get("meta or fake tensor", 0) >= 1
    assert pt.get("sparse or non-strided layout", 0) >= 1
    assert s["ops_seen"] > s["ops_covered"] >= s["ops_checked"]


def test_check_record_carries_profile_settings_and_stack(tmp_path):
    p, recs = run_py(tmp_path, OPS_PROG)
    mm = [c for c in of(recs, "op_check") if c["op"] == "aten::mm.default"][0]
    assert mm["profile"] == "fp32:in=fp32:out=fp32"
    assert mm["stack"]["python"][-1]["line"] == 6
    assert set(mm["gates"]) >= {"oracle", "immutability", "nonfinite", "precision", "extremes",
                                "coverage"}


def test_policy_options_apply(tmp_path):
    p, recs = run_py(tmp_path, OPS_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:max_checks=2")
    assert len(of(recs, "op_check")) == 2
    assert of(recs, "torch_summary")[0]["passed_through"].get("max_checks reached", 0) >= 1
    d = tmp_path / "race"
    d.mkdir()
    p, recs = run_py(d, OPS_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:gates=race")
    assert not of(recs, "op_check")
    assert "the oracle gate is not enabled" in of(recs, "torch_summary")[0]["passed_through"]


NICE_PROG = """
import os, threading, time, torch
a = torch.rand(32, 64); b = torch.rand(64, 16)
c = a @ b
time.sleep(0.5)  # the judgment's worker started
def nice(tid):
    with open("/proc/self/task/%d/stat" % tid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])
print("MAIN", nice(threading.get_native_id()))
for t in threading.enumerate():
    if t.name.startswith("kcheck"):
        print("WORKER", nice(t.native_id))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.parametrize("nice", [None, 0, 5])
def test_judgment_threads_run_below_the_program(tmp_path, nice):
    opts = "torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_workers=2"
    if nice is not None:
        opts += ":torch_worker_nice=%d" % nice
    p, recs = run_py(tmp_path, NICE_PROG, options=opts)
    assert p.returncode == 0, p.stderr
    main = [int(line.split()[1]) for line in p.stdout.splitlines() if line.startswith("MAIN")]
    workers = [int(line.split()[1]) for line in p.stdout.splitlines() if line.startswith("WORKER")]
    assert main and workers, p.stdout
    want = min(19, main[0] + (10 if nice is None else nice))
    assert workers == [want] * len(workers), (main, workers)
    assert [c["op"] for c in of(recs, "op_check")] == ["aten::mm.default"]


def test_cpu_tensors_pass_through_by_default(tmp_path):
    p, recs = run_py(tmp_path, OPS_PROG, options="torch=1")
    assert not of(recs, "op_check")
    assert of(recs, "torch_summary")[0]["passed_through"].get("cpu tensor", 0) > 5


BUGS_PROG = """
import torch

@torch.library.custom_op("kct::scale_scratch", mutates_args=())
def scale_scratch(x: torch.Tensor) -> torch.Tensor:
    y = x * 2.0
    x.mul_(3.0)                    # the bug: the input used as scratch
    return y

@torch.library.custom_op("kct::scale_ok", mutates_args=())
def scale_ok(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0

@torch.library.custom_op("kct::softmax_nomax", mutates_args=())
def softmax_nomax(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)               # the bug: no max subtracted
    return e / e.sum(-1, keepdim=True)

@torch.library.custom_op("kct::softmax_ok", mutates_args=())
def softmax_ok(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)

@torch.library.custom_op("kct::mm_fp16acc", mutates_args=())
def mm_fp16acc(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.half() @ b.half()).float()   # the bug: fp16 arithmetic

@torch.library.custom_op("kct::mm_ok", mutates_args=())
def mm_ok(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double().mm(b.double()).float()

@torch.library.custom_op("kct::relu_tail", mutates_args=())
def relu_tail(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    y[:-3] = torch.relu(x[:-3])    # the bug: the tail is never written
    return y

x = torch.randn(16, 64)
a, b = torch.rand(64, 256), torch.rand(256, 32)
scale_scratch(x.clone())           # line 39
scale_ok(x.clone())
softmax_nomax(x)                   # line 41
softmax_ok(x)
mm_fp16acc(a, b)                   # line 43
mm_ok(a, b)
relu_tail(torch.rand(1000) + 1)    # line 45: positive, so no stale tail is ever right
print("ran")
"""

BUGS_YAML = """
contracts:
  - {torch_op: "kct::scale_scratch", op: mul, args: {x: x, s: "2.0"}, profile: fp32}
  - {torch_op: "kct::scale_ok", op: mul, args: {x: x, s: "2.0"}, profile: fp32}
  - {torch_op: "kct::softmax_nomax", op: softmax, args: {x: x}, attrs: {axis: -1}, profile: fp32}
  - {torch_op: "kct::softmax_ok", op: softmax, args: {x: x}, attrs: {axis: -1}, profile: "fp32:softmax=online"}
  - {torch_op: "kct::mm_fp16acc", op: matmul, args: {a: a, b: b}, profile: fp32}
  - {torch_op: "kct::mm_ok", op: matmul, args: {a: a, b: b}, profile: fp32}
  - {torch_op: "kct::relu_tail", op: relu, args: {x: x}, profile: fp32}
"""


def test_custom_op_contracts_catch_planted_bugs_with_python_line(tmp_path):
    (tmp_path / "bugs.yaml").write_text(BUGS_YAML)
    p, recs = run_py(tmp_path, BUGS_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "bugs.yaml"))
    assert p.returncode == 0, p.stderr
    viol = of(recs, "violation")
    got = {}
    for v in viol:
        got.setdefault(v["op"], set()).add(v["gate"])
        assert v["stack"]["python"][-1]["file"].endswith("prog.py")
    lines = {v["op"]: v["stack"]["python"][-1]["line"] for v in viol}
    assert "immutability" in got["kct::scale_scratch.default"]
    assert lines["kct::scale_scratch.default"] == 39
    assert "extremes" in got["kct::softmax_nomax.default"]
    assert lines["kct::softmax_nomax.default"] == 41
    assert "precision" in got["kct::mm_fp16acc.default"]
    assert lines["kct::mm_fp16acc.default"] == 43
    assert "coverage" in got["kct::relu_tail.default"] or "oracle" in got["kct::relu_tail.default"]
    for ok in ("kct::scale_ok.default", "kct::softmax_ok.default", "kct::mm_ok.default"):
        assert ok not in got, (ok, got.get(ok))
    checked = {c["op"] for c in of(recs, "op_check")}
    assert {"kct::scale_ok.default", "kct::softmax_ok.default", "kct::mm_ok.default"} <= checked
    # Every evidence field is one gates.def names for the gate at op level.
    from kcheck import _defs
    for v in viol:
        declared = set(_defs.GATE[v["gate"]].op_evidence) | {"verdict", "exposed_by"}
        assert set(v["evidence"]) <= declared, (v["gate"], set(v["evidence"]) - declared)
    v = [v for v in viol if v["gate"] == "precision"][0]
    assert v["exposed_by"]["inputs"] == "generated"
    assert v["regenerate"][0].startswith("kcheck gen -g ")
    assert v["evidence"]["verdict"] in ("fail_precision", "fail_value", "fail_special")


BOUNDS_PROG = """
import torch
lib = torch.library.Library("kcb", "DEF")
for name in ("spill", "ok"):
    lib.define(name + "(Tensor x) -> Tensor")
    lib.define(name + ".out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")

def spill_out(x, *, out):
    out.copy_(x * 2.0)
    # the bug: three elements written past the end of the output
    wide = torch.empty(0, dtype=out.dtype).set_(out.untyped_storage(), out.storage_offset(),
                                                (out.numel() + 3,), (1,))
    wide[out.numel():] = 7.0
    return out

def spill(x):
    room = torch.empty(x.numel() + 3)
    return spill_out(x, out=room[:x.numel()].view(x.shape))

def ok_out(x, *, out):
    return out.copy_(x * 2.0)

lib.impl("spill", spill, "CPU")
lib.impl("spill.out", spill_out, "CPU")
lib.impl("ok", lambda x: x * 2.0, "CPU")
lib.impl("ok.out", ok_out, "CPU")
x = torch.randn(64)
torch.ops.kcb.spill(x)              # line 28
torch.ops.kcb.ok(x)
a, b = torch.rand(16, 32), torch.rand(32, 8)
c = a @ b + 1.0                     # ATen: mm.out, add.out
print("done")
"""


def test_bounds_gate_at_op_level_out_overload_in_guard_zones(tmp_path):
    (tmp_path / "b.yaml").write_text(
        "contracts:\n"
        "  - {torch_op: 'kcb::spill', op: mul, args: {x: x, s: '2.0'}, profile: fp32}\n"
        "  - {torch_op: 'kcb::ok', op: mul, args: {x: x, s: '2.0'}, profile: fp32}\n")
    p, recs = run_py(tmp_path, BOUNDS_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "contracts=%s" % (tmp_path / "b.yaml"))
    assert p.returncode == 0, p.stderr
    viol = [v for v in of(recs, "violation") if v["gate"] == "bounds"]
    assert [v["op"] for v in viol] == ["kcb::spill.default"], viol
    ev = viol[0]["evidence"]
    assert ev["overload"] == "kcb::spill.out" and ev["changed_bytes_after"] == 12
    assert ev["bytes_past_end"] == 0 and ev["changed_bytes_before"] == 0
    from kcheck import _defs  # the fields gates.def names for bounds at op level
    assert set(ev) - {"verdict"} <= set(_defs.GATE["bounds"].op_evidence), ev
    assert viol[0]["stack"]["python"][-1]["line"] == 28
    gates = {c["op"]: c["gates"]["bounds"] for c in of(recs, "op_check")}
    assert gates["kcb::ok.default"]["status"] == "pass"
    assert gates["aten::mm.default"] == {"status": "pass", "overload": "aten::mm.out"}
    assert gates["aten::add.Tensor"]["status"] == "pass"


SHAPES_PROG = """
import torch
from kcheck.torch import ops

@torch.library.custom_op("kcs::rowsum", mutates_args=())
def rowsum(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[-1]
    return x[..., : n - (n % 2)].sum(-1)   # the bug: an odd row loses its last element

ops.SHAPERS["kcs::rowsum"] = lambda a: [("3x5", {"x": ops.Layout(a["x"], (3, 5))}),
                                        ("2x64", {"x": ops.Layout(a["x"], (2, 64))})]
x = torch.rand(4, 64)
rowsum(x)                                   # line 13: correct at this shape
a, b = torch.rand(16, 32), torch.rand(32, 8)
torch.softmax(a @ b + 1.0, -1)
print("done")
"""


def test_shapes_gate_at_op_level(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "contracts:\n"
        "  - {torch_op: 'kcs::rowsum', op: sum, args: {x: x}, attrs: {axis: -1}, profile: fp32}\n")
    p, recs = run_py(tmp_path, SHAPES_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "gates=oracle,shapes:contracts=%s" % (tmp_path / "s.yaml"))
    assert p.returncode == 0, p.stderr
    viol = of(recs, "violation")
    assert [(v["op"], v["gate"]) for v in viol] == [("kcs::rowsum.default", "shapes")], viol
    assert viol[0]["exposed_by"]["shape"] == "3x5"
    assert viol[0]["stack"]["python"][-1]["line"] == 13
    gates = {c["op"]: c["gates"] for c in of(recs, "op_check")}
    assert gates["kcs::rowsum.default"]["oracle"]["status"] in ("bitwise", "pass")
    for op in ("aten::mm.default", "aten::add.Tensor", "aten::_softmax.default"):
        g = gates[op]["shapes"]
        assert g["status"] == "pass" and len(g["runs"]) >= 4, (op, g)
        assert all(r["class"] in ("bitwise", "pass") for r in g["runs"]), (op, g)


def test_torch_op_contract_lint(tmp_path):
    good = tmp_path / "g.yaml"
    good.write_text(BUGS_YAML)
    bad = tmp_path / "b.yaml"
    bad.write_text("contracts:\n  - {torch_op: nonamespace, op: relu, args: {x: x}, profile: fp32}\n"
                   "  - {torch_op: 'a::b', kernel: {name: k}, op: relu, profile: fp32}\n")
    kc = [sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "--lib", LIB, "contract", "lint"]
    r = subprocess.run(kc + [str(good)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(kc + [str(bad)], capture_output=True, text=True)
    assert r.returncode == 1
    assert "expected namespace::name" in r.stderr
    assert "names an op, not a kernel" in r.stderr


def test_application_results_unchanged(tmp_path):
    code = ("import torch, hashlib\ntorch.manual_seed(0)\n"
            "m = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64),"
            " torch.nn.Linear(64, 8))\n"
            "opt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
            "x = torch.randn(16, 32); y = torch.randn(16, 8)\n"
            "for _ in range(3):\n"
            "    opt.zero_grad(); l = torch.nn.functional.mse_loss(m(x), y); l.backward(); opt.step()\n"
            "h = hashlib.sha256(b''.join(p.detach().numpy().tobytes() for p in m.parameters()))\n"
            "print(float(l).hex(), h.hexdigest(), torch.rand(1).item())\n")
    plain, _ = run_py(tmp_path, code, preload=False)
    checked, recs = run_py(tmp_path, code)
    assert plain.returncode == 0 and checked.returncode == 0, checked.stderr
    assert plain.stdout == checked.stdout  # loss, parameters and the RNG stream
    assert of(recs, "op_check")


def test_steady_state_watches_one_step_in_n(tmp_path):
    code = ("import torch\ntorch.manual_seed(0)\nm = torch.nn.Linear(16, 16)\n"
            "opt = torch.optim.SGD(m.parameters(), lr=0.1)\nx = torch.randn(8, 16)\n"
            "for _ in range(12):\n"
            "    opt.zero_grad(); m(x).square().mean().backward(); opt.step()\n")
    p, recs = run_py(tmp_path, code, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_watch_every=5")
    assert p.returncode == 0, p.stderr
    s = of(recs, "torch_summary")[0]
    assert s["optimizer_steps"] == 12
    # steps 1-2 meet new signatures; from then on one step in 5 is watched
    assert 3 <= s["watched_steps"] <= 5, s
    d = tmp_path / "all"
    d.mkdir()
    p, recs = run_py(d, code, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_watch_every=1")
    assert of(recs, "torch_summary")[0]["watched_steps"] == 12


BACKOFF_PROG = """
import sys, torch
torch.manual_seed(0)
m = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for i in range(50):
    x = torch.randn(8 if i < int(sys.argv[1]) else 4, 16)   # from step argv[1] on: a new shape
    opt.zero_grad(); m(x).square().mean().backward(); opt.step()
"""


def test_steady_state_watch_interval_doubles_until_a_new_signature(tmp_path):
    opts = "torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_watch_every=5"
    # steps 1-2 meet new signatures, 3 nothing: then watched 8, 18, 38 (the
    # interval 5, 10, 20, then 40)
    p, recs = run_py(tmp_path, BACKOFF_PROG, options=opts, args=["1000"])
    assert p.returncode == 0, p.stderr
    assert of(recs, "torch_summary")[0]["watched_steps"] == 6
    # a new shape from step 31 on is met at the next watched step (38):
    # 38 and 39 meet new signatures (as steps 1 and 2 did), 40 nothing,
    # then 45: the interval is back to 5
    d = tmp_path / "new"
    d.mkdir()
    p, recs = run_py(d, BACKOFF_PROG, options=opts, args=["30"])
    assert p.returncode == 0, p.stderr
    assert of(recs, "torch_summary")[0]["watched_steps"] == 9
    assert any("Size([4, 16])" in c["key"] for c in of(recs, "op_check")), "the new shape checked"


LOOP_PROG = """
import torch
torch.manual_seed(0)
a = torch.rand(32, 64); b = torch.rand(64, 16)
for i in range(40):
    c = a @ b
    d = torch.softmax(c * (2.5 + i), -1)   # a new scalar every step: the same signature
    e = torch.tanh(d).sum(-1)
print("done")
"""


def test_budget_defers_generated_inputs_not_the_application_check(tmp_path):
    # torch_budget=0: every new signature is judged on the application's
    # inputs at its first call (the first one's included); its
    # generated-input part waits for a safe point with budget (none here:
    # the exit)
    p, recs = run_py(tmp_path, LOOP_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=0")
    assert p.returncode == 0, p.stderr
    s = of(recs, "torch_summary")[0]
    first = [c for c in of(recs, "op_check") if "part" not in c]
    later = [c for c in of(recs, "op_check") if c.get("part") == "generated"]
    assert s["ops_checked"] == 5 and len(first) == 5, s
    assert s["generated_part_deferred"] == 5, s
    assert sorted(c["oracle_op"] for c in later) == ["matmul", "mul", "softmax", "sum", "tanh"]
    for c in first:
        assert c["gates"]["oracle"]["status"] in ("bitwise", "pass"), c
        assert c["gates"]["precision"]["status"] == "deferred", c
    for c in later:  # the same gates, run at exit, with the call's Python line
        assert {"nonfinite", "precision", "extremes", "coverage"} <= set(c["gates"]), c
        assert c["gates"]["precision"]["status"] == "pass", c
        assert c["stack"]["python"][-1]["line"] in (6, 7, 8), c
    assert s["cost_s"]["exit_generated"] > 0
    assert s["signatures_deferred_unchecked"] == 0
    # no budget limit: everything at the first call
    d = tmp_path / "all"
    d.mkdir()
    p, recs = run_py(d, LOOP_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=1")
    s = of(recs, "torch_summary")[0]
    assert s["generated_part_deferred"] == 0
    assert not [c for c in of(recs, "op_check") if "part" in c]
    assert sorted(c["oracle_op"] for c in of(recs, "op_check")) == \
        ["matmul", "mul", "softmax", "sum", "tanh"], s


STEADY_PROG = """
import time, torch
torch.manual_seed(0)
m = torch.nn.Linear(16, 32)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(8, 16)
for i in range(6):
    opt.zero_grad()
    torch.tanh(m(x)).softmax(-1).mul(3.0).sum().backward()
    opt.step()
    time.sleep(0.3)   # the program's own time, which the steady budget is a share of
print("done")
"""


def test_steady_budget_bounds_generated_parts_after_the_first_steps(tmp_path):
    # torch_budget=0 defers every generated-input part; from steady state (step 2: no new signature) they run at optimizer
    # steps only within torch_steady_budget of the time since then
    def later(d, steady):
        p, recs = run_py(d, STEADY_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=0:"
                         "torch_steady_budget=%s" % steady)
        assert p.returncode == 0, p.stderr
        s = of(recs, "torch_summary")[0]
        parts = [c for c in of(recs, "op_check") if c.get("part") == "generated"]
        assert len(parts) == s["generated_part_deferred"] >= 2, s
        return [c["run_at"] for c in parts]
    assert set(later(tmp_path, 0)) == {"exit"}  # none on the program's thread in steady state
    d = tmp_path / "share"
    d.mkdir()
    at = later(d, 1)
    steps = [int(a.split()[-1]) for a in at if a != "exit"]
    assert steps, at
    assert min(steps) >= 2, at  # never in the first steps (torch_budget=0)


def test_exit_budget_bounds_the_checks_left_at_exit(tmp_path):
    # torch_budget=0 leaves five generated-input parts for the exit; with
    # torch_exit_budget=0 none runs, and the summary counts and names them
    p, recs = run_py(tmp_path, LOOP_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=0:torch_exit_budget=0")
    assert p.returncode == 0, p.stderr
    s = of(recs, "torch_summary")[0]
    assert s["generated_part_deferred"] == 5, s
    assert not [c for c in of(recs, "op_check") if c.get("part") == "generated"]
    left = s["exit_not_run"]
    assert left["generated_parts"] == 5, s
    assert sum(left["ops"].values()) == 5, s
    # the default budget (10 s) runs them all: nothing left
    d = tmp_path / "default"
    d.mkdir()
    p, recs = run_py(d, LOOP_PROG, options="torch=1:torch_devices=cuda,cpu:torch_budget=0")
    s = of(recs, "torch_summary")[0]
    assert s["exit_not_run"] == {"generated_parts": 0, "judgments": 0, "ops": {}}, s
    assert len([c for c in of(recs, "op_check") if c.get("part") == "generated"]) == 5


def test_os_exit_keeps_the_binding_summary_and_its_judgments(tmp_path):
    # os._exit skips atexit: the binding's wrapper writes its summary and the
    # queued checks first (the C _exit then writes libkcheck's summary)
    prog = LOOP_PROG.replace('print("done")', 'print("done", flush=True)\nimport os\nos._exit(4)')
    p, recs = run_py(tmp_path, prog, options="torch=1:torch_devices=cuda,cpu:torch_budget=0")
    assert p.returncode == 4, p.stderr
    s = of(recs, "torch_summary")[0]
    assert s["exit_not_run"] == {"generated_parts": 0, "judgments": 0, "ops": {}}, s
    assert len([c for c in of(recs, "op_check") if c.get("part") == "generated"]) == 5
    assert len(of(recs, "torch_summary")) == 1 and of(recs, "summary")


def test_large_generated_inputs_repeat_the_generators_first_rows(tmp_path):
    code = (
        "import ctypes, torch\n"
        "from kcheck import _api\n"
        "from kcheck.torch import trials\n"
        "lib = _api.api()\n"
        "t = torch.empty(1024, 1024)\n"
        "g = trials.generate(lib, 'stagnation', 'none', t, 1, 5)\n"
        "R = trials.tile_rows(1024, 1024)\n"
        "h = torch.empty(R * 1024)\n"
        "lib.kcheck_generate(b'stagnation', b'none', b'fp32', 1, R, 1024, 5,"
        " ctypes.c_void_p(h.data_ptr()))\n"
        "rep = torch.equal(g[:R].reshape(-1), h) and torch.equal(g[R:2 * R], g[:R])"
        " and torch.equal(g[1023], g[1023 % R])\n"
        "s = torch.empty(8, 16)\n"
        "gs = trials.generate(lib, 'uniform', 'none', s, 0, 3)\n"
        "hs = torch.empty(128)\n"
        "lib.kcheck_generate(b'uniform', b'none', b'fp32', 0, 8, 16, 3,"
        " ctypes.c_void_p(hs.data_ptr()))\n"
        "print(R, rep, torch.equal(gs.reshape(-1), hs))\n"
        "print(trials.regen_command('stagnation', 'none', 5, t, 1))\n")
    p, _ = run_py(tmp_path, code, options="torch=1")
    assert p.returncode == 0, p.stderr
    first, cmd = p.stdout.strip().splitlines()
    r, rep, small = first.split()
    assert int(r) % 64 == 0 and int(r) * 1024 <= 2 * (1 << 18) and 64 <= int(r) < 1024
    assert rep == "True" and small == "True"
    assert ("--shape %s,1024" % r) in cmd and "row i mod %s" % r in cmd


def test_signature_leaves_scalar_values_out():
    from kcheck.torch import mode
    x = torch.ones(2, 3)
    k = [mode._key_part((x, v)) for v in (0.3, 0.25, 1.0, 0.0, 0.5)]
    assert k[0] == k[1] and len({k[0], k[2], k[3], k[4]}) == 4  # 0, 1, pow's 0.5, others
    assert mode._key_part((x, 2)) != mode._key_part((x, 3))  # integers (dims) stay
    assert mode._key_part(x) != mode._key_part(x.t())  # strides stay


def test_readme_coverage_table_is_generated_from_the_op_table():
    from kcheck.torch import ops
    with open(os.path.join(ROOT, "docs", "torch.md")) as f:
        text = f.read()
    begin, end = "<!-- torch-coverage-begin -->\n", "\n<!-- torch-coverage-end -->"
    table = text[text.index(begin) + len(begin):text.index(end)]
    assert table == ops.markdown()


def test_kcheck_run_torch_front_end(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("KCHECK_", "FAKECUDA_", "PYTHONPATH", "LD_PRELOAD"))}
    env["LD_LIBRARY_PATH"] = FAKECUDA
    prefix = str(tmp_path / "kc")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "--lib", LIB, "run",
                        "--torch", "-o", "torch_devices=cuda,cpu", "-o", "log_path=" + prefix, "--",
                        sys.executable, "-c", "import torch; print((torch.ones(8, 8) @ torch.ones(8, 8)).sum())"],
                       env=env, capture_output=True, text=True, timeout=240, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    recs = []
    for f in glob.glob(prefix + ".*.jsonl"):
        recs += [json.loads(line) for line in open(f)]
    assert of(recs, "torch_summary") and of(recs, "op_check")
    # kcheck report summarises the op-level records
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "report"] +
                       glob.glob(prefix + ".*.jsonl"), capture_output=True, text=True, timeout=60)
    assert "torch: " in r.stdout and "ops seen" in r.stdout, r.stdout
    assert "op checks by oracle op" in r.stdout
    assert any(line.split()[:2] == ["matmul", "1:"] and "oracle 1 " in line
               for line in r.stdout.splitlines()), r.stdout


ATTRS_PROG = """
import torch
import torch.nn.functional as F

@torch.library.custom_op("kca::attn_causal", mutates_args=())
def attn_causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True).float()

@torch.library.custom_op("kca::attn_forgot", mutates_args=())
def attn_forgot(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double()).float()  # no mask

@torch.library.custom_op("kca::mm_bt", mutates_args=())
def mm_bt(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.double() @ b.double().t()).float()

torch.manual_seed(0)
q, k, v = torch.randn(2, 16, 8), torch.randn(2, 16, 8), torch.randn(2, 16, 8)
attn_causal(q, k, v)
attn_forgot(q, k, v)
mm_bt(torch.randn(8, 16), torch.randn(12, 16))
print("ran")
"""

ATTRS_YAML = """
contracts:
  - {torch_op: "kca::attn_causal", op: attention, args: {q: q, k: k, v: v}, attrs: {causal: true}, profile: fp32}
  - {torch_op: "kca::attn_forgot", op: attention, args: {q: q, k: k, v: v}, attrs: {causal: true}, profile: fp32}
  - {torch_op: "kca::mm_bt", op: matmul, args: {a: a, b: b}, attrs: {transpose_b: true}, profile: fp32}
"""


def test_torch_op_contract_booleans_mean_what_they_say(tmp_path):
    """A torch_op contract's `causal: true` and `transpose_b: true` reach the
    judge as true (they were read by strtod as 0): a correct causal
    attention and a correct A @ B^T pass the oracle, an attention that
    forgets the mask fails it. The contracts' attrs come out typed."""
    (tmp_path / "attrs.yaml").write_text(ATTRS_YAML)
    p, recs = run_py(tmp_path, ATTRS_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "attrs.yaml"))
    assert p.returncode == 0, p.stderr
    viol = {}
    for r in of(recs, "violation"):
        viol.setdefault(r["op"], set()).add(r["gate"])
    checked = {c["op"] for c in of(recs, "op_check")}
    assert {"kca::attn_causal.default", "kca::mm_bt.default"} <= checked, checked
    assert "kca::attn_causal.default" not in viol, viol
    assert "kca::mm_bt.default" not in viol, viol
    assert "oracle" in viol.get("kca::attn_forgot.default", set()), viol
    code = ("import ctypes, json\nlib = ctypes.CDLL(%r)\n" % LIB +
            "buf = ctypes.create_string_buffer(1 << 16)\n"
            "lib.kcheck_torch_op_contracts(buf, len(buf))\nprint(buf.value.decode())\n")
    p, _ = run_py(tmp_path, code, options="contracts=%s" % (tmp_path / "attrs.yaml"))
    assert p.returncode == 0, p.stderr
    attrs = {c["torch_op"]: c["attrs"] for c in json.loads(p.stdout.strip().splitlines()[-1])}
    assert attrs["kca::attn_causal"] == {"causal": True}
    assert attrs["kca::mm_bt"] == {"transpose_b": True}
    from kcheck.torch.judge import _attr_text
    assert _attr_text(True) == "true" and _attr_text(0.1) == "0.1"


CLASS_SHAPES_PROG = """
import torch

@torch.library.custom_op("kcd::scale_tail", mutates_args=())
def scale_tail(x: torch.Tensor) -> torch.Tensor:
    y = torch.zeros_like(x).view(-1)
    n = x.numel() - x.numel() % 128         # the bug: the grid drops the tail
    y[:n] = x.reshape(-1)[:n] * 2.0
    return y.view(x.shape)

@torch.library.custom_op("kcd::scale_ok", mutates_args=())
def scale_ok(x: torch.Tensor) -> torch.Tensor:
    return x * 2.0

@torch.library.custom_op("kcd::rowsum_block", mutates_args=())
def rowsum_block(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[-1] - x.shape[-1] % 64      # the bug: the last partial block is dropped
    return x[..., :n].sum(-1)

@torch.library.custom_op("kcd::rowsum_ok", mutates_args=())
def rowsum_ok(x: torch.Tensor) -> torch.Tensor:
    return x.double().sum(-1).float()

x = torch.rand(32, 128)
scale_tail(x)                               # line 30: correct at this shape
scale_ok(x)
rowsum_block(x)                             # line 32: correct at this shape
rowsum_ok(x)
colsum_even(x)                              # line 34: correct at this shape
print("done")
"""
CLASS_SHAPES_PROG = CLASS_SHAPES_PROG.replace("x = torch.rand(32, 128)", '''
@torch.library.custom_op("kcd::colsum_even", mutates_args=())
def colsum_even(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0] - x.shape[0] % 2          # the bug: an odd column loses its last row
    return x[:n].sum(0)

x = torch.rand(32, 128)'''.lstrip("\n"))


def test_shapes_gate_derives_shapes_from_the_contracts_op_class(tmp_path):
    """No Python shaper: the torch_op contract's op (mul: elementwise; sum:
    a reduction over the last axis) gives the shapes gate its shapes (size
    1, odd sizes, one past a power of two, long rows). The kernel that
    drops the tail of an odd size and the reduction that drops its last
    partial block are caught there with the line of the call; the correct
    twins stay silent. A reduction over axis 0 has no class rule: the
    contract's own shapes list reaches it (an odd column caught)."""
    (tmp_path / "s.yaml").write_text(
        "contracts:\n"
        "  - {torch_op: 'kcd::scale_tail', op: mul, args: {x: x, s: '2.0'}, profile: fp32}\n"
        "  - {torch_op: 'kcd::scale_ok', op: mul, args: {x: x, s: '2.0'}, profile: fp32}\n"
        "  - {torch_op: 'kcd::rowsum_block', op: sum, args: {x: x}, profile: fp32}\n"
        "  - {torch_op: 'kcd::rowsum_ok', op: sum, args: {x: x}, attrs: {axis: -1}, "
        "profile: fp32}\n"
        "  - {torch_op: 'kcd::colsum_even', op: sum, args: {x: x}, attrs: {axis: 0}, "
        "profile: fp32, shapes: [{x: [5, 3]}, {x: [4, 3]}]}\n")
    p, recs = run_py(tmp_path, CLASS_SHAPES_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "gates=oracle,shapes:contracts=%s" % (tmp_path / "s.yaml"))
    assert p.returncode == 0, p.stderr
    viol = sorted((v["op"], v["gate"], v["stack"]["python"][-1]["line"])
                  for v in of(recs, "violation"))
    assert viol == [("kcd::colsum_even.default", "shapes", 34),
                    ("kcd::rowsum_block.default", "shapes", 32),
                    ("kcd::scale_tail.default", "shapes", 30)], viol
    gates = {c["op"]: c["gates"] for c in of(recs, "op_check")}
    for op in ("kcd::scale_ok.default", "kcd::rowsum_ok.default"):
        g = gates[op]["shapes"]
        assert g["status"] == "pass" and len(g["runs"]) >= 4, (op, g)
    for op in ("kcd::scale_tail.default", "kcd::rowsum_block.default"):
        assert gates[op]["oracle"]["status"] in ("bitwise", "pass"), gates[op]
DELTA_PROG = """
import sys
import torch
sys.path.insert(0, %r)
from torch_bugs import gated_delta
T = torch.Tensor


@torch.library.custom_op("kcr::delta_ok", mutates_args=())
def delta_ok(q: T, k: T, v: T, g: T, beta: T) -> T:
    return gated_delta(q, k, v, g, beta, False)


@torch.library.custom_op("kcr::delta_bf16state", mutates_args=())
def delta_bf16state(q: T, k: T, v: T, g: T, beta: T) -> T:
    return gated_delta(q, k, v, g, beta, True)


torch.manual_seed(0)
q, k, v = (torch.randn(1, 2, 24, 8) for _ in range(3))
k = torch.nn.functional.normalize(k, dim=-1)
g = torch.sigmoid(torch.randn(1, 2, 24) + 2)
beta = torch.sigmoid(torch.randn(1, 2, 24))
delta_ok(q, k, v, g, beta)
delta_bf16state(q, k, v, g, beta)
""" % os.path.join(ROOT, "test", "gpu")


def test_gated_delta_custom_op(tmp_path):
    """A torch_op contract with op gated_delta (the RECURRENCE class): the
    correct fp32 recurrence stays silent under oracle, nonfinite, precision
    and extremes (the extremes gate's cancelling inputs overflow the fp32
    state: Inf - Inf = NaN there was once read as fail_special), the one
    that keeps its state in bf16 is caught by the oracle."""
    (tmp_path / "d.yaml").write_text(
        "contracts:\n"
        "  - {torch_op: 'kcr::delta_ok', op: gated_delta, "
        "args: {q: q, k: k, v: v, g: g, beta: beta}, profile: fp32}\n"
        "  - {torch_op: 'kcr::delta_bf16state', op: gated_delta, "
        "args: {q: q, k: k, v: v, g: g, beta: beta}, profile: fp32}\n")
    p, recs = run_py(tmp_path, DELTA_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=100:"
                     "gates=oracle,nonfinite,precision,extremes:contracts=%s" % (tmp_path / "d.yaml"))
    assert p.returncode == 0, p.stderr
    viol = {(v["op"], v["gate"]) for v in of(recs, "violation")}
    assert ("kcr::delta_bf16state.default", "oracle") in viol, viol
    assert not [x for x in viol if x[0] == "kcr::delta_ok.default"], viol
    done = {}
    for c in of(recs, "op_check"):
        if c["op"] == "kcr::delta_ok.default":
            for gate, r in c["gates"].items():
                if isinstance(r, dict) and r.get("status") not in (None, "deferred"):
                    done[gate] = r["status"]
    assert set(done) >= {"oracle", "nonfinite", "precision", "extremes"}, done
    assert done["oracle"] in ("pass", "bitwise"), done


GRAD_PROG = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
# twice: a signature deferred while judgments are pending is checked at its next call
for dt in (torch.float32, torch.float64, torch.bfloat16) * 2:
    x = (torch.randn(16, 48, dtype=dt) * 3).requires_grad_()
    w = (torch.rand(48, dtype=dt) + 0.5).requires_grad_()
    b = torch.randn(48, dtype=dt).requires_grad_()
    # ATen's CPU gelu backward in float is up to ~150 ulps off where
    # Phi(x) and x phi(x) cancel (x near -0.73: a faster exp than the CUDA
    # budget the oracle holds it to), and in bf16 it flushes subnormal
    # results: fp64 here, fp32 and bf16 in test/gpu
    ys = [F.gelu(x)] if dt == torch.float64 else []
    ys += [torch.sigmoid(x), torch.tanh(x), torch.relu(x), F.silu(x),
          F.gelu(x, approximate="tanh"), torch.softmax(x, -1), torch.log_softmax(x, -1),
          F.layer_norm(x + 2, (48,), w, b), F.layer_norm(x, (48,)), F.rms_norm(x, (48,), w)]
    for k, y in enumerate(ys):
        g = torch.randn(y.shape, dtype=dt) / (k + 1)
        y.backward(g)
print("done")
"""


def test_activation_and_softmax_gradients_judged(tmp_path):
    """The backward ops of the activations and the softmax family are
    judged by the oracle (their own rows of the op table): in fp32, fp64
    and bf16 every gate passes, no violation. Judged inline
    (torch_workers=-1) with no limit on the exit's checks: on a loaded
    machine busy workers deferred signatures (the fp64 softmax backward
    once) and the exit left the last queued judgments."""
    p, recs = run_py(tmp_path, GRAD_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_exit_budget=-1:"
                     "torch_workers=-1")
    assert p.returncode == 0, p.stderr
    grads = [v for v in of(recs, "violation") if "backward" in v["op"]]
    assert not grads, [v["message"] for v in grads]
    checks = of(recs, "op_check")
    by = {}
    for c in checks:
        by.setdefault(c["oracle_op"], []).append(c)
    want = {"sigmoid_backward", "tanh_backward", "threshold_backward", "silu_backward",
            "gelu_erf_backward", "gelu_tanh_backward", "softmax_backward",
            "log_softmax_backward", "layer_norm_backward"}  # CPU rms_norm: no fused op
    assert want <= set(by), sorted(by)
    for op in want:
        for c in by[op]:
            assert c["gates"]["oracle"]["status"] in ("bitwise", "pass"), c
            for g, r in c["gates"].items():
                assert r.get("status") not in ("fail", "violation"), (op, g, r)
    assert {c["profile"].split(":")[0] for c in by["softmax_backward"]} >= {"fp32", "fp64"}


GRAD_BUGS_PROG = """
import torch

@torch.library.custom_op("kcg::softmax_bwd_nosub", mutates_args=())
def softmax_bwd_nosub(g: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return g * y                            # the bug: no - y * sum(g * y)

@torch.library.custom_op("kcg::softmax_bwd_ok", mutates_args=())
def softmax_bwd_ok(g: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten._softmax_backward_data(g, y, -1, y.dtype)

@torch.library.custom_op("kcg::silu_bwd_half", mutates_args=())
def silu_bwd_half(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    h, gh = x.half(), g.half()              # the bug: fp16 arithmetic
    s = torch.sigmoid(h)
    return (gh * s * (1 + h * (1 - s))).float()

@torch.library.custom_op("kcg::silu_bwd_ok", mutates_args=())
def silu_bwd_ok(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.silu_backward(g, x)

@torch.library.custom_op("kcg::relu_bwd_strict", mutates_args=())
def relu_bwd_strict(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < 0, torch.zeros_like(g), g)   # the bug: x = 0 passes g

torch.manual_seed(0)
y = torch.softmax(torch.randn(8, 64), -1); g = torch.randn(8, 64)
x = torch.randn(8, 64) * 4
xz = torch.randn(8, 64); xz[:, ::3] = 0.0
softmax_bwd_nosub(g, y)                     # line 30
softmax_bwd_ok(g, y)
silu_bwd_half(g, x)                         # line 32
silu_bwd_ok(g, x)
relu_bwd_strict(g, xz)                      # line 34

@torch.library.custom_op("kcg::ln_bwd_nomean", mutates_args=())
def ln_bwd_nomean(g: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
                  w: torch.Tensor) -> torch.Tensor:
    xh = (x - mean) * rstd
    return rstd * (w * g - xh * (w * g * xh).mean(-1, keepdim=True))   # the bug: no mean(w g)

@torch.library.custom_op("kcg::ln_bwd_ok", mutates_args=())
def ln_bwd_ok(g: torch.Tensor, x: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
              w: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.native_layer_norm_backward(g, x, [x.shape[-1]], mean, rstd, w, None,
                                                     [True, False, False])[0]

xl = torch.randn(8, 64) + 3; wl = torch.rand(64) + 0.5
_, ml, rl = torch.ops.aten.native_layer_norm(xl, [64], wl, None, 1e-5)
ln_bwd_nomean(g, xl, ml, rl, wl)            # line 50
ln_bwd_ok(g, xl, ml, rl, wl)
print("ran")
"""

GRAD_BUGS_YAML = """
contracts:
  - {torch_op: "kcg::softmax_bwd_nosub", op: softmax_backward, args: {g: g, y: y}, attrs: {axis: -1}, profile: fp32}
  - {torch_op: "kcg::softmax_bwd_ok", op: softmax_backward, args: {g: g, y: y}, attrs: {axis: -1}, profile: fp32}
  - {torch_op: "kcg::silu_bwd_half", op: silu_backward, args: {g: g, x: x}, profile: fp32}
  - {torch_op: "kcg::silu_bwd_ok", op: silu_backward, args: {g: g, x: x}, profile: fp32}
  - {torch_op: "kcg::relu_bwd_strict", op: threshold_backward, args: {g: g, x: x}, profile: fp32}
  - {torch_op: "kcg::ln_bwd_nomean", op: layer_norm_backward, args: {g: g, x: x, mean: mean, rstd: rstd, weight: w}, profile: fp32}
  - {torch_op: "kcg::ln_bwd_ok", op: layer_norm_backward, args: {g: g, x: x, mean: mean, rstd: rstd, weight: w}, profile: fp32}
"""


def test_planted_gradient_bugs_caught_with_python_line(tmp_path):
    """Wrong gradients behind custom ops: a softmax backward without the
    subtraction, a SiLU backward in fp16 arithmetic, a ReLU backward that
    passes g at x = 0, a layer_norm backward without the mean term: each a
    violation at its Python line; ATen's own gradients behind the same
    contracts stay silent."""
    (tmp_path / "g.yaml").write_text(GRAD_BUGS_YAML)
    p, recs = run_py(tmp_path, GRAD_BUGS_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "g.yaml"))
    assert p.returncode == 0, p.stderr
    got, lines = {}, {}
    for v in of(recs, "violation"):
        got.setdefault(v["op"], set()).add(v["gate"])
        lines[v["op"]] = v["stack"]["python"][-1]["line"]
    assert "oracle" in got["kcg::softmax_bwd_nosub.default"]
    assert lines["kcg::softmax_bwd_nosub.default"] == 30
    assert "oracle" in got["kcg::silu_bwd_half.default"]
    assert lines["kcg::silu_bwd_half.default"] == 32
    assert "oracle" in got["kcg::relu_bwd_strict.default"]
    assert lines["kcg::relu_bwd_strict.default"] == 34
    assert "oracle" in got["kcg::ln_bwd_nomean.default"]
    assert lines["kcg::ln_bwd_nomean.default"] == 50
    oks = ("kcg::softmax_bwd_ok.default", "kcg::silu_bwd_ok.default", "kcg::ln_bwd_ok.default")
    for ok in oks:
        assert ok not in got, (ok, got.get(ok))
    checked = {c["op"] for c in of(recs, "op_check")}
    assert set(oks) <= checked


COPY_PROG = """
import torch
torch.manual_seed(0)
x = torch.randn(16, 40) * 100
x[0, :4] = torch.tensor([float("nan"), float("inf"), -0.0, 1e-40])
b = x.to(torch.bfloat16)
h = x.half()
d = b.double()
f = d.float()
y = torch.empty(16, 40, dtype=torch.float16)
y.copy_(x)
e = x.to(torch.float8_e4m3fn)

@torch.library.custom_op("kcc::bf16_trunc", mutates_args=())
def bf16_trunc(x: torch.Tensor) -> torch.Tensor:
    # the bug: the low 16 bits dropped (round toward zero)
    return (x.view(torch.int32) & -65536).view(torch.float32).to(torch.bfloat16)

@torch.library.custom_op("kcc::bf16_ok", mutates_args=())
def bf16_ok(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16)

bf16_trunc(torch.randn(64, 64))              # line 23
bf16_ok(torch.randn(64, 64))
print("done")
"""

COPY_YAML = """
contracts:
  - {torch_op: "kcc::bf16_trunc", op: copy, args: {x: x}, profile: "fp32:out=bf16"}
  - {torch_op: "kcc::bf16_ok", op: copy, args: {x: x}, profile: "fp32:out=bf16"}
"""


def test_dtype_conversions_judged_bitwise_and_truncation_caught(tmp_path):
    """_to_copy and copy_ between float types are judged by the oracle's
    copy op: correctly rounded (NaN, Inf, -0 and subnormals included), so
    bitwise; a conversion that truncates is a violation at its line."""
    (tmp_path / "c.yaml").write_text(COPY_YAML)
    p, recs = run_py(tmp_path, COPY_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "c.yaml"))
    assert p.returncode == 0, p.stderr
    copies = [c for c in of(recs, "op_check") if c["oracle_op"] == "copy" and
              c["op"].startswith("aten::")]
    profs = {c["profile"] for c in copies}
    assert {"fp32:in=fp32:acc=fp32:out=bf16", "fp32:in=fp32:acc=fp32:out=fp16",
            "fp32:in=bf16:acc=fp32:out=fp64", "fp64:out=fp32"} <= profs, profs
    assert any(c["op"].startswith("aten::copy_") for c in copies)
    for c in copies:
        assert c["gates"]["oracle"]["status"] == "bitwise", c
    # fp8: PyTorch's overflow rule changed between releases: passed through
    assert "conversion to fp8: PyTorch's overflow rule differs across versions" in \
        of(recs, "torch_summary")[0]["passed_through"]
    viol = of(recs, "violation")
    assert {v["op"] for v in viol} == {"kcc::bf16_trunc.default"}, [v["message"] for v in viol]
    v = [v for v in viol if v["gate"] == "oracle"][0]
    assert v["stack"]["python"][-1]["line"] == 23


CLAMP_PROG = """
import torch
torch.manual_seed(0)
for dt in (torch.float32, torch.bfloat16, torch.float64):
    x = torch.randn(16, 40, dtype=dt)
    x[0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
    a = x.clamp(-0.5, 0.5)
    b = x.clamp_min(0.25)
    c = x.clamp(max=1.0)
    x.clone().clamp_(-2.0, 2.0)
h = torch.randn(8, dtype=torch.float16).clamp(0.1, 0.9)   # 0.1 not exact in fp16: passed through
print("done")
"""


def test_clamp_with_number_bounds_judged_exactly(tmp_path):
    """clamp, clamp_min, clamp_max and clamp_ with number bounds are judged
    by the oracle's exact clamp (NaN propagates, -0 kept): bitwise; a bound
    not exact in fp16/bf16 is passed through with the reason."""
    p, recs = run_py(tmp_path, CLAMP_PROG)
    assert p.returncode == 0, p.stderr
    assert not of(recs, "violation"), [v["message"] for v in of(recs, "violation")]
    cl = [c for c in of(recs, "op_check") if c["oracle_op"] == "clamp"]
    ops_ = {c["op"].split(".")[0] for c in cl}
    assert {"aten::clamp", "aten::clamp_min", "aten::clamp_"} <= ops_, ops_
    for c in cl:
        assert c["gates"]["oracle"]["status"] == "bitwise", c
    assert "clamp bound not exact in float16" in of(recs, "torch_summary")[0]["passed_through"]


GRAD_SHAPES_PROG = """
import torch
import torch.nn.functional as F
x = torch.randn(8, 32, requires_grad=True)
w = (torch.rand(32) + 0.5).requires_grad_()
for y in (torch.softmax(x, -1), torch.log_softmax(x, -1), F.layer_norm(x, (32,), w)):
    y.backward(torch.randn(8, 32))
print("done")
"""


def test_shapes_gate_on_softmax_and_norm_gradients(tmp_path):
    """The shapes gate runs the softmax family's and layer_norm's
    gradients at other row counts and lengths (1x1, 5x3, 2x1025, 1x4097),
    the saved statistics and weight shaped to match: every run passes."""
    p, recs = run_py(tmp_path, GRAD_SHAPES_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:gates=oracle,shapes")
    assert p.returncode == 0, p.stderr
    assert not of(recs, "violation"), [v["message"] for v in of(recs, "violation")]
    gates = {c["op"]: c["gates"] for c in of(recs, "op_check")}
    for op in ("aten::_softmax_backward_data.default", "aten::_log_softmax_backward_data.default",
               "aten::native_layer_norm_backward.default"):
        g = gates[op]["shapes"]
        assert g["status"] == "pass" and len(g["runs"]) == 4, (op, g)
        assert all(r["class"] in ("bitwise", "pass") for r in g["runs"]), (op, g)


GATHER_PROG = """
import torch
torch.manual_seed(0)
w = torch.randn(50, 16)
w[3, 0] = -0.0
idx = torch.randint(0, 50, (4, 7))
e = torch.nn.functional.embedding(idx, w)
s = torch.index_select(w.bfloat16(), 0, torch.tensor([3, 0, 49, 3]))

@torch.library.custom_op("kcx::embed_shift", mutates_args=())
def embed_shift(w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return w[(idx + (idx == 7).long()) % w.shape[0]]   # the bug: row 7 read from row 8

@torch.library.custom_op("kcx::embed_ok", mutates_args=())
def embed_ok(w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return w[idx]

i1 = torch.arange(0, 50, 3)
embed_shift(w, i1 % 10)                   # line 19
embed_ok(w, i1)
print("done")
"""

GATHER_YAML = """
contracts:
  - {torch_op: "kcx::embed_shift", op: index_select, args: {x: w, index: idx}, attrs: {axis: 0}, profile: fp32}
  - {torch_op: "kcx::embed_ok", op: index_select, args: {x: w, index: idx}, attrs: {axis: 0}, profile: fp32}
"""


def test_embedding_and_index_select_judged_bit_for_bit(tmp_path):
    """embedding and index_select are judged by the oracle's index_select
    (int64 indices carried as exact doubles): bitwise; the generated-input
    gates are not applicable (generated indices would be out of range); a
    custom embedding that reads a neighbouring row is a violation at its
    line, the correct one silent."""
    (tmp_path / "x.yaml").write_text(GATHER_YAML)
    p, recs = run_py(tmp_path, GATHER_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "x.yaml"))
    assert p.returncode == 0, p.stderr
    checks = {c["op"]: c for c in of(recs, "op_check")}
    for op in ("aten::embedding.default", "aten::index_select.default", "kcx::embed_ok.default"):
        c = checks[op]
        assert c["oracle_op"] == "index_select" and c["gates"]["oracle"]["status"] == "bitwise", c
        assert not c["profile"].startswith("fp64"), c["profile"]  # the indices' doubles aside
        assert {"nonfinite", "precision", "extremes", "coverage"} <= set(c["gates"]), c["gates"]
        for g in ("nonfinite", "precision", "extremes", "coverage", "bounds", "shapes"):
            if g in c["gates"]:  # (shapes only when the gates option names it)
                assert c["gates"][g]["status"] == "not_applicable", (op, g, c["gates"][g])
    viol = of(recs, "violation")
    assert {(v["op"], v["gate"]) for v in viol} == {("kcx::embed_shift.default", "oracle")}, viol
    assert viol[0]["stack"]["python"][-1]["line"] == 19


VAR_PROG = """
import torch
torch.manual_seed(0)
x = torch.randn(12, 40) * 3 + 5
x[0, 3] = float("nan")
for dt in (torch.float32, torch.bfloat16, torch.float64):
    y = x.to(dt)
    torch.var(y, -1)
    torch.std(y, 1, unbiased=False)
    torch.var(y, dim=0, correction=0.5, keepdim=True)
    torch.std_mean(y, -1)
    torch.var_mean(y, 0, correction=2)
torch.var(x.view(3, 4, 40), dim=(1, 2))               # adjacent dims merged
torch.mean(x.view(3, 4, 40), dim=(1, 2), keepdim=True)
torch.var(x.view(3, 4, 40), dim=(0, 2))               # not adjacent: passed through
torch.var(torch.randn(3, 2), dim=1, correction=3)     # n <= correction: Inf or NaN

@torch.library.custom_op("kcv::var_biased", mutates_args=())
def var_biased(x: torch.Tensor) -> torch.Tensor:
    return ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)   # the bug: divides by n

@torch.library.custom_op("kcv::var_ok", mutates_args=())
def var_ok(x: torch.Tensor) -> torch.Tensor:
    return torch.var(x, -1)

z = torch.randn(16, 24)
var_biased(z)                                # line 27
var_ok(z)
print("done")
"""

VAR_YAML = """
contracts:
  - {torch_op: "kcv::var_biased", op: var, args: {x: x}, attrs: {axis: -1, correction: 1}, profile: fp32}
  - {torch_op: "kcv::var_ok", op: var, args: {x: x}, attrs: {axis: -1, correction: 1}, profile: fp32}
"""


def test_var_std_with_a_dim_judged_and_a_biased_variance_caught(tmp_path):
    """var, std, var_mean and std_mean with a dim (one, or adjacent dims of
    a contiguous tensor), correction and unbiased honoured, in fp32, bf16
    and fp64: PyTorch's own results are never a violation (a NaN row gives
    NaN, n <= correction Inf or NaN); a variance that divides by n where
    the contract says correction 1 is caught at its line."""
    (tmp_path / "v.yaml").write_text(VAR_YAML)
    p, recs = run_py(tmp_path, VAR_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "v.yaml"))
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["oracle_op"] in ("var", "std", "mean") and
              c["op"].startswith("aten::")]
    ops_ = {c["op"] for c in checks}
    assert {"aten::var.correction", "aten::std.correction", "aten::std_mean.correction",
            "aten::var_mean.correction", "aten::mean.dim"} <= ops_, ops_
    for c in checks:
        assert c["gates"]["oracle"]["status"] in ("bitwise", "pass"), c
    assert "reduction over several dims that are not adjacent" in \
        of(recs, "torch_summary")[0]["passed_through"]
    viol = of(recs, "violation")
    assert {v["op"] for v in viol} == {"kcv::var_biased.default"}, [v["message"] for v in viol]
    v = [v for v in viol if v["gate"] == "oracle"][0]
    assert v["stack"]["python"][-1]["line"] == 27
    assert "kcv::var_ok.default" in {c["op"] for c in of(recs, "op_check")}


POINTWISE_PROG = """
import torch
torch.manual_seed(0)
for dt in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
    x = torch.randn(16, 40, dtype=dt)
    x[0, :4] = torch.tensor([float("nan"), float("inf"), -0.0, 0.0])
    t1 = torch.randn(16, 40, dtype=dt); t2 = torch.rand(16, 40, dtype=dt) + 0.5
    t2[1, 0] = 0.0
    m = torch.rand(16, 40) > 0.5
    torch.where(m, x, t1)
    torch.where(m, x, 0.1)
    x.masked_fill(m, -1e4)
    x.masked_fill(m, torch.tensor(0.3))
    x.clone().masked_fill_(m, float("-inf"))
    torch.addcmul(x, t1, t2, value=0.3)
    torch.addcdiv(x, t1, t2, value=-0.7)
    torch.lerp(x, t1, 0.3)
    torch.lerp(x, t1, torch.rand(16, 40, dtype=dt) * 1.4 - 0.2)

@torch.library.custom_op("kcp::addcmul_bf16", mutates_args=())
def addcmul_bf16(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return x + 0.5 * (a * b).bfloat16().float()      # the bug: the product through bf16

@torch.library.custom_op("kcp::addcmul_ok", mutates_args=())
def addcmul_ok(x: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.addcmul(x, a, b, value=0.5)

@torch.library.custom_op("kcp::where_pos0", mutates_args=())
def where_pos0(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.where(c, a, b) + 0.0                 # the bug: -0 becomes +0

a = torch.randn(32, 32); b = torch.randn(32, 32); x = torch.randn(32, 32)
c = torch.rand(32, 32) > 0.5; a[c] = -0.0
addcmul_bf16(x, a, b)                                 # line 34
addcmul_ok(x, a, b)
where_pos0(c, a, b)                                   # line 36
print("done")
"""

POINTWISE_YAML = """
contracts:
  - {torch_op: "kcp::addcmul_bf16", op: addcmul, args: {x: x, t1: a, t2: b}, attrs: {value: 0.5}, profile: fp32}
  - {torch_op: "kcp::addcmul_ok", op: addcmul, args: {x: x, t1: a, t2: b}, attrs: {value: 0.5}, profile: fp32}
  - {torch_op: "kcp::where_pos0", op: where, args: {c: c, a: a, b: b}, profile: fp32}
"""


def test_where_masked_fill_addcmul_addcdiv_lerp_judged(tmp_path):
    """where and masked_fill (a number, a 0-dim tensor, in place) are
    judged bit for bit; addcmul, addcdiv and lerp (both of ATen's branches,
    a scalar or tensor weight) within the bound of any evaluation order, in
    fp32, bf16, fp16 and fp64 with NaN, Inf, -0 and a zero divisor: no
    violation on PyTorch's own results; an addcmul whose product goes
    through bf16 and a where that loses -0 are caught at their lines."""
    (tmp_path / "p.yaml").write_text(POINTWISE_YAML)
    p, recs = run_py(tmp_path, POINTWISE_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "p.yaml"))
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::") and
              c["oracle_op"] in ("where", "addcmul", "addcdiv", "lerp")]
    ops_ = {c["op"] for c in checks}
    assert {"aten::where.self", "aten::masked_fill.Scalar",
            "aten::masked_fill.Tensor", "aten::masked_fill_.Scalar", "aten::addcmul.default",
            "aten::addcdiv.default", "aten::lerp.Scalar", "aten::lerp.Tensor"} <= ops_, ops_
    for c in checks:
        st = c["gates"]["oracle"]["status"]
        if c["oracle_op"] == "where":
            assert st == "bitwise", c
        else:
            assert st in ("bitwise", "pass"), c
    viol = of(recs, "violation")
    assert {v["op"] for v in viol} == {"kcp::addcmul_bf16.default", "kcp::where_pos0.default"}, \
        [v["message"] for v in viol]
    lines = {v["op"]: v["stack"]["python"][-1]["line"] for v in viol if v["gate"] == "oracle"}
    assert lines == {"kcp::addcmul_bf16.default": 34, "kcp::where_pos0.default": 36}, lines
    assert "kcp::addcmul_ok.default" in {c["op"] for c in of(recs, "op_check")}


NLL_PROG = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
for dt in (torch.float32, torch.float64):
    logits = torch.randn(24, 11, dtype=dt, requires_grad=True)
    t = torch.randint(0, 11, (24,)); t[::5] = -100
    w = torch.rand(11, dtype=dt) + 0.5
    for red in ("mean", "sum", "none"):
        F.cross_entropy(logits, t, reduction=red).sum().backward()
        F.cross_entropy(logits, t.clamp(min=3), weight=w, reduction=red,
                        ignore_index=3).sum().backward()
    F.nll_loss(torch.log_softmax(logits[0], -1), t[1])          # one row: x [C]
F.nll_loss(torch.randn(4, 5), torch.full((4,), -100, dtype=torch.long))   # every row ignored: NaN
lb = torch.log_softmax(torch.randn(24, 11), -1).bfloat16()
F.nll_loss(lb, t, reduction="none")                       # bf16, none
F.nll_loss(lb, t)                                         # bf16 mean on the CPU: passed through

@torch.library.custom_op("kcl::nll_mean_all", mutates_args=())
def nll_mean_all(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    keep = t != -100
    picked = x.gather(1, t.clamp(min=0)[:, None])[:, 0] * keep
    return -(picked.sum() / t.numel())          # the bug: ignored rows counted

@torch.library.custom_op("kcl::nll_ok", mutates_args=())
def nll_ok(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return F.nll_loss(x, t)

x = torch.log_softmax(torch.randn(32, 9), -1); t = torch.randint(0, 9, (32,)); t[::4] = -100
nll_mean_all(x, t)                            # line 30
nll_ok(x, t)
print("done")
"""

NLL_YAML = """
contracts:
  - {torch_op: "kcl::nll_mean_all", op: nll_loss, args: {x: x, target: t}, attrs: {reduction: mean, ignore_index: -100}, profile: fp32}
  - {torch_op: "kcl::nll_ok", op: nll_loss, args: {x: x, target: t}, attrs: {reduction: mean, ignore_index: -100}, profile: fp32}
"""


def test_nll_loss_forward_and_backward_judged(tmp_path):
    """cross_entropy's nll_loss_forward and nll_loss_backward (reduction
    none, sum, mean; weight; ignore_index; one row; every row ignored) are
    judged: no violation on PyTorch's results (reduction none and the
    unweighted gradient bitwise); bf16 sums on the CPU are passed through
    (ATen sums in bf16 there); a mean that counts the ignored rows is
    caught at its line."""
    (tmp_path / "l.yaml").write_text(NLL_YAML)
    p, recs = run_py(tmp_path, NLL_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "l.yaml"))
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::nll_loss")]
    assert {c["op"] for c in checks} >= {"aten::nll_loss_forward.default",
                                         "aten::nll_loss_backward.default"}
    assert len(checks) >= 12, len(checks)
    for c in checks:
        assert c["gates"]["oracle"]["status"] in ("bitwise", "pass"), c
    assert "ATen's CPU nll_loss sums in the 16-bit type itself" in \
        of(recs, "torch_summary")[0]["passed_through"]
    viol = of(recs, "violation")
    assert {v["op"] for v in viol} == {"kcl::nll_mean_all.default"}, [v["message"] for v in viol]
    v = [v for v in viol if v["gate"] == "oracle"][0]
    assert v["stack"]["python"][-1]["line"] == 30
    assert "kcl::nll_ok.default" in {c["op"] for c in of(recs, "op_check")}


EMB_BWD_PROG = """
import torch
import torch.nn.functional as F
torch.manual_seed(0)
for dt in (torch.float32, torch.float64, torch.bfloat16):
    w = torch.randn(40, 16, dtype=dt, requires_grad=True)
    idx = torch.randint(0, 40, (6, 50)); idx[0, :5] = 3
    F.embedding(idx, w).backward(torch.randn(6, 50, 16, dtype=dt))
    F.embedding(idx, w, padding_idx=3).backward(torch.randn(6, 50, 16, dtype=dt))
F.embedding(idx, torch.randn(40, 16, requires_grad=True),
            scale_grad_by_freq=True).sum().backward()      # passed through

@torch.library.custom_op("kce::emb_bwd_last", mutates_args=())
def emb_bwd_last(g: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    out = torch.zeros(40, g.shape[1])
    out[idx] = g                                    # the bug: a repeated index keeps one row
    return out

@torch.library.custom_op("kce::emb_bwd_ok", mutates_args=())
def emb_bwd_ok(g: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten.embedding_dense_backward(g, idx, 40, -1, False)

g = torch.randn(300, 16); i = torch.randint(0, 40, (300,))
emb_bwd_last(g, i)                                  # line 24
emb_bwd_ok(g, i)
print("done")
"""

EMB_BWD_YAML = """
contracts:
  - {torch_op: "kce::emb_bwd_last", op: embedding_backward, args: {g: g, index: idx}, attrs: {padding_idx: -1}, profile: fp32}
  - {torch_op: "kce::emb_bwd_ok", op: embedding_backward, args: {g: g, index: idx}, attrs: {padding_idx: -1}, profile: fp32}
"""


def test_embedding_dense_backward_judged(tmp_path):
    """embedding_dense_backward (fp32, fp64, bf16; padding_idx) is judged
    as exact row sums with a bound for any order: PyTorch's results pass;
    scale_grad_by_freq is passed through; a gradient that keeps one row
    of a repeated index is caught at its line."""
    (tmp_path / "e.yaml").write_text(EMB_BWD_YAML)
    p, recs = run_py(tmp_path, EMB_BWD_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "e.yaml"))
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::embedding_dense")]
    assert len(checks) >= 3, len(checks)
    for c in checks:
        assert c["gates"]["oracle"]["status"] in ("bitwise", "pass"), c
    assert "scale_grad_by_freq (a division by each index's count)" in \
        of(recs, "torch_summary")[0]["passed_through"]
    # (the CUDA op's documented nondeterminism is a warning of its own gate)
    viol = [v for v in of(recs, "violation") if v["gate"] != "nondeterminism"]
    assert {v["op"] for v in viol} == {"kce::emb_bwd_last.default"}, [v["message"] for v in viol]
    v = [v for v in viol if v["gate"] == "oracle"][0]
    assert v["stack"]["python"][-1]["line"] == 24
    assert "kce::emb_bwd_ok.default" in {c["op"] for c in of(recs, "op_check")}


CUMSUM_PROG = """
import torch
torch.manual_seed(0)
for dt in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
    x = torch.rand(8, 300, dtype=dt) + 0.5
    x[0, 5] = float("inf"); x[1, 9] = float("nan")
    torch.cumsum(x, 1)
    torch.cumsum(x, 0)
    x.clone().cumsum_(-1)
torch.cumsum(torch.rand(4, 5), 1, dtype=torch.float64)   # a conversion inside: passed through

@torch.library.custom_op("kcs::cumsum_excl", mutates_args=())
def cumsum_excl(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, -1) - x                       # the bug: exclusive

@torch.library.custom_op("kcs::cumsum_ok", mutates_args=())
def cumsum_ok(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x, -1)

z = torch.rand(16, 64)
cumsum_excl(z)                                           # line 21
cumsum_ok(z)
print("done")
"""

CUMSUM_YAML = """
contracts:
  - {torch_op: "kcs::cumsum_excl", op: cumsum, args: {x: x}, attrs: {axis: -1}, profile: fp32}
  - {torch_op: "kcs::cumsum_ok", op: cumsum, args: {x: x}, attrs: {axis: -1}, profile: fp32}
"""


def test_cumsum_judged_and_an_exclusive_scan_caught(tmp_path):
    """cumsum (and cumsum_) along either dim in fp32, bf16, fp16 and fp64,
    Inf and NaN included, is judged with a bound for any association a
    scan takes: PyTorch's results pass (long bf16 rows inconclusive: a
    scan in bf16 has no finite bound there); dtype= is passed through; an
    exclusive scan is caught at its line."""
    (tmp_path / "s.yaml").write_text(CUMSUM_YAML)
    p, recs = run_py(tmp_path, CUMSUM_PROG,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:contracts=%s"
                     % (tmp_path / "s.yaml"))
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::cumsum")]
    assert {c["op"] for c in checks} >= {"aten::cumsum.default", "aten::cumsum_.default"}
    assert len(checks) >= 8, len(checks)
    for c in checks:
        st = c["gates"]["oracle"]["status"]
        # bf16 rows of 300: a scan that adds in bf16 (ATen's CUDA scan in
        # scalar_t) has no finite bound past 256 terms: inconclusive
        assert st in ("bitwise", "pass") or (st == "inconclusive" and "bf16" in c["profile"]), c
    assert "dtype= conversion inside the scan" in of(recs, "torch_summary")[0]["passed_through"]
    viol = [v for v in of(recs, "violation") if v["gate"] != "nondeterminism"]
    assert {v["op"] for v in viol} == {"kcs::cumsum_excl.default"}, [v["message"] for v in viol]
    v = [v for v in viol if v["gate"] == "oracle"][0]
    assert v["stack"]["python"][-1]["line"] == 21
    assert "kcs::cumsum_ok.default" in {c["op"] for c in of(recs, "op_check")}


OPINFO_PROG = """
import sys, torch
from torch.testing._internal.common_methods_invocations import op_db
names = set(sys.argv[1].split(","))
n = 0
for op in op_db:
    if op.name not in names:
        continue
    for dt in (torch.float32, torch.float64, torch.bfloat16):
        if dt not in op.supported_dtypes("cpu"):
            continue
        for s in op.sample_inputs("cpu", dt, requires_grad=op.supports_autograd):
            try:
                r = op(s.input, *s.args, **s.kwargs)
            except Exception:
                continue  # a sample meant to raise
            n += 1
            outs = r if isinstance(r, (tuple, list)) else [r]
            t = [o for o in outs if isinstance(o, torch.Tensor) and o.requires_grad]
            if t:
                sum(o.float().sum() for o in t).backward()
print("samples", n)
"""

OPINFO_OPS = ("var,std,var_mean,std_mean,cumsum,where,masked_fill,addcmul,addcdiv,lerp,"
              "nn.functional.nll_loss,nn.functional.embedding")


def test_opinfo_samples_of_the_new_ops_give_no_false_verdict(tmp_path):
    """Every sample input PyTorch's OpInfo database has for var, std,
    var_mean, std_mean, cumsum, where, masked_fill, addcmul, addcdiv, lerp,
    nll_loss and embedding (and their backward) in fp32, fp64 and bf16, run
    under the binding with every signature checked (judged inline, so that
    none is deferred behind a queue): no oracle violation on PyTorch's own
    results."""
    pytest.importorskip("expecttest", reason="torch's OpInfo needs expecttest")
    p, recs = run_py(tmp_path, OPINFO_PROG, args=[OPINFO_OPS], timeout=900,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:gates=oracle:"
                     "kernel_clean_limit=-1:op_clean_limit=-1:sample=1:torch_workers=-1")
    assert p.returncode == 0, p.stderr
    judged = {}
    for c in of(recs, "op_check"):
        judged.setdefault(c["oracle_op"], set()).add(c["gates"]["oracle"]["status"])
    for op in ("var", "std", "cumsum", "where", "addcmul", "addcdiv", "lerp", "nll_loss",
               "nll_loss_backward", "embedding_backward"):
        assert op in judged, (op, sorted(judged))
    mine = {"var", "std", "cumsum", "where", "addcmul", "addcdiv", "lerp", "nll_loss",
            "nll_loss_backward", "embedding_backward", "mean", "sum"}
    viol = [v for v in of(recs, "violation") if v["oracle_op"] in mine]
    assert not viol, [v["message"] for v in viol]


def test_embedding_with_sliced_token_ids_is_judged(tmp_path):
    """A training loop's token ids are often a slice of a batch
    (data[:, :-1]: not contiguous); the embedding is still judged (bit for
    bit: the host copy flattens the indices), and its backward too."""
    code = """
import torch
torch.manual_seed(0)
emb = torch.nn.Embedding(50, 16)
data = torch.randint(0, 50, (4, 9))
x = data[:, :-1]
assert not x.is_contiguous()
(emb(x) * torch.randn(4, 8, 16)).sum().backward()
"""
    p, recs = run_py(tmp_path, code, options="torch=1:torch_devices=cuda,cpu:torch_budget=100")
    assert p.returncode == 0, p.stderr
    checks = {c["op"]: c for c in of(recs, "op_check") if "gates" in c and "oracle" in c["gates"]}
    assert checks["aten::embedding.default"]["gates"]["oracle"]["status"] == "bitwise", checks
    back = checks.get("aten::embedding_dense_backward.default")
    assert back and back["gates"]["oracle"]["status"] in ("pass", "bitwise"), checks.keys()
    assert not [v for v in of(recs, "violation") if v["gate"] != "nondeterminism"]


def test_cpu_float_gelu_passes_through_with_its_reason(tmp_path):
    """ATen's CPU gelu (erf form) in float uses a vectorized erf with no
    documented accuracy, which cancels in 1 + erf for negative x (measured:
    880 of 16384 outputs beyond the CUDA erff budget, 4.4x at worst): a
    correct PyTorch op must not be a violation, so it passes through, named;
    the tanh form and float64 stay judged."""
    code = """
import torch
torch.manual_seed(0)
for approx in ("none", "tanh"):
    x = (torch.randn(1 << 14) * 4).requires_grad_()
    torch.nn.functional.gelu(x, approximate=approx).backward(torch.randn(1 << 14))
xd = torch.randn(256, dtype=torch.float64) * 4
torch.nn.functional.gelu(xd)
"""
    p, recs = run_py(tmp_path, code, options="torch=1:torch_devices=cuda,cpu:torch_budget=1:"
                     "gates=oracle")
    assert p.returncode == 0, p.stderr
    assert not of(recs, "violation"), [v["message"] for v in of(recs, "violation")]
    summ = of(recs, "torch_summary")[0]
    why = [r for r in summ["passed_through"] if "vectorized CPU erf" in r]
    assert why, summ["passed_through"]
    assert {"aten::gelu.default", "aten::gelu_backward.default"} <= \
        set(summ["passed_through_ops"][why[0]])
    judged = {(c["oracle_op"], c["profile"].split(":")[0]) for c in of(recs, "op_check")}
    assert ("gelu_tanh", "fp32") in judged and ("gelu_tanh_backward", "fp32") in judged, judged
    assert ("gelu_erf", "fp64") in judged, judged


def test_opinfo_samples_of_the_step_ops_give_no_false_verdict(tmp_path):
    """PyTorch's OpInfo samples (test/gpu/torch_opinfo.py, its CPU form)
    of the ops a training step's new rows judge — softmax and log_softmax
    in every dtype, sqrt, gelu, convolution, batch norm, pooling, SDPA,
    layer norm — forward and backward, every signature judged inline: no
    oracle violation on PyTorch's own results, and each judged."""
    pytest.importorskip("expecttest", reason="torch's OpInfo needs expecttest")
    names = ("softmax,log_softmax,sqrt,nn.functional.gelu,nn.functional.conv2d,"
             "nn.functional.batch_norm,nn.functional.max_pool2d,nn.functional.avg_pool2d,"
             "nn.functional.adaptive_avg_pool2d,nn.functional.scaled_dot_product_attention,"
             "nn.functional.layer_norm")
    p, recs = run_opinfo_cpu(tmp_path, names, 240)
    judged = {c["oracle_op"] for c in of(recs, "op_check")}
    for op in ("softmax", "log_softmax", "sqrt", "conv", "batch_norm", "max_pool2d",
               "avg_pool2d", "adaptive_avg_pool2d", "attention", "layer_norm"):
        assert op in judged, (op, sorted(judged))
    viol = [v for v in of(recs, "violation") if v["gate"] == "oracle"]
    assert not viol, [v["message"] for v in viol][:5]
