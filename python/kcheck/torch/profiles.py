"""Precision profiles from PyTorch's own settings at the time of the op.

Never a tolerance: each profile is an oracle profile spec (oracle/profile.h)
stating the arithmetic PyTorch documents for the op under the settings in
force, chosen so that every implementation PyTorch may legally pick is
inside its bound (a correct cuBLAS/cuDNN/ATen result is never a violation).

The settings and the documentation each mapping rests on:

- dtype of the inputs the op received (autocast has already cast them: it
  runs above the dispatch mode; torch.amp docs, "CUDA Ops that can autocast
  to float16/bfloat16": matmuls and attention run in the low type with fp32
  accumulation, softmax/log_softmax/norms/reductions in float32).
- fp32 matmul: torch.backends.cuda.matmul.allow_tf32 and
  torch.get_float32_matmul_precision() ("highest": fp32; "high": TF32
  allowed; "medium": bf16-based passes allowed — docs of
  set_float32_matmul_precision). TF32 or not, cuBLAS may use tensor cores
  with truncated alignment, so allowed TF32 maps to "tensorcore_tf32"
  (operands rounded to tf32, round-toward-zero accumulation in blocks of 4:
  the most conservative published model; subnormals may be flushed,
  ftz=1). "medium" has no bf16-pass model in
  the oracle yet: such matmuls pass through (counted).
- fp16/bf16 matmul: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
  and allow_bf16_reduced_precision_reduction (docs/source/notes/cuda.rst,
  "Reduced Precision Reduction in FP16/BF16 GEMMs": split-K partial sums may
  be reduced in the output type). Allowed (PyTorch's default): the
  reduction may happen in the low type, so the profile accumulates in it
  ("bf16_bf16acc"/"fp16_fp16acc"; for long K the bound is then vacuous and
  the verdict inconclusive — PyTorch promises no more). Disallowed: fp32
  accumulation on tensor cores ("tensorcore_fp32"/"tensorcore_fp16" with the
  output in the input type).
- attention (flash, efficient, cuDNN): fp32 accumulation, online softmax,
  P cast to the input type before P.V (FlashAttention-2 paper, Algorithm 1;
  PyTorch's SDPA notes). fp32 inputs may use TF32 in the efficient kernel:
  modelled as tensorcore_tf32. Their backward (class attention_grad) the
  same: fp32 accumulation, P recomputed from the saved logsumexp, P and dS
  cast to the input type (FlashAttention-2, Algorithm 2).
- softmax family: ATen's CUDA softmax computes in float (acc_type) and may
  use the online (single-pass) form for long rows: softmax=online covers
  both the two-pass and the online algorithm.
- layer norm: ATen's CUDA kernel uses Welford's algorithm (norm=welford);
  rms_norm: two passes in acc_type.
- reductions and elementwise ops: acc_type is float for fp16/bf16 and
  float (double for fp64) otherwise (ATen's AccumulateType.h), math
  precise (ATen is built without --use_fast_math).
- batch norm: ATen's kernels use Welford or two passes in acc_type;
  cuDNN's statistics are undocumented, so every batch norm takes
  norm=one_pass, whose bound also covers E[x^2] - mean^2.
- convolutions (conv.py): torch.backends.cudnn.allow_tf32 (TF32 operands
  on CUDA, on by default), torch.backends.mkldnn.conv.fp32_precision on
  the CPU; cuDNN's free choice of algorithm (Winograd, FFT) judged with
  algorithm=any.
"""

import functools

from kcheck.torch import conv

_FMT = {"torch.float64": "fp64", "torch.float32": "fp32", "torch.bfloat16": "bf16",
        "torch.float16": "fp16", "torch.float8_e4m3fn": "e4m3fn", "torch.float8_e5m2": "e5m2"}


def fmt(dtype):
    """The oracle's format name for a dtype, or None when it judges none."""
    return _FMT.get(str(dtype))


class Unsupported(Exception):
    """No documented profile for these settings; str(e) says why."""


