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
import re
import stat
import subprocess
import sys

from kcheck import report as kr


class ReplayError(kr.ReportError):
    pass


FORMAT = "kcheck.bundle/1"


# A bundle may come from elsewhere (a bug report, a shared folder): what it
# names is read only inside its folder, only from regular files (never a
# FIFO or a device, never through a symlink), never more than these bytes.
MAX_META = 64 << 20
MAX_FILE = 16 << 30
GATE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
OPTION_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def _read_file(path, limit):
    """At most limit bytes of the regular file at path (not a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise ReplayError("cannot read %s: %s" % (path, e.strerror or e)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReplayError("%s is not a regular file" % path)
        if st.st_size > limit:
            raise ReplayError("%s: %d bytes, more than the %d a bundle may hold" % (
                path, st.st_size, limit))
        chunks, left = [], limit + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 24))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        if len(data) > limit:
            raise ReplayError("%s grew past %d bytes while read" % (path, limit))
        return data
    finally:
        os.close(fd)


def load(path):
    """The bundle's metadata; path is the folder or its bundle.json."""
    meta_path = os.path.join(path, "bundle.json") if os.path.isdir(path) else path
    try:
        meta = json.loads(_read_file(meta_path, MAX_META))
    except (ValueError, RecursionError) as e:
        raise ReplayError("%s is not a bundle: %s" % (meta_path, e)) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ReplayError("%s is not a %s bundle" % (meta_path, FORMAT))
    meta["_dir"] = os.path.dirname(os.path.abspath(meta_path))
    return meta


def _member(meta, name):
    """The path of the bundle's file `name`: a plain name inside its folder."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name \
            or "\0" in name:
        raise ReplayError("the bundle names a file outside its folder: %r" % (name,))
    return os.path.join(meta["_dir"], name)


def _read(meta, name, limit=MAX_FILE):
    return _read_file(_member(meta, name), limit)


def _options(meta):
    """KCHECK_OPTIONS for the replay. Every field of the bundle that goes in
    is checked to be what it claims (a gate name, an integer, option names
    with values that contain no ':' — the option separator), so a bundle
    cannot slip in options of its own (log_path, repro_dir, ...)."""
    gate = meta.get("gate")
    if not isinstance(gate, str) or not GATE_NAME.match(gate):
        raise ReplayError("the bundle's gate is not a gate name: %r" % (gate,))
    seed = meta.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ReplayError("the bundle's seed is not an integer: %r" % (seed,))
    contracts = meta.get("contracts")
    if contracts is not None and (not isinstance(contracts, str) or
                                  any(c in contracts for c in ":\n\0")):
        raise ReplayError("the bundle's contracts is not a list of files: %r" % (contracts,))
    return gate, seed, contracts


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
        ipath = meta["image"]["path"]
        if not isinstance(ipath, str) or not os.path.isabs(ipath) or \
                not stat.S_ISREG(os.stat(ipath).st_mode):
            raise ReplayError("the bundle's module file is not a regular file: %r" % (ipath,))
        ck("cuModuleLoad", C.byref(mod), ipath.encode())
    else:
        image = _read(meta, meta["image"]["file"])
        img = C.create_string_buffer(image, len(image) + 1)  # PTX text needs its NUL
        ck("cuModuleLoadData", C.byref(mod), img)
    ck("cuModuleGetFunction", C.byref(fn), mod, meta["kernel"]["mangled"].encode())
    news = []
    for b in meta["buffers"]:
        p = C.c_uint64()
        ck("cuMemAlloc_v2", C.byref(p), C.c_size_t(max(1, b["size"])))
        data = _read(meta, b["file"], b["size"])
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


def run(path, lib, options=(), keep_report=None, timeout=600):
    """Replays the bundle in a child under kcheck (at most timeout seconds);
    returns (status, message)."""
    meta = load(path)
    gate, seed, contracts = _options(meta)
    out = keep_report or os.path.join(meta["_dir"], "replay-report")
    for old in glob.glob(out + ".*.jsonl"):
        os.unlink(old)
    # the run's own options (the gate's: strategies, sizes, ...) first, less
    # those that name files or choose launches; then the replay's
    drop = ("log_path", "repro_dir", "gates", "seed", "contracts", "launch_skip", "launch_count",
            "check_first", "kernel_include", "kernel_exclude", "kernel_include_regex",
            "kernel_exclude_regex", "max_checks", "suppressions", "halt_on_error", "exitcode")
    run_opts = meta.get("options") if isinstance(meta.get("options"), str) else ""
    opts = [o for o in run_opts.split(":")
            if o and OPTION_NAME.match(o.partition("=")[0]) and o.partition("=")[0] not in drop]
    opts += ["log_path=" + out, "gates=" + gate, "seed=%d" % seed,
             "check_first=1", "verbosity=0"]
    if contracts:
        opts.append("contracts=" + contracts)
    opts += list(options)
    env = dict(os.environ)
    env["KCHECK_OPTIONS"] = ":".join(opts)
    env["LD_PRELOAD"] = lib + (" " + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        child = subprocess.run([sys.executable, "-m", "kcheck.replay", meta["_dir"]], env=env,
                               capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return 1, "kcheck repro: the replay of [%s] did not finish in %d s" % (gate, timeout)
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
    except (ReplayError, OSError, KeyError, TypeError, ValueError) as e:
        print("kcheck replay: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
