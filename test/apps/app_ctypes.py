#!/usr/bin/env python3
"""test/apps/app_ctypes.py — a test application in Python that drives
libcuda.so.1 through ctypes (dlopen + dlsym, like Triton's launchers):
allocate, load a module, launch, copy back, check.

usage: app_ctypes.py [basic|races|annotate|junk|streams|bugs|graph|sites] [--lib PATH] [--launch-via LIB]
annotate: launches declared through kcheck's annotation API (kcheck.h),
when libkcheck.so is loaded: a correct vecadd, a wrong exp, an fp16-
accumulating GEMM, a vecadd declared as `sub`, and launches the annotation
does not describe.
junk: a TensorIterator-like struct (ti_add_kernel, 1048 bytes, n = 0: no
work) launched in JUNK_VARIANTS variants, JUNK_ROUNDS rounds: three real
pointers among int pairs that look like addresses, different in every
variant, as PyTorch's multi-tensor structs carry (block_to_chunk).
streams: on two non-blocking streams, scale(x) on the first then
vecadd(x, x, y) on the second, from the same lines in STREAM_ROUNDS
rounds; the rounds are ordered by a context synchronisation between the
two launches except the last, where the second reads x unordered.
bugs: two missing stream waits. The first recurs with other operations
from the same lines: three rounds copy x host->device on one stream
(upload, a different size each round) and launch a kernel reading x on
the other (compute: scale, vecadd, scale) with no wait between them; the
second is one unordered copy of y and a kernel reading it, from two other
lines. Two bugs, the first with three occurrences.
sites: a step of SITES_N launches of vecadd on one stream, each from a
Python function of its own (a serving loop's many call sites), SITES_ROUNDS
steps from one line.
graph: the racy last_writer captured into a CUDA graph on a stream, the
graph launched twice (replay); ctypes releases the GIL around each launch,
as torch.cuda.CUDAGraph.replay does.
The library is PATH, else $FAKECUDA_LIB, else "libcuda.so.1" (found through
LD_LIBRARY_PATH). Exit status 0 only when every result is right.
"""
import ctypes as C
import os
import struct
import sys

PTX = b"""//
// kcheck ctypes test application
//
.version 8.5
.target sm_90
.address_size 64
.visible .entry _Z13ti_add_kernel8TIParams(.param .align 8 .b8 p[1048])
{
\tret;
}
.visible .entry _Z6vecaddPKfS0_Pfi(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
\tret;
}
.visible .entry _Z5scalePffi(.param .u64 x, .param .f32 s, .param .u32 n)
{
\tret;
}
.visible .entry _Z11last_writerPi(.param .u64 out)
{
\tret;
}
.visible .entry _Z14block_disjointPi(.param .u64 out)
{
\tret;
}
.visible .entry _Z14exp_fast_wrongPKfPfi(.param .u64 x, .param .u64 out, .param .u32 n)
{
\tret;
}
.visible .entry _Z12gemm_fp16accPKfS0_Pfiii(.param .u64 A, .param .u64 B, .param .u64 C,
    .param .u32 M, .param .u32 N, .param .u32 K)
{
\tret;
}
"""

N = 1000
NAME = "app_ctypes"


