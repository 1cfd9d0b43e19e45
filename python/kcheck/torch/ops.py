"""The op table: ATen op -> oracle op, argument mapping, gates that apply.

One row per ATen op (every overload of it is mapped by the same function);
docs/torch.md's coverage table is generated from ROWS and UNCOVERED
(`python -m kcheck.torch.ops --markdown`). A mapper takes the call's
arguments by schema name and returns a Plan, or raises Skip with the
reason the call passes through.
"""
import math

from kcheck import _defs
from kcheck.torch import conv as _conv


class Skip(Exception):
    """This call cannot be judged; str(e) is the pass-through reason."""


class Plan:
    """What to copy and how to judge one call.

    inputs: [(name, tensor or float)] in the oracle's argument order (a
    float is a scalar operand); out: a function of the op's result giving
    the judged output tensor; attrs: oracle attributes; klass: the profile
    class ("matmul", "softmax", "norm", "reduce", "elementwise",
    "attention", "norm_grad": inputs of mixed dtypes, rows along dim 0,
    "attention_grad": q's dtype, the fp32 logsumexp beside it).
    more: further Plans judged on the same call, one per other output
    (dweight and dbias beside dx, dk and dv beside dq, each tensor of a
    _foreach_ list): each is profiled and judged like the primary on the
    application's inputs; the generated-input gates run the primary only.
    label: the judged output's name in records and evidence.
    suffix: profile keys appended to the profile the call gets (a
    kernel's measured behaviour PyTorch's settings do not name, e.g.
    ":partial=bf16").
    """
    __slots__ = ("op", "inputs", "out", "attrs", "klass", "profile", "more", "label", "suffix")

    def __init__(self, op, inputs, out, attrs=None, klass="elementwise", more=None,
                 label=None):
        self.op, self.inputs, self.out = op, inputs, out
        self.attrs = attrs or {}
        self.klass = klass
        self.profile = None  # a contract's own profile spec (custom ops)
        self.more = list(more or ())
        self.label = label or "out"
        self.suffix = ""


def _first(res):
    return res[0] if isinstance(res, (tuple, list)) else res


def _result(res):
    return res


def _dims(dim, rank):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return None
    if isinstance(dim, int):
        dim = [dim]
    return sorted(d % rank if rank else 0 for d in dim)


def _one_axis(x, dim):
    """The single reduced axis, or the whole tensor flattened when it is
    contiguous; Skip otherwise."""
    dims = _dims(dim, x.dim())
    if dims is None:
        if x.dim() <= 1:
            return x, {"axis": 0}
        if x.is_contiguous():
            return x.reshape(-1), {"axis": 0}
        raise Skip("reduction over every dim of a non-contiguous tensor")
    if len(dims) != 1:
        raise Skip("reduction over several dims")
    return x, {"axis": dims[0]}


def _merged_axes(x, dim):
    """(x as the oracle reads it, attrs): one reduced axis as _one_axis, or
    several adjacent dims of a contiguous tensor merged into one (a view:
    the same elements in the same order), the reduction over them being
    the reduction over that axis."""
    dims = _dims(dim, x.dim())
    if dims is None or len(dims) == 1 or len(set(dims)) != len(dims):
        return _one_axis(x, dim)
    a, b = dims[0], dims[-1]
    if dims != list(range(a, b + 1)):
        raise Skip("reduction over several dims that are not adjacent")
    if not x.is_contiguous():
        raise Skip("reduction over several dims of a non-contiguous tensor")
    shape = list(x.shape[:a]) + [-1] + list(x.shape[b + 1:])
    return x.reshape(shape), {"axis": a}


# ---------------------------------------------------------------- mappers

def _mm(a):
    return Plan("matmul", [("a", a["self"]), ("b", a["mat2"])], _first, klass="matmul")


def _addmm(a):
    m1, m2, c = a["mat1"], a["mat2"], a["self"]
    shape = (m1.shape[0], m2.shape[1])
    return Plan("matmul", [("a", m1), ("b", m2), ("c", c.expand(shape))], _first,
                {"alpha": float(a["alpha"]), "beta": float(a["beta"])}, "matmul")


def _baddbmm(a):
    b1, b2, c = a["batch1"], a["batch2"], a["self"]
    shape = (b1.shape[0], b1.shape[1], b2.shape[2])
    return Plan("matmul", [("a", b1), ("b", b2), ("c", c.expand(shape))], _first,
                {"alpha": float(a["alpha"]), "beta": float(a["beta"])}, "matmul")


def _cpu_16bit_softmax(x, op, widened):
    """ATen's CPU softmax family in bf16/fp16 without a wider output sums
    in that type (measured, OpInfo's samples, torch 2.15: the row's sum
    rounded to the 16-bit type, so log(1 + tiny) = 0 at the max)."""
    if x.device.type == "cpu" and x.dtype in (_torch().bfloat16, _torch().float16) and \
            not widened:
        raise Skip("ATen's CPU %s in a 16-bit type sums in that type" % op)


def _softmax_family(op):
    def m(a):
        x = a["self"]
        _cpu_16bit_softmax(x, op, a.get("half_to_float"))
        return Plan(op, [("x", a["self"])], _first, {"axis": a["dim"] % max(1, a["self"].dim())},
                    "softmax")
    return m


def _safe_softmax(a):
    """_safe_softmax (SDPA's math path with a mask): softmax, except that a
    row of -inf gives zeros instead of NaN (the oracle's masked_row=zero);
    dtype= converts the input first (exactly, to a wider type)."""
    x = a["self"]
    dtype = a.get("dtype")
    if dtype is not None and dtype != x.dtype and _torch().finfo(dtype).bits < \
            _torch().finfo(x.dtype).bits:
        raise Skip("_safe_softmax to a narrower dtype")
    _cpu_16bit_softmax(x, "softmax", dtype is not None and dtype != x.dtype)
    p = Plan("softmax", [("x", x)], _first, {"axis": a["dim"] % max(1, x.dim())}, "softmax")
    p.suffix = ":masked_row=zero"
    return p


def _logsumexp(a):
    x, attrs = _one_axis(a["self"], a["dim"])
    if a.get("keepdim"):
        raise Skip("keepdim=True")
    return Plan("logsumexp", [("x", x)], _first, attrs, "softmax")


def _layer_norm(a):
    x, ns = a["input"], list(a["normalized_shape"])
    if len(ns) != 1:
        if not x.is_contiguous():
            raise Skip("normalized over several dims of a non-contiguous tensor")
        raise Skip("normalized over several dims")
    ins = [("x", x)]
    if a["weight"] is not None:
        ins.append(("weight", a["weight"]))
    if a["bias"] is not None:
        ins.append(("bias", a["bias"]))
    return Plan("layer_norm", ins, _first, {"eps": float(a["eps"])}, "norm")


def _rms_norm(a):
    x, ns = a["input"], list(a["normalized_shape"])
    if len(ns) != 1:
        raise Skip("normalized over several dims")
    eps = a.get("eps")
    if eps is None:
        # ATen's kernels (CPU and CUDA) take the epsilon of the accumulate
        # type, not torch.finfo(x.dtype).eps as F.rms_norm documents for its
        # own default (which it passes explicitly): FLT_EPSILON for bf16,
        # fp16 and fp32 inputs (measured on the H100: 2^-7 in the oracle
        # gave bf16 rows 4% off, a false precision verdict)
        import torch
        eps = torch.finfo(torch.float64 if x.dtype == torch.float64 else torch.float32).eps
    ins = [("x", x)]
    if a["weight"] is not None:
        ins.append(("weight", a["weight"]))
    return Plan("rms_norm", ins, _first, {"eps": float(eps)}, "norm")


def _reduce(op):
    def m(a):
        if a.get("dtype") is not None:
            raise Skip("dtype= conversion inside the reduction")
        x, attrs = _merged_axes(a["self"], a.get("dim"))
        return Plan(op, [("x", x)], _reduced_out(x, attrs), attrs, "reduce")
    return m


def _var(op):
    """var / std (and var_mean / std_mean's first result): the divisor
    n - correction, from correction= or unbiased= (1 or 0)."""
    def m(a):
        x, attrs = _merged_axes(a["self"], a.get("dim"))
        c = a.get("correction")
        if c is None:
            c = 1 if a.get("unbiased", True) else 0
        if hasattr(c, "dim"):
            raise Skip("correction as a tensor")
        attrs["correction"] = float(c)
        return Plan(op, [("x", x)], _reduced_out(x, attrs), attrs, "reduce")
    return m


def _cumsum(a):
    """Inclusive prefix sums along dim: out has self's shape."""
    x = a["self"]
    dt = a.get("dtype")
    if dt is not None and dt != x.dtype:
        raise Skip("dtype= conversion inside the scan")
    return Plan("cumsum", [("x", x)], _first, {"axis": int(a["dim"]) % max(1, x.dim())}, "reduce")


def _reduced_out(x, attrs):
    """The result shaped as the oracle expects: x's shape (x as the oracle
    reads it, adjacent reduced dims merged) without the axis, so a keepdim
    result or one of several reduced dims reads the same elements; a full
    reduction as a 1-element result."""
    shape = [n for d, n in enumerate(x.shape) if d != attrs["axis"]] or [1]

    def out(res):
        r = _first(res)
        return r.reshape(shape) if r.dim() != len(shape) or list(r.shape) != shape else r
    return out


