#!/usr/bin/env python3
"""test/gpu/triton_contracts.py — Triton kernels for kcheck's contract gates.

  python3 test/gpu/triton_contracts.py          launch each kernel once
  python3 test/gpu/triton_contracts.py list     the kernels, one a line

Kernels (contracts in test/gpu/contracts_gpu.yaml, matched by the Python
function name, which is the compiled kernel's name):
  kc_softmax_rows     row softmax with max subtraction, a loop over column
                      blocks (correct for any rows/cols)        -> no violation
  kc_matmul_fp16acc   C = A.B with fp16 operands, the accumulator kept in
                      tl.float16 while the contract declares fp32
                      accumulation (planted bug)               -> precision
  kc_matmul_fp32acc   the same with an fp32 accumulator          -> no violation

Every launch uses sizes that are neither 1 nor divisible by 16: Triton turns
an int argument equal to 1 into a constant (dropped from the compiled
kernel's parameters) and compiles a kernel that assumes divisibility by 16
for ints divisible by 16. Either would break the contract: the parameter
count would differ, or a relaunch at another shape (the shapes gate) would
run a kernel specialized for the application's value. The compiled kernel's
parameters are the non-constexpr arguments in order, then two pointers
Triton 3.6 appends (global and profile scratch).

Inputs are made on the CPU (seeded or arithmetic) and copied to the GPU. For
each kernel prints
  TRITON_KERNEL <name> params=<n> shared=<bytes> num_warps=<w> signature=<...>
  RESULT <name> sha256=<output bytes, 16 hex> <error against torch> verify=ok|bug|MISMATCH
and at the end `CHECKSUM <sha256 of all outputs, 16 hex>`. Exit status 0
when the correct kernels match torch and the planted bug shows, 1 when not,
2 without CUDA or Triton.
"""
import hashlib
import sys

KERNELS = ("kc_softmax_rows", "kc_matmul_fp16acc", "kc_matmul_fp32acc")

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # pragma: no cover - only on machines without them
    if len(sys.argv) > 1 and sys.argv[1] == "list":
        print("\n".join(KERNELS))
        sys.exit(0)
    print(f"triton_contracts: {e}", file=sys.stderr)
    sys.exit(2)

# Sizes: none is 1 or a multiple of 16 (see above).
ROWS, COLS = 37, 1000
M, N, K = 100, 76, 250
SOFTMAX_BLOCK = 256
BM, BN, BK = 64, 64, 32
NUM_WARPS = 4


