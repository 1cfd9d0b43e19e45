"""kcheck: contract checking for GPU kernels in unmodified programs.

`import kcheck` works with and without libkcheck.so loaded; without it every
call is a cheap no-op and active() is False.
"""
from kcheck._lib import loaded as _loaded

__version__ = "0.2.0"


def active():
    """True when this process runs under libkcheck.so."""
    return _loaded() is not None


# pytest plugin entry hooks (`-p kcheck`, or the pytest11 entry point): the
# plugin itself (kcheck/pytest_plugin.py) and pytest load only when pytest
# calls these.
def pytest_addoption(parser):
    from kcheck import pytest_plugin
    pytest_plugin.addoption(parser)


def pytest_configure(config):
    from kcheck import pytest_plugin
    pytest_plugin.configure(config)
