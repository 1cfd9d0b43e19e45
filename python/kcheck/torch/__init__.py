"""kcheck's PyTorch binding: every covered ATen op judged at op level
against the exact oracle (libkcheck), at the precision PyTorch's own
settings promise, with the user's Python line in each finding.

Activated without changing the program (`kcheck run --torch -- python
train.py`, or torch=1 in KCHECK_OPTIONS under LD_PRELOAD): the library puts
kcheck/_boot first on PYTHONPATH, its sitecustomize installs a lazy import
hook, and install() runs right after the program's `import torch`. Without
libkcheck loaded install() does nothing.
"""
import sys
import warnings

# torch versions the binding was tested with (major.minor).
TESTED = ("2.11",)
_warned = False


def install():
    """Installs the binding on the calling thread; returns the dispatch
    mode, or None when kcheck is not active (or torch cannot be bound)."""
    global _warned
    import torch
    ver = ".".join(torch.__version__.split(".")[:2])
    if ver not in TESTED and not _warned:
        _warned = True
        sys.stderr.write("kcheck: torch: version %s was not tested with the binding (tested: %s); "
                         "continuing\n" % (torch.__version__, ", ".join(TESTED)))
    try:
        from kcheck.torch import mode
        return mode.install()
    except Exception as e:  # never break the program
        warnings.warn("kcheck: torch binding not installed: %s: %s" % (type(e).__name__, e))
        return None


def stats():
    """The binding's counters (ops seen, checked, passed through by
    reason), or None when it is not installed."""
    from kcheck.torch import mode
    return mode._MODE.record() if mode._MODE else None
