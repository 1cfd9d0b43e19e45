#!/usr/bin/env python3
"""test/gpu/torch_annotate.py — kcheck's annotation API (kcheck.h) on
PyTorch's own kernels: each op is declared with kcheck_annotate_* before it
runs (the hook a framework binding uses), so kcheck checks the ATen/cuBLAS
kernel that takes the annotated tensors against the declared op, with no
contract file.

  python3 torch_annotate.py             run the ops (under kcheck: annotated)
  python3 torch_annotate.py --check R   check kcheck's report R: the ops
                                        declared right are checked and
                                        silent, the one declared wrong (add
                                        declared as sub) is flagged by the
                                        oracle gate

Annotation serials count kcheck_annotate_begin calls on the thread, so the
check record of the op declared N-th names "annotation #N".
"""
import ctypes
import json
import os
import sys

# The one report reader of the package (python/kcheck/report.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kcheck import report as kr  # noqa: E402

# (label, declared op, expected: "silent" or the gate that must fire)
OPS = [("add", "add", "silent"), ("softmax", "softmax", "silent"), ("mm", "matmul", "silent"),
       ("add_declared_sub", "sub", "oracle")]


def run():
    import torch
    me = ctypes.CDLL(None)
    on = hasattr(me, "kcheck_annotate_begin")
    if on:
        me.kcheck_annotate_begin.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        me.kcheck_annotate_tensor.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_char_p,
                                              ctypes.c_int, ctypes.POINTER(ctypes.c_long),
                                              ctypes.POINTER(ctypes.c_long)]

    def declare(op, profile, *tensors):
        if not on:
            return
        assert me.kcheck_annotate_begin(op.encode(), profile.encode()) == 0
        for role, t in tensors:
            n = t.dim()
            shape = (ctypes.c_long * n)(*t.shape)
            strides = (ctypes.c_long * n)(*t.stride())
            assert me.kcheck_annotate_tensor(role.encode(), t.data_ptr(), b"fp32", n, shape,
                                             strides) == 0
        assert me.kcheck_annotate_end() == 0

    torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator().manual_seed(0)
    a = torch.rand(1000, 257, generator=g).cuda()
    b = torch.rand(1000, 257, generator=g).cuda()
    x = (torch.rand(64, 1000, generator=g) * 4 - 2).cuda()
    m1 = torch.rand(256, 192, generator=g).cuda()
    m2 = torch.rand(192, 128, generator=g).cuda()
    c, y, mm = torch.empty_like(a), torch.empty_like(x), torch.empty(256, 128, device="cuda")
    torch.cuda.synchronize()
    results = {}
    for label, op, _ in OPS:
        if label.startswith("add"):
            declare(op, "fp32", ("in", a), ("in", b), ("out", c))
            torch.add(a, b, out=c)
            out = c
        elif label == "softmax":
            declare(op, "fp32", ("in", x), ("out", y))
            torch.ops.aten._softmax.out(x, -1, False, out=y)
            out = y
        else:
            declare(op, "fp32", ("in", m1), ("in", m2), ("out", mm))
            torch.mm(m1, m2, out=mm)
            out = mm
        if on:
            me.kcheck_annotate_clear()
        torch.cuda.synchronize()
        results[label] = float(out.double().sum())
        print("RESULT %s sum=%r" % (label, results[label]))
    ok = (torch.allclose(c.cpu(), a.cpu() + b.cpu()) and
          torch.allclose(y.cpu(), torch.softmax(x.cpu(), -1), atol=1e-6) and
          torch.allclose(mm.cpu(), m1.cpu() @ m2.cpu(), rtol=1e-4, atol=1e-4))
    print("VERIFY %s" % ("ok" if ok else "MISMATCH"))
    return 0 if ok else 1


def check(paths):
    recs = []
    for p in paths:
        recs += kr.read_records(p)
    checks = [r for r in recs if r["type"] == "check"]
    viol = [r for r in recs if r["type"] == "violation"]
    failed = 0
    for n, (label, op, expect) in enumerate(OPS, 1):
        name = "annotation #%d" % n
        mine = [c for c in checks
                if any(g.get("contract") == name for g in c["gates"].values())]
        launches = {c["launch"] for c in mine}
        gates = sorted({v["gate"] for v in viol if v["launch"] in launches})
        kernels = sorted({c["kernel_name"][:70] for c in mine})
        oracle = [c["gates"]["oracle"].get("status") for c in mine if "oracle" in c["gates"]]
        if not mine:
            ok, why = False, "no launch was checked against %s" % name
        elif expect == "silent":
            ok = not gates and oracle and all(s in ("pass", "bitwise") for s in oracle)
            why = "oracle %s, violations %s" % (oracle, gates or "none")
        else:
            ok = expect in gates
            why = "violations %s" % gates
        failed += not ok
        print("%s %s (declared %s): %s; kernels %s" % ("PASS" if ok else "FAIL", label, op, why,
                                                       kernels))
    errs = [r for r in recs if r["type"] == "summary" and r.get("internal_errors")]
    if errs:
        failed += 1
        print("FAIL internal errors in the report")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2:]))
    sys.exit(run())
