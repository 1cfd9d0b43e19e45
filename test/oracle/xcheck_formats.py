#!/usr/bin/env python3
"""test/oracle/xcheck_formats.py — cross-checks oracle/formats.c's encoder
(through ctypes on a shared build) against numpy's float16 and ml_dtypes'
bfloat16 / float8_e4m3fn / float8_e5m2 on random values, every midpoint
between neighbours and the values just around each midpoint.

numpy converts float64 to float16 directly. ml_dtypes converts float64 via
float32 (a double rounding: 1 + 2^-8 + 2^-40 becomes bf16 1.0), so its
inputs here are exact in float32, where it rounds once.

usage: xcheck_formats.py path/to/xcheck_formats.so   (exit 1 on mismatch)
"""
import ctypes
import sys

import ml_dtypes
import numpy as np

OC_FP16, OC_BF16, OC_E4M3FN, OC_E5M2 = 3, 4, 5, 6  # enum oc_format in formats.h
OC_OVF_IEEE = 0

lib = ctypes.CDLL(sys.argv[1])
lib.oc_encode_array.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                ctypes.c_void_p, ctypes.c_int]
lib.oc_encode_array.restype = None
rng = np.random.default_rng(20240601)
np.seterr(all="ignore")  # NaN and overflow casts are part of the test


def encode(fmt, x):
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(x.size, dtype=np.uint64)
    lib.oc_encode_array(fmt, x.ctypes.data, x.size, out.ctypes.data, OC_OVF_IEEE)
    return out


def all_values(dtype, bits):
    codes = np.arange(1 << bits, dtype=np.uint16 if bits == 16 else np.uint8)
    v = codes.view(dtype).astype(np.float64)
    v = np.unique(v[np.isfinite(v)])
    return v


def inputs(dtype, bits, f32):
    """Random values over the format's range, midpoints and their neighbours."""
    v = all_values(dtype, bits)
    mid = (v[:-1] + v[1:]) / 2  # exact in double and (for <= 16-bit formats) in float32
    top = v[-1]
    if f32:
        m32 = mid.astype(np.float32)
        near = [np.nextafter(m32, np.float32(-np.inf)), np.nextafter(m32, np.float32(np.inf))]
        near = [a.astype(np.float64) for a in near]
    else:
        near = [np.nextafter(mid, -np.inf), np.nextafter(mid, np.inf)]
    tiny = v[v > 0][0]
    n = 1_000_000
    mag = np.exp2(rng.uniform(np.log2(tiny) - 3, np.log2(top) + 2, n))
    rnd = mag * rng.choice([-1.0, 1.0], n)
    pats = rng.integers(0, 1 << 32, n // 4, dtype=np.uint64).astype(np.uint32).view(np.float32)
    xs = [mid, -mid, near[0], near[1], -near[0], rnd, pats.astype(np.float64),
          np.array([0.0, -0.0, np.inf, -np.inf, np.nan, top, -top])]
    x = np.concatenate(xs)
    if f32:
        x = x.astype(np.float32).astype(np.float64)
    return x


def check(name, fmt, dtype, bits, f32):
    x = inputs(dtype, bits, f32)
    src = x.astype(np.float32) if f32 else x
    with np.errstate(over="ignore", invalid="ignore"):
        ref = src.astype(dtype)
    want = ref.view(np.uint16 if bits == 16 else np.uint8).astype(np.uint64)
    got = encode(fmt, x)
    udt = np.uint16 if bits == 16 else np.uint8
    got_v = got.astype(udt).view(dtype).astype(np.float64)
    ref_v = ref.astype(np.float64)
    ok = (got == want) | (np.isnan(got_v) & np.isnan(ref_v))
    bad = np.flatnonzero(~ok)
    status = "ok" if bad.size == 0 else "FAIL"
    print(f"{status} xcheck {name}: {x.size} values ({len(all_values(dtype, bits)) - 1} midpoints "
          f"+-1 ulp), {bad.size} mismatches vs {dtype.__name__ if hasattr(dtype, '__name__') else dtype}")
    for i in bad[:10]:
        print(f"  x={x[i]!r} ({x[i].hex()}): oracle {int(got[i]):#x}, reference {int(want[i]):#x}")
    return bad.size == 0


def main():
    results = [
        check("fp16", OC_FP16, np.float16, 16, False),
        check("bf16", OC_BF16, ml_dtypes.bfloat16, 16, True),
        check("e4m3fn", OC_E4M3FN, ml_dtypes.float8_e4m3fn, 8, True),
        check("e5m2", OC_E5M2, ml_dtypes.float8_e5m2, 8, True),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
