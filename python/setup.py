"""Builds libkcheck.so into the package: `pip install ./python` (or a wheel
from `python -m build --wheel python`) carries the library and the
non-system libraries it needs in kcheck/lib/, found there by the front end
(kcheck._lib) and by each other (the library's rpath is $ORIGIN).

The library comes from the source tree above this folder (its Makefile,
`make build/libkcheck.so build/.carried`), or, when KCHECK_BUILD_DIR names
a folder, from a build made there already (CI, cross builds). An sdist
(`python -m build python`) carries that source tree in kcheck-src/, so the
wheel pip or build makes from the sdist builds the library the same way. The wheel is
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
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SDIST_SOURCE = "kcheck-src"  # the source tree inside an sdist
# tracked folders an sdist leaves out: this package (the sdist is it),
# records of runs and the manual
NOT_IN_SDIST = ("python/", "test/gpu/results/", "bench/results/", "test/results/", "docs/")


def source_root():
    """The source tree libkcheck.so is built from: the checkout above this
    folder, else the copy an sdist carries; None without either."""
    for root in (ROOT, os.path.join(HERE, SDIST_SOURCE)):
        if os.path.isfile(os.path.join(root, "Makefile")):
            return root
    return None


def _make(root, *args):
    jobs = os.environ.get("KCHECK_MAKE_JOBS") or str(os.cpu_count() or 1)
    cmd = ["make", "-C", root, "-j" + jobs] + list(args)
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
    elif source_root():
        root = source_root()
        _make(root, "build/libkcheck.so", "build/.carried")
        build = os.path.join(root, "build")
        # the list is the last line (make may say other things before it)
        lines = _make(root, "-s", "--no-print-directory", "print-carried").splitlines()
        carried = lines[-1].split() if lines else []
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


def tracked_sources(root):
    """The source tree's files an sdist carries (relative paths): git's
    tracked files of a checkout, else every file of an sdist's copy."""
    if root == ROOT and os.path.isdir(os.path.join(ROOT, ".git")):
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], stdout=subprocess.PIPE,
                             check=True).stdout.decode()
        return [f for f in out.split("\0") if f and not f.startswith(NOT_IN_SDIST)]
    files = []
    for d, _, names in os.walk(root):
        if os.path.relpath(d, root).split(os.sep)[0] == "build":
            continue
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


class SdistWithSource(sdist):
    """An sdist that can build its wheel: the source tree of libkcheck.so
    goes in kcheck-src/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root = source_root()
        if root is None:
            raise SystemExit("kcheck: an sdist needs the kcheck source tree above python/")
        for rel in tracked_sources(root):
            src = os.path.join(root, rel)
            if not os.path.isfile(src):
                continue  # deleted in the work tree, not yet in git
            dst = os.path.join(base_dir, SDIST_SOURCE, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)


class NativeDistribution(Distribution):
    """Holds native code: the package is built into (and installed from)
    the platform's library folder, not the pure-Python one."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")


setup(distclass=NativeDistribution,
      cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel,
                "sdist": SdistWithSource})
