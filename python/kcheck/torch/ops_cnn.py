"""The op table's rows for a convolutional network's other layers: batch
norm (every ATen spelling: native, _native_batch_norm_legit*, cuDNN, the
_batch_norm_with_update family, their backwards) and 2-D pooling (max,
avg, adaptive), mapped to the oracle's BATCH_NORM and POOL ops
(oracle/cnn.h). A multi-output op's other results are judged beside its
first (Plan.more): the saved statistics, the running statistics it
updates in place, dweight and dbias, the max pool's indices.
"""
import torch

from kcheck.torch.ops import Plan, Skip


def _first(res):
    return res[0] if isinstance(res, (tuple, list)) else res


def _nth(k):
    return lambda res: res[k]


def _same(t):
    """The output is the argument t itself, updated in place (running
    statistics): its value after the call."""
    return lambda res: t


_NARROW = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}


def _stat_format(x, w, rm):
    """The format ATen's CPU kernels hold mean and invstd in before the
    transform: a 16-bit input's type unless a float weight (or running
    statistic) makes the call mixed-precision (measured with OpInfo's
    samples: bf16 statistics put y beyond float's bound). CUDA keeps them
    in float; the rounding it allows for there only widens the bound."""
    p = w if w is not None else rm if rm is not None else x
    f = _NARROW.get(str(x.dtype))
    return f if f and p.dtype == x.dtype else None


def _bn_forward(x, w, b, rm, rv, training, momentum, eps, stats=True):
    """y, and with training the saved mean and invstd (results 1 and 2,
    when stats) and the running statistics updated in place."""
    if x.dim() < 2:
        raise Skip("batch norm over fewer than 2 dims")
    attrs = {"eps": float(eps), "momentum": float(momentum if momentum is not None else 0.0)}
    sf = _stat_format(x, w, rm)
    if sf:
        attrs["stat_format"] = sf
    wb = ([("weight", w)] if w is not None else []) + ([("bias", b)] if b is not None else [])
    if not training:
        if rm is None or rv is None:
            raise Skip("eval-mode batch norm without running statistics")
        return Plan("batch_norm_eval", [("x", x), ("running_mean", rm), ("running_var", rv)] + wb,
                    _first, attrs, "batch_norm")
    more = []
    if stats:
        more += [Plan("batch_norm_mean", [("x", x)], _nth(1), attrs, "batch_norm",
                      label="save_mean"),
                 Plan("batch_norm_invstd", [("x", x)], _nth(2), attrs, "batch_norm",
                      label="save_invstd")]
    if rm is not None:
        more.append(Plan("batch_norm_running_mean", [("x", x), ("running_mean", rm)], _same(rm),
                         attrs, "batch_norm", label="running_mean"))
    if rv is not None:
        more.append(Plan("batch_norm_running_var", [("x", x), ("running_var", rv)], _same(rv),
                         attrs, "batch_norm", label="running_var"))
    return Plan("batch_norm", [("x", x)] + wb, _first, attrs, "batch_norm", more=more)


def _native_batch_norm(a):
    """native_batch_norm, _native_batch_norm_legit (and .no_stats):
    (input, weight, bias, [running_mean, running_var,] training, momentum,
    eps)."""
    return _bn_forward(a["input"], a.get("weight"), a.get("bias"), a.get("running_mean"),
                       a.get("running_var"), bool(a["training"]), a["momentum"], a["eps"])


def _batch_norm_no_training(a):
    """_native_batch_norm_legit_no_training: eval from the running
    statistics."""
    return _bn_forward(a["input"], a.get("weight"), a.get("bias"), a["running_mean"],
                       a["running_var"], False, a["momentum"], a["eps"])


def _cudnn_batch_norm(a):
    """cudnn_batch_norm (output, save_mean, save_inv_variance, reserve) and
    miopen_batch_norm: momentum and eps under cuDNN's names."""
    return _bn_forward(a["input"], a.get("weight"), a.get("bias"), a.get("running_mean"),
                       a.get("running_var"), bool(a["training"]), a["exponential_average_factor"],
                       a["epsilon"])


