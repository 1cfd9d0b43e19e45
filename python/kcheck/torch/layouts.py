"""The layouts gate's variants (gates/gates.def, op kind layouts): the same
call with its inputs in other memory layouts and dtypes, for
KcheckMode._layouts.

TABLE is the one table of them, in the order they run. Each floating
tensor input of a covered op is laid out in turn

  transposed     in memory (x.mT.contiguous().mT; rank >= 2)
  strided        a view of every other element of a tensor twice as large
                 along the last dim (big[..., ::2]), the gaps NaN
  offset1        at storage offset 1 element: its pointer not 16-byte
                 aligned, the element before it NaN
  expanded       with stride 0 along its first dim of more than one
                 element: that dim's first slice repeated, as a broadcast
                 size-1 dim expanded (x[:1].expand_as(x)) is; the storage
                 behind it as large as a dense tensor's, the rest NaN, so a
                 kernel that reads it as dense reads NaN, never past it.
                 Never an input the op writes (ATen refuses a write into
                 overlapping memory)
  channels_last  (rank 4)

with the other inputs as they were; then, for the call as a whole,

  empty          with a zero-size leading dim, where the op accepts it: the
                 first floating input, with every other one of the same
                 rank and leading size (attention's q, k and v; an
                 elementwise op's operands), so that the shapes stay
                 consistent
  float16, bfloat16, float32, float64
                 every floating input of the call's own dtype (an out=
                 tensor too) converted to that dtype, other than the
                 call's: the op's other kernels, on the call's values
                 rounded to that dtype

The values of the first three and channels_last are the call's; those of
expanded and the dtypes are not, so the oracle judges every variant's
output against the inputs that variant was given, and the profile of a
dtype is the one PyTorch's settings give at that dtype (an ATen op's, or
for a torch_op contract the profile its reference has there:
reference_dtypes). The empty variant of a torch_op contract's op whose
reference can be run (reference_call) is compared with the reference's
result at that input: shape, dtype and values (a reduction over the
emptied dim has some), not applicable where the reference raises; of
any other op it runs only where the op's meta kernel (ATen's; a custom
op's register_fake) accepts the shapes — an op need not check an input's
size before reading it — and its output must have the meta kernel's
shape. A variant that leaves a tensor's layout
unchanged (a transpose of a 1-wide matrix, channels_last of one channel,
a tensor of one element expanded) is left out.
"""
import json

import torch

from kcheck import _api
from kcheck.torch import profiles

# The variants, in the order they run, and what each varies: "input"
# each floating input in turn, "call" the inputs together, "dtype" the
# inputs of the call's dtype together, in the dtype the variant names.
TABLE = (
    ("transposed", "input"),
    ("strided", "input"),
    ("offset1", "input"),
    ("expanded", "input"),
    ("channels_last", "input"),
    ("empty", "call"),
    ("float16", "dtype"),
    ("bfloat16", "dtype"),
    ("float32", "dtype"),
    ("float64", "dtype"),
)
VARIANTS = tuple(name for name, _ in TABLE)
PER_INPUT = tuple(name for name, what in TABLE if what == "input")
DTYPES = {name: getattr(torch, name) for name, what in TABLE if what == "dtype"}
# Inputs varied per call (a list argument's first tensor only): each costs
# up to five re-runs and judgments.
MAX_INPUTS = 6


# What a torch_op contract's reference does at each other dtype it
# accepts, {torch_op: {dtype variant: {"profile": spec, "out": dtype}}},
# told by whoever can run that reference (the audit's child: its trace of
# the task at each dtype). A contract states its profile at one dtype; an
# ATen op is its own reference, its profile at any dtype PyTorch's
# settings'.
_REFERENCE_DTYPES = {}


def reference_dtypes(torch_op, specs):
    """States the dtypes torch_op's reference accepts beyond the call's,
    with its profile there and, optionally, its output's dtype
    ({"float16": {"profile": "fp32:in=fp16:acc=fp32:out=fp16", "out":
    "float16"}, ...}): the dtype variants of a torch_op contract run at
    those only, and an op that returns another dtype there than the
    reference does is unsupported there (it computes that dtype as
    another, which the reference's profile does not describe)."""
    _REFERENCE_DTYPES[torch_op] = {k: dict(v) for k, v in specs.items()}


def dtype_reference(contract, vname):
    """({"profile": spec, "out": dtype name or absent}, None) for a
    torch_op contract's op in dtype variant vname, or (None, why not)."""
    specs = _REFERENCE_DTYPES.get(contract.get("torch_op"))
    if specs is None:
        return None, "the contract states its profile at one dtype: no reference for others"
    if vname not in specs:
        return None, "the reference does not accept %s" % vname
    return specs[vname], None


# What a torch_op contract's reference returns at the op's own arguments,
# {torch_op: fn(*args, **kwargs) -> its output tensor}, told by whoever
# can run that reference (the audit's child: the task's model). The empty
# variant of such an op is judged against it: the reference's result at
# the empty input, its shape, dtype and, where it has elements (a
# reduction over the emptied dim: sum 0, mean NaN), its values; a custom
# op has no meta kernel to give even the shape otherwise.
_REFERENCE_CALLS = {}


