"""Standalone replay bundles (repro_dir) and `kcheck repro BUNDLE`: a
finding's bundle holds the kernel's image, its launch, the parameter bytes
and the input buffers as they were before the launch; the replay loads the
image with cuModuleLoadData, uploads the buffers, relocates the pointers,
launches once under kcheck and says whether the same violation comes back,
without the original program."""
import glob
import json
import os
import subprocess
import sys

from conftest import BUILD, CTYPES_APP, FAKECUDA, ROOT, by_type, run

KCHECK = [sys.executable, os.path.join(ROOT, "scripts", "kcheck")]
# The replay's child preloads the release build (the sanitizer build would
# need its runtime first in LD_PRELOAD); the bundles come from the build
# under test.
REPLAY_LIB = os.path.join(BUILD, "libkcheck.so")
CONTRACTS = os.path.join(os.path.dirname(__file__), "data", "contracts_planted.yaml")


def kcheck(*args):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKECUDA, KCHECK_LIB=REPLAY_LIB)
    for k in ("KCHECK_OPTIONS", "LD_PRELOAD"):
        env.pop(k, None)
    return subprocess.run(KCHECK + list(args), env=env, capture_output=True, text=True, timeout=120)


def bundles(r):
    vs = by_type(r.only_report(), "violation")
    return vs, [v["bundle"] for v in vs if "bundle" in v]


def test_race_bundle_replays_standalone(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="repro_dir=%s" % (tmp_path / "rb"))
    vs, bs = bundles(r)
    assert vs and len(bs) == len(vs), vs  # one bundle per finding
    meta = json.load(open(os.path.join(bs[0], "bundle.json")))
    assert meta["format"] == "kcheck.bundle/1" and meta["gate"] == vs[0]["gate"]
    assert meta["kernel"]["mangled"] == vs[0]["kernel_mangled"]
    assert os.path.getsize(os.path.join(bs[0], "image.bin")) == meta["image"]["size"]
    for b in meta["buffers"]:
        assert os.path.getsize(os.path.join(bs[0], b["file"])) == b["size"]
    k = kcheck("repro", bs[0])
    assert k.returncode == 0, k.stdout + k.stderr
    assert "is reproduced standalone" in k.stdout
    # the replay ran in a process of its own (python -m kcheck.replay), not
    # in the program, and checked exactly the one launch
    rep = glob.glob(os.path.join(bs[0], "replay-report.*.jsonl"))
    recs = [json.loads(l) for l in open(rep[0])]
    assert os.path.basename(recs[0]["exe"]).startswith("python"), recs[0]["exe"]
    assert len(by_type(recs, "check")) == 1


def contract_bundle(app, tmp_path):
    r = run([app("app_linked"), "contracts"], tmp_path,
            options="repro_dir=%s:contracts=%s:gates=bounds:kernel_include=oob_tail_write" % (
                tmp_path / "rb", CONTRACTS))
    vs, bs = bundles(r)
    assert len(bs) == 1 and vs[0]["gate"] == "bounds", vs
    return bs[0]


def test_contract_bundle_replays_standalone(app, tmp_path):
    """oob_tail_write stores out[n] (n = 1000): the bounds violation comes
    back from the bundle alone, with the contract file the gate used."""
    b = contract_bundle(app, tmp_path)
    meta = json.load(open(os.path.join(b, "bundle.json")))
    assert meta["contracts"] == CONTRACTS and len(meta["buffers"]) == 2
    k = kcheck("repro", b)
    assert k.returncode == 0, k.stdout + k.stderr


