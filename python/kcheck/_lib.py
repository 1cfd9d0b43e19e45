"""Finding and talking to libkcheck.so through include/kcheck.h (ctypes).

When the process runs under kcheck (LD_PRELOAD), the library is already
mapped and its symbols are found in the global namespace; otherwise every
call of the package is a cheap no-op and active() is False.
"""
import ctypes
import os

_HERE = os.path.dirname(os.path.realpath(__file__))
_PROCESS = None  # ctypes handle of the process's global namespace, once looked up


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
    return _PROCESS
