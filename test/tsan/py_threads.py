#!/usr/bin/env python3
"""test/tsan/py_threads.py — four Python threads launching racy kernels at
once through ctypes, so that violations (and with them the Python-stack
lookup) happen on several threads together; run by test/tsan/run.sh under
ThreadSanitizer. Exit status 0 when every thread finished."""
import ctypes as C
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "apps"))
import app_ctypes as A  # noqa: E402


def main():
    d = A.Driver(os.environ.get("FAKECUDA_LIB", "libcuda.so.1"))
    d.cuInit(0)
    dev = C.c_int()
    d.cuDeviceGet(C.byref(dev), 0)
    ctx = C.c_void_p()
    d.cuDevicePrimaryCtxRetain(C.byref(ctx), dev)
    d.cuCtxSetCurrent(ctx)
    mod = C.c_void_p()
    d.cuModuleLoadData(C.byref(mod), A.PTX)
    f = C.c_void_p()
    d.cuModuleGetFunction(C.byref(f), mod, b"_Z11last_writerPi")
    done = []

    def worker(t):
        d.cuCtxSetCurrent(ctx)
        out = C.c_uint64()
        d.cuMemAlloc_v2(C.byref(out), 4)
        for i in range(6):
            # A grid of its own per thread and round: a new signature, a check.
            A.launch(d, f, 16 + 8 * t + 40 * i, 64, out)
        d.cuCtxSynchronize()
        d.cuMemFree_v2(out)
        done.append(t)

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("py_threads: %d threads done" % len(done))
    return 0 if len(done) == 4 else 1


if __name__ == "__main__":
    sys.exit(main())
