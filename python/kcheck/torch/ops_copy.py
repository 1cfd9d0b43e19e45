"""The op table's rows for ops that place values without arithmetic, and
pow at the exponents ATen computes with another op.

clone and aten::copy, cat (each input's slice of the output),
select_backward and slice_backward (the gradient placed into zeros), and the
constant fills (zeros, ones, full and their _like / new_ forms, fill_,
zero_, scalar_tensor, _foreach_zero_) are judged bitwise through the
oracle's copy: a fill as the copy of its value, held as a 0-dim float64
tensor, to the output's dtype (c10 converts a Scalar to a 16-bit type
through float, as the oracle's copy from float64 does). pow.Tensor_Scalar
at exponent 2 is ATen's x * x (oracle mul), at 0.5, -0.5 and -1 its sqrt,
rsqrt and reciprocal kernels (oracle sqrt, rsqrt, div(1, x)), at 1 and 0
its copy_ and fill_(1) (Pow.cpp's pow_Tensor_Scalar_out).
"""
import importlib

from kcheck.torch import ops_optim, profiles


class _Ops:
    """ops.py, imported when a mapper first runs (ops.py imports this
    module while it is being built)."""

    def __getattr__(self, name):
        return getattr(importlib.import_module("kcheck.torch.ops"), name)


_ops = _Ops()
_is_tensor = ops_optim._is_tensor


def _torch():
    return _ops._torch()


# ---------------------------------------------------------------- copies

def _clone(a):
    return _ops.Plan("copy", [("src", a["self"])], _ops._first)


def _copy(a):
    """aten::copy (functional copy_): self's dtype and shape, src's values."""
    return _ops._copy_(a)


def _cat(a):
    """One copy per non-empty input onto its slice of the output (along
    dim), converted to the output's dtype (type promotion over the list).
    An empty input adds nothing along dim: one of the output's rank has
    size 0 there (else the whole output is empty), a legacy 1-D one is
    left out by ATen."""
    torch = _torch()
    ts = list(a["tensors"])
    full = [(i, t) for i, t in enumerate(ts) if t.numel()]
    if not full:
        raise _ops.Skip("empty tensor")
    dim = int(a.get("dim", 0)) % max(1, full[0][1].dim())
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    if any(t.dtype != dtype for t in ts):
        _ops._fp8_dest(dtype)
    plans, off = [], 0
    for i, t in full:
        n = t.shape[dim]
        plans.append(_ops.Plan("copy", [("src", t)],
                               lambda res, o=off, n=n: _ops._first(res).narrow(dim, o, n),
                               label="tensors[%d]" % i))
        off += n
    plans[0].more = plans[1:]
    return plans[0]


_cat.empty_ok = True  # (mode._reason: its empty inputs are not read)


# ---------------------------------------------------------------- fills

def _const(value):
    """A fill's value as the copy's source: a 0-dim float64 CPU tensor
    (the oracle converts it to the output's dtype as c10 converts a
    Scalar). An integer beyond 2^53 is not exact as a double: ATen rounds
    it to float once, the double would round it twice."""
    torch = _torch()
    if isinstance(value, complex):
        raise _ops.Skip("complex fill value")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2 ** 53:
        raise _ops.Skip("integer fill value beyond 2^53 (not exact as a double)")
    return torch.tensor(float(value), dtype=torch.float64)


def _float_dtype(dtype):
    """Skip an output the oracle does not judge (integer, bool, complex)."""
    if profiles.fmt(dtype) is None:
        raise _ops.Skip("dtype %s" % str(dtype).replace("torch.", ""))


def _fill_dtype(a):
    """The dtype a fill's output takes: dtype=, else self's (_like, new_,
    fill_, zero_), else full's value type (bool, int64), else the default."""
    torch = _torch()
    if a.get("dtype") is not None:
        return a["dtype"]
    if _is_tensor(a.get("self")):
        return a["self"].dtype
    v = a.get("fill_value")
    if isinstance(v, bool):
        return torch.bool
    if isinstance(v, int):
        return torch.int64
    return torch.get_default_dtype()


def _out_device(a):
    """The device a fill's output is made on (its device check: a factory
    has no tensor argument that names it)."""
    torch = _torch()
    if a.get("device") is not None:
        return torch.device(a["device"]).type
    for name in ("out", "self"):
        if _is_tensor(a.get(name)):
            return a[name].device.type
    return torch.get_default_device().type


