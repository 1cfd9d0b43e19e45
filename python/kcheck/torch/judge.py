"""Host copies of an op's tensors and one judgment of them by libkcheck's
oracle (kcheck_op_judge), prepared on the calling thread and run on
kcheck's worker threads (ctypes releases the GIL for the call, so the
exact arithmetic runs beside the program).

Large outputs are judged on a sample of rows (the oracle samples matmul
itself; elementwise, softmax, norm, reduction and attention rows are taken
here, and the oracle then judges each taken attention row whole): every
step-th slice along the first dim (not the reduced
axis), first and last included, up to `cap` output elements, and for
attention and elementwise ops along the second dim too when one slice of
the first is still above `cap`, then an elementwise op's last dim (on
generated inputs with the columns of each row's special value added) —
the same view of inputs and output, so every judged element is judged
exactly.
"""
import ctypes
import json
import math
import os
import threading
import weakref

import torch

from kcheck import _api, _defs
from kcheck.torch import profiles

ORDER = ["fp64", "fp32", "bf16", "fp16", "e4m3fn", "e5m2"]
# Laid out as elementwise ops: the elementwise class of oracle/ops.def and
# the pointwise gradients (class grad, whose g and forward value have the
# output's shape); the row-wise gradients are laid out as rows.
_ROW_GRADS = {"softmax_backward", "log_softmax_backward", "layer_norm_backward",
              "rms_norm_backward", "layer_norm_dweight", "layer_norm_dbias", "rms_norm_dweight"}
EW_OPS = (_defs.oracle_ops("elementwise", aliases=True)
          | _defs.oracle_ops("pointwise", aliases=True)
          | (_defs.oracle_ops("grad", aliases=True) - _ROW_GRADS))  # oracle/ops.def
# An op's indices or condition, not its data: carried as exact doubles
# (below 2^53; bool as 0 and 1), their dtype left out of the op's profile.
INDEX_DTYPES = (torch.int32, torch.int64, torch.bool)
APP_CAP = 1 << 16    # output elements judged on the application's inputs
TRIAL_CAP = 1 << 12  # on generated inputs
# The oracle's own sampling (matmul, attention) on generated inputs: a
# defect touching 1% of the outputs escapes with probability <= 1e-6
# (1382 samples; smaller outputs in full), no Freivalds screen. Their
# defects (accumulation, special values, magnitudes) touch most outputs;
# the application's inputs keep the oracle's defaults (0.1%, screen). Each
# trial's record says how many elements it judged.
TRIAL_SAMPLING = {"fraction": 0.01, "full_below": 4096, "screen": 0}
# A fail mask naming no verdict kind (bit 31: none): the judgment runs and
# says its class, and kcheck_op_judge reports no violation.
QUIET_MASK = 1 << 31


def _span(t):
    """(shape, strides, span): t's layout (a 0-dim tensor as one element)
    and the elements of its storage from its first to its last."""
    shape = list(t.shape) or [1]
    strides = list(t.stride()) or [1]
    span = 1
    for n, s in zip(shape, strides):
        if n == 0:
            span = 0
            break
        span += (n - 1) * s
    return shape, strides, span


def _span_view(t, span):
    flat = torch.empty(0, dtype=t.dtype, device=t.device)
    flat.set_(t.untyped_storage(), t.storage_offset(), (span,), (1,))
    return flat


def _host_span(t, span):
    """A host copy of t's first span elements of storage, waiting for the
    device. Only a contiguous 1-D view is copied, so the copy is one
    memcpy: no kernel, no device allocation."""
    if not span:
        return torch.empty(0, dtype=t.dtype, device=t.device)
    return _span_view(t, span).to("cpu", copy=True)


def host(t):
    """A host copy of tensor t's storage span and its layout (shape,
    strides in elements, relative to the span's start)."""
    shape, strides, span = _span(t)
    return _host_span(t, span), shape, strides


