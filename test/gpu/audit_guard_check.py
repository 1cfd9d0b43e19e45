#!/usr/bin/env python3
"""test/gpu/audit_guard_check.py — the audit's guard-zone allocator
(kcheck.torch.guards, libkcheck/base/guardzone.c) on a GPU, in one call:

    python3 test/gpu/audit_guard_check.py [--lib build/libkcheck.so] [--audit]

Re-runs itself under `kcheck run` when no libkcheck.so is loaded, installs
the allocator before CUDA is initialised (as the audit's child does), and
checks with a one-thread PTX kernel that stores a float at p[idx]
(loaded through the driver, no compiler needed):

  installed     PyTorch allocates through it: each tensor counted live,
                its data 256-byte aligned, tensors not packed together
  in bounds     stores at p[0] and p[n-1], torch ops: the check is silent
  past the end  a store at p[n]: that tensor, after_end, 0 bytes past the
                end, the float's bytes; the zones armed again
  slack         a store at p[n+1] of a tensor whose size is no multiple of
                256 bytes: in the rounding, found as 4 bytes past the end
  before start  a store at p[-1]: before_start, 4 bytes before it
  freed         a store past the end of a tensor deleted before the check
  fill          each new allocation's data filled with the byte asked
  own memory    the binding's re-run block (trials.own_memory) runs
                without a MemPool, which this allocator cannot give

--audit also runs `kcheck audit` on test/audit_gpu/sum with its correct
candidate and the planted bug that writes one element past the output's
end (builds the corpus's extension first, about a minute): the bug broken
with `bounds` failed, the correct one with `bounds` passed.

Prints one PASS or FAIL line per check; exit status 1 on any FAIL."""
import argparse
import ctypes
import json
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

PTX = b"""
.version 8.5
.target sm_90
.address_size 64
.visible .entry kc_store(.param .u64 p, .param .s64 idx, .param .f32 v)
{
  .reg .b64 %rd<5>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [p];
  ld.param.s64 %rd2, [idx];
  ld.param.f32 %f1, [v];
  cvta.to.global.u64 %rd3, %rd1;
  shl.b64 %rd4, %rd2, 2;
  add.s64 %rd3, %rd3, %rd4;
  st.global.f32 [%rd3], %f1;
  ret;
}
"""

FAILED = []


def report(name, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""),
          flush=True)
    if not ok:
        FAILED.append(name)