def _fill(value):
    """A constant fill: value a number, or the name of the argument that
    holds it (full's fill_value, fill_'s value, scalar_tensor's s)."""
    def m(a):
        v = a[value] if isinstance(value, str) else value
        if any(int(n) == 0 for n in a.get("size") or ()):
            raise _ops.Skip("empty tensor")  # nothing to judge (the mode's reason for inputs)
        _float_dtype(a["out"].dtype if _is_tensor(a.get("out")) else _fill_dtype(a))
        if _is_tensor(v):  # fill_.Tensor: a 0-dim tensor, converted as copy_ does
            if v.dim() != 0 or not v.is_floating_point():
                raise _ops.Skip("fill value of other than 0 dims, or of an integer dtype")
            src = v
        else:
            src = _const(v)
        return _ops.Plan("copy", [("value", src)], _ops._first)  # in place: self, returned
    m.makes_on = _out_device
    return m


def _foreach_zero(a):
    """_foreach_zero_: each judged element zero (ops_optim's pick)."""
    selfs = list(a["self"])
    if not selfs:
        raise _ops.Skip("empty list")
    plans = []
    for i in ops_optim.pick(selfs):
        _float_dtype(selfs[i].dtype)
        plans.append(_ops.Plan("copy", [("value", _const(0))],
                               lambda res, t=selfs[i]: ops_optim._sample(t, ops_optim.ELEMS),
                               label="self[%d]" % i))
    plans[0].more = plans[1:]
    return plans[0]


def _foreach_extreme(base):
    """_foreach_maximum / _foreach_minimum with a number (Scalar,
    ScalarList): ATen dispatches them to _foreach_clamp_min / clamp_max's
    kernels (libtorch_cuda has no kernel of their own: its CUDA entry
    calls foreach_tensor_clamp_min_scalar_kernel_cuda; on the CPU both are
    the slow route's clamp_min), judged as ops_optim judges those."""
    inner = ops_optim.foreach(base)

    def m(a):
        if a.get("other") is not None:
            raise _ops.Skip("elementwise maximum or minimum of two tensors: no oracle op")
        return inner(a)
    return m


# ---------------------------------------------------------------- placed gradients

def _along(t, dim, lo, hi, step):
    """t[..., lo:hi:step, ...] along dim (a view)."""
    return t[(slice(None),) * dim + (slice(lo, hi, step),)]


def _placed(g, dim, n, sel, view):
    """The copy of g onto view(res) and, through more, the zero copies of
    the rest of dim (n positions; sel the range of those placed): before
    the first, after the last, and between them for a step above 1."""
    Plan = _ops.Plan
    first = Plan("copy", [("src", g)], lambda res: view(_ops._first(res)), label="grad")
    pieces = [(0, sel.start, 1), (sel[-1] + 1, n, 1)]
    pieces += [(sel.start + r, sel[-1], sel.step) for r in range(1, sel.step)] \
        if len(sel) > 1 else []
    zero = _const(0)
    for k, (lo, hi, st) in enumerate(p for p in pieces if len(range(*p))):
        first.more.append(Plan("copy", [("value", zero)],
                               lambda res, p=(lo, hi, st): _along(_ops._first(res), dim, *p),
                               label="zeros[%d]" % k))
    return first


def _select_backward(a):
    g, sizes = a["grad_output"], list(a["input_sizes"])
    dim = int(a["dim"]) % len(sizes)
    n = int(sizes[dim])
    i = int(a["index"]) % n
    return _placed(g, dim, n, range(i, i + 1), lambda r: r.select(dim, i))


def _slice_backward(a):
    g, sizes = a["grad_output"], list(a["input_sizes"])
    dim = int(a["dim"]) % len(sizes)
    n = int(sizes[dim])
    # ATen's slice clamps start and end into [0, n] as Python's slices do
    sel = range(*slice(int(a["start"]), int(a["end"]), int(a["step"])).indices(n))
    if not len(sel):
        raise _ops.Skip("empty slice")
    return _placed(g, dim, n, sel, lambda r: _along(r, dim, sel.start, sel.stop, sel.step))


# ---------------------------------------------------------------- pow