class AsyncCopies:
    """Host copies that do not wait for the device (torch_async_copies):
    the span is copied into page-locked memory on the tensor's current
    stream (non_blocking) and an event recorded after it; the worker that
    judges the copy waits for the event first (HostTensor.wait). The
    program's thread no longer drains the device at every copy of a check
    (a synchronous copy waits for all the work queued before it).

    Page-locked memory stays with PyTorch's pinned-memory cache once
    allocated, so the bytes of copies not yet judged are capped (limit);
    beyond it a copy is synchronous, as without the option."""

    def __init__(self, limit):
        self.limit, self.held = limit, 0
        self.lock = threading.Lock()
        self.copies = 0  # made this way (the summary's async_copies)

    def copy(self, t, span):
        """(pinned host tensor, event) or None: t's span copied without a
        wait, or None when the copy must be synchronous (not CUDA, over the
        limit, or PyTorch refused)."""
        if t.device.type != "cuda" or not span:
            return None
        nbytes = span * t.element_size()
        with self.lock:
            if self.held + nbytes > self.limit:
                return None
            self.held += nbytes
        try:
            pinned = torch.empty(span, dtype=t.dtype, pin_memory=True)
            pinned.copy_(_span_view(t, span), non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(t.device))
        except Exception:
            self._release(nbytes)
            return None
        # the bytes count until the copy itself is gone (the judgment done)
        weakref.finalize(pinned, self._release, nbytes)
        with self.lock:
            self.copies += 1
        return pinned, ev

    def _release(self, nbytes):
        with self.lock:
            self.held -= nbytes


ASYNC = None  # an AsyncCopies when torch_async_copies is on (KcheckMode sets it)


class HostTensor:
    """A host copy, kept alive with the ctypes view of it. Made on the
    program's thread; wait() before its bytes are read (a copy made with
    AsyncCopies may still be in flight until then)."""

    def __init__(self, name, t):
        self.name = name
        self.fmt = profiles.fmt(t.dtype)
        self.dtype = t.dtype
        self.index = self.fmt is None and t.dtype in INDEX_DTYPES
        self.shape, self.strides, span = _span(t)
        # (indices are converted on the host at once: copied synchronously)
        made = ASYNC.copy(t, span) if ASYNC is not None and not self.index else None
        self.flat, self.event = made if made is not None else (_host_span(t, span), None)
        self.raw = self.flat  # the bytes as read (the immutability gate compares them)
        if self.index:
            # indices (index_select, embedding) and conditions (where,
            # masked_fill): exact as doubles, converted on the host copy
            self.flat, self.fmt, self.dtype = self.flat.double(), "fp64", torch.float64
            if name == "index" and (len(self.shape) != 1 or self.strides != [1]):
                # a gather's or scatter's indices, in any layout (an
                # embedding's token ids are often a slice of a batch): the
                # oracle takes them as one row, flattened here on the host
                view = self.flat.as_strided(self.shape, self.strides)
                self.flat = view.reshape(-1).contiguous()
                self.shape, self.strides = [self.flat.numel()], [1]

    def wait(self):
        """Until the bytes are on the host (at once for a synchronous copy)."""
        if self.event is not None:
            self.event.synchronize()
            self.event = None
        return self

    @classmethod
    def scalar(cls, name, value, fmt, rank):
        """A scalar operand in the op's compute type (ATen's opmath: float
        for fp16/bf16/fp32, double for fp64), broadcast to rank."""
        h = cls.__new__(cls)
        h.name, h.index, h.event = name, False, None
        dtype = torch.float64 if fmt == "fp64" else torch.float32
        h.flat = torch.tensor([float(value)], dtype=dtype)
        h.shape, h.strides = [1] * rank, [0] * rank
        h.fmt = "fp64" if fmt == "fp64" else "fp32"
        h.dtype = dtype
        return h

    def layout(self, rank=None):
        """(shape, strides), with leading size-1 dims added up to rank
        (PyTorch's right-aligned broadcasting) when rank is given."""
        if rank is None:
            return list(self.shape), list(self.strides)
        k = rank - len(self.shape)
        return [1] * k + self.shape, [0] * k + self.strides


def _c_tensor(h, shape, strides, keep, data=None):
    """h's host bytes (or data, a host tensor of h's type) as the oracle's tensor."""
    n = len(shape)
    cs = (ctypes.c_long * max(1, n))(*shape)
    st = (ctypes.c_long * max(1, n))(*strides)
    keep += [cs, st]
    ptr = (h.flat if data is None else data).data_ptr()
    return _api.Tensor(h.name.encode(), ptr, h.fmt.encode(), n, cs, st)