def _batch_norm_with_update(a):
    return _bn_forward(a["input"], a.get("weight"), a.get("bias"), a["running_mean"],
                       a["running_var"], True, a["momentum"], a["eps"])


def _batch_norm_no_update(a):
    """Eval from the running statistics where given, else the batch's
    (nothing updated)."""
    rm, rv = a.get("running_mean"), a.get("running_var")
    return _bn_forward(a["input"], a.get("weight"), a.get("bias"), rm, rv, rm is None,
                       a["momentum"], a["eps"])


def _bn_backward(g, x, w, mean, invstd, train, mask, eps, rm=None, rv=None):
    """dx, dweight, dbias (as output_mask asks) of a batch norm: training
    mode from its saved mean and invstd, eval mode from the running
    statistics (invstd = 1 / sqrt(running_var + eps), rounded in the
    kernel)."""
    if x.dim() < 2:
        raise Skip("batch norm over fewer than 2 dims")
    if not train:
        if rm is None or rv is None:
            raise Skip("eval-mode backward without running statistics")
        mean, stat = rm, ("running_var", rv)
    else:
        if mean is None or invstd is None or mean.numel() == 0 or invstd.numel() == 0:
            raise Skip("no saved statistics")
        stat = ("invstd", invstd)
    attrs = {"eps": float(eps)}
    sf = _stat_format(x, w, rm)
    if sf and not train:  # eval's invstd computed from running_var, held as the statistics
        attrs["stat_format"] = sf
    wt = [("weight", w)] if w is not None else []
    plans = []
    if mask[0]:
        if train:
            plans.append(Plan("batch_norm_backward", [("g", g), ("x", x), ("mean", mean), stat] +
                              wt, _first, attrs, "batch_norm", label="grad_input"))
        else:
            plans.append(Plan("batch_norm_eval_backward", [("g", g), ("x", x), stat] + wt,
                              _first, attrs, "batch_norm", label="grad_input"))
    if len(mask) > 1 and mask[1]:
        plans.append(Plan("batch_norm_backward_weight",
                          [("g", g), ("x", x), ("mean", mean), stat], _nth(1),
                          attrs, "batch_norm", label="grad_weight"))
    if len(mask) > 2 and mask[2]:
        plans.append(Plan("batch_norm_backward_bias", [("g", g), ("x", x)], _nth(2), attrs,
                          "batch_norm", label="grad_bias"))
    if not plans:
        raise Skip("no gradient asked for (output_mask)")
    plans[0].more = plans[1:]
    return plans[0]


def _float2_partials(plan, x):
    """ATen's CUDA batch-norm backward (Normalization.cuh: reduce over
    Float2<input_t, acc_t>) sums in float, but its warp shuffles rebuild
    each partial through Float2's (input_t, input_t) constructor, and
    GradOp builds each term g (x - mean) the same way: for bf16 and fp16
    inputs every partial is rounded to the input type at each level of
    the block's reduction tree (measured on the H100: dbias 1.1% from the
    exact sum of bf16 gradients; the same kernel on fp32 inputs 5e-8). The
    oracle's bound takes those roundings (profile partial=<input type>)
    for dx, dweight and dbias."""
    if x.device.type == "cuda" and x.dtype in (torch.bfloat16, torch.float16):
        for p in [plan] + plan.more:
            p.suffix = ":partial=%s" % ("bf16" if x.dtype == torch.bfloat16 else "fp16")
    return plan


def _native_batch_norm_backward(a):
    return _float2_partials(
        _bn_backward(a["grad_out"], a["input"], a.get("weight"), a.get("save_mean"),
                     a.get("save_invstd"), bool(a["train"]), list(a["output_mask"]), a["eps"],
                     a.get("running_mean"), a.get("running_var")), a["input"])


def _batch_norm_backward(a):
    """batch_norm_backward (the _batch_norm_with_update family's): update
    is the training flag; save_var holds the saved invstd."""
    return _float2_partials(  # ATen's native kernel below it where cuDNN is not used
        _bn_backward(a["grad_out"], a["input"], a.get("weight"), a.get("save_mean"),
                     a.get("save_var"), bool(a["update"]), list(a["output_mask"]), a["eps"],
                     a.get("running_mean"), a.get("running_var")), a["input"])


