"""The Python package builds as users install it (pip install ./python): the
wheel carries the modules, the PyTorch binding's boot folder, the shipped
suppression lists, libkcheck.so and the libraries it carries, and declares
the front end and the pytest plugin; installed into a fresh venv, `kcheck
run` finds its library with nothing else on the path. Offline: the build
uses the installed setuptools (--no-build-isolation), the venv gets pip
from ensurepip and nothing from an index."""
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import APPS, FAKECUDA, ROOT

CARRIED = ("libjansson.so.4", "libunwind.so.8", "libyaml-0.so.2", "libdw.so.1", "libelf.so.1")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(out), os.path.join(ROOT, "python")],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
    assert len(wheels) == 1, wheels
    return out / wheels[0]


def test_wheel_builds_with_its_data_files(wheel):
    # one wheel for every Python 3 of the platform: native code, no extension
    assert wheel.name.startswith("kcheck-") and "-py3-none-linux_" in wheel.name, wheel.name
    tmp_path = wheel.parent
    wheels = [wheel.name]
    names = zipfile.ZipFile(tmp_path / wheels[0]).namelist()
    for want in ("kcheck/__init__.py", "kcheck/cli.py", "kcheck/report.py",
                 "kcheck/pytest_plugin.py", "kcheck/_boot/sitecustomize.py",
                 "kcheck/suppressions/torch-nondeterministic.supp",
                 "kcheck/lib/libkcheck.so") + tuple("kcheck/lib/" + c for c in CARRIED):
        assert want in names, (want, names)
    ep = [n for n in names if n.endswith("entry_points.txt")]
    text = zipfile.ZipFile(tmp_path / wheels[0]).read(ep[0]).decode()
    assert "kcheck = kcheck.cli:main" in text and "[pytest11]" in text, text


def test_fresh_venv_runs_kcheck_with_nothing_else_on_the_path(wheel, tmp_path):
    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index",
                          str(wheel)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr[-2000:]
    # no KCHECK_*, no PYTHONPATH, no source tree: only the stand-in driver
    # (what libcuda.so.1 is on a GPU machine)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LD_LIBRARY_PATH": FAKECUDA}
    work = tmp_path / "work"
    work.mkdir()
    kc = str(venv / "bin" / "kcheck")
    v = subprocess.run([kc, "--version"], capture_output=True, text=True, env=env, timeout=60)
    lib = str(venv.resolve()) + "/lib/"
    assert v.returncode == 0 and lib in v.stdout and "/kcheck/lib/libkcheck.so" in v.stdout, v.stdout
    ld = subprocess.run(["ldd", v.stdout.split(" at ")[1].rstrip(")\n")], capture_output=True,
                        text=True, env=env)
    for c in CARRIED:  # the carried copies, through the library's $ORIGIN rpath
        line = next((l for l in ld.stdout.splitlines() if l.strip().startswith(c)), "")
        assert "/kcheck/lib/" + c in line, ld.stdout
    r = subprocess.run([kc, "run", "--", os.path.join(APPS, "app_linked"), "basic"],
                       capture_output=True, text=True, env=env, cwd=str(work), timeout=300)
    assert r.returncode == 0 and "basic ok" in r.stdout, r.stderr[-2000:]
    assert "SUMMARY: kcheck: 0 violations in" in r.stderr, r.stderr[-2000:]
    reports = list(work.glob("kcheck.*.jsonl"))
    assert len(reports) == 1
    rep = subprocess.run([kc, "report", str(reports[0])], capture_output=True, text=True, env=env,
                         timeout=60)
    assert rep.returncode == 0 and "verdict: clean" in rep.stdout, rep.stdout


def test_ctypes_prototypes_match_the_public_header():
    """python/kcheck/_lib.py declares the ctypes prototype of every function
    of include/kcheck.h once, with as many arguments as the header: a
    function added to the header without its prototype (or one dropped)
    fails here, not in a caller that passes a pointer as an int."""
    import re
    sys.path.insert(0, os.path.join(ROOT, "python"))
    try:
        from kcheck import _lib
    finally:
        sys.path.pop(0)
    text = open(os.path.join(ROOT, "include", "kcheck.h")).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    decls = {}
    for m in re.finditer(r"\b(kcheck_\w+)\s*\(([^)]*)\)\s*;", text):
        args = m.group(2).strip()
        decls[m.group(1)] = 0 if args in ("", "void") else args.count(",") + 1
    assert len(decls) >= 25, decls
    assert set(decls) == set(_lib.PROTOTYPES), (set(decls) ^ set(_lib.PROTOTYPES))
    for name, n in decls.items():
        assert len(_lib.PROTOTYPES[name][1]) == n, (name, n, _lib.PROTOTYPES[name])


def test_sdist_carries_the_source_and_builds_its_wheel(tmp_path):
    """`python -m build python` makes an sdist, then the wheel from it: the
    sdist carries libkcheck's source tree (kcheck-src/, without the run
    records and the manual), and the wheel built from the unpacked sdist
    alone holds the library it built there."""
    sd = tmp_path / "sdist"
    r = subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(sd)],
                       cwd=os.path.join(ROOT, "python"), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-4000:]
    (tarball,) = list(sd.glob("kcheck-*.tar.gz"))
    import tarfile
    with tarfile.open(tarball) as t:
        names = t.getnames()
        kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        t.extractall(tmp_path / "x", **kw)
    top = names[0].split("/")[0]
    for want in ("kcheck-src/Makefile", "kcheck-src/libkcheck/module.mk",
                 "kcheck-src/oracle/ops.def", "kcheck-src/include/kcheck.h", "setup.py",
                 "kcheck/cli.py"):
        assert "%s/%s" % (top, want) in names, want
    assert not [n for n in names if "/kcheck-src/test/gpu/results/" in n or
                "/kcheck-src/docs/" in n or "/kcheck-src/python/" in n]
    # the wheel from the unpacked sdist: no checkout above it
    wo = tmp_path / "wheel"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(wo), str(tmp_path / "x" / top)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    (whl,) = list(wo.glob("kcheck-*.whl"))
    names = zipfile.ZipFile(whl).namelist()
    assert "kcheck/lib/libkcheck.so" in names and all("kcheck/lib/" + c in names
                                                      for c in CARRIED), names


def test_carried_list_is_all_make_prints_without_the_sanitizer_headers():
    """setup.py reads `make -s print-carried`'s stdout as the files to
    package. In a fresh venv make's python has no nvidia-cuda-sanitizer-api
    (PYTHON=false here: no headers found), and make's note about building
    without the Sanitizer route went to stdout: pip install ./python
    failed with "missing from the build: .../kcheck:, .../the, ...". The
    note goes to stderr; stdout is the list."""
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "print-carried",
                        "PYTHON=false"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == list(CARRIED), r.stdout
    assert "without the Sanitizer route" in r.stderr, r.stderr