# oracle/adversarial.c puts a row's special value (NaN, +Inf, -Inf, a -0
# among +0; duplicates' +-max) at one seeded column of the row, its spot:
# rows with at most this many such values have their columns added to a
# sampled last dim (a row of -0s or subnormals is special in every column
# and needs none).
_SPOTS_PER_ROW = 2


def _special_columns(view):
    """The columns of view's rows (every dim but the last) that hold a
    generator's spot: NaN, an infinity, a negative zero or the type's
    largest magnitude, in rows with at most _SPOTS_PER_ROW of them."""
    n = view.shape[-1]
    v = view.reshape(-1, n)
    if v.dtype not in (torch.float32, torch.float64):
        v = v.float()
    special = ~torch.isfinite(v) | ((v == 0) & torch.signbit(v)) | \
        (v.abs() == torch.finfo(view.dtype).max)
    per_row = special.sum(dim=1)
    rows = special[(per_row > 0) & (per_row <= _SPOTS_PER_ROW)]
    return set(rows.nonzero()[:, 1].tolist())


def _gathered(h, view, idx, keep):
    """The oracle's tensor of view's elements at columns idx of its last
    dim, copied contiguous (kept alive in keep)."""
    g = view.index_select(view.dim() - 1, idx).contiguous()
    keep.append(g)
    return _c_tensor(h, list(g.shape), list(g.stride()), keep, data=g)


# The generators that give rows kinds by the row's index (oracle/
# adversarial.c: specials cycles NaN, +Inf, -Inf, -0, subnormal and zero
# rows, duplicates four kinds): a trial's sampled rows take a step prime to
# 12 and at least 12 rows, so every kind is among them.
_ROW_KINDS = 12


def _subsample(layouts, out_layout, dim, cap, kinds=False):
    """Rows of dim: every step-th, first and last included, so that the
    output holds at most cap elements (kinds: every row kind of the
    generators too, _ROW_KINDS). Modifies the layouts in place; returns
    (rows judged, rows) or None when nothing was dropped."""
    oshape, ostr = out_layout
    numel = 1
    for d in oshape:
        numel *= d
    rows = oshape[dim]
    kept = _every_kth(rows, numel, cap)
    if kept is not None and kinds:
        kept = _every_kind(rows, kept[1])
    if kept is None:
        return None
    keep, step = kept
    for shape, strides in layouts + [out_layout]:
        if shape[dim] == rows:
            shape[dim] = keep
            strides[dim] *= step
    return keep, rows


