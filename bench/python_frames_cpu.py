"""What reading a launching thread's Python frames without the GIL costs per
launch, on the CPU stand-in: N launches through ctypes (which releases the
GIL around each, as PyTorch's bindings and graph replay do), DEPTH Python
frames deep, run under kcheck with and without Python frames:

    python3 bench/python_frames_cpu.py [BUILD] [N] [DEPTH] [ROUNDS]

trace=2 takes a stack for every launch (host frames as module and offset,
Python frames named with their lines); stream_races=1 takes one for every
tracked operation, reused from an earlier operation with the same Python
frames. Prints microseconds per launch for each (median of ROUNDS runs,
alternated) and the difference; then the read itself, alone
(bench/pyframes_read.c compiled with libkcheck's pyframes.c, called
through ctypes DEPTH frames deep): microseconds per read of the frames
with names and lines (a finding, a trace=2 record) and per reuse key (a
tracked operation).
Timing only: no assertion (make test runs nothing of it)."""
import ctypes as C
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(lib, n, depth):
    sys.path.insert(0, os.path.join(ROOT, "test", "apps"))
    import app_ctypes as a
    d = a.Driver(lib)
    d.cuInit(0)
    dev, ctx, mod = C.c_int(), C.c_void_p(), C.c_void_p()
    d.cuDeviceGet(C.byref(dev), 0)
    d.cuDevicePrimaryCtxRetain(C.byref(ctx), dev)
    d.cuCtxSetCurrent(ctx)
    d.cuModuleLoadData(C.byref(mod), a.PTX)
    f = C.c_void_p()
    d.cuModuleGetFunction(C.byref(f), mod, b"_Z5scalePffi")
    buf = C.c_uint64()
    d.cuMemAlloc_v2(C.byref(buf), 4 * 256)

    def nest(k):
        if k:
            return nest(k - 1)
        t = time.perf_counter()
        for _ in range(n):
            a.launch(d, f, 1, 256, buf, C.c_float(1.0), C.c_int(256))
        return time.perf_counter() - t

    print("%.3f" % (nest(depth) / n * 1e6))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    depth = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    fake = os.path.join(build, "fakecuda")
    configs = (("plain", None), ("trace=2, python_stack=0", "trace=2:python_stack=0"),
               ("trace=2, python_stack=1", "trace=2:python_stack=1"),
               ("stream_races=1, python_stack=0", "stream_races=1:python_stack=0"),
               ("stream_races=1, python_stack=1", "stream_races=1:python_stack=1"))
    runs = {name: [] for name, _ in configs}
    for _ in range(rounds):  # alternated: a shared machine's load drifts
        for name, opts in configs:
            env = dict(os.environ, LD_LIBRARY_PATH=fake)
            if opts:
                env["LD_PRELOAD"] = os.path.join(build, "libkcheck.so")
                env["KCHECK_OPTIONS"] = "log_path=none:check_first=0:sample=0:" + opts
            out = subprocess.run([sys.executable, __file__, "--child",
                                  os.path.join(fake, "libcuda.so.1"), str(n), str(depth)],
                                 env=env, capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr[-2000:])
            runs[name].append(float(out.stdout.split()[-1]))
    results = {}
    for name, _ in configs:
        results[name] = sorted(runs[name])[len(runs[name]) // 2]
        print("%-32s %8.2f us/launch (median of %s)" % (
            name, results[name], ", ".join("%.2f" % x for x in runs[name])))
    for mode in ("trace=2", "stream_races=1"):
        print("%s: Python frames (%d deep) add %+.2f us/launch" % (
            mode, depth + 3, results[mode + ", python_stack=1"] - results[mode + ", python_stack=0"]))


def read_alone(depth, n=100000):
    """(us per full read, us per key) of DEPTH+2 frames, or None."""
    out = os.path.join(tempfile.mkdtemp(), "pyframes_read.so")
    src = os.path.join(ROOT, "libkcheck", "findings")
    r = subprocess.run(["cc", "-std=c11", "-D_GNU_SOURCE", "-O2", "-shared", "-fPIC", "-I" + src,
                        os.path.join(ROOT, "bench", "pyframes_read.c"),
                        os.path.join(src, "pyframes.c"), "-o", out, "-ldl", "-lpthread",
                        "-ljansson"], capture_output=True, text=True)
    if r.returncode:
        print("pyframes_read.c did not build: %s" % r.stderr[-500:])
        return None
    lib = C.CDLL(out)
    lib.pyframes_bench.restype = C.c_double

    def nest(k):
        if k:
            return nest(k - 1)
        return lib.pyframes_bench(n, 1) / 1e3, lib.pyframes_bench(n, 0) / 1e3

    return nest(depth)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
        depth = int(sys.argv[3]) if len(sys.argv) > 3 else 20
        alone = read_alone(depth)
        if alone:
            print("read alone, %d frames: %.2f us with names and lines, %.2f us as a reuse key"
                  % (depth + 2, alone[0], alone[1]))