class Driver:
    """The few entries used, bound by their exported names."""

    def __init__(self, path):
        self.lib = C.CDLL(path, mode=C.RTLD_LOCAL)
        u64, i32, u32, vp = C.c_uint64, C.c_int, C.c_uint, C.c_void_p
        sig = {
            "cuInit": [u32],
            "cuGetErrorName": [i32, C.POINTER(C.c_char_p)],
            "cuDeviceGet": [C.POINTER(i32), i32],
            "cuDevicePrimaryCtxRetain": [C.POINTER(vp), i32],
            "cuDevicePrimaryCtxRelease_v2": [i32],
            "cuCtxSetCurrent": [vp],
            "cuCtxSynchronize": [],
            "cuModuleLoadData": [C.POINTER(vp), C.c_char_p],
            "cuModuleGetFunction": [C.POINTER(vp), vp, C.c_char_p],
            "cuModuleUnload": [vp],
            "cuMemAlloc_v2": [C.POINTER(u64), C.c_size_t],
            "cuMemFree_v2": [u64],
            "cuMemcpyHtoD_v2": [u64, vp, C.c_size_t],
            "cuMemcpyDtoH_v2": [vp, u64, C.c_size_t],
            "cuMemcpyHtoDAsync_v2": [u64, vp, C.c_size_t, vp],
            "cuMemsetD32_v2": [u64, u32, C.c_size_t],
            "cuLaunchKernel": [vp, u32, u32, u32, u32, u32, u32, u32, vp,
                               C.POINTER(vp), C.POINTER(vp)],
            "cuStreamCreate": [C.POINTER(vp), u32],
            "cuStreamSynchronize": [vp],
            "cuStreamDestroy_v2": [vp],
            "cuStreamBeginCapture_v2": [vp, u32],
            "cuStreamEndCapture": [vp, C.POINTER(vp)],
            "cuGraphInstantiateWithFlags": [C.POINTER(vp), vp, u64],
            "cuGraphLaunch": [vp, vp],
            "cuGraphExecDestroy": [vp],
            "cuGraphDestroy": [vp],
        }
        for name, args in sig.items():
            fn = getattr(self.lib, name)
            fn.argtypes = args
            fn.restype = C.c_int
            setattr(self, name, self._checked(name, fn))

    def _checked(self, name, fn):
        def call(*args):
            r = fn(*args)
            if r != 0:
                s = C.c_char_p()
                self.lib.cuGetErrorName(r, C.byref(s))
                text = s.value.decode() if s.value else "unknown CUresult"
                sys.stderr.write("%s: %s failed: %s (%d)\n" % (NAME, name, text, r))
                sys.exit(1)
        return call


# --launch-via LIB: kernels are launched by LIB's via_launch(f, grid,
# block, stream, params) (a library without debug information or .symtab,
# as libtorch's and libcudart's frames are), not by ctypes directly.
VIA = []


def launch(d, func, grid, block, *args, stream=None):
    """args: ctypes objects, one per kernel parameter."""
    arr = (C.c_void_p * len(args))(*[C.cast(C.byref(a), C.c_void_p) for a in args])
    if VIA:
        assert VIA[0](func, grid, block, stream, arr) == 0
        return
    d.cuLaunchKernel(func, grid, 1, 1, block, 1, 1, 0, stream, arr, None)


class Annotations:
    """kcheck's annotation API when libkcheck.so is loaded, else no-ops."""

    def __init__(self):
        me = C.CDLL(None)
        self.on = hasattr(me, "kcheck_annotate_begin")
        if not self.on:
            return
        self.begin, self.tensor = me.kcheck_annotate_begin, me.kcheck_annotate_tensor
        self.end, self.clear = me.kcheck_annotate_end, me.kcheck_annotate_clear
        self.begin.argtypes = [C.c_char_p, C.c_char_p]
        self.tensor.argtypes = [C.c_char_p, C.c_void_p, C.c_char_p, C.c_int,
                                C.POINTER(C.c_long), C.POINTER(C.c_long)]

    def declare(self, op, profile, *tensors):
        """tensors: (role, device pointer, shape)."""
        if not self.on:
            return
        assert self.begin(op, profile) == 0
        for role, ptr, shape in tensors:
            dims = (C.c_long * len(shape))(*shape)
            assert self.tensor(role, ptr.value, b"fp32", len(shape), dims, None) == 0
        assert self.end() == 0


