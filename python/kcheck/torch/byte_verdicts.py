"""The byte verdicts of the op-level coverage, immutability and bounds
gates: libkcheck's own (gates/byte_verdicts.c, the rule the C gates apply
to their shadow buffers), called on the data of host copies. Each takes
contiguous CPU tensors viewed as bytes and returns (count, first, last):
how many bytes the rule counts and the index of the first and last of
them (-1 when none). ctypes releases the GIL around the calls, so a
judgment on kcheck's worker runs beside the program."""
import ctypes

import torch


def _bytes(t):
    """t's bytes, never copied: the library reads t's own memory."""
    if t.device.type != "cpu" or not t.is_contiguous():
        raise ValueError("byte verdicts take contiguous host copies")
    return t.reshape(-1).view(torch.uint8)


def _call(fn, *args):
    first, last = ctypes.c_longlong(-1), ctypes.c_longlong(-1)
    n = fn(*args, ctypes.byref(first), ctypes.byref(last))
    return int(n), first.value, last.value


def changed(lib, before, after):
    """Immutability: bytes that differ between before and after (copies of
    one size)."""
    a, b = _bytes(before), _bytes(after)
    return _call(lib.kcheck_bytes_changed, a.data_ptr(), b.data_ptr(), a.numel(), 1)


def unwritten(lib, run_a, run_b, poison_a, poison_b):
    """Coverage: bytes that kept poison_a in run_a and poison_b in run_b.
    An op's kernels are unknown (nondeterministic ones included), so a
    byte that differs between the runs counts as written."""
    a, b = _bytes(run_a), _bytes(run_b)
    return _call(lib.kcheck_bytes_unwritten, a.data_ptr(), b.data_ptr(), a.numel(), 1, poison_a,
                 poison_b, 1)


def not_fill(lib, zone, fill):
    """Bounds: bytes of a guard zone that no longer hold its fill byte."""
    z = _bytes(zone)
    return _call(lib.kcheck_bytes_not_fill, z.data_ptr(), z.numel(), fill)
