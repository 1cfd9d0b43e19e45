"""kcheck's boot module (torch=1): put first on PYTHONPATH by libkcheck's
constructor, so the interpreter imports it at start-up. It runs the
sitecustomize it shadows (if any), then arms the lazy torch import hook
(kcheck/torch/_hook.py). Anything going wrong here is reported in one line
and the program runs on untouched."""
import os
import sys


def _chain():
    here = os.path.dirname(os.path.realpath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
        import importlib
        try:
            importlib.import_module("sitecustomize")
        except ImportError as e:
            if e.name != "sitecustomize":
                raise
    finally:
        sys.path[:] = saved
        if ours is not None:
            sys.modules["sitecustomize"] = ours


def _arm(here):
    root = os.path.dirname(os.path.dirname(here))  # the folder holding kcheck/
    try:
        import kcheck.torch._hook as hook
    except ImportError:
        sys.path.append(root)
        import kcheck.torch._hook as hook
    hook.arm()


_here = os.path.dirname(os.path.realpath(__file__))
try:
    _chain()
except Exception as _e:  # as Python's own site.py does for sitecustomize
    sys.stderr.write("kcheck: error in the chained sitecustomize: %s: %s\n" % (type(_e).__name__, _e))
try:
    _arm(_here)
except Exception as _e:  # never break the program
    sys.stderr.write("kcheck: torch boot failed: %s: %s\n" % (type(_e).__name__, _e))
