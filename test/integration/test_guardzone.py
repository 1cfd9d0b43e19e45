"""The guard-zone allocator's exported API (kcheck_guard_*, include/kcheck.h)
in a process under LD_PRELOAD=libkcheck.so on the CPU stand-in driver,
as PyTorch's CUDAPluggableAllocator calls it: a thread with no context
gets the primary one, the data is 256-byte aligned, stores inside it are
silent, a store past the end and one before the start are one damaged
allocation in kcheck_guard_check's JSON, the zones are armed again, a
freed allocation's damage is kept for the next check; kcheck.torch.guards
finds the loaded library's path. (With PyTorch on a GPU:
test/gpu/audit_guard_check.py.)"""
import json
import os
import sys

from conftest import ROOT, run

APP = r"""
import ctypes, json, sys
sys.path.insert(0, sys.argv[1])
cu = ctypes.CDLL("libcuda.so.1")
assert cu.cuInit(0) == 0
k = ctypes.CDLL(None)
k.kcheck_guard_alloc.restype = ctypes.c_void_p
k.kcheck_guard_alloc.argtypes = [ctypes.c_ulong, ctypes.c_int, ctypes.c_void_p]
k.kcheck_guard_free.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_void_p]
k.kcheck_guard_check.restype = ctypes.c_long
k.kcheck_guard_check.argtypes = [ctypes.c_char_p, ctypes.c_ulong]
k.kcheck_guard_live.restype = ctypes.c_long
cu.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
buf = ctypes.create_string_buffer(8192)
out = {}

def check(name):
    n = k.kcheck_guard_check(buf, len(buf))
    out[name] = [n, json.loads(buf.value.decode())]

def store(at, data):
    b = (ctypes.c_ubyte * len(data))(*data)
    assert cu.cuMemcpyHtoD_v2(at, b, len(data)) == 0

p = k.kcheck_guard_alloc(1000, 0, None)
out["aligned"] = p % 256
out["live"] = k.kcheck_guard_live()
out["zero"] = k.kcheck_guard_alloc(0, 0, None)
check("fresh")
store(p, [7] * 1000)
check("inside")
store(p + 1000, [1, 2, 3, 4])
store(p - 2, [9, 9])
check("outside")
check("again")
q = k.kcheck_guard_alloc(64, 0, None)
store(q - 1, [5])
k.kcheck_guard_free(q, 64, 0, None)
check("freed")
k.kcheck_guard_free(p, 1000, 0, None)
out["live_after"] = k.kcheck_guard_live()
from kcheck.torch import guards
out["path"] = guards.library_path()
print(json.dumps(out))
"""


def test_guard_zone_api_on_the_stand_in(tmp_path):
    r = run([sys.executable, "-c", APP, os.path.join(ROOT, "python")], tmp_path,
            options="gates=none")
    assert r.rc == 0, r.err[-3000:]
    out = json.loads(r.out.strip().splitlines()[-1])
    assert out["aligned"] == 0 and out["live"] == 1 and out["zero"] is None, out
    assert out["fresh"] == [0, []] and out["inside"] == [0, []], out
    n, dmg = out["outside"]
    assert n == 1 and len(dmg) == 1, out
    d = dmg[0]
    assert (d["size"], d["side"], d["bytes_past_end"], d["changed_bytes_after"],
            d["changed_bytes_before"], d["freed"]) == (1000, "after_end", 0, 4, 2, False), d
    assert d["written"] == "01020304" + "cb" * 12, d
    assert out["again"] == [0, []], out
    n, dmg = out["freed"]
    assert n == 1 and dmg[0]["freed"] and dmg[0]["size"] == 64, out
    assert dmg[0]["side"] == "before_start" and dmg[0]["bytes_before_start"] == 1, dmg
    assert dmg[0]["written"] == "05", dmg
    assert out["live_after"] == 0, out
    assert out["path"] and os.path.basename(out["path"]) == "libkcheck.so", out