def test_replay_of_a_correct_launch_stays_silent(app, tmp_path):
    """The same bundle with n = 896 (a multiple of 128: no store past the
    end) and the grid its contract says: the replayed launch is checked and
    passes, so the replay says the violation did not come back (status 1)."""
    b = contract_bundle(app, tmp_path)
    path = os.path.join(b, "params.bin")
    p = bytearray(open(path, "rb").read())
    p[16:20] = (896).to_bytes(4, "little")
    open(path, "wb").write(p)
    meta_path = os.path.join(b, "bundle.json")
    meta = json.load(open(meta_path))
    meta["launch"]["grid"] = [7, 1, 1]
    json.dump(meta, open(meta_path, "w"))
    k = kcheck("repro", b)
    assert k.returncode == 1 and "did not reproduce standalone" in k.stderr, k.stdout + k.stderr
    recs = [json.loads(l) for l in open(glob.glob(os.path.join(b, "replay-report.*.jsonl"))[0])]
    checks = by_type(recs, "check")
    assert checks and checks[0]["gates"]["bounds"]["status"] == "pass", recs


def test_bundle_over_budget_is_skipped_with_the_reason(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path,
            options="repro_dir=%s:repro_budget=16" % (tmp_path / "rb"))
    vs = by_type(r.only_report(), "violation")
    assert vs and all(v["bundle_skipped"] == "its input buffers are larger than repro_budget"
                      for v in vs), vs
    assert not glob.glob(str(tmp_path / "rb" / "*"))