class Store:
    """kc_store<<<1, 1>>>(p, idx, v) on PyTorch's current stream."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self._ok(self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PTX)),
                 "cuModuleLoadData")
        self._ok(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"kc_store"),
                 "cuModuleGetFunction")
        self.fn = fn

    @staticmethod
    def _ok(r, what):
        if r != 0:
            raise RuntimeError("%s failed: CUresult %d" % (what, r))

    def __call__(self, t, idx, v):
        import torch
        p, i, f = ctypes.c_uint64(t.data_ptr()), ctypes.c_int64(idx), ctypes.c_float(v)
        args = [ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in (p, i, f)]
        params = (ctypes.c_void_p * 3)(*args)
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self._ok(self.cu.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, stream, params, None),
                 "cuLaunchKernel")


def one(damage):
    return damage[0] if len(damage) == 1 else None


def checks(args):
    import torch
    from kcheck.torch import guards, trials
    why = guards.install("cuda")
    report("installed", why is None, why or "")
    if why is not None:
        return
    lib = __import__("kcheck._api", fromlist=["api"]).api()
    x = torch.zeros(1000, device="cuda")  # 4000 bytes: 96 of rounding slack
    y = torch.zeros(1024, device="cuda")
    live = lib.kcheck_guard_live()
    apart = abs(y.data_ptr() - x.data_ptr()) >= 4000 + 2 * 256
    report("installed: tensors counted live, 256-byte aligned, apart",
           live >= 2 and x.data_ptr() % 256 == 0 and y.data_ptr() % 256 == 0 and apart,
           "live %d, x at %#x, y at %#x" % (live, x.data_ptr(), y.data_ptr()))
    store = Store()
    n, damage = guards.check()
    report("nothing written yet: silent", n == 0, json.dumps(damage))

    store(y, 0, 1.0)
    store(y, 1023, 2.0)
    z = (x + 1) * 2
    s = z.sum()
    n, damage = guards.check()
    report("in bounds (p[0], p[n-1], torch ops): silent", n == 0 and float(s) == 2000.0,
           json.dumps(damage))

    store(y, 1024, 3.0)
    n, damage = guards.check()
    d = one(damage)
    want = struct.pack("<f", 3.0).hex()
    ev = guards.attribute(d, {"x": x, "y": y}) if d else None
    report("past the end: found, that tensor, 0 bytes past its end, the float's bytes",
           n == 1 and ev and ev["tensor"] == "y" and ev["side"] == "after_end" and
           ev["bytes_past_end"] == 0 and ev["written"].startswith(want) and
           ev["changed_bytes_after"] == 4 and ev["changed_bytes_before"] == 0,
           json.dumps(ev or damage))
    if ev:
        print("     %s" % guards.describe(ev))
    n, damage = guards.check()
    report("past the end: the zone armed again (reported once)", n == 0, json.dumps(damage))

    store(x, 1001, 4.0)
    n, damage = guards.check()
    d = one(damage)
    report("in the rounding slack: 4 bytes past the end",
           n == 1 and d and d["ptr"] == x.data_ptr() and d["bytes_past_end"] == 4,
           json.dumps(damage))

    store(y, -1, 5.0)
    n, damage = guards.check()
    d = one(damage)
    report("before the start: 4 bytes before it",
           n == 1 and d and d["ptr"] == y.data_ptr() and d["side"] == "before_start" and
           d["bytes_before_start"] == 4 and d["written"] == struct.pack("<f", 5.0).hex(),
           json.dumps(damage))

    t = torch.empty(64, device="cuda")
    tp = t.data_ptr()
    store(t, 64, 6.0)
    del t
    n, damage = guards.check()
    d = one(damage)
    report("a tensor freed before the check: its damage kept",
           n == 1 and d and d["ptr"] == tp and d["freed"] and d["size"] == 256,
           json.dumps(damage))

    old = guards.fill(0x7F)
    u = torch.empty(300, dtype=torch.uint8, device="cuda")
    guards.fill(old)
    v = torch.empty(300, dtype=torch.uint8, device="cuda")
    report("fill: new data filled with the byte asked, then no more",
           old == -1 and bool((u == 0x7F).all()) and lib.kcheck_guard_fill(-1) == -1,
           "u %s" % u[:4].tolist())
    del v
    try:
        with trials.own_memory(torch.device("cuda")):
            w = torch.ones(10, device="cuda") * 3
        ok, why = float(w.sum()) == 30.0 and not trials.pooled(), ""
    except Exception as e:  # noqa: BLE001  (the failure is the result)
        ok, why = False, "%s: %s" % (type(e).__name__, e)
    report("own memory: the re-run block runs with no MemPool", ok, why)
    n, damage = guards.check()
    report("at the end: silent", n == 0, json.dumps(damage))


def audit(lib_path):
    """kcheck audit on the sum task's correct candidate and its bounds bug."""
    corpus = os.path.join(ROOT, "test", "audit_gpu")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), corpus]))
    env.pop("LD_PRELOAD", None)
    built = subprocess.run([sys.executable, os.path.join(corpus, "gpu_ext.py")], env=env,
                           capture_output=True, text=True)
    so = built.stdout.strip().splitlines()[-1] if built.stdout.strip() else ""
    if built.returncode != 0 or not os.path.isfile(so):
        report("audit: the corpus's extension built", False, built.stderr[-800:])
        return
    env["KC_AUDIT_GPU_EXT"] = so
    out = tempfile.mkdtemp(prefix="kcheck-guard-audit.")
    task = os.path.join(corpus, "sum")
    cands = [os.path.join(task, c) for c in ("cuda_correct.py", "cuda_writes_past_end.py")]
    p = subprocess.run([sys.executable, "-m", "kcheck", "--lib", lib_path, "audit", "--device",
                        "cuda", "-o", out, os.path.join(task, "reference.py")] + cands,
                       env=env, capture_output=True, text=True, timeout=900)
    print(p.stdout)
    recs = []
    try:
        with open(os.path.join(out, "audit.jsonl")) as f:
            recs = [json.loads(line) for line in f]
    except OSError:
        pass
    got = {os.path.basename(r["candidate"]): r for r in recs if r.get("type") == "audit_candidate"}
    ok = got.get("cuda_correct.py")
    bug = got.get("cuda_writes_past_end.py")
    report("audit: the correct candidate's bounds gate passed",
           bool(ok) and (ok["gates"].get("bounds") or {}).get("status") == "pass" and
           "bounds" not in ok["failed"],
           json.dumps(ok and {"verdict": ok["verdict"], "failed": ok["failed"],
                              "bounds": ok["gates"].get("bounds")}) or p.stderr[-800:])
    ev = [e for e in (bug or {}).get("evidence", []) if e["gate"] == "bounds"]
    report("audit: the bug broken, bounds failed, its output named first, 0 bytes past the end",
           bool(bug) and bug["verdict"] == "broken" and "bounds" in bug["failed"] and
           bool(ev) and ev[0]["worst"].get("tensor") == "output" and
           ev[0]["worst"].get("bytes_past_end") == 0,
           json.dumps(bug and {"verdict": bug["verdict"], "failed": bug["failed"],
                               "bounds": [e["message"] for e in ev]}) or p.stderr[-800:])
    print("     audit output: %s" % out)


def main():
    ap = argparse.ArgumentParser(prog="audit_guard_check.py")
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libkcheck.so"))
    ap.add_argument("--audit", action="store_true",
                    help="also audit test/audit_gpu/sum's correct candidate and bounds bug")
    args = ap.parse_args()
    from kcheck.torch import guards
    if guards.library_path() is None:
        if not os.path.isfile(args.lib):
            print("FAIL libkcheck: %s not found (make first, or --lib)" % args.lib)
            return 1
        # under kcheck, as the audit's child runs (LD_PRELOAD)
        cmd = [sys.executable, "-m", "kcheck", "--lib", args.lib, "run", "--allow-unchecked",
               sys.executable, os.path.abspath(__file__), "--lib", args.lib]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.join(ROOT, "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        r = subprocess.run(cmd, env=env)
        rc = r.returncode
        if args.audit:
            FAILED.clear()
            audit(args.lib)
            rc = rc or (1 if FAILED else 0)
        print("%s audit_guard_check" % ("PASS" if rc == 0 else "FAIL"))
        return rc
    try:
        checks(args)
    except Exception as e:  # noqa: BLE001  (a crash is a failure, said so)
        import traceback
        traceback.print_exc()
        report("no exception", False, "%s: %s" % (type(e).__name__, e))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
