"""Builds libkcheck.so into the package: `pip install ./python` (or a wheel
from `python -m build --wheel python`) carries the library and the
non-system libraries it needs in kcheck/lib/, found there by the front end
(kcheck._lib) and by each other (the library's rpath is $ORIGIN).

The library comes from the source tree above this folder (its Makefile,
`make build/libkcheck.so build/.carried`), or, when KCHECK_BUILD_DIR names
a folder, from a build made there already (CI, cross builds). The wheel is
tagged for the platform (py3-none-<platform>): it holds native code but no
Python extension, so one wheel serves every Python 3.
"""
import glob
import os
import shutil
import subprocess
import sysconfig

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _make(*args):
    jobs = os.environ.get("KCHECK_MAKE_JOBS") or str(os.cpu_count() or 1)
    cmd = ["make", "-C", ROOT, "-j" + jobs] + list(args)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        raise SystemExit("kcheck: building libkcheck.so failed (%s):\n%s"
                         % (" ".join(cmd), r.stdout[-4000:]))
    return r.stdout


def library_files():
    """libkcheck.so and the libraries it carries (the Makefile's list)."""
    build = os.environ.get("KCHECK_BUILD_DIR")
    if build:
        build = os.path.abspath(build)
        carried = [os.path.basename(p) for p in glob.glob(os.path.join(build, "lib*.so.*"))]
    elif os.path.exists(os.path.join(ROOT, "Makefile")):
        _make("build/libkcheck.so", "build/.carried")
        build = os.path.join(ROOT, "build")
        carried = _make("-s", "--no-print-directory", "print-carried").split()
    else:
        raise SystemExit("kcheck: no libkcheck.so to package: build from the kcheck source tree "
                         "(pip install ./python), or set KCHECK_BUILD_DIR to a build folder")
    files = [os.path.join(build, "libkcheck.so")] + [os.path.join(build, c) for c in carried]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise SystemExit("kcheck: missing from the build: %s" % ", ".join(missing))
    return files


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        dest = os.path.join(self.build_lib, "kcheck", "lib")
        os.makedirs(dest, exist_ok=True)
        for f in library_files():
            shutil.copy2(f, os.path.join(dest, os.path.basename(f)))  # follows links


class NativeDistribution(Distribution):
    """Holds native code: the package is built into (and installed from)
    the platform's library folder, not the pure-Python one."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")


setup(distclass=NativeDistribution,
      cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel})