def reference_call(torch_op, fn):
    """States how to run torch_op's reference at the op's arguments
    (fn(*args, **kwargs) -> tensor): its empty variant is then compared
    with the reference's result there, and is not applicable where the
    reference raises (it rejects the empty input)."""
    _REFERENCE_CALLS[torch_op] = fn


def empty_reference(contract):
    """The reference's call for a torch_op contract's op, or None."""
    return _REFERENCE_CALLS.get((contract or {}).get("torch_op"))


def _number(v):
    """A value for the record: a float, or its name where JSON has none."""
    v = float(v)
    return v if v == v and abs(v) != float("inf") else repr(v)


def empty_mismatch(expected, got, tensor):
    """The evidence where the op's result at the empty input (got) is not
    the reference's there (expected), else None: its shape, its dtype,
    then each value. The reference's values there are exact (an empty
    sum is 0, an empty mean NaN), so equality is the verdict: NaN matches
    any NaN, and -0 matches +0 (a sign the reference's own reduction
    order could give either way)."""
    if not isinstance(got, torch.Tensor) or list(got.shape) != list(expected.shape):
        return {"verdict": "wrong_shape", "tensor": tensor,
                "shape": list(got.shape) if isinstance(got, torch.Tensor) else None,
                "expected_shape": list(expected.shape)}
    if got.dtype != expected.dtype:
        return {"verdict": "wrong_dtype", "tensor": tensor, "shape": list(got.shape),
                "dtype": str(got.dtype).replace("torch.", ""),
                "expected_dtype": str(expected.dtype).replace("torch.", "")}
    if not expected.numel():
        return None
    e, g = expected.detach().cpu(), got.detach().cpu()
    differ = e != g
    if e.is_floating_point() or e.is_complex():
        differ &= ~(e.isnan() & g.isnan())
    n = int(differ.sum())
    if not n:
        return None
    idx = [int(i) for i in differ.nonzero()[0]]
    return {"verdict": "wrong_value", "tensor": tensor, "shape": list(got.shape), "index": idx,
            "kernel": _number(g[tuple(idx)]), "exact": _number(e[tuple(idx)]), "n_fail": n}


def floating(t):
    """Is t an input the gate lays out otherwise (a float tensor of rank >= 1
    the oracle reads)?"""
    return isinstance(t, torch.Tensor) and t.dim() > 0 and t.is_floating_point() and \
        profiles.fmt(t.dtype) is not None


def targets(bound):
    """[(argument, index or None, label)]: the floating inputs of the bound
    arguments, in order (a list argument by its first tensor)."""
    out = []
    for name, v in bound.items():
        if name == "out":
            continue
        if floating(v):
            out.append((name, None, name))
        elif isinstance(v, (list, tuple)) and v and floating(v[0]):
            out.append((name, 0, "%s[0]" % name))
    return out


def _arg(bound, name, idx):
    return bound[name] if idx is None else bound[name][idx]


def cases(bound, written=frozenset()):
    """[(variant, input label, {(argument, index): tensor}, the input's new
    tensor, [labels of the inputs varied with it])]: each of the first
    MAX_INPUTS floating inputs in each PER_INPUT variant (expanded only
    where the op does not write it: written, the argument names it
    writes), then the empty variant of the first with those sharing its
    rank and leading size, then each dtype variant. The copies are
    kcheck's own work (the caller's kcheck_own_begin)."""
    tl = targets(bound)
    out = []
    for name, idx, label in tl[:MAX_INPUTS]:
        orig = _arg(bound, name, idx)
        for vname in PER_INPUT:
            if vname == "expanded" and name in written:
                continue
            v = variant(orig, vname)
            if v is not None:
                out.append((vname, label, {(name, idx): v}, v, []))
    if not tl:
        return out
    name, idx, label = tl[0]
    first = _arg(bound, name, idx)
    v = variant(first, "empty")
    if v is not None:
        changes, also = {(name, idx): v}, []
        for n2, i2, l2 in tl[1:]:
            t = _arg(bound, n2, i2)
            if t.dim() == first.dim() and t.shape[0] == first.shape[0]:
                changes[(n2, i2)] = variant(t, "empty")
                also.append(l2)
        out.append(("empty", label, changes, v, also))
    for vname in DTYPES:
        changes = in_dtype(bound, first.dtype, DTYPES[vname])
        if changes:
            also = [_label(n2, i2) for n2, i2 in changes if (n2, i2) != (name, idx) and
                    n2 != "out"]
            out.append((vname, label, changes, changes[(name, idx)], also))
    return out


def _label(name, idx):
    return name if idx is None else "%s[%d]" % (name, idx)


def in_dtype(bound, dtype, to):
    """{(argument, index): tensor}: every floating tensor of the bound
    arguments in dtype (every one of a list, an out= tensor too) converted
    to `to`, so that the op sees one dtype as at the call; {} where to is
    dtype. Converted, not reinterpreted: the values are the call's, rounded
    to `to`."""
    if to == dtype:
        return {}
    changes = {}
    for name, v in bound.items():
        items = [(None, v)] if not isinstance(v, (list, tuple)) else list(enumerate(v))
        for idx, t in items:
            if floating(t) and t.dtype == dtype:
                changes[(name, idx)] = t.to(to)
    return changes