def _every_kind(n, step):
    """(kept, step) of n rows with a step no larger than the given one,
    prime to _ROW_KINDS and short enough for _ROW_KINDS rows; None: all."""
    step = min(step, max(1, (n - 1) // (_ROW_KINDS - 1)))
    while step > 1 and math.gcd(step, _ROW_KINDS) != 1:
        step -= 1
    if step <= 1:
        return None
    return (n - 1) // step + 1, step


def _every_kth(n, numel, cap):
    """(kept, step): every step-th of n slices, first and last included,
    so that numel elements shrink to at most cap; None when all fit."""
    if numel <= cap or n <= 1:
        return None
    keep = max(1, cap * n // numel)
    if keep >= n:
        return None
    # the step rounded up: first and last kept, at most keep slices
    step = max(1, -(-(n - 1) // (keep - 1))) if keep > 1 else n
    return ((n - 1) // step + 1 if keep > 1 else 1), step


def _channels(layouts, out_layout, nc, cap):
    """Batch norm's channels (dim 1 of [N, C, ...] tensors, dim 0 of [C]
    ones): every step-th, first and last included, so that the largest
    tensor holds at most cap elements. Modifies the layouts in place;
    returns (channels judged, channels) or None when nothing was dropped."""
    every = layouts + [out_layout]
    kept = _every_kth(nc, max(_numel(sh) for sh, _ in every), cap)
    if kept is None:
        return None
    keep, step = kept
    for shape, strides in every:
        d = 1 if len(shape) > 1 else 0
        if shape[d] == nc:
            shape[d] = keep
            strides[d] *= step
    return keep, nc


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _attr_text(v):
    """An attr's value as the judge parses it (contract/attrs.def types):
    booleans as true/false (str() would give True), floats exactly."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


class Job:
    """One judgment: gate, op, profile, attributes, the host tensors and
    the finding's context. run() asks libkcheck; it may run on any thread."""

    def __init__(self, lib, gate, mask, plan, inputs, out, prof, attrs, ctx, cap, save_path,
                 sampling=None, fmt=None):
        self.lib, self.gate, self.mask = lib, gate, mask
        self.fmt = fmt  # the inputs' type the profile was chosen by (summary counts by it)
        self.sampling = sampling or {}
        self.op, self.prof, self.attrs, self.ctx = plan.op, prof, attrs, ctx
        self.inputs, self.out = inputs, out
        self.save_path = save_path
        ew = plan.klass == "elementwise" or (plan.klass == "contract" and plan.op in EW_OPS)
        rank = len(out.shape)
        lay = [h.layout(rank if ew else None) for h in inputs]
        olay = out.layout()
        axis = attrs.get("axis")
        sampled, dim0 = None, False  # dim0: dim 0 could be sampled (all of it kept or not)
        # (pool: planes are independent, dims 0 and 1 of every tensor the
        # output's batch and channel)
        if plan.klass in ("elementwise", "softmax", "norm", "reduce", "attention",
                          "attention_grad", "pool") or ew:
            # dim 0 of the output is dim 0 of every input unless it is the
            # reduced axis (reductions drop it; norms use the last dim)
            if not (plan.klass in ("softmax", "reduce") and axis in (0, None)) and \
                    (plan.klass != "norm" or rank > 1) and \
                    all(len(s) == rank for s, _ in lay
                        if plan.klass not in ("norm", "attention_grad")):
                dim0 = True
                sampled = _subsample(lay if plan.klass != "norm" else lay[:1], olay, 0, cap,
                                     kinds=bool(self.sampling))
        if plan.klass == "loss" and plan.op == "nll_loss_backward" and rank > 1:
            # the rows of grad_input, the targets and (reduction none) the
            # incoming gradient share dim 0; weight and total_weight do not
            rows = [lt for h, lt in zip(inputs, lay) if h.name == "target" or
                    (h.name == "g" and attrs.get("reduction") == "none")]
            sampled = _subsample(rows, olay, 0, cap)
        if plan.klass == "scatter" and rank == 2:
            # every row of grad_weight is a sum over the whole index: keep
            # the rows, take every step-th column of the gradient and of it
            sampled = _subsample(lay[:1], olay, 1, cap)
            if sampled:
                ctx["sampled_cols"] = {"dim": 1, "judged": sampled[0], "of": sampled[1]}
                sampled = None
        if plan.klass == "batch_norm" and lay and len(lay[0][0]) > 1:
            # channels are independent: every step-th channel of x, g,
            # the output and the [C] statistics (each channel whole)
            sampled = _channels(lay, olay, lay[0][0][1], cap)
            if sampled:
                ctx["sampled_channels"] = {"judged": sampled[0], "of": sampled[1]}
                sampled = None
        if plan.klass == "norm_grad" and rank > 1:
            # g, x and the statistics share dim 0; the weight (1-D) does not
            sampled = _subsample([lt for lt in lay if len(lt[0]) == rank], olay, 0, cap)
        # still above the cap after dim 0 (one slice of it too large:
        # attention's batch of heads, a [batch, seq, d] elementwise op; or
        # dim 0 kept whole: fewer rows than the generators' row kinds):
        # dim 1 too, where every tensor has it or broadcasts it (size 1;
        # not GQA's fewer key/value heads)
        inner = None
        if dim0 and (plan.klass in ("attention", "attention_grad", "pool") or ew) and \
                rank > 2 and all(len(sh) > 1 and sh[1] in (1, olay[0][1]) for sh, _ in lay):
            inner = _subsample(lay, olay, 1, cap, kinds=bool(self.sampling))
        # an elementwise op still above it: every step-th element of the
        # last dim (the generators give rows their kinds, not columns);
        # on generated inputs run() adds the columns of the rows' special
        # values (_special_columns), which every step-th column misses
        last, self._spots = None, None
        if dim0 and ew and rank >= 2 and \
                all(len(sh) == rank and sh[-1] in (1, olay[0][-1]) for sh, _ in lay):
            before = ([(list(sh), list(st)) for sh, st in lay], (list(olay[0]), list(olay[1])))
            last = _subsample(lay, olay, rank - 1, cap)
            if last and self.sampling and before[1][1][-1]:
                self._spots = before, olay[1][-1] // before[1][1][-1]
        if sampled or inner or last:
            rows0 = olay[0][0]
            ctx["sampled_rows"] = ({"dim": 0, "judged": sampled[0], "of": sampled[1]} if sampled
                                   else {"dim": 0, "judged": rows0, "of": rows0})
            if inner:
                ctx["sampled_rows"]["dim1"] = {"judged": inner[0], "of": inner[1]}
            if last:
                ctx["sampled_rows"]["last"] = {"dim": rank - 1, "judged": last[0], "of": last[1]}
        self._keep = []
        self.arr = (_api.Tensor * max(1, len(inputs)))()
        for i, (h, (s, st)) in enumerate(zip(inputs, lay)):
            self.arr[i] = _c_tensor(h, s, st, self._keep)
        self.cout = _c_tensor(out, olay[0], olay[1], self._keep)

    def _add_special_columns(self):
        """A sampled last dim on generated inputs: the columns of the rows'
        special values added to every step-th one, the inputs and output
        gathered at them (a NaN turned into 0 at a column the step skips
        was judged clean). The record says how many were added."""
        (lay, olay), step = self._spots
        n = olay[0][-1]
        cols = set(range(0, n, step))
        extra = set()
        for h, (sh, st) in zip(self.inputs, lay):
            if sh[-1] == n and h.flat.is_floating_point():
                extra |= _special_columns(h.flat.as_strided(sh, st))
        extra -= cols
        info = self.ctx["sampled_rows"]["last"]
        info["special_columns"] = len(extra)
        if not extra:
            return
        idx = torch.tensor(sorted(cols | extra), dtype=torch.long)
        for i, (h, (sh, st)) in enumerate(zip(self.inputs, lay)):
            if sh[-1] == n:
                self.arr[i] = _gathered(h, h.flat.as_strided(sh, st), idx, self._keep)
        self.cout = _gathered(self.out, self.out.flat.as_strided(*olay), idx, self._keep)
        info["judged"] = len(idx)

    def quiet(self):
        """Judged, never reported: no verdict is a violation (the layouts
        gate's variants after its first failure, listed by class)."""
        self.mask = QUIET_MASK

    def nbytes(self):
        """Host bytes this judgment holds until it has run."""
        return sum(h.flat.numel() * h.flat.element_size() for h in self.inputs + [self.out])

    def run(self):
        """(status, gate result object); saves the inputs for replay when
        the judgment found a violation."""
        if self.save_path:
            self.ctx["regenerate"] = "python -m kcheck.torch.replay %s" % self.save_path
        for h in self.inputs + [self.out]:
            h.wait()  # (an asynchronous copy's bytes: on the host from here)
        if self._spots is not None:
            self._add_special_columns()
        result = ctypes.create_string_buffer(4096)
        attrs = dict(self.sampling, **self.attrs)
        astr = " ".join("%s=%s" % (k, _attr_text(v)) for k, v in attrs.items())
        status = self.lib.kcheck_op_judge(self.gate.encode(), self.op.encode(), self.prof.encode(),
                                          astr.encode(), len(self.inputs), self.arr,
                                          ctypes.byref(self.cout), self.mask,
                                          json.dumps(self.ctx).encode(), result, len(result))
        if status == _api.VIOLATION and self.save_path:
            save(self.save_path, self)
        try:
            res = json.loads(result.value.decode())
        except ValueError:
            res = {"status": "error", "reason": "unreadable result"}
        for k in ("sampled_rows", "sampled_channels"):
            if k in self.ctx:
                res[k] = self.ctx[k]
        return status, res


def save(path, job):
    """The inputs of a finding, for python -m kcheck.torch.replay."""
    try:
        torch.save({"op": job.ctx.get("op"), "oracle_op": job.op, "profile": job.prof,
                    "attrs": job.attrs, "settings": job.ctx.get("settings"),
                    "inputs": [(h.name, h.flat, h.shape, h.strides) for h in job.inputs],
                    "output": (job.out.flat, job.out.shape, job.out.strides)}, path)
    except Exception:
        try:
            os.unlink(path)
        except OSError:
            pass