def _pow(a):
    """pow.Tensor_Scalar: the exponents ATen computes with another op, on
    CUDA (PowKernel.cu) and the CPU (cpu/PowKernel.cpp); Pow.cpp sends 1
    to copy_ and 0 to fill_(1) on every device first. ATen's CPU pow in
    float16 calls std::pow for every other exponent."""
    torch = _torch()
    x, e = a.get("self"), a.get("exponent")
    if not _is_tensor(x) or _is_tensor(e) or isinstance(e, complex):
        raise _ops.Skip("pow with a tensor exponent, a number base or a complex exponent")
    e = float(e)
    if e == 1:
        return _ops.Plan("copy", [("src", x)], _ops._first)
    if e == 0:
        return _ops.Plan("copy", [("value", _const(1))], _ops._first)
    if x.device.type == "cpu" and x.dtype == torch.float16:
        raise _ops.Skip("ATen's CPU pow in float16 calls std::pow (no oracle op)")
    if e == 2:
        return _ops.Plan("mul", [("self", x), ("other", x)], _ops._first)
    if e == 0.5:
        return ops_optim.sqrt_plan({"self": x})
    if e == -0.5:
        return _ops.Plan("rsqrt", [("self", x)], _ops._first)
    if e == -1:
        return _reciprocal({"self": x})
    raise _ops.Skip("no oracle op for pow with exponent %r" % e)


def _reciprocal(a):
    """1/x: ATen's reciprocal kernels divide 1 by x in opmath (CUDA's
    reciprocal_wrapper, the CPU's scalar and vectorized division), the
    division the oracle's div rounds once to the output."""
    return _ops.Plan("div", [("self", 1.0), ("other", a["self"])], _ops._first)


# ---------------------------------------------------------------- rows

ROWS = [
    (["clone"], "copy", _clone, "bit for bit, any layout"),
    (["copy"], "copy", _copy, "functional copy_: into self's dtype, src broadcast"),
    (["cat"], "copy", _cat, "each input onto its slice of the output, converted to the "
     "output's dtype (Plan.more: tensors[i])"),
    (["zeros", "zeros_like", "new_zeros", "zero_", "zero"], "copy", _fill(0), "0 in the output's "
     "dtype, bit for bit; integer and bool outputs pass through"),
    (["ones", "ones_like", "new_ones"], "copy", _fill(1), "1 in the output's dtype"),
    (["full", "full_like", "new_full"], "copy", _fill("fill_value"), "the value converted "
     "as c10 converts a Scalar (to a 16-bit type through float)"),
    (["fill_", "fill"], "copy", _fill("value"), "a number or a 0-dim floating tensor"),
    (["scalar_tensor"], "copy", _fill("s"), "as full"),
    (["_foreach_zero_"], "copy", _foreach_zero, "per list element (as the other _foreach_ "
     "ops)"),
    (["_foreach_maximum"], "clamp", _foreach_extreme("clamp_min"), "Scalar, ScalarList: "
     "as _foreach_clamp_min (its kernel); List passes through"),
    (["_foreach_minimum"], "clamp", _foreach_extreme("clamp_max"), "Scalar, ScalarList: "
     "as _foreach_clamp_max (its kernel); List passes through"),
    (["select_backward"], "copy", _select_backward, "grad onto the selected index, zeros "
     "elsewhere (Plan.more), bit for bit"),
    (["slice_backward"], "copy", _slice_backward, "grad onto the slice (any step), zeros "
     "elsewhere (Plan.more), bit for bit"),
    (["reciprocal"], "div", _reciprocal, "div(1, x)"),
    (["pow"], "mul / sqrt / rsqrt / div / copy", _pow, "Tensor_Scalar at exponents 2 (x*x), "
     "0.5, -0.5, -1 (1/x), 1 and 0; others, and CPU float16 but 1 and 0, pass through"),
]

# Generated-input gates that do not apply (ops.py's NOT_APPLICABLE, by gate
# kind as ops_optim's): a fill reads no input values, so its trials would
# judge the same constant again (coverage and bounds still run on its output).
_CONSTANT = "a constant fill reads no input values: generated inputs change nothing it computes"
NOT_APPLICABLE = {n: {"trials": _CONSTANT} for names, _, fn, _ in ROWS
                  if getattr(fn, "makes_on", None) for n in names}
# the list ops' out= overloads take lists (ops_optim's reason, guards)
_LIST = ops_optim.NOT_APPLICABLE["_foreach_clamp_min"]
NOT_APPLICABLE["_foreach_zero_"] = dict(_LIST, trials=_CONSTANT)
for _n in ("_foreach_maximum", "_foreach_maximum_", "_foreach_minimum", "_foreach_minimum_"):
    NOT_APPLICABLE[_n] = dict(_LIST)
# The elementwise shapes (ops.py's SHAPERS)
SHAPED = ("clone", "pow", "reciprocal")
