"""Convolutions: ATen's convolution ops mapped to the oracle's conv ops
(oracle/conv.h), and their profiles from PyTorch's settings.

- aten.convolution (what nn.functional.conv1d/2d/3d and conv_transpose*
  reach on CPU and CUDA: a TorchDispatchMode sees this op, not the
  backend's cudnn_convolution / mkldnn_convolution inside it) -> conv, or
  conv_transpose for a transposed convolution (output_padding included);
- aten.convolution_backward -> grad_input (conv_transpose of grad_output
  with the weight; for a transposed forward, conv), grad_weight
  (conv_weight_grad) and grad_bias (conv_bias_grad), per output_mask: the
  first asked for is the primary plan, the others Plan.more;
- _convolution, cudnn_convolution(_transpose) and mkldnn_convolution when a
  program calls them itself (their allow_tf32 argument, where they take
  one, decides TF32).

Profiles (the oracle's bound must hold for every algorithm PyTorch may
run, never a violation of a correct result):

- CUDA fp32: torch.backends.cudnn.allow_tf32 (the new API:
  torch.backends.cudnn.conv.fp32_precision) is True by default, so fp32
  convolutions run with TF32 operands unless the program turns it off:
  tensorcore_tf32 (operands rounded to tf32, truncating accumulation in
  blocks of 4, subnormals flushed), as the matmul's TF32 profile; off:
  fp32 (FMA math) with ftz. bf16/fp16: PyTorch asks cuDNN for float
  compute (tensorcore_fp32, output in the input type).
- cuDNN picks its algorithm (heuristics, or benchmark=True's timing), and
  Winograd and FFT algorithms are among them: their error is not a dot
  product's, so CUDA convolutions are judged with algorithm=any (an error
  beyond the dot-product bound: inconclusive, with the reason). With
  cuDNN disabled, ATen's own CUDA kernels (im2col + a cuBLAS GEMM, whose
  TF32 follows the matmul's setting, not cuDNN's; depthwise and dilated
  loops) are judged the same way.
- CPU fp32: oneDNN's direct convolution (ideep's default algorithm) or
  im2col + GEMM: fp32 in any order, algorithm=direct;
  torch.backends.mkldnn.conv.fp32_precision "tf32" gives the tf32
  profile, "bf16" (bf16 passes) has none: passed through. NNPACK
  (Winograd, FFT) may run a 4-D, undilated, untransposed fp32 convolution
  of batch >= 16 where oneDNN does not: algorithm=any there.
- CPU bf16/fp16: ATen's slow paths may round partial results to the
  tensor's type (GEMM per column block, col2im's sums): accumulation in
  the input type (a vacuous bound for long sums: inconclusive).
- CPU results may be flushed to zero below the smallest normal (measured:
  a bf16 conv returned 0 for an exact 1.07e-38, bf16's subnormal range;
  x86's bf16 conversion flushes): ftz=1 on every CPU profile.
- grad_bias: a sum of grad_output in float (ATen's reduction or cuDNN's
  backward bias): fp32 accumulation, output in the gradient's type.
"""
KLASSES = ("conv", "conv_cpu", "conv_tf32", "conv_ieee", "conv_sum")


def _ops():
    """kcheck.torch.ops (imported here: it imports this module for its rows,
    profiles for the profiles)."""
    from kcheck.torch import ops
    return ops


def _precision(pairs):
    """The first set fp32_precision of (backend, op) pairs ("tf32", "ieee",
    "bf16"), None when every one is "none" or this torch has no such API."""
    import torch
    g = getattr(torch._C, "_get_fp32_precision_getter", None)
    if g is None:
        return None
    for backend, op in pairs:
        try:
            v = g(backend, op)
        except (RuntimeError, TypeError):
            continue
        if v and v != "none":
            return v
    return None


def cudnn_tf32():
    """Whether cuDNN convolutions may use TF32 now: the new API's
    precision when set, else the legacy flag; True (the looser profile)
    when PyTorch cannot say (it raises for mixed legacy and new flags)."""
    v = _precision((("cuda", "conv"), ("cuda", "all")))
    if v is not None:
        return v == "tf32"
    import torch
    try:
        return bool(torch._C._get_cudnn_allow_tf32())
    except (RuntimeError, AttributeError):
        return True


def tf32_token():
    """A cheap value that changes with cuDNN's TF32 setting (signature
    keys, on every covered op): the new API's raw conv precision."""
    import torch
    try:
        return torch._C._get_fp32_precision_getter("cuda", "conv")
    except (AttributeError, RuntimeError, TypeError):
        return cudnn_tf32()


def mkldnn_precision():
    """torch.backends.mkldnn.conv.fp32_precision resolved ("ieee" when
    unset)."""
    return _precision((("mkldnn", "conv"), ("mkldnn", "all"))) or "ieee"


def settings():
    """The convolution settings for profiles.settings()."""
    tf32 = cudnn_tf32()
    return {"cudnn_allow_tf32": tf32, "cudnn_conv_tf32": tf32,
            "mkldnn_conv_fp32_precision": mkldnn_precision()}