@triton.jit
def kc_softmax_rows(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    """y[r, :] = softmax(x[r, :]); one program per row, three passes over
    the row in blocks of BLOCK columns: max, sum of exp(x - max), output."""
    row = tl.program_id(0)
    if row < n_rows:
        base = row.to(tl.int64) * n_cols
        cols = tl.arange(0, BLOCK)
        m = tl.full([BLOCK], float("-inf"), tl.float32)
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            x = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
            m = tl.maximum(m, x)
        mx = tl.max(m, axis=0)
        s = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            x = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
            s += tl.exp(x - mx)
        total = tl.sum(s, axis=0)
        for start in range(0, n_cols, BLOCK):
            offs = start + cols
            x = tl.load(x_ptr + base + offs, mask=offs < n_cols, other=float("-inf"))
            tl.store(y_ptr + base + offs, tl.exp(x - mx) / total, mask=offs < n_cols)


@triton.jit
def kc_matmul_fp16acc(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    """C[M, N] = A[M, K] . B[K, N], row-major fp16; PLANTED BUG: the running
    sum is an fp16 tensor (tl.dot with out_dtype fp16 into it)."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float16)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :],
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def kc_matmul_fp32acc(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr):
    """The same product with an fp32 accumulator, rounded to fp16 once."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :],
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :],
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def digest(t):
    t = t.detach().cpu().contiguous()
    try:
        b = t.view(torch.uint8).numpy().tobytes()
    except Exception:  # no numpy
        b = bytes(t.reshape(-1).view(torch.uint8).tolist())
    return hashlib.sha256(b).hexdigest()


def describe(name, compiled):
    """One TRITON_KERNEL line: what the driver will see of the kernel."""
    md = getattr(compiled, "metadata", None)
    sig = getattr(getattr(compiled, "src", None), "signature", None) or {}
    nparams = sum(1 for t in sig.values() if t != "constexpr") + 2 if sig else "?"
    kname = getattr(md, "name", "?")
    print(f"TRITON_KERNEL {name} compiled_name={kname} params={nparams} "
          f"shared={getattr(md, 'shared', '?')} num_warps={getattr(md, 'num_warps', '?')} "
          f"signature={','.join(str(t) for t in sig.values()) or '?'}", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "list":
        print("\n".join(KERNELS))
        return 0
    if not torch.cuda.is_available():
        print("triton_contracts: no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    print(f"torch {torch.__version__} triton {triton.__version__} "
          f"device {torch.cuda.get_device_name(0)}", flush=True)
    ok = True
    outs = []

    # Inputs, outputs (NaN-filled) and references are made on the CPU and
    # copied: the only kernels this program launches are the three above.
    # Row softmax: inputs in [-2, 2).
    g = torch.Generator(device="cpu").manual_seed(1234)
    x_cpu = torch.rand(ROWS, COLS, generator=g) * 4 - 2
    x = x_cpu.to(dev)
    y = torch.full((ROWS, COLS), float("nan")).to(dev)
    ck = kc_softmax_rows[(ROWS,)](x, y, ROWS, COLS, BLOCK=SOFTMAX_BLOCK, num_warps=NUM_WARPS)
    torch.cuda.synchronize()
    describe("kc_softmax_rows", ck)
    ref = torch.softmax(x_cpu.double(), dim=1)
    err = ((y.cpu().double() - ref).abs() / ref.abs()).max().item()
    good = err < 1e-5
    ok &= good
    outs.append(y)
    print(f"RESULT kc_softmax_rows sha256={digest(y)[:16]} max_rel_err={err:.3g} "
          f"verify={'ok' if good else 'MISMATCH'}", flush=True)

    # GEMMs: fp16 operands 1 + j/16 (exact in fp16, as the CUDA GEMMs of
    # contract_bugs.cu): all products positive, sums near 500, where an fp16
    # running sum (ulp 0.25 to 0.5) loses the products' 1/256.
    ia = torch.arange(M * K, dtype=torch.int64)
    ib = torch.arange(K * N, dtype=torch.int64)
    a_cpu = (1.0 + ((ia * 7) % 16).double() / 16).reshape(M, K)
    b_cpu = (1.0 + ((ib * 5 + 3) % 16).double() / 16).reshape(K, N)
    exact = a_cpu @ b_cpu  # exact: every partial sum fits in fp64
    a = a_cpu.half().to(dev)
    b = b_cpu.half().to(dev)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    for name, fn, buggy in (("kc_matmul_fp16acc", kc_matmul_fp16acc, True),
                            ("kc_matmul_fp32acc", kc_matmul_fp32acc, False)):
        c = torch.full((M, N), float("nan"), dtype=torch.float16).to(dev)
        ck = fn[grid](a, b, c, M, N, K, BM=BM, BN=BN, BK=BK, num_warps=NUM_WARPS)
        torch.cuda.synchronize()
        describe(name, ck)
        # fp16 output: one rounding of a correct fp32 sum is within half an
        # fp16 ulp (2^-11 relative) plus the fp32 accumulation error.
        c_cpu = c.cpu().double()
        rel = ((c_cpu - exact).abs() / exact.abs()).max().item()
        within = rel <= 2.0 ** -11 * 1.01 + 1e-5
        if buggy:
            verdict = "bug" if not within else "MISMATCH(bug not visible)"
            ok &= not within
        else:
            verdict = "ok" if within else "MISMATCH"
            ok &= within
        outs.append(c)
        print(f"RESULT {name} sha256={digest(c)[:16]} max_rel_err={rel:.3g} "
              f"c[0,0]={c_cpu[0, 0].item():g} exact={exact[0, 0].item():g} verify={verdict}",
              flush=True)

    h = hashlib.sha256()
    for t in outs:
        h.update(digest(t).encode())
    print(f"CHECKSUM {h.hexdigest()[:16]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