def test_no_bundle_without_repro_dir(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    vs = by_type(r.only_report(), "violation")
    assert vs and not [v for v in vs if "bundle" in v or "bundle_skipped" in v]


def test_not_a_bundle_is_a_one_line_error(tmp_path):
    (tmp_path / "bundle.json").write_text('{"format": "something else"}')
    k = kcheck("repro", str(tmp_path))
    assert k.returncode != 0 and "Traceback" not in k.stderr, k.stderr
    assert "is not a kcheck.bundle/1 bundle" in k.stderr


FILE_APP = r'''
import ctypes as C, os, sys
sys.path.insert(0, %r)
import app_ctypes as A
d = A.Driver(os.environ.get("FAKECUDA_LIB", "libcuda.so.1"))
d.cuInit(0)
dev = C.c_int(); d.cuDeviceGet(C.byref(dev), 0)
ctx = C.c_void_p(); d.cuDevicePrimaryCtxRetain(C.byref(ctx), dev); d.cuCtxSetCurrent(ctx)
mod = C.c_void_p(); assert d.lib.cuModuleLoad(C.byref(mod), sys.argv[1].encode()) == 0
f = C.c_void_p(); d.cuModuleGetFunction(C.byref(f), mod, b"_Z11last_writerPi")
p = C.c_uint64(); d.cuMemAlloc_v2(C.byref(p), 4)
A.launch(d, f, 64, 128, p)
d.cuCtxSynchronize()
'''


def test_module_loaded_from_a_file_is_referred_to_by_path(tmp_path):
    sys.path.insert(0, os.path.dirname(CTYPES_APP))
    import app_ctypes
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(app_ctypes.PTX)
    script = tmp_path / "app.py"
    script.write_text(FILE_APP % os.path.dirname(CTYPES_APP))
    r = run([sys.executable, str(script), str(ptx)], tmp_path,
            options="repro_dir=%s" % (tmp_path / "rb"),
            env_extra={"FAKECUDA_LIB": os.path.join(FAKECUDA, "libcuda.so.1")})
    _, bs = bundles(r)
    assert bs, r.err[-2000:]
    meta = json.load(open(os.path.join(bs[0], "bundle.json")))
    assert meta["image"]["path"] == str(ptx) and meta["image"]["format"] == "file"
    assert not os.path.exists(os.path.join(bs[0], "image.bin"))
    k = kcheck("repro", bs[0])
    assert k.returncode == 0, k.stdout + k.stderr


# ---- bundles and reports from elsewhere: what they hold is data, never code

def a_bundle(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path, options="repro_dir=%s" % (tmp_path / "rb"))
    vs = [v for v in by_type(r.only_report(), "violation") if "bundle" in v]
    assert vs, r.err[-2000:]
    return vs[0]["bundle"]


def edited(bundle, **changes):
    meta_path = os.path.join(bundle, "bundle.json")
    meta = json.load(open(meta_path))
    for k, v in changes.items():
        if k == "buffer_file":
            meta["buffers"][0]["file"] = v
        elif k == "image_file":
            meta["image"]["file"] = v
        else:
            meta[k] = v
    os.chmod(meta_path, 0o600)
    with open(meta_path, "w") as f:
        json.dump(meta, f)


def test_hostile_bundle_is_confined(app, tmp_path):
    """A bundle's file names lead outside its folder, to a FIFO, through a
    symlink to /dev/zero; its gate and contracts carry option text: each is
    refused with why, promptly (nothing blocks, nothing is read without
    bound), and no option of the bundle's own reaches KCHECK_OPTIONS."""
    b = a_bundle(app, tmp_path)
    os.mkfifo(os.path.join(b, "fifo"))
    os.symlink("/dev/zero", os.path.join(b, "zero"))
    evil = tmp_path / "evil"
    cases = [
        ({"buffer_file": "../../../../../../etc/passwd"}, "outside its folder"),
        ({"buffer_file": "fifo"}, "not a regular file"),
        ({"image_file": "zero"}, "cannot read"),
        ({"gate": "race:log_path=%s" % evil}, "not a gate name"),
        ({"contracts": "x.yaml:repro_dir=%s" % evil}, "not a list of files"),
        ({"seed": "1:log_path=%s" % evil}, "not an integer"),
    ]
    original = open(os.path.join(b, "bundle.json")).read()
    for change, why in cases:
        with open(os.path.join(b, "bundle.json"), "w") as f:
            f.write(original)
        edited(b, **change)
        k = kcheck("repro", b)
        assert k.returncode != 0 and why in k.stdout + k.stderr, (change, k.stdout, k.stderr)
    assert not glob.glob(str(evil) + "*")


def test_hostile_report_fields_are_quoted(app, tmp_path):
    """A report whose gate, kernel names and seed carry shell text (quotes,
    $(...), backquotes, a newline that would end the script's comment): the
    replay script `kcheck repro REPORT` writes parses, runs, and none of it
    is executed."""
    r = run([app("app_linked"), "races"], tmp_path)
    lines = open(r.reports[0]).read().splitlines()
    for i, l in enumerate(lines):
        rec = json.loads(l)
        if rec["type"] == "violation":
            rec["gate"] = 'race"; touch P1; echo "\ntouch P2'
            rec["kernel_name"] = "$(touch P3)`touch P4`'; touch P5; '"
            rec["kernel_mangled"] = "x'$(touch P6)'\"$(touch P7)\""
            rec["seed"] = "0\ntouch P8"
            lines[i] = json.dumps(rec)
            break
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text("\n".join(lines) + "\n")
    out = tmp_path / "bundle"
    k = kcheck("repro", str(hostile), "--violation", "0", "-o", str(out))
    assert k.returncode == 0, k.stderr
    script = str(out / "replay")
    assert subprocess.run(["sh", "-n", script]).returncode == 0
    env = dict(os.environ, LD_LIBRARY_PATH=FAKECUDA)
    rep = subprocess.run([script], capture_output=True, text=True, env=env, timeout=120,
                         cwd=str(tmp_path))
    assert "did not reproduce" in rep.stderr, rep.stdout + rep.stderr
    made = [p for d in (tmp_path, out) for p in os.listdir(d) if p.startswith("P")]
    assert not made, made


def test_command_outputs_replace_planted_symlinks(app, tmp_path):
    """`kcheck report --sarif/--junit/--html FILE` where FILE is a symlink
    someone planted: the file it points at stays as it was; FILE becomes
    kcheck's own 0600 file."""
    import stat
    r = run([app("app_linked"), "races"], tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    for flag in ("--sarif", "--junit", "--html"):
        out = tmp_path / ("out" + flag[2:])
        os.symlink(victim, out)
        k = kcheck("report", r.reports[0], flag, str(out))
        assert k.returncode in (0, 1), k.stderr
        st = os.lstat(out)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, (flag, oct(st.st_mode))
        assert victim.read_text() == "precious\n", flag
