"""The op table's rows for an optimizer's step and the norms' parameter
gradients: torch.optim's _foreach_* list ops (the default path on CUDA)
mapped to the pointwise oracle ops element by element, the fused updates
(_fused_adam_, _fused_adamw_, _fused_sgd_) to the oracle's adam, adamw and
sgd, and dweight / dbias of native_layer_norm_backward and
_fused_rms_norm_backward beside dx (ops.py's _norm_backward).

One call of a list op holds every parameter of the model: each judged
list element is a Plan (the first the primary, the others in Plan.more,
labelled "self[i]", "param[i]", ...), and a call judges at most CAP of
them — the LARGEST biggest elements, then a spread of the others by
position — and of a large element every k-th value (at most ELEMS, a
strided view of its last WINDOW values: no copy on the device, a bounded
host copy), so a call over hundreds of parameters costs a few plans. Every output of the fused updates is judged
(param, exp_avg, exp_avg_sq, max_exp_avg_sq, momentum_buffer), on the
inputs as they were before the call.
"""
import importlib
import math

from kcheck.torch import profiles


class _Ops:
    """ops.py, imported when a mapper first runs (ops.py imports this
    module while it is being built, and as `python -m kcheck.torch.ops`
    under another name)."""

    def __getattr__(self, name):
        return getattr(importlib.import_module("kcheck.torch.ops"), name)


_ops = _Ops()

CAP = 8        # list elements judged per call
LARGEST = 4    # of them the largest by size; the rest spread by position
ELEMS = 16384  # values judged per element of a list op (every k-th beyond)
OPT_ELEMS = 4096  # per tensor of a fused update (each value: a dozen MPFR steps)

# _foreach_ unary ops with an elementwise oracle op of the same name
UNARY = ("abs", "exp", "log", "neg", "rsqrt", "sigmoid", "sqrt", "tanh")