def _norm(a):
    if float(a["ord"]) != 2.0:
        raise Skip("ord other than 2")
    if a.get("dtype") is not None:
        raise Skip("dtype= conversion inside the norm")
    x, attrs = _one_axis(a["self"], a.get("dim"))
    return Plan("norm2", [("x", x)], _reduced_out(x, attrs), attrs, "reduce")


def _binary(op):
    def m(a):
        alpha = a.get("alpha", 1)
        if alpha is not None and alpha != 1:
            raise Skip("alpha other than 1")
        x, y = a["self"], a["other"]
        scalar = not hasattr(y, "dim")
        if scalar:
            y = float(y)
        elif y.dim() == 0 and y.device.type == "cpu" and x.device.type != "cpu":
            y, scalar = float(y.item()), True  # a Python number, wrapped: a scalar to ATen
        if not hasattr(x, "dim"):
            raise Skip("scalar first operand")
        if op == "div" and scalar and x.device.type == "cuda":
            # ATen's CUDA true division by a CPU scalar multiplies by the
            # scalar's reciprocal (BinaryDivTrueKernel.cu launches the mul
            # functor): 1/s in double, then rounded to the compute type —
            # measured on the H200 (fl32(1/s), not fl32(1/fl32(s))).
            return Plan("mul", [("self", x), ("other", 1.0 / y)], _first)
        return Plan(op, [("self", x), ("other", y)], _first)
    return m


def _unary(op):
    def m(a):
        return Plan(op, [("self", a["self"])], _first)
    return m


def _cpu_erf(x, approx):
    """ATen's CPU gelu (erf form) below double evaluates erf with its
    vectorized approximation (Abramowitz-Stegun 7.1.26 in float: about 5e-7
    absolute, measured), where 1 + erf cancels for negative x: no
    documented bound, so the call passes through (CUDA's erff and the
    double path are judged)."""
    if approx != "tanh" and x.device.type == "cpu" and x.dtype != _torch().float64:
        raise Skip("ATen's vectorized CPU erf: no documented accuracy (gelu judged on CUDA "
                   "and in float64)")


def _torch():
    import torch
    return torch


def _gelu(a):
    approx = a.get("approximate", "none")
    _cpu_erf(a["self"], approx)
    return Plan("gelu_tanh" if approx == "tanh" else "gelu_erf", [("self", a["self"])], _first)


def _grad(op):
    """An activation's gradient: the incoming gradient, then the forward
    output (sigmoid, tanh) or input (threshold, silu, gelu)."""
    second = {"sigmoid_backward": "output", "tanh_backward": "output"}.get(op, "self")

    def m(a):
        attrs = {}
        if op == "threshold_backward":
            attrs["threshold"] = float(a["threshold"])
        p = Plan(op, [("g", a["grad_output"]), ("x", a[second])], _first, attrs)
        y = a[second]
        if (op in _SCALAR_T_GRADS and y.device.type == "cuda"
                and y.dtype in (_torch().bfloat16, _torch().float16)):
            p.suffix = ":partial=%s" % ("bf16" if y.dtype == _torch().bfloat16 else "fp16")
        return p
    return m


# ATen's CUDA kernels of these gradients compute in the tensor's own type,
# not its opmath (BinaryMiscBackwardOpsKernels.cu: a * (scalar_t{1.} - b * b)
# with c10::BFloat16's operators, each step rounded to bf16); its CPU
# kernels convert 16-bit values to float first.
_SCALAR_T_GRADS = ("sigmoid_backward", "tanh_backward")


def _norm_backward(op):
    """native_layer_norm_backward / _fused_rms_norm_backward from the
    forward's saved statistics (mean, rstd: the input's shape with the
    last dim 1): dx, and beside it dweight and dbias (ops_optim's column
    sums), each where output_mask asks for it; g, x and the statistics as
    [rows, n] views, copied once for all three."""
    def m(a):
        if len(list(a["normalized_shape"])) != 1:
            raise Skip("normalized over several dims")
        x = a["input"]
        stats = [("mean", a["mean"])] if op == "layer_norm_backward" else []
        stats.append(("rstd", a["rstd"]))
        for _, t in stats:
            if t.dim() != x.dim() or tuple(t.shape) != tuple(x.shape[:-1]) + (1,):
                raise Skip("saved statistics of another shape")
        flat, params = ops_optim.norm_param_plans(op, a)
        plans = []
        if a["output_mask"][0]:
            if flat is not None:
                g2, x2, stats2 = flat
                n = x.shape[-1]
                ins = [("g", g2), ("x", x2)] + stats2
                out = (lambda res: _first(res).view(-1, n))
            else:
                ins, out = [("g", a["grad_out"]), ("x", x)] + stats, _first
            if a.get("weight") is not None:
                ins.append(("weight", a["weight"]))
            plans.append(Plan(op, ins, out, {}, "norm_grad", label="dx"))
        plans += params
        if not plans:
            raise Skip("no gradient asked for (output_mask)")
        plans[0].more = plans[1:]
        return plans[0]
    return m


def _clamp(lo_name, hi_name):
    """torch.clamp with number bounds (clamp_min / clamp_max: one of them)."""
    def m(a):
        import torch
        x = a["self"]
        attrs = {}
        for key, name in (("min", lo_name), ("max", hi_name)):
            v = a.get(name) if name else None
            if v is None:
                continue
            if hasattr(v, "dim"):
                raise Skip("clamp with tensor bounds")
            v = float(v)
            if x.dtype in (torch.float16, torch.bfloat16) and \
                    torch.tensor(v, dtype=torch.float64).to(x.dtype).double().item() != v:
                # ATen converts the bound to the tensor's type, the oracle
                # rounds it to float: they may differ at a tie
                raise Skip("clamp bound not exact in %s" % str(x.dtype).split(".")[-1])
            attrs[key] = v
        return Plan("clamp", [("self", x)], _first, attrs)
    return m


def _index_select(a):
    x, index = a["self"], a["index"]
    if index.dim() != 1:
        raise Skip("index of other than one dim")
    return Plan("index_select", [("x", x), ("index", index)], _first,
                {"axis": a["dim"] % max(1, x.dim())}, "gather")


def _embedding(a):
    w, idx = a["weight"], a["indices"]
    if w.dim() != 2:
        raise Skip("embedding of a non-2-D weight")
    d = w.shape[1]
    # indices in any layout: the host copy flattens them (judge.HostTensor)
    return Plan("index_select", [("x", w), ("index", idx)],
                lambda res: _first(res).view(-1, d), {"axis": 0}, "gather")


def _embedding_backward(a):
    """embedding_dense_backward: grad_weight's row r, the sum of the
    gradient rows whose index is r (none for padding_idx)."""
    g, idx = a["grad_output"], a["indices"]
    if a.get("scale_grad_by_freq"):
        raise Skip("scale_grad_by_freq (a division by each index's count)")
    if not g.is_contiguous():
        raise Skip("non-contiguous gradient")
    d = g.shape[-1]
    return Plan("embedding_backward", [("g", g.view(-1, d)), ("index", idx)], _first,
                {"padding_idx": int(a["padding_idx"])}, "scatter")


# their integer tensors are indices, carried to the oracle as exact doubles
_index_select.index_args = _embedding.index_args = _embedding_backward.index_args = True


def _fp8_dest(dtype):
    if dtype is not None and "float8" in str(dtype):
        # measured: torch 2.15's CPU conversion saturates (inf -> 448)
        # where older releases give NaN at >= 480: no single rule to hold
        raise Skip("conversion to fp8: PyTorch's overflow rule differs across versions")


def _to_copy(a):
    _fp8_dest(a.get("dtype"))
    return Plan("copy", [("self", a["self"])], _first)


def _copy_(a):
    _fp8_dest(a["self"].dtype)
    return Plan("copy", [("src", a["src"])], _first)


def _where(a):
    """where(condition, self, other), self or other a number: a selection,
    exact; masked_fill(self, mask, value) is where(mask, value, self)."""
    c = a["condition"]
    x, y = a["self"], a["other"]
    return Plan("where", [("cond", c), ("a", x if hasattr(x, "dim") else float(x)),
                          ("b", y if hasattr(y, "dim") else float(y))], _first)


def _masked_fill(a):
    x, v = a["self"], a["value"]
    if hasattr(v, "dim") and v.dim() != 0:
        raise Skip("masked_fill value of other than 0 dims")
    return Plan("where", [("cond", a["mask"]), ("a", v if hasattr(v, "dim") else float(v)),
                          ("b", x)], _first)


# the condition and mask are bool tensors, carried as 0 and 1
_where.index_args = _masked_fill.index_args = True


def _addc(op):
    """addcmul / addcdiv: self + value * tensor1 (* or /) tensor2."""
    def m(a):
        v = a.get("value", 1)
        if hasattr(v, "dim") or isinstance(v, complex):
            raise Skip("value as a tensor or complex")
        return Plan(op, [("x", a["self"]), ("t1", a["tensor1"]), ("t2", a["tensor2"])], _first,
                    {"value": float(v)})
    return m


def _lerp(a):
    w = a["weight"]
    if not hasattr(w, "dim"):
        if isinstance(w, complex):
            raise Skip("complex weight")
        w = float(w)
    return Plan("lerp", [("x", a["self"]), ("end", a["end"]), ("weight", w)], _first)


