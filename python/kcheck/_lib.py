"""Finding and talking to libkcheck.so through include/kcheck.h (ctypes).

When the process runs under kcheck (LD_PRELOAD), the library is already
mapped and its symbols are found in the global namespace; otherwise every
call of the package is a cheap no-op and active() is False.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.realpath(__file__))
_PROCESS = None  # ctypes handle of the process's global namespace, once looked up


class Tensor(ctypes.Structure):
    """struct kcheck_tensor: a tensor in host memory."""
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("format", ctypes.c_char_p),
                ("rank", ctypes.c_int), ("shape", ctypes.POINTER(ctypes.c_long)),
                ("strides", ctypes.POINTER(ctypes.c_long))]


def _prototypes():
    c = ctypes
    s, i, u, v = c.c_char_p, c.c_int, c.c_ulong, None
    ll_p = c.POINTER(c.c_longlong)
    return {
        "kcheck_version": (s, []),
        "kcheck_api_version": (i, []),
        "kcheck_print_options": (v, []),
        "kcheck_check_options": (i, [s]),
        "kcheck_print_gates": (v, []),
        "kcheck_contract_load": (i, [s]),
        "kcheck_contract_lint": (i, [s]),
        "kcheck_contract_register_yaml": (i, [s, s]),
        "kcheck_profile_check": (i, [s, s, u]),
        "kcheck_annotate_begin": (i, [s, s]),
        "kcheck_annotate_tensor": (i, [s, c.c_void_p, s, i, c.POINTER(c.c_long),
                                       c.POINTER(c.c_long)]),
        "kcheck_annotate_end": (i, []),
        "kcheck_annotate_clear": (v, []),
        "kcheck_annotation_describe": (i, [s, u]),
        "kcheck_set_test": (v, [s]),
        "kcheck_report_path": (s, []),
        "kcheck_flush": (v, []),
        "kcheck_generate": (i, [s, s, s, i, c.c_longlong, c.c_longlong, c.c_ulonglong, c.c_void_p]),
        "kcheck_op_decide": (i, [s, s, s, u]),
        "kcheck_op_judge": (i, [s, s, s, s, i, c.POINTER(Tensor), c.POINTER(Tensor), c.c_uint, s,
                                s, u]),
        "kcheck_op_trials": (i, [s, s, s, u, c.POINTER(c.c_uint)]),
        "kcheck_op_report": (v, [s, s, s]),
        "kcheck_op_done": (v, [s, s, i, c.c_double, s]),
        "kcheck_record": (v, [s, s]),
        "kcheck_bytes_changed": (c.c_ulonglong, [c.c_void_p, c.c_void_p, c.c_ulonglong, c.c_uint,
                                                 ll_p, ll_p]),
        "kcheck_bytes_unwritten": (c.c_ulonglong, [c.c_void_p, c.c_void_p, c.c_ulonglong,
                                                   c.c_uint, i, i, i, ll_p, ll_p]),
        "kcheck_bytes_not_fill": (c.c_ulonglong, [c.c_void_p, c.c_ulonglong, i, ll_p, ll_p]),
        "kcheck_option": (i, [s, s, u]),
        "kcheck_torch_op_contracts": (c.c_long, [s, u]),
        "kcheck_own_begin": (v, []),
        "kcheck_own_end": (v, []),
        "kcheck_torch_pool": (i, [c.c_ulonglong, i, s, u]),
        "kcheck_thread_launches": (c.c_ulonglong, []),
        "kcheck_checks_pause": (None, [c.c_int]),
        "kcheck_thread_kernels": (c.c_longlong, [c.c_ulonglong, s, u]),
        "kcheck_guard_alloc": (c.c_void_p, [u, i, c.c_void_p]),
        "kcheck_guard_free": (v, [c.c_void_p, u, i, c.c_void_p]),
        "kcheck_guard_fill": (i, [i]),
        "kcheck_guard_live": (c.c_long, []),
        "kcheck_guard_check": (c.c_long, [s, u]),
    }


# Every function of include/kcheck.h: (restype, argtypes), declared here
# once (test_package checks the table against the header).
PROTOTYPES = _prototypes()


def prototyped(lib):
    """lib with the prototype of each function of PROTOTYPES it has set (an
    older library lacks the newer ones); returns lib."""
    for name, (res, args) in PROTOTYPES.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            continue
        f.restype, f.argtypes = res, args
    return lib


class LibraryError(Exception):
    """A library named explicitly (--lib, KCHECK_LIB) that is not there."""


def find_library(explicit=None):
    """Path of a libkcheck.so to preload: explicit, $KCHECK_LIB, the one
    installed inside this package (pip install), the source checkout's
    build/, an installed PREFIX/lib/kcheck; None if none. A path named
    explicitly that does not exist raises LibraryError: it is never
    silently replaced by another library."""
    for how, c in (("--lib", explicit), ("KCHECK_LIB", os.environ.get("KCHECK_LIB"))):
        if c:
            if not os.path.isfile(c):
                raise LibraryError("%s %s: no such file" % (how, c))
            return os.path.realpath(c)
    candidates = [os.path.join(_HERE, "lib", "libkcheck.so"),
                  os.path.join(_HERE, "..", "..", "build", "libkcheck.so"),
                  os.path.join(_HERE, "..", "..", "lib", "kcheck", "libkcheck.so"),
                  os.path.join(_HERE, "..", "..", "..", "..", "lib", "kcheck", "libkcheck.so")]
    for c in candidates:
        if c and os.path.exists(c):
            return os.path.realpath(c)
    return None


def loaded():
    """The ctypes handle of the libkcheck.so this process runs under, or
    None when the process was not started under kcheck."""
    global _PROCESS
    if _PROCESS is None:
        _PROCESS = ctypes.CDLL(None)
    try:
        _PROCESS.kcheck_api_version
    except AttributeError:
        return None
    return prototyped(_PROCESS)
