"""include/kcheck.h's op-level API (version 4); every prototype is in
_lib.PROTOTYPES.

api() is None when the process does not run under a libkcheck.so that
has it; callers then pass everything through.
"""
import ctypes

from kcheck._lib import Tensor, loaded

__all__ = ["Tensor", "api", "option", "torch_op_contracts"]

VERSION = 4
PASS, VIOLATION, INCONCLUSIVE, ERROR = 0, 1, 2, -1


_API = False  # not looked up yet


def api():
    """The process's libkcheck with the v4 prototypes set, or None."""
    global _API
    if _API is not False:
        return _API
    lib = loaded()
    if lib is None or lib.kcheck_api_version() < VERSION:
        _API = None
        return None
    # loaded() set every prototype of include/kcheck.h (_lib.PROTOTYPES)
    _API = lib
    return lib


def option(name, default=None):
    """An option's value as text (KCHECK_OPTIONS parsed by the library)."""
    lib = api()
    if lib is None:
        return default
    buf = ctypes.create_string_buffer(4096)
    n = lib.kcheck_option(name.encode(), buf, len(buf))
    return default if n < 0 else buf.value.decode()


def torch_op_contracts():
    """The loaded torch_op contracts (kcheck_torch_op_contracts), as dicts."""
    import json
    lib = api()
    if lib is None:
        return []
    n = lib.kcheck_torch_op_contracts(None, 0)
    if n <= 0:
        return []
    buf = ctypes.create_string_buffer(n + 1)
    lib.kcheck_torch_op_contracts(buf, len(buf))
    try:
        return json.loads(buf.value.decode())
    except ValueError:
        return []