def pick(tensors):
    """The indices judged: the LARGEST largest (by numel, then position),
    then CAP - LARGEST spread evenly over the others, in list order."""
    n = len(tensors)
    if n <= CAP:
        return list(range(n))
    big = sorted(range(n), key=lambda i: (-tensors[i].numel(), i))[:LARGEST]
    rest = [i for i in range(n) if i not in big]
    k = CAP - LARGEST
    spread = [rest[(j * (len(rest) - 1)) // max(1, k - 1)] for j in range(k)]
    return sorted(set(big) | set(spread))


WINDOW = 1 << 20  # of a larger tensor, its last WINDOW values are sampled


def _sample(t, limit):
    """At most limit values of t as a 1-D view: every k-th of its last
    WINDOW values (the host copy takes one span: a window keeps it small;
    the tail, where partial chunks end, is in it); t itself when limit is
    None or t cannot be viewed flat (non-contiguous: the judge then
    samples its rows). Tensors of one shape give views of the same
    elements."""
    if limit is None or t.dim() == 0:
        return t
    try:
        flat = t.view(-1)
    except RuntimeError:
        return t
    n = flat.numel()
    if n > WINDOW:
        flat = flat[n - WINDOW:]
    k = max(1, math.ceil(flat.numel() / limit))
    return flat[::k] if k > 1 else flat


def _aligned(plan):
    """Whether plan's tensors all have its first one's shape (or are 0-dim
    scalars): a sampled view next to an unsampled one would not."""
    ts = [v for _, v in plan.inputs if _is_tensor(v) and v.dim() > 0]
    return all(tuple(v.shape) == tuple(ts[0].shape) for v in ts)


def _is_tensor(v):
    return hasattr(v, "dim")


def _scalar(v):
    """A scalar argument as a float (a 0-dim CPU tensor: its value, as ATen
    converts a step count or a wrapped number)."""
    if _is_tensor(v):
        return float(v.item())
    if isinstance(v, complex):
        raise _ops.Skip("complex scalar")
    return float(v)


def _cpu_sqrt_profile(t):
    """ATen's vectorized CPU sqrt on fp32 is within 1 ulp of the correctly
    rounded value, not equal to it (measured: 2.2% of fp32 values off by
    one on AVX512, torch 2.15): the 1-ulp budget of math=fast there."""
    if t.device.type == "cpu" and str(t.dtype) == "torch.float32":
        return "fp32:in=fp32:acc=fp32:out=fp32:math=fast"
    return None


def sqrt_plan(a):
    """aten::sqrt with the CPU's budget (ops.py's row for sqrt). In double
    the oracle's sqrt has no ulp budget in any mode, and ATen's CPU sqrt
    was measured 1 ulp off (OpInfo's samples, torch 2.15): it passes
    through there."""
    x = a["self"]
    if x.device.type == "cpu" and str(x.dtype) == "torch.float64":
        raise _ops.Skip("ATen's CPU sqrt in float64: within 1 ulp, not correctly rounded")
    p = _ops.Plan("sqrt", [("self", a["self"])], _ops._first)
    p.profile = _cpu_sqrt_profile(a["self"])
    return p


def _dense(t):
    """Whether t's elements fill its storage span without gaps or overlap
    in some order of its dims (c10's is_non_overlapping_and_dense, which
    Python's Tensor does not expose)."""
    dims = sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1)
    expected = 1
    for st, sz in dims:
        if st != expected:
            return False
        expected *= sz
    return True


def _fast_route(lists):
    """Whether ATen's CUDA foreach kernels take the fast (multi-tensor)
    route for these lists (ForeachUtils.h check_fast_path_restrictions):
    every tensor on one CUDA device, of one dtype, non-overlapping and
    dense, the tensors of each position of one layout. The slow route runs
    the single-tensor op per element, whose CUDA division by a scalar is a
    multiplication by its reciprocal."""
    first = lists[0][0]
    if first.device.type != "cuda":
        return False
    for i in range(len(lists[0])):
        ref = lists[0][i]
        for lst in lists:
            t = lst[i]
            if t.device != first.device or t.dtype != first.dtype or \
                    not _dense(t) or t.stride() != ref.stride():
                return False
    return True


def _outs(a, selfs):
    """out(i): a function of the op's result giving element i's output:
    the out= list's tensor, the returned list's, or (in place: the ops
    return None) self[i] itself."""
    out_list = a.get("out")

    def out(i, k):
        def f(res):
            if out_list is not None:
                t = out_list[i]
            elif isinstance(res, (list, tuple)) and len(res) > i:
                t = res[i]
            else:
                t = selfs[i]
            return _sample(t, k)
        return f
    return out


def foreach(base):
    """A _foreach_ op (every overload: List, Scalar, ScalarList, Tensor;
    in place, functional and out=) as the oracle op `base` on each judged
    element; add/sub with alpha != 1 as addcmul (x + alpha * y * 1, ATen's
    a + alpha * b in opmath)."""
    def m(a):
        selfs = list(a["self"])
        if not selfs:
            raise _ops.Skip("empty list")
        out = _outs(a, selfs)
        plans = []
        for i in pick(selfs):
            p = _element(base, a, selfs, i, ELEMS, out(i, ELEMS))
            if base != "norm" and not _aligned(p):  # a non-contiguous operand: unsampled
                p = _element(base, a, selfs, i, None, out(i, None))
            p.label = "self[%d]" % i
            plans.append(p)
        first = plans[0]
        first.more = plans[1:]
        return first
    m.index_args = False
    return m


def _per(a, name, i):
    """Argument `name` at element i: a list's i-th item, else the value."""
    v = a.get(name)
    return v[i] if isinstance(v, (list, tuple)) else v


def _element(base, a, selfs, i, k, out):
    Plan, Skip = _ops.Plan, _ops.Skip
    x = _sample(selfs[i], k)
    if base in UNARY:
        p = Plan(base, [("self", x)], out)
        if base == "sqrt":
            p.profile = _cpu_sqrt_profile(selfs[i])
        return p
    if base == "norm":
        if float(a.get("ord", 2)) != 2.0 or a.get("dtype") is not None:
            raise Skip("ord other than 2, or dtype=")
        flat = selfs[i]
        try:
            flat = flat.view(-1)
        except RuntimeError:
            raise Skip("norm of a non-contiguous tensor")
        return Plan("norm2", [("x", flat)], lambda res, i=i: res[i].reshape([1]), {"axis": 0},
                    "reduce")
    if base == "copy":  # into self's dtype: one correct rounding (ops.py's _copy_)
        _ops._fp8_dest(selfs[i].dtype)
        return Plan("copy", [("src", _sample(a["src"][i], k))], out)
    if base in ("clamp_min", "clamp_max"):
        v = _per(a, "scalars", i) if a.get("scalars") is not None else a.get("scalar")
        if v is None or _is_tensor(v):
            raise Skip("clamp with tensor bounds")
        p = _ops._clamp("min" if base == "clamp_min" else None,
                        "max" if base == "clamp_max" else None)(
            {"self": x, "min": _scalar(v), "max": _scalar(v)})
        p.out = out
        return p
    if base in ("addcmul", "addcdiv"):
        v = a.get("value", 1)
        if a.get("scalars") is not None:
            s = a["scalars"]
            v = s[i] if isinstance(s, (list, tuple)) else s.reshape(-1)[i]
        p = Plan(base, [("x", x), ("t1", _sample(a["tensor1"][i], k)),
                        ("t2", _sample(a["tensor2"][i], k))], out, {"value": _scalar(v)})
        return p
    if base == "lerp":
        w = a["weights"] if a.get("weights") is not None else a["weight"]
        w = w[i] if isinstance(w, (list, tuple)) else w
        if not _is_tensor(w):
            w = _scalar(w)
        elif w.dim() > 0:
            w = _sample(w, k)
        return Plan("lerp", [("x", x), ("end", _sample(a["tensors1"][i], k)), ("weight", w)], out)
    # add, sub, mul, div: List, Scalar, ScalarList, Tensor
    alpha = _scalar(a.get("alpha", 1) if a.get("alpha") is not None else 1)
    if a.get("other") is not None:
        other = a["other"]
        y = _sample(other[i], k) if isinstance(other, (list, tuple)) else other
    elif a.get("scalars") is not None:
        y = _scalar(a["scalars"][i])
    else:
        y = _scalar(a["scalar"])
    if _is_tensor(y) and y.dim() == 0 and y.device.type == "cpu" and x.device.type != "cpu":
        y = _scalar(y)  # a CPU scalar (a step count's 1): ATen reads it as a Scalar
    if alpha != 1:
        if base not in ("add", "sub"):
            raise Skip("alpha on %s" % base)
        return Plan("addcmul", [("x", x), ("t1", y), ("t2", 1.0)], out,
                    {"value": alpha if base == "add" else -alpha})
    if base == "div" and not _is_tensor(y) and x.device.type == "cuda":
        lists = [selfs] + ([a["other"]] if isinstance(a.get("other"), (list, tuple)) else [])
        if not _fast_route(lists):
            # the slow route's single-tensor div (ops.py's _binary)
            return Plan("mul", [("self", x), ("other", 1.0 / y)], out)
    return Plan(base, [("self", x), ("other", y)], out)


# ---------------------------------------------------------------- fused updates

_GENERATED_OPT = ("an optimizer's state is not arbitrary data: generated step counts and "
                  "second moments (fractional, negative) leave the update's domain")


def _lr(a):
    lr = a["lr"]
    return float(lr.item()) if _is_tensor(lr) else float(lr)


def _extras(a):
    """grad_scale and found_inf (one tensor each, shared by every plan)."""
    ins = []
    for name in ("grad_scale", "found_inf"):
        if a.get(name) is not None:
            ins.append((name, a[name]))
    return ins


def _state(lst, i, k):
    return _sample(lst[i], k) if lst else None


def fused_adam(op):
    """_fused_adam_ / _fused_adamw_: param, exp_avg, exp_avg_sq (and
    max_exp_avg_sq with amsgrad) of each judged element, oracle op adam or
    adamw."""
    def m(a):
        Plan = _ops.Plan
        params = list(a["self"])
        amsgrad = bool(a["amsgrad"])
        attrs = {"lr": _lr(a), "beta1": float(a["beta1"]), "beta2": float(a["beta2"]),
                 "eps": float(a["eps"]), "weight_decay": float(a["weight_decay"]),
                 "amsgrad": amsgrad, "maximize": bool(a["maximize"])}
        extras = _extras(a)
        plans = []
        for i in pick(params):
            k = OPT_ELEMS
            t = {"param": _sample(params[i], k), "grad": _state(a["grads"], i, k),
                 "exp_avg": _state(a["exp_avgs"], i, k),
                 "exp_avg_sq": _state(a["exp_avg_sqs"], i, k)}
            if amsgrad:
                t["max_exp_avg_sq"] = _state(a["max_exp_avg_sqs"], i, k)
            if any(v is None or v.shape != t["param"].shape for v in t.values()) or \
                    (params[i].dim() > 0 and t["param"].dim() != 1):
                raise _ops.Skip("non-contiguous optimizer state")
            ins = list(t.items()) + [("step", a["state_steps"][i])] + extras
            for out in ("param", "exp_avg", "exp_avg_sq") + (("max_exp_avg_sq",) if amsgrad
                                                              else ()):
                plans.append(Plan(op, ins, lambda res, v=t[out]: v, dict(attrs, output=out),
                                  label="%s[%d]" % (out, i)))
        plans[0].more = plans[1:]
        return plans[0]
    return m


def fused_sgd(a):
    """_fused_sgd_: param and momentum_buffer of each judged element."""
    Plan = _ops.Plan
    params = list(a["self"])
    bufs = list(a["momentum_buffer_list"] or [])
    attrs = {"lr": _lr(a), "weight_decay": float(a["weight_decay"]),
             "momentum": float(a["momentum"]), "dampening": float(a["dampening"]),
             "nesterov": bool(a["nesterov"]), "maximize": bool(a["maximize"]),
             "first_step": bool(a["is_first_step"])}
    extras = _extras(a)
    plans = []
    for i in pick(params):
        k = OPT_ELEMS
        t = {"param": _sample(params[i], k), "grad": _state(a["grads"], i, k)}
        if bufs:
            t["momentum_buffer"] = _state(bufs, i, k)
        if any(v.shape != t["param"].shape for v in t.values()) or \
                (params[i].dim() > 0 and t["param"].dim() != 1):
            raise _ops.Skip("non-contiguous optimizer state")
        ins = list(t.items()) + extras
        for out in ("param",) + (("momentum_buffer",) if bufs else ()):
            plans.append(Plan("sgd", ins, lambda res, v=t[out]: v, dict(attrs, output=out),
                              label="%s[%d]" % (out, i)))
    plans[0].more = plans[1:]
    return plans[0]


# ---------------------------------------------------------------- norm parameters

def _rows2(t, n):
    """t as [rows, n] (a view), or None."""
    try:
        return t.view(-1, n)
    except RuntimeError:
        return None


def norm_param_plans(op, a):
    """(dx inputs as 2-D views or None, [Plans of dweight and dbias]) for
    native_layer_norm_backward (op layer_norm_backward) or
    _fused_rms_norm_backward: the column sums over the rows of g with the
    forward's saved statistics, sharing their host copies with dx."""
    Plan = _ops.Plan
    g, x = a["grad_out"], a["input"]
    n = x.shape[-1] if x.dim() else 1
    ln = op == "layer_norm_backward"
    g2, x2 = _rows2(g, n), _rows2(x, n)
    r2 = _rows2(a["rstd"], 1)
    m2 = _rows2(a["mean"], 1) if ln else None
    if g2 is None or x2 is None or r2 is None or (ln and m2 is None):
        return None, []
    stats = ([("mean", m2)] if ln else []) + [("rstd", r2)]
    mask = list(a["output_mask"])
    plans = []
    if a.get("weight") is not None and len(mask) > 1 and mask[1]:
        plans.append(Plan("layer_norm_dweight" if ln else "rms_norm_dweight",
                          [("g", g2), ("x", x2)] + stats, lambda res: res[1], {}, "norm_grad",
                          label="dweight"))
    if ln and a.get("bias") is not None and len(mask) > 2 and mask[2]:
        plans.append(Plan("layer_norm_dbias", [("g", g2)], lambda res: res[2], {}, "norm_grad",
                          label="dbias"))
    f = profiles.fmt(g.dtype)
    if g.device.type == "cpu" and f in ("bf16", "fp16"):
        # measured (torch 2.15, 512 rows of bf16): ATen's CPU kernel sums
        # dweight and dbias with bf16 roundings on the way (errors of bf16
        # accumulation, 30x an fp32 sum's): the bound of a sum in the
        # 16-bit type, inconclusive where that has none
        for p in plans:
            w = a.get("weight") if p.label == "dweight" else a.get("bias")
            out = profiles.fmt(w.dtype) if w is not None else f
            p.profile = "fp32:in=%s:acc=%s:out=%s" % (f, f, out)
    return (g2, x2, stats), plans


# ---------------------------------------------------------------- rows

_FOREACH_OPS = ("add", "sub", "mul", "div", "addcmul", "addcdiv", "lerp", "clamp_min",
                "clamp_max", "copy") + UNARY
ROWS = [(["_foreach_%s" % b, "_foreach_%s_" % b], b if b not in ("clamp_min", "clamp_max")
         else "clamp", foreach(b), "per list element (%d per call at most: the %d largest, a "
         "spread of the rest)%s" % (CAP, LARGEST, {"add": "; alpha != 1 as addcmul",
                                   "sub": "; alpha != 1 as addcmul",
                                   "div": "; a scalar divisor on ATen's slow route as the "
                                          "reciprocal's product",
                                   "copy": "; into self's dtype, one correct rounding",
                                   "sqrt": "; CPU fp32 within 1 ulp (ATen's vectorized sqrt)"}
             .get(b, ""))) for b in _FOREACH_OPS]
ROWS += [
    (["_foreach_norm"], "norm2", foreach("norm"), "ord=2, per element, as linalg_vector_norm"),
    (["_fused_adamw_"], "adamw", fused_adam("adamw"), "param, exp_avg, exp_avg_sq, "
     "max_exp_avg_sq of each judged element (as _foreach_); grad_scale, found_inf, maximize, "
     "amsgrad; lr as a tensor read once; the grads written back unscaled are not judged"),
    (["_fused_adam_"], "adam", fused_adam("adam"), "as _fused_adamw_, weight decay added to "
     "the gradient"),
    (["_fused_sgd_"], "sgd", fused_sgd, "param and momentum_buffer; first step, nesterov, "
     "dampening, weight decay, maximize, grad_scale, found_inf"),
]

# Generated-input gates that do not apply, with the reason (ops.py's
# NOT_APPLICABLE): {op: {gate kind: why}}; "generated" stands for every
# generated-input gate.
NOT_APPLICABLE = {n: {"generated": _GENERATED_OPT}
                  for n in ("_fused_adamw_", "_fused_adam_", "_fused_sgd_")}
for _b in _FOREACH_OPS + ("norm",):
    for _n in ("_foreach_%s" % _b, "_foreach_%s_" % _b):
        NOT_APPLICABLE[_n] = {"guards": "its out= overload takes a list of tensors, not the "
                                        "one output the guard zones surround"}