def apply(bound, changes):
    """The bound arguments with changes ({(argument, index): tensor}) made."""
    b = dict(bound)
    for (name, idx), t in changes.items():
        if idx is None:
            b[name] = t
        else:
            lst = list(b[name])
            lst[idx] = t
            b[name] = type(bound[name])(lst)
    return b


def _same(a, b):
    return tuple(a.stride()) == tuple(b.stride()) and a.storage_offset() == b.storage_offset()


def variant(t, name):
    """t's values in layout `name`, or None where it does not apply (or
    would leave t's layout unchanged); the copies are kcheck's own work
    (the caller's kcheck_own_begin)."""
    shape = tuple(t.shape)
    if name == "transposed":
        if t.dim() < 2:
            return None
        v = t.mT.contiguous().mT
        return None if _same(v, t) else v
    if name == "strided":
        # the gaps hold NaN: a kernel that reads them gives NaN, every time
        big = torch.full(shape[:-1] + (2 * shape[-1],), float("nan"), dtype=t.dtype,
                         device=t.device)
        v = big[..., ::2]
        v.copy_(t)
        return v
    if name == "offset1":
        buf = torch.full((t.numel() + 1,), float("nan"), dtype=t.dtype, device=t.device)
        v = buf[1:].view(shape)  # (the element before it NaN)
        v.copy_(t)
        return v
    if name == "expanded":
        return _expanded(t)
    if name == "channels_last":
        if t.dim() != 4:
            return None
        v = t.contiguous(memory_format=torch.channels_last)
        return None if _same(v, t) or _same(v, t.contiguous()) else v
    if name == "empty":
        if shape[0] == 0:
            return None
        return torch.empty((0,) + shape[1:], dtype=t.dtype, device=t.device)
    raise ValueError(name)


def _expanded(t):
    """t's first slice along its first dim of more than one element,
    repeated along it with stride 0 (the expanded variant): the values
    differ from t's. Its storage is as large as a dense t's, every element
    behind the slice NaN: a kernel that reads the tensor as dense reads
    NaN there (and stays inside the storage)."""
    shape = tuple(t.shape)
    dim = next((d for d, n in enumerate(shape) if n > 1), None)
    if dim is None:
        return None
    strides, acc = [0] * len(shape), 1
    for d in reversed(range(len(shape))):
        strides[d] = acc
        acc *= shape[d]
    strides[dim] = 0
    buf = torch.full((t.numel(),), float("nan"), dtype=t.dtype, device=t.device)
    one = shape[:dim] + (1,) + shape[dim + 1:]
    buf.as_strided(one, strides).copy_(t.narrow(dim, 0, 1))
    return buf.as_strided(shape, strides)


def describe(v):
    """A variant tensor's layout for the record."""
    return {"shape": list(v.shape), "strides": list(v.stride()),
            "storage_offset": v.storage_offset()}


def crashed(e):
    """Is exception e a device fault (an illegal or misaligned access, a
    device-side assert) rather than a clean refusal ("expected
    contiguous")?"""
    text = str(e)
    return type(e).__name__ == "AcceleratorError" or "CUDA error" in text or \
        "illegal memory access" in text or "misaligned address" in text or \
        "device-side assert" in text


def meta_shape(func, nargs, nkw, out_of):
    """The shape the op's meta kernel gives its output for these arguments
    (out_of(res): the judged output), or (None, why) where it has none or
    refuses them."""
    def to_meta(a):
        if isinstance(a, torch.Tensor):
            if a.dim() == 0 and a.device.type == "cpu":
                return a
            return torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="meta")
        if isinstance(a, (list, tuple)):
            return type(a)(to_meta(x) for x in a)
        return a
    try:
        res = func(*[to_meta(a) for a in nargs], **{k: to_meta(v) for k, v in nkw.items()})
        out = out_of(res)
        return (list(out.shape), None) if isinstance(out, torch.Tensor) else \
            (None, "the meta kernel gives no tensor")
    except Exception as e:  # no meta kernel, or it refuses the shape
        return None, "%s: %s" % (type(e).__name__, str(e)[:120])


class Finding:
    """A variant's verdict reached without the oracle (a device fault, a
    wrong shape): run() reports it, as a Job's judgment reports a failing
    verdict, on kcheck's worker."""

    def __init__(self, lib, gate, message, rec, res):
        self.lib, self.gate, self.message, self.rec, self.res = lib, gate, message, rec, res
        self._quiet = False

    def quiet(self):
        self._quiet = True

    def nbytes(self):
        return 0

    def run(self):
        if self._quiet:
            return _api.PASS, self.res
        self.lib.kcheck_op_report(self.gate.encode(), self.message.encode(),
                                  json.dumps(self.rec).encode())
        return _api.VIOLATION, self.res