_REDUCTIONS = ("none", "mean", "sum")  # ATen's Reduction enum


def _nll_attrs(a):
    red = _REDUCTIONS[int(a["reduction"])]
    return red, {"reduction": red, "ignore_index": int(a["ignore_index"])}


def _nll_common(a, x):
    if x.dim() not in (1, 2):
        raise Skip("nll_loss over more than 2 dims")
    return _nll_attrs(a)


def _nll_loss(a):
    """nll_loss_forward's loss (total_weight, its second result, is not
    judged): -w x[i, t_i], summed or averaged."""
    import torch
    x, w = a["self"], a["weight"]
    red, attrs = _nll_common(a, x)
    if red != "none" and x.device.type == "cpu" and x.dtype in (torch.float16, torch.bfloat16):
        raise Skip("ATen's CPU nll_loss sums in the 16-bit type itself")
    ins = [("x", x), ("target", a["target"])] + ([("weight", w)] if w is not None else [])
    return Plan("nll_loss", ins, lambda res: _first(res).reshape(-1), attrs, "loss")


def _nll_loss_backward(a):
    """grad_input: zero but -(g / total_weight) w at each row's class (x is
    read for its shape only, so it is not copied)."""
    x, w = a["self"], a["weight"]
    red, attrs = _nll_common(a, x)
    ins = [("g", a["grad_output"]), ("target", a["target"])]
    if w is not None:
        ins.append(("weight", w))
    if red == "mean":
        ins.append(("total_weight", a["total_weight"]))
    return Plan("nll_loss_backward", ins, _first, attrs, "loss")


def _spatial(t, lead, why):
    """t [N, (C,) H, W] viewed as [N, (C,) H*W] without a copy; Skip when
    its strides do not allow it."""
    try:
        return t.view(*t.shape[:lead], -1)
    except RuntimeError:
        raise Skip("%s: H and W not mergeable into one strided dim" % why)


def _nll2d_common(a, x):
    if x.dim() != 4 or a["target"].dim() != 3:
        raise Skip("nll_loss2d over inputs not [N, C, H, W]")
    return _nll_attrs(a)


def _nll_loss2d(a):
    """nll_loss2d_forward's loss (cross_entropy on [N, C, H, W]): the
    oracle's nll_loss over x [N, C, H*W] and target [N, H*W]; its sum and
    mean bounds cover ATen's CPU cascade and CUDA atomic adds, both in the
    input's type (total_weight is not judged)."""
    x, w = a["self"], a["weight"]
    red, attrs = _nll2d_common(a, x)
    ins = [("x", _spatial(x, 2, "input")), ("target", _spatial(a["target"], 1, "target"))]
    if w is not None:
        ins.append(("weight", w))
    if red == "none":
        def out(res):
            return _first(res).reshape(x.shape[0], -1)
    else:
        def out(res):
            return _first(res).reshape(-1)
    return Plan("nll_loss", ins, out, attrs, "loss")


def _nll_loss2d_backward(a):
    """grad_input [N, C, H, W] (contiguous in ATen) as [N, C, H*W]: zero but
    -(g / total_weight) w at each (n, t, h, w)."""
    x, w = a["self"], a["weight"]
    red, attrs = _nll2d_common(a, x)
    g = a["grad_output"]
    ins = [("g", _spatial(g, 1, "grad_output") if red == "none" else g),
           ("target", _spatial(a["target"], 1, "target"))]
    if w is not None:
        ins.append(("weight", w))
    if red == "mean":
        ins.append(("total_weight", a["total_weight"]))
    n, c = x.shape[0], x.shape[1]
    return Plan("nll_loss_backward", ins, lambda res: _first(res).reshape(n, c, -1), attrs,
                "loss")


# the targets are class indices, carried as exact doubles
_nll_loss.index_args = _nll_loss_backward.index_args = True
_nll_loss2d.index_args = _nll_loss2d_backward.index_args = True


def _gelu_backward(a):
    approx = a.get("approximate", "none")
    _cpu_erf(a["self"], approx)
    return Plan("gelu_tanh_backward" if approx == "tanh" else "gelu_erf_backward",
                [("g", a["grad_output"]), ("x", a["self"])], _first)


def _softmax_grad(op):
    def m(a):
        y = a["output"]
        return Plan(op, [("g", a["grad_output"]), ("y", y)], _first,
                    {"axis": a["dim"] % max(1, y.dim())}, "softmax")
    return m


def _attention(kind):
    def m(a):
        if float(a.get("dropout_p", 0.0)) != 0.0:
            raise Skip("attention with dropout")
        if a.get("attn_bias") is not None or a.get("attn_mask") is not None:
            raise Skip("attention with a bias or mask tensor")
        q, k, v = a["query"], a["key"], a["value"]
        scale = a.get("scale")
        if scale is None:
            scale = 1.0 / math.sqrt(q.shape[-1])
        if k.shape[-2] != q.shape[-2] and a.get("is_causal"):
            raise Skip("causal attention with different query and key lengths")
        q, k, v, out = _gqa(q, k, v)
        p = Plan("attention", [("q", q), ("k", k), ("v", v)], out,
                 {"scale": float(scale), "causal": int(bool(a.get("is_causal")))}, "attention")
        return p
    return m


