"""kcheck: contract checking for GPU kernels in unmodified programs.

`import kcheck` works with and without libkcheck.so loaded; without it every
call is a cheap no-op and active() is False.
"""
from kcheck._lib import loaded as _loaded

__version__ = "0.2.0"


def active():
    """True when this process runs under libkcheck.so."""
    return _loaded() is not None
