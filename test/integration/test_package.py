"""The Python package builds as users install it (pip install ./python): the
wheel carries the modules, the PyTorch binding's boot folder and the shipped
suppression lists, and declares the front end and the pytest plugin."""
import os
import subprocess
import sys
import zipfile

from conftest import ROOT


def test_wheel_builds_with_its_data_files(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                        "--no-build-isolation", "-w", str(tmp_path), os.path.join(ROOT, "python")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    wheels = [f for f in os.listdir(tmp_path) if f.endswith(".whl")]
    assert len(wheels) == 1, wheels
    names = zipfile.ZipFile(tmp_path / wheels[0]).namelist()
    for want in ("kcheck/__init__.py", "kcheck/cli.py", "kcheck/report.py",
                 "kcheck/pytest_plugin.py", "kcheck/_boot/sitecustomize.py",
                 "kcheck/suppressions/torch-nondeterministic.supp"):
        assert want in names, (want, names)
    ep = [n for n in names if n.endswith("entry_points.txt")]
    text = zipfile.ZipFile(tmp_path / wheels[0]).read(ep[0]).decode()
    assert "kcheck = kcheck.cli:main" in text and "[pytest11]" in text, text