def profile(klass, in_fmt, out_fmt, s):
    """The oracle profile of a convolution class (KLASSES) under settings s;
    raises profiles.Unsupported where none is documented."""
    from kcheck.torch.profiles import Unsupported, _io
    if klass == "conv_sum":
        return "fp32:in=%s:acc=fp32:out=%s:ftz=1" % (in_fmt, out_fmt)
    if klass == "conv_cpu":
        if in_fmt == "fp32":
            prec = s.get("mkldnn_conv_fp32_precision", "ieee")
            if prec == "tf32":
                return _io("tf32", "fp32", out_fmt) + ":ftz=1"
            if prec == "bf16":
                raise Unsupported("mkldnn conv fp32_precision='bf16' (bf16 passes) has no "
                                  "oracle profile")
            return _io("fp32", "fp32", out_fmt) + ":ftz=1"
        if in_fmt in ("bf16", "fp16"):
            return _io("%s_%sacc" % (in_fmt, in_fmt), in_fmt, out_fmt) + ":ftz=1"
        raise Unsupported("convolution on %s" % in_fmt)
    if in_fmt == "fp32":
        tf32 = klass == "conv_tf32" or (klass == "conv" and s.get("cudnn_conv_tf32", True))
        if tf32:
            return _io("tensorcore_tf32", "fp32", out_fmt) + ":ftz=1"
        return _io("fp32", "fp32", out_fmt) + ":ftz=1"
    if in_fmt in ("bf16", "fp16"):
        return _io("tensorcore_fp32", in_fmt, out_fmt) + ":ftz=1"
    raise Unsupported("convolution on %s" % in_fmt)


def _ints(v, nsp, what):
    v = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    if len(v) == 1:
        v = v * nsp
    if len(v) != nsp:
        raise _ops().Skip("%s of %d values for %d spatial dims" % (what, len(v), nsp))
    return ",".join(str(x) for x in v)


def _algorithm(x, w, dilation, transposed):
    """direct or any (module docstring): any on CUDA; NNPACK's shapes on
    the CPU."""
    import torch
    if x.device.type == "cuda":
        return "any"
    nnpack = getattr(torch, "_nnpack_available", lambda: False)()
    if nnpack and x.dtype == torch.float32 and x.dim() == 4 and not transposed and \
            x.shape[0] >= 16 and all(int(d) == 1 for d in dilation):
        return "any"
    return "direct"


def _common(x, w, stride, padding, dilation, groups, transposed, tf32=None):
    """(attrs, klass) of a convolution over x and w."""
    nsp = x.dim() - 2
    if w.dim() != x.dim():
        raise _ops().Skip("unbatched convolution input")
    if nsp not in (1, 2, 3):
        raise _ops().Skip("convolution over %d spatial dims" % nsp)
    dil = dilation if isinstance(dilation, (list, tuple)) else [dilation]
    attrs = {"stride": _ints(stride, nsp, "stride"), "padding": _ints(padding, nsp, "padding"),
             "dilation": _ints(dilation, nsp, "dilation"), "groups": int(groups),
             "algorithm": _algorithm(x, w, dil, transposed)}
    if x.device.type != "cuda":
        klass = "conv_cpu"
    elif tf32 is None:
        klass = "conv"
    else:
        klass = "conv_tf32" if tf32 else "conv_ieee"
    return attrs, klass


def _forward(x, w, bias, stride, padding, dilation, transposed, groups, tf32=None):
    if isinstance(padding, str):
        raise _ops().Skip("padding given as '%s'" % padding)
    attrs, klass = _common(x, w, stride, padding, dilation, groups, transposed, tf32)
    ins = [("x", x), ("w", w)] + ([("bias", bias)] if bias is not None else [])
    return _ops().Plan("conv_transpose" if transposed else "conv", ins, _ops()._first, attrs, klass)


def convolution(a):
    """aten.convolution, convolution_overrideable, _convolution: output_padding
    only lengthens a transposed convolution's output (the oracle reads
    the output's shape)."""
    tf32 = a.get("allow_tf32")  # _convolution's non-deprecated overload
    return _forward(a["input"], a["weight"], a["bias"], a["stride"], a["padding"], a["dilation"],
                    bool(a["transposed"]), a["groups"], None if tf32 is None else bool(tf32))


def cudnn_convolution(transposed):
    def m(a):
        return _forward(a["self"], a["weight"], None, a["stride"], a["padding"], a["dilation"],
                        transposed, a["groups"], bool(a["allow_tf32"]))
    return m


def mkldnn_convolution(a):
    return _forward(a["self"], a["weight"], a["bias"], a["stride"], a["padding"], a["dilation"],
                    False, a["groups"])


def _pick(k):
    return lambda res: res[k]


def convolution_backward(a):
    """aten.convolution_backward's outputs per output_mask: grad_input
    (transposed forward: conv of grad_output with the weight; else its
    conv_transpose), grad_weight (conv_weight_grad of grad_output and the
    input; transposed: of the input and grad_output, the roles swapped),
    grad_bias (conv_bias_grad)."""
    g, x, w = a["grad_output"], a["input"], a["weight"]
    transposed = bool(a["transposed"])
    attrs, klass = _common(x, w, a["stride"], a["padding"], a["dilation"], a["groups"],
                           transposed)
    mask = list(a["output_mask"])
    plans = []
    if mask[0]:
        plans.append(_ops().Plan("conv" if transposed else "conv_transpose",
                               [("x", g), ("w", w)], _pick(0), dict(attrs), klass,
                               label="grad_input"))
    if mask[1]:
        ins = [("g", x), ("x", g)] if transposed else [("g", g), ("x", x)]
        plans.append(_ops().Plan("conv_weight_grad", ins, _pick(1), dict(attrs), klass,
                               label="grad_weight"))
    if len(mask) > 2 and mask[2]:
        plans.append(_ops().Plan("conv_bias_grad", [("g", g)], _pick(2), {}, "conv_sum",
                               label="grad_bias"))
    if not plans:
        raise _ops().Skip("no gradient asked for (output_mask)")
    plans[0].more = plans[1:]
    return plans[0]