def annotate(d, func, alloc):
    """Each launch prints its output's checksum (kcheck must not change it)."""
    ann = Annotations()
    a = (C.c_float * N)(*[i * 0.25 for i in range(N)])
    b = (C.c_float * N)(*[float(N - i) for i in range(N)])
    x = (C.c_float * N)(*[-8.0 + 16.0 * i / (N - 1) for i in range(N)])
    out = (C.c_float * N)()
    da, db, dc, dx = alloc(4 * N), alloc(4 * N), alloc(4 * N), alloc(4 * N)
    d.cuMemcpyHtoD_v2(da, a, 4 * N)
    d.cuMemcpyHtoD_v2(db, b, 4 * N)
    d.cuMemcpyHtoD_v2(dx, x, 4 * N)
    vecadd, grid = func(b"_Z6vecaddPKfS0_Pfi"), (N + 127) // 128

    def show(label, ptr, count):
        host = (C.c_float * count)()
        d.cuCtxSynchronize()
        d.cuMemcpyDtoH_v2(host, ptr, 4 * count)
        print("%s: annotate %s %r" % (NAME, label, sum(host)))
        return host

    ann.declare(b"add", b"fp32", (b"in", da, [N]), (b"in", db, [N]), (b"out", dc, [N]))
    launch(d, vecadd, grid, 128, da, db, dc, C.c_int(N))
    failures = int(list(show("add", dc, N)) != [a[i] + b[i] for i in range(N)])
    # Launches the annotation does not describe: other buffers.
    launch(d, vecadd, grid, 128, db, db, dx, C.c_int(N))
    show("other_buffers", dx, N)
    d.cuMemcpyHtoD_v2(dx, x, 4 * N)
    ann.declare(b"exp", b"fp32:math=precise", (b"in", dx, [N]), (b"out", dc, [N]))
    launch(d, func(b"_Z14exp_fast_wrongPKfPfi"), grid, 128, dx, dc, C.c_int(N))
    show("exp_fast_wrong", dc, N)
    ann.declare(b"sub", b"fp32", (b"in", da, [N]), (b"in", db, [N]), (b"out", dc, [N]))
    launch(d, vecadd, grid, 128, da, db, dc, C.c_int(N))
    show("add_declared_sub", dc, N)
    M, K = 64, 256
    A = (C.c_float * (M * K))(*[1.0 + ((i * 7) % 16) / 16.0 for i in range(M * K)])
    Bm = (C.c_float * (K * M))(*[1.0 + ((i * 5 + 3) % 16) / 16.0 for i in range(K * M)])
    dA, dB, dC = alloc(4 * M * K), alloc(4 * K * M), alloc(4 * M * M)
    d.cuMemcpyHtoD_v2(dA, A, 4 * M * K)
    d.cuMemcpyHtoD_v2(dB, Bm, 4 * K * M)
    ann.declare(b"matmul", b"bf16_fp32acc", (b"in", dA, [M, K]), (b"in", dB, [K, M]),
                (b"out", dC, [M, M]))
    launch(d, func(b"_Z12gemm_fp16accPKfS0_Pfiii"), M * M // 128, 128, dA, dB, dC, C.c_int(M),
           C.c_int(M), C.c_int(K))
    show("gemm_fp16acc", dC, M * M)
    if ann.on:
        ann.clear()
    launch(d, vecadd, grid, 128, da, db, dc, C.c_int(N))
    show("cleared", dc, N)
    for p in (da, db, dc, dx, dA, dB, dC):
        d.cuMemFree_v2(p)
    return failures


STREAM_ROUNDS = int(os.environ.get("APP_CTYPES_ROUNDS", "4"))