def _cudnn_batch_norm_backward(a):
    """cudnn_batch_norm_backward: always training mode, all three
    gradients; save_var is cuDNN's saved inverse standard deviation."""
    return _bn_backward(a["grad_output"], a["input"], a.get("weight"), a.get("save_mean"),
                        a.get("save_var"), True, [True, True, True], a["epsilon"])


# The arguments that are the op's data (mode.py's data_args): not cuDNN's
# reserve space (uint8, possibly empty), nor the saved statistics an
# eval-mode backward leaves empty (the mapper checks them where it reads
# them)
_cudnn_batch_norm_backward.data_args = ("input", "grad_output", "weight", "running_mean",
                                        "running_var", "save_mean", "save_var")
_batch_norm_backward.data_args = _native_batch_norm_backward.data_args = (
    "grad_out", "input", "weight", "running_mean", "running_var")


def _pair(v, dflt):
    v = list(v) if v is not None and not isinstance(v, int) else ([v] if v is not None else [])
    if not v:
        return list(dflt)
    return v * 2 if len(v) == 1 else v[:2]


def _window(a, dilation=True):
    k = _pair(a["kernel_size"], ())
    s = _pair(a.get("stride"), k)
    p = _pair(a.get("padding", 0), (0, 0))
    attrs = {"kernel_h": int(k[0]), "kernel_w": int(k[1]), "stride_h": int(s[0]),
             "stride_w": int(s[1]), "pad_h": int(p[0]), "pad_w": int(p[1])}
    if dilation:
        d = _pair(a.get("dilation", 1), (1, 1))
        attrs.update(dilation_h=int(d[0]), dilation_w=int(d[1]))
    return attrs


def _pool_input(x):
    if x.dim() < 3:
        raise Skip("pooling over fewer than 3 dims")
    return x


def _max_pool2d_with_indices(a):
    x = _pool_input(a["self"])
    attrs = _window(a)
    return Plan("max_pool2d", [("x", x)], _first, attrs, "pool",
                more=[Plan("max_pool2d_indices", [("x", x)], _nth(1), attrs, "pool",
                           label="indices")])


def _max_pool2d_backward(a):
    x = _pool_input(a["self"])
    return Plan("max_pool2d_backward", [("g", a["grad_output"]), ("x", x),
                                        ("indices", a["indices"])], _first, _window(a), "pool")


def _avg_attrs(a):
    attrs = _window(a, dilation=False)
    attrs["count_include_pad"] = bool(a.get("count_include_pad", True))
    d = a.get("divisor_override")
    if d is not None:
        attrs["divisor_override"] = int(d)
    return attrs


def _avg_pool2d(a):
    return Plan("avg_pool2d", [("x", _pool_input(a["self"]))], _first, _avg_attrs(a), "pool")


def _avg_pool2d_backward(a):
    return Plan("avg_pool2d_backward", [("g", a["grad_output"]), ("x", _pool_input(a["self"]))],
                _first, _avg_attrs(a), "pool")


def _adaptive_avg_pool2d(a):
    return Plan("adaptive_avg_pool2d", [("x", _pool_input(a["self"]))], _first, {}, "pool")


def _atomic_ftz(plan, g):
    """ATen's CUDA adaptive pools scatter their gradient with float atomic
    adds (AdaptiveAveragePooling.cu, AdaptiveMaxPooling2d.cu: `atomic =
    true` for NCHW), and the hardware's fp32 atomic add flushes subnormal
    operands and results to zero (PTX red/atom .add.f32: .ftz implied;
    measured on the H100: a -2.9e-39 gradient element read back 0). The
    16-bit atomics (.noftz) and double do not flush."""
    if g.device.type == "cuda" and g.dtype == torch.float32:
        plan.profile = "fp32:in=fp32:acc=fp32:out=fp32:ftz=1"
    return plan


def _adaptive_avg_pool2d_backward(a):
    g = a["grad_output"]
    return _atomic_ftz(Plan("adaptive_avg_pool2d_backward", [("g", g), ("x", _pool_input(a["self"]))],
                            _first, {}, "pool"), g)