def _attention_backward(a):
    """dq (the primary plan), dk and dv (Plan.more) of a fused SDPA
    backward, from the forward's saved output and logsumexp (flash, CPU:
    [B, H, Sq]; memory-efficient: padded to a multiple of 32; cuDNN: a
    trailing 1). Only the gradients asked for (grad_input_mask) are judged;
    grouped-query attention (fewer key/value heads) too."""
    import torch
    if float(a.get("dropout_p", 0.0)) != 0.0:
        raise Skip("attention with dropout")
    bias = a.get("attn_bias", a.get("attn_mask"))
    if bias is not None and (not hasattr(bias, "numel") or bias.numel()):
        raise Skip("attention with a bias or mask tensor")
    cum = a.get("cum_seq_q")
    if cum is not None and hasattr(cum, "numel") and cum.numel():
        raise Skip("variable-length (nested) sequences")
    q, k, v, o = a["query"], a["key"], a["value"], a["out"]
    g = a["grad_out"] if "grad_out" in a else a["grad_out_"]
    lse = a["logsumexp"]
    causal = bool(a.get("is_causal"))
    if q.dim() < 3 or k.dim() != q.dim() or k.shape[:-3] != q.shape[:-3] or \
            v.shape[:-2] != k.shape[:-2]:
        raise Skip("query, key and value of different batch counts")
    hq, hk = q.shape[-3], k.shape[-3]
    if hq != hk and (hk == 0 or hq % hk):
        raise Skip("attention heads of query and key/value not in groups")
    if k.shape[-2] != q.shape[-2] and causal:
        raise Skip("causal attention with different query and key lengths")
    if q.device.type == "cpu" and q.dtype in (torch.float16, torch.bfloat16):
        raise Skip("ATen's CPU kernel accumulates dq, dk, dv across blocks in the 16-bit type")
    sq = q.shape[-2]
    if lse.dim() == q.dim() and lse.shape[-1] == 1:
        lse = lse[..., 0]  # cuDNN's stats
    if lse.dim() == q.dim() - 1 and lse.shape[-1] > sq:
        lse = lse[..., :sq]  # the memory-efficient kernel's padding
    if tuple(lse.shape) != tuple(q.shape[:-1]):
        raise Skip("logsumexp of another shape")
    scale = a.get("scale")
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    fmt = str(q.dtype)
    attrs = {"scale": float(scale), "causal": int(causal),
             "p_format": "bf16" if "bfloat16" in fmt else "fp16" if "float16" in fmt else "fp32"}
    ins = [("q", q), ("k", k), ("v", v), ("o", o), ("g", g), ("lse", lse)]
    outs = [lambda res: res[0], lambda res: res[1], lambda res: res[2]]
    ins_q = ins
    if hq != hk:
        # grouped-query attention (views only): query heads split into
        # (key heads, group); dq against k and v broadcast over the group,
        # dk and dv summed over it (the oracle's grouped form)
        def split(t, d=-3):
            return t.unflatten(d, (hk, hq // hk))
        qs, os_, gs, ls = split(q), split(o), split(g), split(lse, -2)
        ins = [("q", qs), ("k", k), ("v", v), ("o", os_), ("g", gs), ("lse", ls)]
        ins_q = [("q", qs), ("k", k.unsqueeze(-3)), ("v", v.unsqueeze(-3)), ("o", os_),
                 ("g", gs), ("lse", ls)]
        outs[0] = lambda res: split(res[0])
    mask = a.get("grad_input_mask")
    plans = [Plan("attention_backward", ins_q if w == "q" else ins, outs[i],
                  dict(attrs, which=w), "attention_grad", label="d" + w)
             for i, w in enumerate("qkv") if mask is None or mask[i]]
    if not plans:
        raise Skip("no input gradient asked for (grad_input_mask)")
    if hq != hk and attrs["p_format"] != "fp32":
        # grouped dk, dv: ATen's flash backward computes each query head's
        # part in the output type (dk_expanded) and sums them; cuDNN's bf16
        # dv measured on the GPU needs the same allowance
        for p in plans:
            if p.attrs["which"] != "q":
                p.suffix = ":partial=%s" % attrs["p_format"]
    plans[0].more = plans[1:]
    return plans[0]


# the tensors judged (philox seeds, offsets and cumulative sequence
# lengths, empty or integer, are not the op's data; a bias the mapper rejects)
_attention_backward.data_args = ("grad_out", "grad_out_", "query", "key", "value", "out",
                                 "logsumexp")


def _gqa(q, k, v):
    """q, k, v and the output's view for the oracle: with grouped-query
    attention (fewer key/value heads, enable_gqa: query head h reads
    key/value head h // G) the head dim is split into (kv heads, G) in q
    and the output and k, v get a size-1 G dim that the oracle broadcasts
    — views only, no copy on the device."""
    hq = q.shape[-3] if q.dim() >= 3 else 1
    hk = k.shape[-3] if k.dim() >= 3 else 1
    if q.dim() < 3 or hq == hk:
        return q, k, v, _first
    if k.dim() != q.dim() or v.shape[-3] != hk or hk == 0 or hq % hk:
        raise Skip("attention heads of query and key/value not in groups")
    g = hq // hk

    def split(t):
        return t.unflatten(-3, (hk, g))
    # [.., Hkv, S, D] -> [.., Hkv, 1, S, D]
    return split(q), k.unsqueeze(-3), v.unsqueeze(-3), lambda res: split(_first(res))


from kcheck.torch import ops_optim  # noqa: E402  (its mappers build on Plan and Skip)

# (ATen op names, oracle op, mapper, note) — every overload of each name
# (default, out, in-place) goes through the same mapper.
ROWS = [
    (["mm"], "matmul", _mm, "linear/matmul forward and backward"),
    (["addmm"], "matmul", _addmm, "linear with bias; C = beta*self (broadcast)"),
    (["bmm"], "matmul", _mm, "batched; the math path of attention"),
    (["baddbmm"], "matmul", _baddbmm, ""),
    (["_scaled_dot_product_flash_attention"], "attention", _attention("flash"),
     "no dropout; P cast to the input type"),
    (["_scaled_dot_product_efficient_attention"], "attention", _attention("efficient"),
     "no dropout, no bias tensor"),
    (["_scaled_dot_product_cudnn_attention"], "attention", _attention("cudnn"),
     "no dropout, no bias tensor"),
    (["_scaled_dot_product_flash_attention_for_cpu"], "attention", _attention("cpu"),
     "no dropout, no mask tensor"),
    (["_softmax"], "softmax", _softmax_family("softmax"),
     "on the CPU in bf16/fp16 (not half_to_float): passes through"),
    (["_safe_softmax"], "softmax", _safe_softmax, "SDPA's math path: rows of -inf give 0 "
     "(masked_row=zero)"),
    (["_log_softmax"], "log_softmax", _softmax_family("log_softmax"),
     "on the CPU in bf16/fp16 (not half_to_float): passes through"),
    (["logsumexp"], "logsumexp", _logsumexp, "one dim, keepdim=False"),
    (["native_layer_norm"], "layer_norm", _layer_norm, "normalized over the last dim"),
    (["_fused_rms_norm"], "rms_norm", _rms_norm, "normalized over the last dim"),
    (["sum"], "sum", _reduce("sum"), "one dim, adjacent dims or all of a contiguous tensor"),
    (["mean"], "mean", _reduce("mean"), "one dim, adjacent dims or all of a contiguous tensor"),
    (["cumsum"], "cumsum", _cumsum, "each prefix within the bound of any association a scan "
     "takes, in acc_type or the tensor's type"),
    (["var", "var_mean"], "var", _var("var"), "correction / unbiased honoured; dims as mean; "
     "var_mean: the var (any Welford order or two passes)"),
    (["std", "std_mean"], "std", _var("std"), "as var"),
    (["amax"], "max", _reduce("max"), "one dim"),
    (["amin"], "min", _reduce("min"), "one dim"),
    (["linalg_vector_norm"], "norm2", _norm, "ord=2"),
    (["add"], "add", _binary("add"), "alpha=1"),
    (["sub"], "sub", _binary("sub"), "alpha=1"),
    (["mul"], "mul", _binary("mul"), ""),
    (["div"], "div", _binary("div"), "true division (no rounding_mode)"),
    (["neg"], "neg", _unary("neg"), ""),
    (["abs"], "abs", _unary("abs"), ""),
    (["relu"], "relu", _unary("relu"), ""),
    (["gelu"], "gelu_erf / gelu_tanh", _gelu, "approximate='none' and 'tanh'; the erf form "
     "on the CPU below float64 passes through (ATen's vectorized erf)"),
    (["silu"], "silu", _unary("silu"), ""),
    (["sigmoid"], "sigmoid", _unary("sigmoid"), ""),
    (["tanh"], "tanh", _unary("tanh"), ""),
    (["exp"], "exp", _unary("exp"), ""),
    (["log"], "log", _unary("log"), ""),
    (["sqrt"], "sqrt", ops_optim.sqrt_plan, "CPU fp32: within 1 ulp (ATen's vectorized sqrt); "
     "CPU fp64 passes through"),
    (["rsqrt"], "rsqrt", _unary("rsqrt"), ""),
    (["clamp"], "clamp", _clamp("min", "max"), "number bounds; exact"),
    (["clamp_min"], "clamp", _clamp("min", None), "number bound; exact"),
    (["clamp_max"], "clamp", _clamp(None, "max"), "number bound; exact"),
    (["embedding"], "index_select", _embedding, "the selected rows bit for bit"),
    (["index_select"], "index_select", _index_select, "1-D index; bit for bit"),
    (["embedding_dense_backward"], "embedding_backward", _embedding_backward,
     "row sums in any order (CUDA's may vary run to run); no scale_grad_by_freq"),
    (["where"], "where", _where, "c ? a : b, exact (a number converted as c10 does)"),
    (["masked_fill"], "where", _masked_fill, "where(mask, value, self), exact"),
    (["addcmul"], "addcmul", _addc("addcmul"), "self + value*t1*t2: any order of the product, "
     "fused or not"),
    (["addcdiv"], "addcdiv", _addc("addcdiv"), "self + value*t1/t2: value*(t1/t2) or "
     "(value*t1)/t2, fused or not"),
    (["lerp"], "lerp", _lerp, "ATen's two branches (weight below 0.5 in magnitude or not), "
     "fused or not"),
    (["nll_loss_forward"], "nll_loss", _nll_loss, "reduction none (bitwise), sum, mean; "
     "ignore_index, weight; cross_entropy is _log_softmax then this"),
    (["nll_loss_backward"], "nll_loss_backward", _nll_loss_backward, "-(g/total_weight)*w at "
     "each row's class, zero elsewhere"),
    (["nll_loss2d_forward"], "nll_loss", _nll_loss2d, "[N, C, H, W] as [N, C, H*W]: none "
     "(bitwise), sum, mean bounded for ATen's CPU cascade and CUDA atomic adds in the input's "
     "type; total_weight overflow inconclusive; cross_entropy on images"),
    (["nll_loss2d_backward"], "nll_loss_backward", _nll_loss2d_backward, "-(g/total_weight)*w "
     "at each (n, t, h, w), zero elsewhere"),
    (["_to_copy"], "copy", _to_copy, "dtype conversions: one correct rounding (fp64 to a 16-bit "
     "type through fp32, as c10 converts)"),
    (["copy_"], "copy", _copy_, "into the destination's dtype, src broadcast"),
    (["native_layer_norm_backward"], "layer_norm_backward, layer_norm_dweight, layer_norm_dbias",
     _norm_backward("layer_norm_backward"), "dx over the last dim; dweight, dbias: column sums "
     "in any order"),
    (["_fused_rms_norm_backward"], "rms_norm_backward, rms_norm_dweight",
     _norm_backward("rms_norm_backward"), "dx over the last dim; dweight: column sums in any "
     "order"),
    (["sigmoid_backward"], "sigmoid_backward", _grad("sigmoid_backward"), "g*(1-y)*y"),
    (["tanh_backward"], "tanh_backward", _grad("tanh_backward"), "g*(1-y*y)"),
    (["threshold_backward"], "threshold_backward", _grad("threshold_backward"),
     "relu's gradient: x <= threshold ? 0 : g, exact"),
    (["silu_backward"], "silu_backward", _grad("silu_backward"), ""),
    (["gelu_backward"], "gelu_erf_backward / gelu_tanh_backward", _gelu_backward,
     "approximate='none' and 'tanh'; the erf form on the CPU below float64 passes through"),
    (["_softmax_backward_data"], "softmax_backward", _softmax_grad("softmax_backward"),
     "y*(g - sum(g*y)), bound for ATen's g*y - y*sum"),
    (["_log_softmax_backward_data"], "log_softmax_backward",
     _softmax_grad("log_softmax_backward"), "g - exp(y)*sum(g)"),
    (["_scaled_dot_product_flash_attention_backward"], "attention_backward", _attention_backward,
     "dq, dk, dv; no dropout; P and dS cast to the input type; P from the saved logsumexp"),
    (["_scaled_dot_product_efficient_attention_backward"], "attention_backward",
     _attention_backward, "dq, dk, dv asked for; no dropout, no bias tensor"),
    (["_scaled_dot_product_cudnn_attention_backward"], "attention_backward", _attention_backward,
     "dq, dk, dv; no dropout, no bias tensor"),
    (["_scaled_dot_product_flash_attention_for_cpu_backward"], "attention_backward",
     _attention_backward, "dq, dk, dv; fp32 and fp64 (16-bit types: ATen's CPU kernel "
     "accumulates in them across blocks)"),
    (["convolution", "_convolution", "convolution_overrideable"], "conv / conv_transpose",
     _conv.convolution, "1-d to 3-d, stride, padding, dilation, groups, bias, transposed "
     "(output_padding); exact dot per output, bound for any order; TF32 per "
     "cudnn.allow_tf32; CUDA: beyond the dot bound inconclusive (cuDNN may pick Winograd/FFT)"),
    (["convolution_backward"], "conv_transpose / conv, conv_weight_grad, conv_bias_grad",
     _conv.convolution_backward, "grad_input, grad_weight, grad_bias per output_mask, each "
     "judged (Plan.more); transposed too"),
    (["cudnn_convolution"], "conv", _conv.cudnn_convolution(False),
     "called directly; its allow_tf32 argument decides TF32"),
    (["cudnn_convolution_transpose"], "conv_transpose", _conv.cudnn_convolution(True),
     "called directly; its allow_tf32 argument decides TF32"),
    (["mkldnn_convolution"], "conv", _conv.mkldnn_convolution, "called directly (CPU)"),
]
ROWS += ops_optim.ROWS  # _foreach_* lists, fused optimizer updates

# batch norm and pooling (ops_cnn.py)
from kcheck.torch import ops_cnn  # noqa: E402  (its mappers build this module's Plans)
ROWS += ops_cnn.ROWS
# copies, fills, placed gradients, cat, pow (ops_copy.py)
from kcheck.torch import ops_copy  # noqa: E402  (its mappers build this module's Plans)
ROWS += ops_copy.ROWS
INDEX_OUTPUTS = ops_cnn.INDEX_OUTPUTS  # judged outputs that are index tensors

# Gates that do not apply to an ATen op, with the reason (the op_check
# record says "not_applicable" and why). The oracle's special-value rules
# for gelu and silu take the limit of the math (gelu(-inf) = -0); ATen
# evaluates its documented formula in IEEE arithmetic (x * Phi(x),
# x * sigmoid(x)), which gives NaN at -inf: PyTorch's result, not a defect.
# (rms_norm and attention follow IEEE in the oracle: 0 beside an inf in a
# norm's row, weight 0 for a -inf score, NaN or Inf in V per column.)
NOT_APPLICABLE = {
    "gelu": {"nonfinite": "ATen evaluates x*Phi(x) in IEEE arithmetic: NaN at -inf, where the "
                          "oracle's rule is the limit -0"},
    "silu": {"nonfinite": "ATen evaluates x*sigmoid(x) in IEEE arithmetic: NaN at -inf, where "
                          "the oracle's rule is the limit -0"},
}

# gates.def's op column in the order the binding runs the gates: on the
# application's call, then re-runs of the op on kcheck's tensors (generated
# inputs; layouts: the call's own values in other layouts) (a documented-
# nondeterministic op is named apart: nondet.py)
OP_KINDS = ("oracle", "inputs", "trials", "poison", "guards", "shapes", "layouts")
GENERATED_GATES = tuple(g.id for k in OP_KINDS[2:] for g in _defs.GATES if g.op == k)

# Every gate that runs the op on generated inputs (coverage, bounds and
# shapes included) would hand it random indices: out of range, a
# device-side assert that ends the program's CUDA context.
_GENERATED_INDEX = "generated inputs would hold out-of-range indices (a device-side assert)"
for _n in ("embedding", "index_select", "embedding_dense_backward"):
    NOT_APPLICABLE[_n] = {g: _GENERATED_INDEX for g in GENERATED_GATES}
# The generators fill float tensors: a condition or mask (bool) has none.
_GENERATED_COND = "the generators make float inputs, not a bool condition"
# nll_loss, nll_loss2d: random class indices (out of range: a device-side assert)
for _n in ("nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward",
           "nll_loss2d_backward"):
    NOT_APPLICABLE[_n] = {g: _GENERATED_INDEX for g in GENERATED_GATES}
for _n in ("where", "masked_fill"):
    NOT_APPLICABLE[_n] = {g: _GENERATED_COND for g in GENERATED_GATES}
# Attention's backward reads the forward's output and logsumexp of q, k, v:
# generated tensors would not be them (the oracle finds the logsumexp off
# and says inconclusive)
_GENERATED_FWD = "generated inputs are not the forward's output and logsumexp of q, k, v"
for _n in ("_scaled_dot_product_flash_attention_backward",
           "_scaled_dot_product_efficient_attention_backward",
           "_scaled_dot_product_cudnn_attention_backward",
           "_scaled_dot_product_flash_attention_for_cpu_backward"):
    NOT_APPLICABLE[_n] = {g: _GENERATED_FWD for g in GENERATED_GATES}
# fused optimizers: generated state is outside the update's domain; fills
# (ops_copy): no input values to generate (by the table's name and by
# Entry's, which drops the trailing underscore)
for _n, _whys in [*ops_optim.NOT_APPLICABLE.items(), *ops_copy.NOT_APPLICABLE.items()]:
    _na = {}
    for _kind, _why in _whys.items():
        _na.update({g.id: _why for k in OP_KINDS for g in _defs.GATES if g.op == k and
                    (k == _kind or (_kind == "generated" and g.id in GENERATED_GATES))})
    NOT_APPLICABLE[_n] = NOT_APPLICABLE[_n.rstrip("_")] = _na
for _n, _why in ops_cnn.NOT_APPLICABLE_BY.items():
    NOT_APPLICABLE[_n] = {g: _why for g in GENERATED_GATES}

# Overloads that are not the op's math (rounding modes, scalar-only forms).
EXCLUDED_OVERLOADS = {"div.Tensor_mode", "div.Scalar_mode", "div_.Tensor_mode",
                      "div_.Scalar_mode", "div.out_mode", "add.default", "sub.default",
                      "mul.default", "div.default", "sum.int",
                      "where.default"}  # where(condition): nonzero's indices

# What the oracle has no op for, with the reason (docs/torch.md table).
UNCOVERED = [
    ("_scaled_dot_product_*_attention_backward with dropout or a bias tensor; the CPU kernel "
     "in fp16/bf16", "dropout's random mask is not an input; the CPU kernel accumulates across "
     "blocks in the 16-bit type"),
    ("_foreach_maximum, _foreach_minimum of two lists (amsgrad); the other unary list ops "
     "(trigonometric, erf, log1p, rounding)", "no oracle op for their element op (the "
     "optimizers' foreach path is covered otherwise: add, sub, mul, div, lerp, addcmul, addcdiv, "
     "sqrt, neg, norm, zero_, maximum and minimum with a number)"),
    ("_foreach_pow", "CUDA's multi-tensor kernel (power_functor) calls pow for every exponent, "
     "without pow.Tensor_Scalar's special cases: no exact oracle op"),
    ("_foreach_reciprocal", "its CUDA multi-tensor functor is not verified to compute 1/x in "
     "opmath as aten::reciprocal does: passed through rather than risk a false verdict"),
    ("pow at other exponents (3, -2, any other), with a tensor exponent; CPU float16 pow "
     "(but exponents 1 and 0)", "x*x*x, 1/(x*x) round more than once and pow() has no "
     "documented accuracy: no oracle op; ATen's CPU float16 pow calls std::pow"),
    ("max_pool3d, avg_pool3d, fractional and lp pooling, max_unpool", "no oracle op (2-D "
     "max, avg and adaptive pools are judged)"),
    ("backend convolutions below aten.convolution (_slow_conv2d_forward, "
     "_nnpack_spatial_convolution, _conv_depthwise2d, slow_conv_dilated*, miopen_*)",
     "a dispatch mode sees aten.convolution above them; called directly: no row"),
    ("cudnn_convolution_relu, cudnn_convolution_add_relu", "fused epilogues: no oracle op"),
    ("gather, scatter, index_add", "data movement: no numerical "
     "contract beyond exact copies (determinism still applies at kernel level)"),
    ("view ops", "no values computed: views of their input (bounds and determinism still "
     "apply at kernel level)"),
]


def _parse_schema(schema):
    """[(name, default, is_tensor_kind)] of a schema's arguments."""
    out = []
    for arg in schema.arguments:
        default = arg.default_value if arg.has_default_value() else _REQUIRED
        out.append((arg.name, default, arg.kwarg_only))
    return out


_REQUIRED = object()
_BY_NAME = {}
for names, oracle, fn, note in ROWS:
    for n in names:
        _BY_NAME[n] = fn


class Entry:
    """One OpOverload's row: its mapper and its argument names."""
    __slots__ = ("name", "mapper", "params", "inplace", "has_out", "written", "contract",
                 "not_applicable")

    def __init__(self, name, mapper, schema):
        self.name, self.mapper = name, mapper
        self.contract = None
        base = schema.name.split("::", 1)[-1].rstrip("_")
        self.not_applicable = NOT_APPLICABLE.get(base, {}) if schema.name.startswith("aten::") \
            else {}
        # arguments the op declares it writes (alias_info.is_write), which
        # the immutability check leaves out
        self.written = {a.name for a in schema.arguments
                        if a.alias_info is not None and a.alias_info.is_write}
        self.params = _parse_schema(schema)
        self.inplace = schema.name.endswith("_") or name.split(".")[0].endswith("_")
        self.has_out = any(p[0] == "out" for p in self.params)

    def unbind(self, a):
        """(args, kwargs) for the bound arguments a (bind's inverse):
        keyword-only arguments by name, the others by position."""
        args, kwargs = [], {}
        for name, default, kwarg_only in self.params:
            if name not in a:
                break
            if kwarg_only:
                kwargs[name] = a[name]
            else:
                args.append(a[name])
        return tuple(args), kwargs

    def bind(self, args, kwargs):
        a = {}
        for i, (name, default, _) in enumerate(self.params):
            if i < len(args):
                a[name] = args[i]
            elif name in kwargs:
                a[name] = kwargs[name]
            elif default is not _REQUIRED:
                a[name] = default
        return a


def entry_for(func):
    """The table's Entry for an OpOverload, or None when the op is not
    covered (or is an excluded overload)."""
    schema = func._schema
    base = schema.name.split("::", 1)[-1]
    full = "%s.%s" % (base, func._overloadname)
    if full in EXCLUDED_OVERLOADS:
        return None
    fn = _BY_NAME.get(base) or (_BY_NAME.get(base[:-1]) if base.endswith("_") else None)
    if fn is None:
        return None
    return Entry("aten::" + full if schema.name.startswith("aten::") else schema.name + "." +
                 func._overloadname, fn, schema)


# ---------------------------------------------------------------- shapes

# The shapes gate: the same op at other, adversarial shapes (size 1, odd
# sizes, one past a tile, long rows), on generated inputs. A shaper takes
# the call's bound arguments and returns [(label, {argument: new value})]:
# a new value is a trials.TensorSpec-like layout (shape, dtype, device) or
# a non-tensor argument. Ops without a shaper: "not_applicable".


def Layout(like, shape):
    """A contiguous layout of a new shape for a generated tensor like
    `like` (trials.TensorSpec)."""
    from kcheck.torch.trials import TensorSpec
    return TensorSpec.contiguous(like, shape)


def _dim(v, own):
    """A matmul row's dimension: a number, or the call's own M, K or N
    with an offset ("K + 1")."""
    if isinstance(v, int):
        return v
    name, _, off = v.replace(" ", "").partition("+")
    return own[name] + int(off or 0)


def _mnk(m, k, n):
    """The matmul shapes of gates/shape_rules.def for a call's M, K, N."""
    own = {"M": m, "K": k, "N": n}
    return [(lab, (_dim(a, own), _dim(b, own), _dim(c, own)))
            for lab, a, b, c in _defs.SHAPE_MNK]


def _shapes_mm(a):
    x, y = a["self"], a["mat2"]
    batch = tuple(x.shape[:-2])
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    return [(lab, {"self": Layout(x, batch + (mm, kk)), "mat2": Layout(y, batch + (kk, nn))})
            for lab, (mm, kk, nn) in _mnk(m, k, n)]


def _shapes_addmm(first, second):
    def f(a):
        x, y, c = a[first], a[second], a["self"]
        batch = tuple(x.shape[:-2])
        m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
        out = []
        for lab, (mm, kk, nn) in _mnk(m, k, n):
            cs = (nn,) if c.dim() == 1 else batch + (mm, nn)
            if c.dim() not in (1, len(batch) + 2):
                return []
            out.append((lab, {first: Layout(x, batch + (mm, kk)),
                              second: Layout(y, batch + (kk, nn)), "self": Layout(c, cs)}))
        return out
    return f


_EW_SHAPES = _defs.SHAPE_EW  # gates/shape_rules.def


def _shapes_elementwise(a):
    ts = {k: v for k, v in a.items() if hasattr(v, "dim") and not
          (v.dim() == 0 and v.device.type == "cpu")}
    if not ts or len({tuple(t.shape) for t in ts.values()}) != 1:
        return []  # broadcasting operands: no single shape to vary
    return [(lab, {k: Layout(t, sh) for k, t in ts.items()}) for lab, sh in _EW_SHAPES]


# The rows of the ATen softmax and gradient shapers (gates/shape_rules.def)
_GRAD_ROW_SHAPES = tuple((lab, (r, n)) for lab, r, n, aten in _defs.SHAPE_ROWS if aten)


def _shapes_softmax(a):
    x = a["self"]
    return [(lab, {"self": Layout(x, sh), "dim": 1}) for lab, sh in _GRAD_ROW_SHAPES]


def _shapes_softmax_grad(a):
    g, y = a["grad_output"], a["output"]
    return [(lab, {"grad_output": Layout(g, sh), "output": Layout(y, sh), "dim": 1})
            for lab, sh in _GRAD_ROW_SHAPES]


def _shapes_norm_grad(stats):
    """native_layer_norm_backward (stats mean, rstd) / _fused_rms_norm_backward
    (rstd) at other row counts and lengths, the statistics and weight to
    match."""
    def f(a):
        g, x = a["grad_out"], a["input"]
        out = []
        for lab, (r, n) in _GRAD_ROW_SHAPES:
            new = {"grad_out": Layout(g, (r, n)), "input": Layout(x, (r, n)),
                   "normalized_shape": [n]}
            for st in stats:
                new[st] = Layout(a[st], (r, 1))
            if a.get("weight") is not None:
                new["weight"] = Layout(a["weight"], (n,))
            if a.get("bias") is not None:
                new["bias"] = Layout(a["bias"], (n,))
            out.append((lab, new))
        return out
    return f


SHAPERS = {"mm": _shapes_mm, "bmm": _shapes_mm, "addmm": _shapes_addmm("mat1", "mat2"),
           "baddbmm": _shapes_addmm("batch1", "batch2"), "_softmax": _shapes_softmax,
           "_log_softmax": _shapes_softmax, "_softmax_backward_data": _shapes_softmax_grad,
           "_log_softmax_backward_data": _shapes_softmax_grad,
           "native_layer_norm_backward": _shapes_norm_grad(("mean", "rstd")),
           "_fused_rms_norm_backward": _shapes_norm_grad(("rstd",))}
for _n in ("add", "sub", "mul", "div", "neg", "abs", "relu", "gelu", "silu", "sigmoid", "tanh",
           "exp", "log", "sqrt", "rsqrt", "sigmoid_backward", "tanh_backward",
           "threshold_backward", "silu_backward", "gelu_backward", "_to_copy", "clamp",
           "clamp_min", "clamp_max", "addcmul", "addcdiv", "lerp") + ops_copy.SHAPED:
    SHAPERS[_n] = _shapes_elementwise


# The op classes of oracle/ops.def, for the shapes a torch_op contract's
# op implies (a custom op without a Python shaper).
_ROW_OPS = _defs.oracle_ops("softmax") | _defs.oracle_ops("reduce")  # oracle/ops.def
_NORM_OPS = _defs.oracle_ops("norm")
_CNN_OPS = _defs.oracle_ops("batch_norm") | _defs.oracle_ops("pool")
# gates/shape_rules.def: the rows of a row-wise class, attention's lengths
_CLASS_ROW_SHAPES = [(lab, r, n) for lab, r, n, _ in _defs.SHAPE_ROWS]
_SEQ_SHAPES = _defs.SHAPE_SEQ


def _lead(x, rows):
    """x's shape with its last two dims (rows, ...) or its last one alone."""
    return tuple(1 for _ in range(max(x.dim() - 2, 0))) + ((rows,) if x.dim() >= 2 else ())


def _held_label(row, tied):
    """A matmul row's label with the dims tied to a held tensor named
    (the call's own): ("3x17x5", {"K", "N"}) -> "3xKxN"."""
    parts = []
    for name, v in zip("MKN", row[1:]):
        if name in tied:
            parts.append(name)
        elif isinstance(v, int):
            parts.append(str(v))
        else:
            v = v.replace(" ", "")
            parts.append(v if v.isalpha() else "(%s)" % v)
    return "x".join(parts)


# ---------------------------------------------------------------- view chains

# The view ops a torch_op contract's args entry may apply to its argument,
# {arg: NAME, view: [[op, int...], ...]} (docs/contracts.md;
# contract/view_ops.def, which the C loader checks too): each changes
# shape or layout only, never a value, so the oracle input is the
# argument's own elements rearranged. Applied as the Tensor methods of
# the same name.
VIEW_OPS = _defs.VIEW_OPS
# The steps whose integers are sizes: written as numbers (a -1 excepted)
# the reference's sizes at another shape are unknown from a trace alone
# (x.view(x.size(0), -1) and x.view(16, -1) trace alike).
_SIZED = _defs.VIEW_OPS_SIZED


# What PyTorch raises for a view that does not apply (a size that does
# not divide, a dim out of range, a view of a non-contiguous tensor).
_VIEW_ERRORS = (RuntimeError, IndexError, TypeError, ValueError)


def arg_ref(ref):
    """(argument, view chain) of an args entry: a name (or position, or
    constant) alone, or {"arg": name, "view": [[op, int...], ...]}."""
    if isinstance(ref, dict):
        return str(ref.get("arg")), [list(s) for s in ref.get("view") or ()]
    return ref, []


def chain_text(chain):
    """A view chain as text: "transpose(1, 2).view(-1, 64)"."""
    return ".".join("%s(%s)" % (s[0], ", ".join(str(int(i)) for i in s[1:])) for s in chain)


def apply_view(t, chain):
    """t through the view chain (Tensor methods: a view where PyTorch
    makes one; contiguous and clone copy)."""
    for step in chain:
        op, ints = step[0], [int(i) for i in step[1:]]
        if op not in VIEW_OPS:
            raise Skip("unknown view op '%s'" % op)
        if op in ("view", "reshape", "permute", "expand"):
            t = getattr(t, op)(ints)
        else:
            t = getattr(t, op)(*ints)
    return t


def literal_sizes(chain):
    """The chain's steps with sizes written as numbers (not -1), as text;
    empty where every step follows its input's shape."""
    return [chain_text([s]) for s in chain
            if s[0] in _SIZED and any(int(i) != -1 for i in s[1:])]


def _meta(t, shape=None):
    import torch
    if shape is None:
        return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta")
    return torch.empty(tuple(shape), dtype=t.dtype, device="meta")


def unview_shape(want, chain, like):
    """The argument's shape that the chain maps to `want`, or None (like:
    the argument at the call, whose shapes tell where squeeze() dropped a
    dim). Each step undone: a permutation of dims, a size-1 dim added or
    removed, an expand of -1s; view, reshape and expand with sizes as
    numbers are not undone (literal_sizes). The answer is checked by
    applying the chain to it: it must give exactly `want`."""
    shapes, t = [], _meta(like)
    try:
        for step in chain:  # each step's input shape at the call
            shapes.append(tuple(t.shape))
            t = apply_view(t, [step])
    except _VIEW_ERRORS:  # the chain does not apply to the argument
        return None
    try:
        w = _undo(list(want), chain, shapes)
    except (IndexError, ValueError, ZeroDivisionError):  # a dim the shape does not have
        return None
    if w is None:
        return None
    try:
        got = tuple(apply_view(_meta(like, w), chain).shape)
    except _VIEW_ERRORS:
        return None
    return tuple(w) if got == tuple(want) else None


def _undo(w, chain, shapes):
    """unview_shape's steps undone, last first (shapes: each step's input
    shape at the call); None where one cannot be."""
    for step, before in zip(reversed(chain), reversed(shapes)):
        op, ints = step[0], [int(i) for i in step[1:]]
        n = len(w)
        if op in ("contiguous", "clone") or (op == "t" and n < 2):
            continue
        if op in _SIZED:
            if any(i != -1 for i in ints) or op != "expand":
                return None
        elif op == "t":
            w = w[::-1]
        elif op == "transpose":
            a, b = ints[0] % n, ints[1] % n
            w[a], w[b] = w[b], w[a]
        elif op == "permute":
            if len(ints) != n:
                return None
            src = [None] * n
            for i, d in enumerate(ints):
                src[d % n] = w[i]
            w = src
        elif op == "unsqueeze":
            d = ints[0] % n
            if w[d] != 1:
                return None
            del w[d]
        elif op == "squeeze":
            ones = [d for d, s in enumerate(before) if s == 1]
            if ints:
                ones = [d for d in ones if d == ints[0] % len(before)]
            if len(w) + len(ones) != len(before):
                return None
            for d in ones:
                w.insert(d, 1)
    return w


def _chained_shaper(c, held):
    """contract_shaper for a contract whose args name views: the class's
    variants worked out on the oracle inputs (each chain applied to its
    argument's layout), then mapped back to the op's arguments through
    the chains (unview_shape). A variant no chain maps back, or that
    gives one argument two shapes, is left out; where the chains have
    sizes written as numbers (literal_sizes) none is kept and the
    shaper's none_reason says why."""
    from kcheck.torch.trials import TensorSpec
    args = dict(c.get("args") or {})
    chains = {n: arg_ref(r) for n, r in args.items() if isinstance(r, dict)}
    key = {n: "\0view %s" % n for n in chains}  # an oracle input's own key, no argument's
    inner = dict(c, args={n: key.get(n, r) for n, r in args.items()})
    derived = _class_shaper(inner, held=frozenset(held) | {
        key[n] for n, (arg, _) in chains.items() if arg in held})
    viewed = {arg for arg, _ in chains.values()}
    sized = ["%s (%s.%s)" % (n, arg, chain_text(ch)) for n, (arg, ch) in chains.items()
             if literal_sizes(ch)]

    if derived is None:
        return None  # no class rule (gated_delta, batch norm, pooling)

    def shaper(a):
        if sized:
            shaper.none_reason = (
                "the view chain of %s has sizes written as numbers: the reference's own sizes at "
                "another shape are unknown from its trace, so no shape variant applies"
                % ", ".join(sized))
            return []
        # the oracle inputs in place of the arguments reached only through
        # a chain (an elementwise class varies every tensor it is given)
        plain = {r for r in args.values() if not isinstance(r, dict)}
        b = {k: v for k, v in a.items() if k in plain or k not in viewed}
        for n, (arg, ch) in chains.items():
            t = a.get(arg)
            if t is None or not hasattr(t, "dim"):
                return []
            b[key[n]] = TensorSpec.contiguous(t, apply_view(_meta(t), ch).shape)
        out = []
        for label, changes in derived(b):
            mapped = {}
            for k, v in changes.items():
                n = next((n for n in chains if key[n] == k), None)
                if n is not None:
                    arg, ch = chains[n]
                    # an elementwise class's sizes are 1-D: at the oracle
                    # input's rank (leading 1s), so that its chain applies
                    want = tuple(v.shape)
                    want = (1,) * (b[k].dim() - len(want)) + want
                    shape = unview_shape(want, ch, a[arg])
                    if shape is None:
                        mapped = None
                        break
                    k, v = arg, Layout(a[arg], shape)
                if k in mapped and tuple(getattr(mapped[k], "shape", ())) != \
                        tuple(getattr(v, "shape", ())):
                    mapped = None  # one argument, two shapes
                    break
                mapped[k] = v
            if mapped:
                out.append((label, mapped))
        if not out:
            shaper.none_reason = ("no shape variant of the op's class maps back through the view "
                                  "chains of %s" % ", ".join(sorted(chains)))
        return out
    shaper.none_reason = None
    return shaper


def contract_shaper(c, held=()):
    """The shapes a torch_op contract's op implies; where its args name
    views of the op's arguments, mapped back through the chains
    (_chained_shaper). See _class_shaper."""
    if any(isinstance(r, dict) for r in (c.get("args") or {}).values()):
        return _chained_shaper(c, held)
    return _class_shaper(c, held)


def _class_shaper(c, held=()):
    """The shapes a torch_op contract's op implies, from its class: size 1,
    odd sizes, one past a power of two, long rows, each input of the op
    (by its args) laid out for them; None for ops without a rule
    (gated_delta, batch norm, pooling). Elementwise: every tensor argument of one shape;
    row-wise (softmax family, reductions, norms): x over its last axis
    (attr axis absent or last), a norm's weight and bias along; matmul: A
    [.., M, K], B [.., K, N] (transpose_a/b honoured), bias [N] or c
    [.., M, N]; attention: the sequence length of q, k and v. The
    contract's own shapes ({oracle input: dims}) are added to them.
    held: the op's arguments held as constants (weights: hold_constants),
    whose shapes stay: a matmul varies only the dims no held operand has
    (a Linear's M, its K and N tied to the weight: each row's M with the
    call's own K and N), a norm only its rows (n tied to its weight and
    bias); the other classes' variants are left to the caller's filter."""
    held = frozenset(held)
    op = (c.get("op") or "").lower()
    args = dict(c.get("args") or {})
    args.pop("out", None)
    attrs = c.get("attrs") or {}
    if op in ("gelu", "swish"):
        op = "gelu_erf" if op == "gelu" else "silu"

    def ref(name):
        return args.get(name)

    def rows(a):
        x = a.get(ref("x")) if ref("x") else None
        if x is None or not hasattr(x, "dim") or x.dim() < 1:
            return []
        axis = int(attrs.get("axis", -1))
        if axis not in (-1, x.dim() - 1):
            return []
        rows_only = any(ref(side) in held for side in ("weight", "bias") if ref(side))
        out, seen = [], set()
        for lab, r, n in _CLASS_ROW_SHAPES:
            if rows_only:  # n tied to a held weight or bias: the rows vary
                n, lab = x.shape[-1], "%dxN" % r
                shape = _lead(x, r) + (n,)
                if shape == tuple(x.shape) or shape in seen:
                    continue
                seen.add(shape)
            ch = {ref("x"): Layout(x, _lead(x, r) + (n,))}
            for side in ("weight", "bias"):
                t = a.get(ref(side)) if ref(side) else None
                if t is not None and hasattr(t, "dim"):
                    if t.dim() != 1:
                        return []
                    ch[ref(side)] = Layout(t, (n,))
            out.append((lab, ch))
        return out

    def mm(a):
        x, y = a.get(ref("a")), a.get(ref("b"))
        if x is None or y is None or not hasattr(x, "dim") or x.dim() < 2 or y.dim() < 2:
            return []
        ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
        bx, by = tuple(x.shape[:-2]), tuple(y.shape[:-2])
        m = x.shape[-1] if ta else x.shape[-2]
        k = x.shape[-2] if ta else x.shape[-1]
        n = y.shape[-2] if tb else y.shape[-1]
        # the dims a held operand has keep the call's own value
        tied = set()
        for side, dims in (("a", "MK"), ("b", "KN"), ("bias", "N"), ("c", "MN")):
            t = a.get(ref(side)) if ref(side) else None
            if ref(side) in held and t is not None:
                tied.update(dims if side != "c" or t.dim() >= 2 else "N")
        mnk, seen = [], {(m, k, n)}
        for row, (lab, dims) in zip(_defs.SHAPE_MNK, _mnk(m, k, n)):
            if tied:
                dims = tuple(own if name in tied else d
                             for name, own, d in zip("MKN", (m, k, n), dims))
                if dims in seen:
                    continue
                seen.add(dims)
                lab = _held_label(row, tied)
            mnk.append((lab, dims))
        out = []
        for lab, (mm_, kk, nn) in mnk:
            ch = {ref("a"): Layout(x, bx + ((kk, mm_) if ta else (mm_, kk))),
                  ref("b"): Layout(y, by + ((nn, kk) if tb else (kk, nn)))}
            for side in ("bias", "c"):
                t = a.get(ref(side)) if ref(side) else None
                if t is None or not hasattr(t, "dim"):
                    continue
                if t.dim() == 1:
                    ch[ref(side)] = Layout(t, (nn,))
                elif t.dim() >= 2:
                    ch[ref(side)] = Layout(t, tuple(t.shape[:-2]) + (mm_, nn))
            out.append((lab, ch))
        return out

    def attention(a):
        q, k, v = (a.get(ref(n)) if ref(n) else None for n in ("q", "k", "v"))
        if any(t is None or not hasattr(t, "dim") or t.dim() < 2 for t in (q, k, v)):
            return []
        if q.shape[-2] != k.shape[-2] and attrs.get("causal"):
            return []
        return [(lab, {ref("q"): Layout(q, tuple(q.shape[:-2]) + (sl, q.shape[-1])),
                       ref("k"): Layout(k, tuple(k.shape[:-2]) + (sl, k.shape[-1])),
                       ref("v"): Layout(v, tuple(v.shape[:-2]) + (sl, v.shape[-1]))})
                for lab, sl in _SEQ_SHAPES]

    if op in _CNN_OPS:
        derived = None  # batch norm's channels, a pool's window: no class rule
    elif op in _ROW_OPS or op in _NORM_OPS:
        derived = rows
    elif op == "matmul":
        derived = mm
    elif op == "attention":
        derived = attention
    elif op and op not in ("gated_delta", "attention_backward"):
        derived = _shapes_elementwise
    else:
        derived = None
    own = c.get("shapes") or []
    if not own:
        return derived

    def with_own(a):
        out = list(derived(a)) if derived else []
        for entry in own:  # the contract's shapes: {oracle input: dims}
            ch = {}
            for name, dims in entry.items():
                t = a.get(ref(name)) if ref(name) else None
                if t is None or not hasattr(t, "dim"):
                    ch = None
                    break
                ch[ref(name)] = Layout(t, tuple(int(d) for d in dims))
            if ch:
                out.append(("contract " + " ".join(
                    "%s=%s" % (n, "x".join(str(d) for d in dims)) for n, dims in entry.items()),
                    ch))
        return out
    return with_own


def shaper(entry):
    """The shapes gate's shaper of an entry, or None: ATen ops by name; a
    custom op by its qualified name ("mylib::rmsnorm"), which its author
    may add to SHAPERS, else the shapes its torch_op contract's op class
    implies (contract_shaper)."""
    if not entry.name.startswith("aten::"):
        own = SHAPERS.get(entry.name.rsplit(".", 1)[0])
        if own is None and getattr(entry, "contract", None):
            return contract_shaper(entry.contract)
        return own
    base = entry.name.split("::", 1)[1].split(".")[0]
    return SHAPERS.get(base) or SHAPERS.get(base.rstrip("_"))


# ---------------------------------------------------------------- custom ops

# Oracle ops with an index or condition tensor (int, bool), and the ATen
# op whose generated-input gates are not applicable for the same reason.
_INDEXED_OPS = {"index_select": "index_select", "embedding_backward": "embedding_dense_backward",
                "where": "where", "nll_loss": "nll_loss_forward",
                "nll_loss_backward": "nll_loss_backward"}


# Oracle ops whose inputs are an optimizer's state, and the fused op whose
# generated-input gates are not applicable for the same reason.
_STATE_OPS = {"adam": "_fused_adam_", "adamw": "_fused_adamw_", "sgd": "_fused_sgd_"}


def _contract_mapper(c):
    """A mapper from a torch_op contract: args maps each oracle input to an
    argument of the op (by schema name or position), or to a view of one
    ({arg, view}: the chain applied to it, apply_view); "out" names the
    result (its index in the returned tuple, default 0) or a mutated
    argument."""
    args = dict(c.get("args") or {})
    out_spec = args.pop("out", "0")
    attrs = dict(c.get("attrs") or {})
    op = c["op"]

    def m(a):
        order = list(a)
        ins = []
        for name, ref in args.items():
            ref, chain = arg_ref(ref)
            v = a.get(ref)
            if v is None and ref.isdigit() and int(ref) < len(order):
                v = a[order[int(ref)]]
            if chain:  # the oracle input is a view of the argument
                if not hasattr(v, "dim"):
                    raise Skip("contract %s: '%s' is not a tensor to view" % (c.get("where"), ref))
                try:
                    v = apply_view(v, chain)
                except _VIEW_ERRORS as e:  # the reference's own view would refuse it too
                    raise Skip("contract %s: %s.%s does not apply: %s" % (
                        c.get("where"), ref, chain_text(chain), str(e)[:120]))
            if v is None:
                try:  # a constant operand ("2.0")
                    v = float(ref)
                except ValueError:
                    pass
            if v is None:
                raise Skip("contract %s: no argument '%s'" % (c.get("where"), ref))
            if not hasattr(v, "dim"):
                v = float(v)
            ins.append((name, v))
        if out_spec.isdigit():
            k = int(out_spec)
            out = (lambda res: res[k] if isinstance(res, (tuple, list)) else res)
        else:
            target = a.get(out_spec)
            out = (lambda res: target)
        p = Plan(op, ins, out, attrs, "contract")
        p.profile = c.get("profile")
        return p
    m.index_args = op in _INDEXED_OPS
    return m


def contract_entry(func, c):
    """The Entry of a custom op (torch.library.custom_op, triton_op,
    load_inline) described by a torch_op contract."""
    schema = func._schema
    e = Entry("%s.%s" % (schema.name, func._overloadname), _contract_mapper(c), schema)
    e.contract = c
    if c.get("op") in _INDEXED_OPS:
        e.not_applicable = NOT_APPLICABLE[_INDEXED_OPS[c["op"]]]
    elif c.get("op") == "attention_backward":
        e.not_applicable = {g: _GENERATED_FWD for g in GENERATED_GATES}
    elif c.get("op") in _STATE_OPS:
        e.not_applicable = NOT_APPLICABLE[_STATE_OPS[c["op"]]]
    return e


def out_overload(func):
    """The out= overload of a functional op with one output: the overload
    whose other arguments are the op's own (names and types), or None."""
    try:
        packet = func.overloadpacket
        mine = [(a.name, str(a.type)) for a in func._schema.arguments]
        for name in packet.overloads():
            cand = getattr(packet, name)
            args = cand._schema.arguments
            outs = [a.name for a in args if a.kwarg_only and a.alias_info is not None and
                    a.alias_info.is_write]
            rest = [(a.name, str(a.type)) for a in args if a.name not in outs]
            if outs == ["out"] and rest == mine:
                return cand
    except (AttributeError, RuntimeError):
        return None
    return None


def gates_of(name):
    """The op-level gates that apply to ATen op `name` (docs/torch.md
    table): those gates.def runs at op level, in the order the binding runs
    them, less those that cannot apply to this op (no out= overload for
    guards, no shaper for shapes, NOT_APPLICABLE)."""
    import torch
    packet = getattr(torch.ops.aten, name)
    na = NOT_APPLICABLE.get(name, {})
    has_out = any(out_overload(getattr(packet, o)) for o in packet.overloads()
                  if not o.endswith("out"))
    applies = {"guards": has_out, "shapes": bool(SHAPERS.get(name)), "documented": False}
    g = [x.id for kind in OP_KINDS for x in _defs.GATES
         if x.op == kind and applies.get(kind, True)]
    return [x for x in g if x not in na]


def markdown():
    """docs/torch.md's coverage table."""
    lines = ["| ATen op (every overload) | oracle op | gates | notes |",
             "|---|---|---|---|"]
    for names, oracle, fn, note in ROWS:
        lines.append("| %s | %s | %s | %s |" % (", ".join("`%s`" % n for n in names), oracle,
                                              ", ".join(gates_of(names[0])), note))
    lines += ["", "| not covered | why |", "|---|---|"]
    for names, why in UNCOVERED:
        lines.append("| %s | %s |" % (names, why))
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown())
