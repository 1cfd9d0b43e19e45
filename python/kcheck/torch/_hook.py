"""The lazy import hook: a meta-path finder that waits for the program's
`import torch` and installs the binding right after torch's module has run.
A program that never imports torch is untouched (one extra finder call per
top-level import until then). Finder API: importlib.abc.MetaPathFinder."""
import sys


class _Loader:
    """Wraps torch's loader: runs it, then installs the binding."""

    def __init__(self, loader):
        self._loader = loader

    def __getattr__(self, name):
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _install()


class TorchFinder:
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        remove()
        import importlib.util
        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def _install():
    try:
        import kcheck.torch
        kcheck.torch.install()
    except Exception as e:  # never break the program
        sys.stderr.write("kcheck: torch binding not installed: %s: %s\n" % (type(e).__name__, e))


def arm():
    """Installs now if torch is already imported, else waits for it."""
    if "torch" in sys.modules:
        _install()
    elif not any(isinstance(f, TorchFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, TorchFinder())


def remove():
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TorchFinder)]
