"""ATen's nll_loss2d_forward / nll_loss2d_backward on a device, judged by
the oracle afterwards (no libkcheck needed where the kernels run).

  python3 test/gpu/nll_loss2d_cuda.py run DIR [cuda|cpu]   # on the GPU machine
  python3 test/gpu/nll_loss2d_cuda.py judge DIR            # here, with build/libkcheck.so

The inputs are rebuilt from integer recipes (every value exact in fp16,
bf16, fp32 and fp64), so only the outputs travel: fp16, bf16, fp32 and
fp64; [2, 19, 64, 64] (1 block a sample: every reduction, weighted or
not, and the backward), [2, 3, 512, 512] and [2, 3, 1024, 1024] (2 and 8
blocks a sample: sum and mean), and an fp16 [4, 2, 256, 256] whose count
(262144) overflows fp16's total_weight. judge prints every verdict and
exits 1 on any violation: sum and mean must pass (or be inconclusive
where total_weight overflows fp16), none and the unweighted backward be
bitwise.
"""
import collections
import ctypes
import glob
import os
import sys

import torch

SHAPES = [(2, 19, 64, 64), (2, 3, 512, 512), (2, 3, 1024, 1024), (4, 2, 256, 256)]
DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
FMT = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32",
       torch.float64: "fp64"}


def make(n, c, h, w, dt):
    i = torch.arange(n * c * h * w)
    x = (-((i * 2654435761) % 256).double() / 1024).to(dt).view(n, c, h, w)
    j = torch.arange(n * h * w)
    t = torch.where(j % 17 == 3, -100, (j * 7919 + j // 13) % c).view(n, h, w)
    wt = (1 + (torch.arange(c) % 7).double() / 8).to(dt)
    return x, t, wt


def run(out, dev):
    for dt in DTYPES:
        res = {}
        for (n, c, h, w) in SHAPES:
            if (n, c) == (4, 2) and dt != torch.float16:
                continue
            x, t, wt = (v.to(dev) for v in make(n, c, h, w, dt))
            for weighted in (0, 1):
                for red in (0, 1, 2):
                    if red == 0 and h > 64:
                        continue
                    wv = wt if weighted else None
                    o, tw = torch.ops.aten.nll_loss2d_forward(x, t, wv, red, -100)
                    r = {"out": o.cpu(), "tw": tw.cpu()}
                    if h == 64:
                        g = torch.full(o.shape, 0.75, dtype=dt, device=dev)
                        r["gi"] = torch.ops.aten.nll_loss2d_backward(g, x, t, wv, red, -100,
                                                                     tw).cpu()
                    res[(n, c, h, w, weighted, red)] = r
        torch.save(res, os.path.join(out, "r_%s.pt" % FMT[dt]))
    print(torch.__version__, torch.cuda.get_device_name() if dev == "cuda" else dev)


def judge(out):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "python"))
    from kcheck import _api
    ctypes.CDLL(os.environ.get("KCHECK_LIB", os.path.join(root, "build", "libkcheck.so")),
                mode=ctypes.RTLD_GLOBAL)
    api = _api.api()
    keep = []
    by_fmt = {v: k for k, v in FMT.items()}

    def tensor(name, t):
        cs = (ctypes.c_long * max(1, t.dim()))(*t.shape)
        st = (ctypes.c_long * max(1, t.dim()))(*t.stride())
        keep.extend([t, cs, st])
        return _api.Tensor(name.encode(), t.data_ptr(), FMT[t.dtype].encode(), t.dim(), cs, st)

    def verdict(op, prof, attrs, ins, o):
        arr = (_api.Tensor * len(ins))(*[tensor(k, v) for k, v in ins])
        co = tensor("out", o)
        buf = ctypes.create_string_buffer(4096)
        st = api.kcheck_op_judge(b"oracle", op.encode(), prof.encode(), attrs.encode(), len(ins),
                                 arr, ctypes.byref(co), 1 << 30, None, buf, len(buf))
        return st, buf.value.decode()

    tally = collections.Counter()
    for f in sorted(glob.glob(os.path.join(out, "r_*.pt"))):
        dt = by_fmt[os.path.basename(f)[2:-3]]
        prof = "fp64" if dt == torch.float64 else "fp32:in=%s:acc=fp32:out=%s" % (FMT[dt],
                                                                                FMT[dt])
        for (n, c, h, w, weighted, red), r in sorted(torch.load(f, weights_only=False).items()):
            x, t, wt = make(n, c, h, w, dt)
            red_s = ("none", "mean", "sum")[red]
            attrs = "reduction=%s ignore_index=-100" % red_s
            tt = t.view(n, -1).double()
            ins = [("x", x.view(n, c, -1)), ("target", tt)] + ([("weight", wt)] if weighted
                                                              else [])
            o = r["out"].reshape(n, -1) if red == 0 else r["out"].reshape(-1)
            st, v = verdict("nll_loss", prof, attrs, ins, o)
            tally[(FMT[dt], "forward", st)] += 1
            print(FMT[dt], (n, c, h, w), "weight" if weighted else "-", red_s,
                  "total_weight", r["tw"].item(), "->", v[:260])
            if "gi" in r:
                g = torch.full((n, h * w) if red == 0 else (), 0.75, dtype=dt)
                ins = [("g", g), ("target", tt)] + ([("weight", wt)] if weighted else []) + \
                    ([("total_weight", r["tw"])] if red == 1 else [])
                st, v = verdict("nll_loss_backward", prof, attrs, ins, r["gi"].reshape(n, c, -1))
                tally[(FMT[dt], "backward", st)] += 1
                print("   backward ->", v[:200])
    print(sorted(tally.items()))
    return 1 if any(k[2] == _api.VIOLATION for k in tally) else 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "cuda")
    elif len(sys.argv) == 3 and sys.argv[1] == "judge":
        sys.exit(judge(sys.argv[2]))
    else:
        print(__doc__)
        sys.exit(2)
