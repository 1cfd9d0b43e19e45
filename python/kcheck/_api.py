"""ctypes prototypes of include/kcheck.h's op-level API (version 4).

api() is None when the process does not run under a libkcheck.so that
has it; callers then pass everything through.
"""
import ctypes

from kcheck._lib import loaded

VERSION = 4
PASS, VIOLATION, INCONCLUSIVE, ERROR = 0, 1, 2, -1


class Tensor(ctypes.Structure):
    """struct kcheck_tensor: a tensor in host memory."""
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("format", ctypes.c_char_p),
                ("rank", ctypes.c_int), ("shape", ctypes.POINTER(ctypes.c_long)),
                ("strides", ctypes.POINTER(ctypes.c_long))]


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
    c = ctypes
    sig = {
        "kcheck_op_decide": (c.c_int, [c.c_char_p, c.c_char_p, c.c_char_p, c.c_ulong]),
        "kcheck_op_judge": (c.c_int, [c.c_char_p, c.c_char_p, c.c_char_p, c.c_char_p, c.c_int,
                                      c.POINTER(Tensor), c.POINTER(Tensor), c.c_uint,
                                      c.c_char_p, c.c_char_p, c.c_ulong]),
        "kcheck_op_done": (None, [c.c_char_p, c.c_char_p, c.c_int, c.c_double, c.c_char_p]),
        "kcheck_record": (None, [c.c_char_p, c.c_char_p]),
        "kcheck_option": (c.c_int, [c.c_char_p, c.c_char_p, c.c_ulong]),
        "kcheck_thread_launches": (c.c_ulonglong, []),
        "kcheck_thread_kernels": (c.c_longlong, [c.c_ulonglong, c.c_char_p, c.c_ulong]),
        "kcheck_op_trials": (c.c_int, [c.c_char_p, c.c_char_p, c.c_char_p, c.c_ulong,
                                       c.POINTER(c.c_uint)]),
        "kcheck_op_report": (None, [c.c_char_p, c.c_char_p, c.c_char_p]),
        "kcheck_own_begin": (None, []),
        "kcheck_own_end": (None, []),
        "kcheck_torch_op_contracts": (c.c_long, [c.c_char_p, c.c_ulong]),
        "kcheck_generate": (c.c_int, [c.c_char_p, c.c_char_p, c.c_char_p, c.c_int, c.c_longlong,
                                      c.c_longlong, c.c_ulonglong, c.c_void_p]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
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
