"""`kcheck repro BUNDLE`: replays a finding's bundle without the original
program.

A bundle (written by libkcheck at the finding when repro_dir is set;
format kcheck.bundle/1, libkcheck/exec/bundle.c) holds the kernel's image, its
mangled name, grid, block, shared memory, the parameter bytes with their
layout, and the bytes every allocation the launch reaches held before the
launch ran. `run` starts this module in a child under LD_PRELOAD=libkcheck.so
with only that gate, at that seed, with the contract files the gate used;
the child (`python -m kcheck.replay BUNDLE`) loads the image with
cuModuleLoadData, allocates and uploads the buffers, moves every 8-byte
parameter word that pointed into one of them to the new copy, launches
once and synchronises, and kcheck checks that launch as it would any
other. `run` then reads the child's report: 0 when the same (gate, kernel)
violation appears again, 1 when it does not.

Limits: pointers stored in device memory (not in the parameter bytes) are
not moved; launch attributes (cooperative, clusters) are not replayed.
"""
import ctypes as C
import glob
import json
import os
import shlex
import subprocess
import sys

from kcheck import report as kr


class ReplayError(kr.ReportError):
    pass


FORMAT = "kcheck.bundle/1"


def load(path):
    """The bundle's metadata; path is the folder or its bundle.json."""
    meta_path = os.path.join(path, "bundle.json") if os.path.isdir(path) else path
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except OSError as e:
        raise ReplayError("cannot read %s: %s" % (meta_path, e.strerror or e)) from None
    except ValueError as e:
        raise ReplayError("%s is not a bundle: %s" % (meta_path, e)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ReplayError("%s is not a %s bundle" % (meta_path, FORMAT))
    meta["_dir"] = os.path.dirname(os.path.abspath(meta_path))
    return meta


def _read(meta, name):
    with open(os.path.join(meta["_dir"], name), "rb") as f:
        return f.read()


def relocate(params, buffers, new_bases):
    """params with every 8-byte-aligned word that lies inside buffer i's
    original range moved by the same offset into new_bases[i]."""
    out = bytearray(params)
    for off in range(0, len(out) - 7, 8):
        word = int.from_bytes(out[off:off + 8], "little")
        for b, new in zip(buffers, new_bases):
            if b["base"] <= word < b["base"] + b["size"]:
                out[off:off + 8] = (new + word - b["base"]).to_bytes(8, "little")
                break
    return bytes(out)


def replay_launch(meta, libcuda="libcuda.so.1"):
    """In this process: one launch of the bundle's kernel on copies of its
    buffers (kcheck, when preloaded, checks it). Returns 0, or raises."""
    d = C.CDLL(libcuda)

    def ck(name, *args):
        r = getattr(d, name)(*args)
        if r != 0:
            raise ReplayError("%s failed: CUDA error %d" % (name, r))

    ck("cuInit", 0)
    dev, ctx = C.c_int(), C.c_void_p()
    ck("cuDeviceGet", C.byref(dev), 0)
    ck("cuDevicePrimaryCtxRetain", C.byref(ctx), dev)
    ck("cuCtxSetCurrent", ctx)
    mod, fn = C.c_void_p(), C.c_void_p()
    if meta["image"].get("path"):  # a module the program loaded from a file
        ck("cuModuleLoad", C.byref(mod), meta["image"]["path"].encode())
    else:
        image = _read(meta, meta["image"]["file"])
        img = C.create_string_buffer(image, len(image) + 1)  # PTX text needs its NUL
        ck("cuModuleLoadData", C.byref(mod), img)
    ck("cuModuleGetFunction", C.byref(fn), mod, meta["kernel"]["mangled"].encode())
    news = []
    for b in meta["buffers"]:
        p = C.c_uint64()
        ck("cuMemAlloc_v2", C.byref(p), C.c_size_t(max(1, b["size"])))
        data = _read(meta, b["file"])
        if len(data) != b["size"]:
            raise ReplayError("%s: %d bytes, the bundle says %d" % (b["file"], len(data), b["size"]))
        ck("cuMemcpyHtoD_v2", p, data, C.c_size_t(len(data)))
        news.append(p.value)
    launch = meta["launch"]
    params = relocate(_read(meta, launch["params"]), meta["buffers"], news)
    pbuf = C.create_string_buffer(params, max(1, len(params)))
    base = C.addressof(pbuf)
    kp = (C.c_void_p * max(1, len(meta["param_layout"])))(
        *[base + p["offset"] for p in meta["param_layout"]])
    g, bl = launch["grid"], launch["block"]
    ck("cuLaunchKernel", fn, g[0], g[1], g[2], bl[0], bl[1], bl[2], launch["shmem"], None, kp, None)
    ck("cuCtxSynchronize")
    return 0


def run(path, lib, options=(), keep_report=None):
    """Replays the bundle in a child under kcheck; returns (status, message)."""
    meta = load(path)
    out = keep_report or os.path.join(meta["_dir"], "replay-report")
    for old in glob.glob(out + ".*.jsonl"):
        os.unlink(old)
    # the run's own options (the gate's: strategies, sizes, ...) first, less
    # those that name files or choose launches; then the replay's
    drop = ("log_path", "repro_dir", "gates", "seed", "contracts", "launch_skip", "launch_count",
            "check_first", "kernel_include", "kernel_exclude", "kernel_include_regex",
            "kernel_exclude_regex", "max_checks", "suppressions", "halt_on_error", "exitcode")
    opts = [o for o in (meta.get("options") or "").split(":")
            if o and o.partition("=")[0] not in drop]
    opts += ["log_path=" + out, "gates=" + meta["gate"], "seed=%d" % meta.get("seed", 0),
             "check_first=1", "verbosity=0"]
    if meta.get("contracts"):
        opts.append("contracts=" + meta["contracts"])
    opts += list(options)
    env = dict(os.environ)
    env["KCHECK_OPTIONS"] = ":".join(opts)
    env["LD_PRELOAD"] = lib + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    child = subprocess.run([sys.executable, "-m", "kcheck.replay", meta["_dir"]], env=env,
                           capture_output=True, text=True)
    reports = sorted(glob.glob(out + ".*.jsonl"))
    kernel = meta["kernel"]["demangled"]
    if child.returncode != 0 or not reports:
        why = (child.stderr.strip().splitlines() or ["no report written"])[-1]
        return 1, "kcheck repro: the replay of [%s] in %s did not run: %s" % (meta["gate"], kernel, why)
    found = [v for v in kr.read(reports[0]).violations
             if v.get("gate") == meta["gate"] and v.get("kernel_mangled") == meta["kernel"]["mangled"]]
    if found:
        return 0, "kcheck repro: the violation [%s] in %s is reproduced standalone (%s)" % (
            meta["gate"], kernel, reports[0])
    return 1, "kcheck repro: the violation [%s] in %s did not reproduce standalone (%s)" % (
        meta["gate"], kernel, reports[0])


def main(argv):
    if len(argv) != 2:
        print("usage: python -m kcheck.replay BUNDLE", file=sys.stderr)
        return 2
    try:
        return replay_launch(load(argv[1]), os.environ.get("FAKECUDA_LIB", "libcuda.so.1"))
    except (ReplayError, OSError, KeyError) as e:
        print("kcheck replay: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