def streams(d, func, alloc):
    s1, s2 = C.c_void_p(), C.c_void_p()
    d.cuStreamCreate(C.byref(s1), 1)  # CU_STREAM_NON_BLOCKING
    d.cuStreamCreate(C.byref(s2), 1)
    x, y = alloc(4 * N), alloc(4 * N)
    host = (C.c_float * N)(*[float(i) for i in range(N)])
    d.cuMemcpyHtoD_v2(x, host, 4 * N)
    scale, vecadd = func(b"_Z5scalePffi"), func(b"_Z6vecaddPKfS0_Pfi")
    for r in range(STREAM_ROUNDS):
        launch(d, scale, (N + 127) // 128, 128, x, C.c_float(2.0), C.c_int(N), stream=s1)
        if r < STREAM_ROUNDS - 1:
            d.cuCtxSynchronize()
        launch(d, vecadd, (N + 127) // 128, 128, x, x, y, C.c_int(N), stream=s2)
        d.cuCtxSynchronize()
    d.cuMemcpyDtoH_v2(host, y, 4 * N)
    print("%s: streams y[10] %r" % (NAME, host[10]))
    for s in (s1, s2):
        d.cuStreamDestroy_v2(s)
    # y = 2 x, x = i * 2^rounds (in fp32: infinite past 2^127)
    want = float("inf") if STREAM_ROUNDS > 120 else 20.0 * 2.0 ** STREAM_ROUNDS
    return int(host[10] != want)


SITES_N = int(os.environ.get("APP_CTYPES_SITES", "300"))
SITES_ROUNDS = 4


def sites(d, func, alloc):
    s = C.c_void_p()
    d.cuStreamCreate(C.byref(s), 1)
    x, y = alloc(4 * N), alloc(4 * N)
    env = {"launch": launch, "d": d, "vecadd": func(b"_Z6vecaddPKfS0_Pfi"), "x": x, "y": y,
           "C": C, "s": s}
    calls = []
    for k in range(SITES_N):
        # a code object of its own per site: its own Python frames
        exec("def site_%d():\n    launch(d, vecadd, 1, 128, x, x, y, C.c_int(0), stream=s)\n" % k,
             env)
        calls.append(env["site_%d" % k])
    for _ in range(SITES_ROUNDS):
        for call in calls:
            call()
    d.cuCtxSynchronize()
    d.cuStreamDestroy_v2(s)
    print("%s: sites launches %d" % (NAME, SITES_N * SITES_ROUNDS))
    return 0


def bugs(d, func, alloc):
    s1, s2 = C.c_void_p(), C.c_void_p()
    d.cuStreamCreate(C.byref(s1), 1)  # CU_STREAM_NON_BLOCKING
    d.cuStreamCreate(C.byref(s2), 1)
    x, y = alloc(4 * N), alloc(4 * N)
    host = (C.c_float * N)(*[float(i) for i in range(N)])
    scale, vecadd = func(b"_Z5scalePffi"), func(b"_Z6vecaddPKfS0_Pfi")
    grid = (N + 127) // 128

    def upload(n):
        d.cuMemcpyHtoDAsync_v2(x, host, 4 * n, s1)

    def compute(k, *args):
        launch(d, k, grid, 128, *args, stream=s2)

    for r, (k, args) in enumerate(((scale, (x, C.c_float(2.0), C.c_int(N))),
                                   (vecadd, (x, x, y, C.c_int(N))),
                                   (scale, (x, C.c_float(3.0), C.c_int(N))))):
        upload(N // (r + 1))
        compute(k, *args)
        d.cuCtxSynchronize()
    d.cuMemcpyHtoDAsync_v2(y, host, 4 * N, s1)
    again = scale
    launch(d, again, grid, 128, y, C.c_float(1.0), C.c_int(N), stream=s2)
    d.cuCtxSynchronize()
    for s in (s1, s2):
        d.cuStreamDestroy_v2(s)
    return 0


def graph(d, func, alloc):
    s, g, e = C.c_void_p(), C.c_void_p(), C.c_void_p()
    d.cuStreamCreate(C.byref(s), 1)
    out = alloc(4)
    d.cuMemsetD32_v2(out, 0xFFFFFFFF, 1)
    d.cuStreamBeginCapture_v2(s, 0)  # CU_STREAM_CAPTURE_MODE_GLOBAL
    launch(d, func(b"_Z11last_writerPi"), 64, 128, out, stream=s)
    d.cuStreamEndCapture(s, C.byref(g))
    d.cuGraphInstantiateWithFlags(C.byref(e), g, 0)

    def replay():
        d.cuGraphLaunch(e, s)

    for _ in range(2):
        replay()
    d.cuCtxSynchronize()
    last = C.c_int()
    d.cuMemcpyDtoH_v2(C.byref(last), out, 4)
    d.cuGraphExecDestroy(e)
    d.cuGraphDestroy(g)
    d.cuStreamDestroy_v2(s)
    return int(not 0 <= last.value < 64)


JUNK_VARIANTS, JUNK_ROUNDS = 32, 4


def junk(d, func, alloc):
    """JUNK_VARIANTS x JUNK_ROUNDS launches of ti_add_kernel with n = 0."""
    ti = func(b"_Z13ti_add_kernel8TIParams")
    out, a, b = alloc(64), alloc(64), alloc(64)
    structs = []
    for v in range(JUNK_VARIANTS):
        words = (C.c_uint64 * 131)()
        for w in range(3, 130):
            k = 1000 * v + w
            words[w] = ((k + 1) << 32) | k  # an int pair: (k, k + 1)
        words[0] = 0  # n = 0, flags = 0
        words[2], words[66], words[129] = out.value, a.value, b.value
        words[130] = 4
        structs.append(words)
    for _ in range(JUNK_ROUNDS):
        for words in structs:
            arr = (C.c_void_p * 1)(C.cast(words, C.c_void_p))
            d.cuLaunchKernel(ti, 1, 1, 1, 1, 1, 1, 0, None, arr, None)
    d.cuCtxSynchronize()
    print("%s: junk launches %d" % (NAME, JUNK_VARIANTS * JUNK_ROUNDS))
    return 0


def main():
    argv = sys.argv[1:]
    mode, path = "basic", os.environ.get("FAKECUDA_LIB", "libcuda.so.1")
    while argv:
        a = argv.pop(0)
        if a == "--lib":
            path = argv.pop(0)
        elif a == "--launch-via":
            via = C.CDLL(argv.pop(0)).via_launch
            via.argtypes = [C.c_void_p, C.c_uint, C.c_uint, C.c_void_p, C.c_void_p]
            via.restype = C.c_int
            VIA.append(via)
        else:
            mode = a
    if mode not in ("basic", "races", "annotate", "junk", "streams", "bugs", "graph", "sites"):
        sys.stderr.write("%s: unknown mode %r (basic, races, annotate, junk, streams, bugs, graph, "
                         "sites)\n"
                         % (NAME, mode))
        return 2
    d = Driver(path)
    d.cuInit(0)
    dev = C.c_int()
    d.cuDeviceGet(C.byref(dev), 0)
    ctx = C.c_void_p()
    d.cuDevicePrimaryCtxRetain(C.byref(ctx), dev)
    d.cuCtxSetCurrent(ctx)
    mod = C.c_void_p()
    d.cuModuleLoadData(C.byref(mod), PTX)
    failures = 0

    def func(name):
        f = C.c_void_p()
        d.cuModuleGetFunction(C.byref(f), mod, name)
        return f

    def alloc(n):
        p = C.c_uint64()
        d.cuMemAlloc_v2(C.byref(p), n)
        return p

    if mode == "basic":
        a = (C.c_float * N)(*[i * 0.25 for i in range(N)])
        b = (C.c_float * N)(*[float(N - i) for i in range(N)])
        out = (C.c_float * N)()
        da, db, dc = alloc(4 * N), alloc(4 * N), alloc(4 * N)
        d.cuMemcpyHtoD_v2(da, a, 4 * N)
        d.cuMemcpyHtoD_v2(db, b, 4 * N)
        # APP_PAUSE: vecadd launched while kcheck's checks are paused
        # (kcheck_checks_pause, when the library is preloaded)
        pause = os.environ.get("APP_PAUSE") and getattr(C.CDLL(None), "kcheck_checks_pause", None)
        if pause:
            pause(1)
        launch(d, func(b"_Z6vecaddPKfS0_Pfi"), (N + 127) // 128, 128, da, db, dc, C.c_int(N))
        if pause:
            pause(0)
        launch(d, func(b"_Z5scalePffi"), (N + 255) // 256, 256, dc, C.c_float(-2.0), C.c_int(N))
        d.cuCtxSynchronize()
        d.cuMemcpyDtoH_v2(out, dc, 4 * N)
        for i in range(N):
            want = struct.unpack("f", struct.pack("f", -2.0 * struct.unpack(
                "f", struct.pack("f", a[i] + b[i]))[0]))[0]
            if out[i] != want:
                sys.stderr.write("%s: out[%d] = %r, want %r\n" % (NAME, i, out[i], want))
                failures += 1
                break
        print("%s: vecadd+scale sum %r" % (NAME, sum(out)))
        for p in (da, db, dc):
            d.cuMemFree_v2(p)
    elif mode == "annotate":
        failures += annotate(d, func, alloc)
    elif mode == "junk":
        failures += junk(d, func, alloc)
    elif mode == "streams":
        failures += streams(d, func, alloc)
    elif mode == "bugs":
        failures += bugs(d, func, alloc)
    elif mode == "sites":
        failures += sites(d, func, alloc)
    elif mode == "graph":
        failures += graph(d, func, alloc)
    else:
        B, T = 64, 128
        dout, dd = alloc(4), alloc(4 * B * T)
        d.cuMemsetD32_v2(dout, 0xFFFFFFFF, 1)
        launch(d, func(b"_Z11last_writerPi"), B, T, dout)
        launch(d, func(b"_Z14block_disjointPi"), B, T, dd)
        d.cuCtxSynchronize()
        last = C.c_int()
        d.cuMemcpyDtoH_v2(C.byref(last), dout, 4)
        host = (C.c_int * (B * T))()
        d.cuMemcpyDtoH_v2(host, dd, 4 * B * T)
        if not 0 <= last.value < B:
            sys.stderr.write("%s: last_writer wrote %d\n" % (NAME, last.value))
            failures += 1
        if any(host[i] != 3 * i + 1 for i in range(B * T)):
            sys.stderr.write("%s: block_disjoint wrong\n" % NAME)
            failures += 1
        print("%s: races last_writer %d" % (NAME, last.value))
        print("%s: clean block_disjoint %d" % (NAME, sum(host)))
        d.cuMemFree_v2(dout)
        d.cuMemFree_v2(dd)
    d.cuModuleUnload(mod)
    d.cuDevicePrimaryCtxRelease_v2(dev)
    if failures:
        return 1
    print("%s: %s ok" % (NAME, mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