def settings():
    """The precision settings in force now, for findings and keys."""
    import torch
    m = torch.backends.cuda.matmul
    s = {
        "allow_tf32": bool(m.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "allow_fp16_reduced_precision_reduction": bool(m.allow_fp16_reduced_precision_reduction),
        "allow_bf16_reduced_precision_reduction": bool(m.allow_bf16_reduced_precision_reduction),
    }
    s.update(conv.settings())  # cudnn's TF32 read without raising for mixed legacy/new flags
    try:
        s["autocast"] = bool(torch.is_autocast_enabled("cuda"))
        if s["autocast"]:
            s["autocast_dtype"] = str(torch.get_autocast_dtype("cuda"))
    except (TypeError, AttributeError, RuntimeError):
        s["autocast"] = bool(torch.is_autocast_enabled())
    return s


def _token_getters():
    """The C getters behind torch.backends.cuda.matmul's attributes (a tenth
    of the cost of the attribute lookups, on every covered op), or None
    when this torch lacks one of them."""
    import torch
    names = ("_get_cublas_allow_tf32", "_get_float32_matmul_precision",
             "_get_cublas_allow_fp16_reduced_precision_reduction",
             "_get_cublas_allow_bf16_reduced_precision_reduction")
    fs = tuple(getattr(torch._C, n, None) for n in names)
    if not all(fs):
        return None
    # cuDNN's TF32 setting (convolutions): the raw getter bound once where
    # this torch has it (conv.tf32_token does the same lookup per call)
    raw = getattr(torch._C, "_get_fp32_precision_getter", None)
    try:
        raw("cuda", "conv")
        conv_tf32 = functools.partial(raw, "cuda", "conv")
    except (TypeError, RuntimeError):
        conv_tf32 = conv.tf32_token
    return fs + (conv_tf32,)


_GETTERS = False


def token():
    """A cheap tuple of the settings that change profiles (signature keys)."""
    global _GETTERS
    if _GETTERS is False:
        _GETTERS = _token_getters()
    if _GETTERS is not None:
        a, b, c, d, e = _GETTERS
        return (a(), b(), c(), d(), e())
    import torch
    m = torch.backends.cuda.matmul
    return (m.allow_tf32, torch.get_float32_matmul_precision(),
            m.allow_fp16_reduced_precision_reduction, m.allow_bf16_reduced_precision_reduction,
            conv.tf32_token())


def _io(spec, in_fmt, out_fmt):
    return "%s:in=%s:out=%s" % (spec, in_fmt, out_fmt)


def profile(klass, in_fmt, out_fmt, s):
    """The oracle profile spec for an op of class klass ("matmul",
    "attention", "softmax", "norm", "reduce", "elementwise") reading in_fmt
    and writing out_fmt under settings s (settings())."""
    if in_fmt == "fp64":
        return "fp64:out=%s" % out_fmt if out_fmt != "fp64" else "fp64"
    if klass == "matmul":
        if in_fmt == "fp32":
            prec = s["float32_matmul_precision"]
            if prec == "medium":
                raise Unsupported("float32_matmul_precision='medium' (bf16 passes) has no "
                                  "oracle profile")
            if s["allow_tf32"] or prec == "high":
                return _io("tensorcore_tf32", "fp32", out_fmt) + ":ftz=1"
            return _io("fp32", "fp32", out_fmt)
        if in_fmt in ("bf16", "fp16"):
            if s["allow_%s_reduced_precision_reduction" % in_fmt]:
                return _io("%s_%sacc" % (in_fmt, in_fmt), in_fmt, out_fmt)
            return _io("tensorcore_fp32", in_fmt, out_fmt)
        raise Unsupported("matmul on %s" % in_fmt)
    if klass in conv.KLASSES:
        return conv.profile(klass, in_fmt, out_fmt, s)
    if klass in ("attention", "attention_grad"):
        if in_fmt == "fp32":
            # measured on the H200: the efficient kernel's fp32 path flushes
            # subnormal results (tensor-core TF32): ftz=1
            return _io("tensorcore_tf32", "fp32", out_fmt) + ":softmax=online:ftz=1"
        # measured on the H200: cuDNN attention flushes subnormal results
        return _io("tensorcore_fp32", in_fmt, out_fmt) + ":softmax=online:ftz=1"
    acc = "fp32"
    base = "fp32:in=%s:acc=%s:out=%s" % (in_fmt, acc, out_fmt)
    if klass == "softmax":
        return base + ":softmax=online"
    if klass == "norm":
        return base + ":norm=welford"
    if klass == "batch_norm":
        # cuDNN documents no algorithm for its statistics: the one-pass
        # bound (which the oracle takes with Welford's and two passes')
        return base + ":norm=one_pass"
    return base