def _adaptive_max_pool2d(a):
    x = _pool_input(a["self"])
    return Plan("adaptive_max_pool2d", [("x", x)], _first, {}, "pool",
                more=[Plan("adaptive_max_pool2d_indices", [("x", x)], _nth(1), {}, "pool",
                           label="indices")])


def _adaptive_max_pool2d_backward(a):
    x, g = _pool_input(a["self"]), a["grad_output"]
    return _atomic_ftz(Plan("max_pool2d_backward", [("g", g), ("x", x), ("indices", a["indices"])],
                            _first, {}, "pool"), g)


# the argmax indices (int64) are carried as exact doubles
_max_pool2d_with_indices.index_args = _max_pool2d_backward.index_args = True
_adaptive_max_pool2d.index_args = _adaptive_max_pool2d_backward.index_args = True

# Oracle ops whose judged output is an index tensor (int64, carried as
# exact doubles).
INDEX_OUTPUTS = frozenset(("max_pool2d_indices", "adaptive_max_pool2d_indices"))

_BN = "per channel over N and the spatial dims: "
ROWS = [
    (["native_batch_norm", "_native_batch_norm_legit"], "batch_norm",
     _native_batch_norm, _BN + "y, save_mean, save_invstd, running_mean/var updated "
     "(momentum, unbiased var); eval: batch_norm_eval"),
    (["_native_batch_norm_legit_no_training"], "batch_norm_eval", _batch_norm_no_training,
     "y from the running statistics"),
    (["cudnn_batch_norm", "miopen_batch_norm"], "batch_norm", _cudnn_batch_norm,
     "as native_batch_norm; cuDNN's "
     "algorithm undocumented: the bound covers one pass too (norm=one_pass)"),
    (["_batch_norm_with_update"], "batch_norm", _batch_norm_with_update, "as native_batch_norm"),
    (["_batch_norm_no_update"], "batch_norm_eval", _batch_norm_no_update,
     "eval from the running statistics"),
    (["native_batch_norm_backward"], "batch_norm_backward", _native_batch_norm_backward,
     "dx, dweight, dbias: training mode from the saved mean and invstd, eval from the "
     "running statistics"),
    (["cudnn_batch_norm_backward"], "batch_norm_backward", _cudnn_batch_norm_backward,
     "dx, dweight, dbias"),
    (["batch_norm_backward"], "batch_norm_backward", _batch_norm_backward,
     "dx, dweight, dbias (update: training mode)"),
    (["max_pool2d_with_indices"], "max_pool2d", _max_pool2d_with_indices,
     "max bit for bit; indices: any position holding the max"),
    (["max_pool2d_with_indices_backward"], "max_pool2d_backward", _max_pool2d_backward,
     "g summed at its indices, any order"),
    (["avg_pool2d"], "avg_pool2d", _avg_pool2d, "count_include_pad, divisor_override"),
    (["avg_pool2d_backward"], "avg_pool2d_backward", _avg_pool2d_backward, ""),
    (["_adaptive_avg_pool2d"], "adaptive_avg_pool2d", _adaptive_avg_pool2d,
     "output 1x1 is aten::mean over the spatial dims"),
    (["_adaptive_avg_pool2d_backward"], "adaptive_avg_pool2d_backward",
     _adaptive_avg_pool2d_backward, ""),
    (["adaptive_max_pool2d"], "adaptive_max_pool2d", _adaptive_max_pool2d,
     "max bit for bit; indices"),
    (["adaptive_max_pool2d_backward"], "max_pool2d_backward", _adaptive_max_pool2d_backward,
     "g summed at its indices"),
]

# Generated inputs for these would be random indices (out of range: an
# error or a device-side assert) or a random cuDNN reserve space.
_GEN_INDEX = "generated inputs would hold out-of-range indices (a device-side assert)"
_GEN_RESERVE = "generated inputs cannot stand for the reserve space cuDNN's forward filled"
NOT_APPLICABLE_BY = {"max_pool2d_with_indices_backward": _GEN_INDEX,
                     "adaptive_max_pool2d_backward": _GEN_INDEX,
                     "cudnn_batch_norm_backward": _GEN_RESERVE,
                     "batch_norm_backward": _GEN_RESERVE}
