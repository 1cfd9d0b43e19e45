"""The reference, traced: its ATen ops, views folded, and the tier it
falls in (docs/audit.md, "How the reference becomes the contract").

Tier A: after folding views, exactly one computing op, covered by the
binding's op table (ops.entry_for -> ROWS mapper -> Plan), whose oracle
inputs are the task's inputs or parameters themselves, or view chains of
them (pure views and copies: the contract's args name the chain), and
whose result is the model's output: the contract is that op's, a torch_op contract on the
wrapper op, with the profile PyTorch's settings imply. Tier C exact: only
ops that move or select values, so the result is unique and the candidate
must equal the reference bit for bit. Anything else is a composition this
slice does not judge, said so with its ops -- never a tolerance."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kcheck.audit import wrapper
from kcheck.torch import ops, profiles

# Ops whose result is a selection or a copy of their inputs' values (or a
# comparison, or a correctly rounded conversion): unique, so bitwise
# equality is the verdict (tier C exact). Not argmax, argmin, sort and
# topk: their indices are not unique where values tie (docs/audit.md:
# "argmax without ties"), and the trace cannot tell which output is read.
EXACT_OPS = frozenset((
    "cat", "stack", "gather", "index_select", "index", "take", "clone", "copy_", "copy",
    "where", "flip", "roll", "masked_select", "max_pool1d", "max_pool2d",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "constant_pad_nd", "repeat",
    "scatter", "slice_scatter", "select_scatter", "tril", "triu", "eq", "ne", "lt", "le", "gt",
    "ge", "amax", "amin", "maximum", "minimum", "_to_copy", "narrow_copy", "diagonal_copy",
    "permute_copy", "transpose_copy", "empty_like", "empty", "zeros_like", "zeros",
    "ones_like", "full_like",
))

# Ops that create or alias a tensor without computing a value: folded.
_ALIASES = frozenset(("detach", "alias", "lift_fresh", "lift_fresh_copy", "_unsafe_view"))


def _ints(xs):
    xs = list(xs)
    return xs if all(isinstance(i, int) and not isinstance(i, bool) for i in xs) else None


def _view_step(base, overload, args, kwargs):
    """The step of a torch_op contract's view chain (ops.VIEW_OPS) that an
    ATen view op is: ["transpose", 1, 2], [] for an alias (detach), or
    None where the op is no pure view (select, slice, as_strided, ...: it
    picks elements, which a chain does not name). reshape reaches the
    dispatcher as view, or as clone and _unsafe_view (a reshape with the
    sizes it resolved)."""
    rest = args[1:]
    if base in ("detach", "alias", "lift_fresh", "lift_fresh_copy"):
        return []
    if base in ("view", "_unsafe_view", "reshape", "expand", "permute") and rest and \
            overload in ("default", "") and _ints(rest[0]) is not None:
        name = "reshape" if base == "_unsafe_view" else base
        if base == "expand" and kwargs.get("implicit"):
            return None
        return [name] + _ints(rest[0])
    if base == "transpose" and overload == "int" and _ints(rest) is not None and len(rest) == 2:
        return ["transpose"] + list(rest)
    if base == "t" and not rest:
        return ["t"]
    if base == "unsqueeze" and _ints(rest) is not None and len(rest) == 1:
        return ["unsqueeze"] + list(rest)
    if base == "squeeze" and overload == "default":
        return ["squeeze"]
    if base == "squeeze" and overload == "dim" and _ints(rest) is not None:
        return ["squeeze"] + list(rest)
    if base == "squeeze" and overload == "dims" and rest and _ints(rest[0]) is not None and \
            len(rest[0]) == 1:
        return ["squeeze"] + _ints(rest[0])
    return None


def _copy_step(base, args, kwargs):
    """clone as a view chain's step (it copies: the values stay), or None."""
    if base != "clone" or len(args) != 1:
        return None
    fmt = kwargs.get("memory_format")
    if fmt is None or fmt == torch.preserve_format:
        return ["clone"]
    return ["contiguous"] if fmt == torch.contiguous_format else None


class _Call:
    __slots__ = ("func", "name", "plan", "skip", "args", "result", "copy")

    def __init__(self, func, name):
        self.func, self.name = func, name
        self.plan, self.skip, self.args, self.result = None, None, None, None
        self.copy = False  # a clone: a step of a view chain, not a computing op


class _Recorder(TorchDispatchMode):
    """Every ATen op of the reference's forward, the computing ones with
    the binding's plan made while their arguments are alive."""

    def __init__(self):
        super().__init__()
        self.calls = []
        # {id(result): (result, its input, view chain step)}: how each view
        # was made, for the chains from the task's tensors
        self.links = {}

    def _link(self, res, args, step):
        if step is not None and isinstance(res, torch.Tensor) and args and \
                isinstance(args[0], torch.Tensor):
            self.links[id(res)] = (res, args[0], step)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        res = func(*args, **kwargs)
        base = func._schema.name.split("::", 1)[-1]
        if func.is_view or base in _ALIASES:
            self._link(res, args, _view_step(base, func._overloadname, args, kwargs))
            return res
        c = _Call(func, "%s.%s" % (func._schema.name, func._overloadname))
        copy = _copy_step(base, args, kwargs)
        if copy is not None:
            self._link(res, args, copy)
            c.copy = True
        entry = ops.entry_for(func)
        if entry is not None:
            try:
                c.args = entry.bind(args, kwargs)
                c.plan = entry.mapper(c.args)
            except ops.Skip as e:
                c.skip = str(e)
            except Exception as e:  # a mapping failure leaves the op unjudged
                c.skip = "mapping error: %s" % type(e).__name__
        c.result = res
        self.calls.append(c)
        return res


def _same_tensor(a, b):
    """a is b, or the same elements laid out the same way (a view that
    moved nothing)."""
    if a is b:
        return True
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    return (a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride() and
            a.device == b.device and a.numel() > 0 and
            a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and
            a.storage_offset() == b.storage_offset())


def _chain(v, named, links):
    """(name, view chain) where v is a task tensor (named: {name: tensor})
    reached through pure views and copies (_view_step, _copy_step), the
    chain empty for the tensor itself; None where any step on the way is
    another op."""
    steps = []
    for _ in range(64):
        hit = [n for n, t in named.items() if _same_tensor(v, t)]
        if hit:
            return hit[0], steps[::-1]
        link = links.get(id(v)) if isinstance(v, torch.Tensor) else None
        if link is None or link[0] is not v:
            return None
        if link[2]:
            steps.append(link[2])
        v = link[1]
    return None


def _transposed(v, t):
    """v is t with its last two dims swapped (Linear's weight.t())."""
    return isinstance(t, torch.Tensor) and t.dim() >= 2 and _same_tensor(v, t.mT)


def _row_broadcast(v, t):
    """v is the 1-D t expanded over rows (addmm's bias)."""
    return (isinstance(t, torch.Tensor) and t.dim() == 1 and v.dim() == 2 and
            v.stride(0) == 0 and v.shape[0] > 0 and _same_tensor(v[0], t))


def _fold(op, oname, v, t, tname, attrs):
    """A view between a task tensor and an oracle input, folded into the
    contract (the fusion rules this slice has): a transposed matmul
    operand becomes transpose_a/transpose_b; addmm's C, a bias vector
    expanded over rows with alpha = beta = 1, becomes the matmul's bias.
    Returns (oracle input, wrapper argument) and updates attrs, or None."""
    if op != "matmul":
        return None
    if oname in ("a", "b") and _transposed(v, t):
        attrs["transpose_" + oname] = True
        return oname, tname
    if oname == "c" and attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0 and \
            _row_broadcast(v, t):
        attrs.pop("alpha", None)
        attrs.pop("beta", None)
        return "bias", tname
    return None


# Activations fused into a matmul's epilogue (the oracle's `activation`
# attr): only those exact in any float format, so that the reference's
# rounding of the matmul's result before the activation cannot differ
# from the epilogue's single rounding (relu(round(z)) == round(relu(z))).
# gelu, silu and the others would need that intermediate rounding in the
# bound: not in this slice.
EPILOGUES = {"relu": "relu"}


def _epilogue(head, act):
    """The activation `act` applies to `head`'s result, when head is a
    matmul and act one of EPILOGUES reading exactly that result; else None."""
    if head.plan is None or head.plan.op != "matmul" or act.args is None:
        return None
    name = EPILOGUES.get(act.name.split("::", 1)[-1].split(".")[0].rstrip("_"))
    x = act.args.get("self")
    if name is None or not isinstance(x, torch.Tensor):
        return None
    return name if _same_tensor(x, head.plan.out(head.result)) else None


def _same_elements(a, b):
    """The same elements in the same order (a reshape of a contiguous
    result, as nll_loss's judged output is of its 0-dim loss)."""
    return _same_tensor(a, b) or (
        isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and
        a.dtype == b.dtype and a.numel() == b.numel() and a.is_contiguous() and
        b.is_contiguous() and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.storage_offset() == b.storage_offset())


def _profile_spec(plan, result):
    """The profile the binding would give the reference's op (its
    KcheckMode._profile and profiles.profile), or (None, reason)."""
    from kcheck.torch.mode import KcheckMode
    # the mode's own rule (dtypes, scalar operands, PyTorch's settings),
    # which reads nothing of the mode's state: no mode is installed here
    reason, settings, in_fmt = KcheckMode._profile(None, plan)
    if reason is not None:
        return None, reason
    out = plan.out(result)
    out_fmt = profiles.fmt(out.dtype) if isinstance(out, torch.Tensor) else in_fmt
    return (plan.profile or profiles.profile(plan.klass, in_fmt, out_fmt, settings)) + plan.suffix, None


class Trace:
    """The reference's trace and tier.

    tier: "A", "C" (exact) or "composition"; ops: the computing ops'
    names; contract: the torch_op contract (a dict) for tier A; family:
    the oracle op (tier A), "exact" or "composite"; reason: why a task is
    not tier A or C."""

    def __init__(self, model, inputs):
        params = dict(model.named_parameters())
        params.update(dict(model.named_buffers()))
        self.param_names = list(params)
        rec = _Recorder()
        with torch.no_grad(), rec:
            output = model(*inputs)
        if isinstance(output, (tuple, list)):
            output = output[0]
        # the model's output dtype: what a candidate must return at these inputs
        self.out_dtype = output.dtype if isinstance(output, torch.Tensor) else None
        self.calls = rec.calls
        self.ops = [c.name for c in self.calls]
        self.tier, self.family, self.contract, self.reason = "composition", "composite", None, None
        self.provenance = {}
        bases = [c.name.split("::", 1)[-1].split(".")[0] for c in self.calls]
        if self.calls and all(b in EXACT_OPS or b.rstrip("_") in EXACT_OPS for b in bases):
            self.tier, self.family = "C", "exact"
            return
        # a clone is a step of its input's view chain, not an op of its own
        calls = [c for c in self.calls if not c.copy]
        c, final, epilogue = calls[0] if calls else None, None, None
        if len(calls) == 2:
            epilogue = _epilogue(calls[0], calls[1])
            final = calls[1].result if epilogue else None
        if len(calls) != 1 and not epilogue:
            self.reason = "composition, ops: %s" % (", ".join(self.ops) or "none")
            return
        final = c.result if final is None else final
        if c.plan is None:
            self.reason = "%s: %s" % (c.name, c.skip or "not covered by the binding's op table")
            return
        named = {}
        for i, v in enumerate(inputs):
            named[wrapper.input_name(i)] = v
        for n, v in params.items():
            named[wrapper.param_name(n)] = v
        args, attrs = {}, dict(c.plan.attrs)
        for oname, v in c.plan.inputs:
            if isinstance(v, torch.Tensor):
                hit = [(oname, n) for n, t in named.items() if _same_tensor(v, t)]
                if not hit:
                    hit = [f for f in (_fold(c.plan.op, oname, v, t, n, attrs)
                                       for n, t in named.items()) if f]
                if not hit:
                    chain = _chain(v, named, rec.links)
                    if chain is None:
                        self.reason = ("composition, ops: %s (its input %s is not a task tensor "
                                       "or a view chain of one: another op, or a view that "
                                       "selects elements, is on its way)" % (c.name, oname))
                        return
                    hit = [(oname, {"arg": chain[0], "view": chain[1]} if chain[1]
                            else chain[0])]
                args[hit[0][0]] = hit[0][1]
                self.provenance[hit[0][0]] = hit[0][1]
            else:
                args[oname] = repr(float(v))
        if epilogue:
            attrs["activation"] = epilogue
        result = final if epilogue else c.plan.out(c.result)
        if not _same_elements(result, output):
            self.reason = "composition, ops: %s (the model's output is not its result)" % c.name
            return
        if tuple(result.shape) != tuple(output.shape) and output.numel() > 1:
            # the oracle judges the op's result at its own shape: a view of
            # it (x.view(-1, K) @ w viewed back to [B, S, N]) is not named
            self.reason = ("composition, ops: %s (the model's output, %s, is a view of its "
                           "result, %s, which a torch_op contract cannot name yet)" % (
                               c.name, list(output.shape), list(result.shape)))
            return
        spec, why = _profile_spec(c.plan, c.result)
        if spec is None:
            self.reason = "%s: no documented profile (%s)" % (c.name, why)
            return
        self.tier, self.family = "A", c.plan.op
        self.contract = {"torch_op": wrapper.QUALNAME, "op": c.plan.op, "args": args,
                         "attrs": attrs, "profile": spec}

    def record(self):
        """The trace as audit_task's fields."""
        return {"tier": self.tier, "family": self.family, "ops": self.ops,
                "trace": [{"op": c.name, "oracle_op": c.plan.op if c.plan else None,
                           "args": dict(self.provenance) if c.plan and self.tier == "A" else {}}
                          for c in self.calls],
                "contract": self.contract, "reason": self.reason}


def dtype_profiles(model, inputs, contract):
    """The layouts gate's dtype variants of a tier-A task: the reference
    traced again with its floating inputs, parameters and buffers of the
    task's dtype converted to each other float dtype (as the binding
    converts the wrapper op's arguments). ({variant: {"profile": its
    profile spec, "out": its output's dtype}} where it is the same
    contract but for its profile, {variant: why not} where the reference
    raises or becomes another computation there)."""
    import copy
    from kcheck.torch import layouts
    dtype = next((x.dtype for x in inputs if isinstance(x, torch.Tensor) and
                  x.is_floating_point()), None)
    specs, refused = {}, {}
    if dtype is None:
        return specs, refused
    for name, to in layouts.DTYPES.items():
        if to == dtype:
            continue
        try:
            m = copy.deepcopy(model)
            for t in list(m.parameters()) + list(m.buffers()):
                if t.dtype == dtype:
                    t.data = t.data.to(to)
            xs = [x.to(to) if isinstance(x, torch.Tensor) and x.dtype == dtype else x
                  for x in inputs]
            tr = Trace(m, xs)
        except Exception as e:  # the reference refuses the dtype
            refused[name] = "%s: %s" % (type(e).__name__, str(e)[:160])
            continue
        if tr.tier != "A":  # e.g. an op the binding does not judge at that dtype
            refused[name] = tr.reason or "tier %s there" % tr.tier
        elif any(tr.contract.get(k) != contract.get(k) for k in ("op", "args", "attrs")):
            refused[name] = "another contract there: %s" % tr.contract
        else:
            specs[name] = {"profile": tr.contract["profile"],
                           "out": str(tr.out_dtype).replace("torch.", "")}
    return specs, refused


def _yaml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, dict):
        return "{%s}" % ", ".join("%s: %s" % (k, _yaml_value(x)) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "[%s]" % ", ".join(_yaml_value(x) for x in v)
    return '"%s"' % str(v).replace("\\", "\\\\").replace('"', '\\"')


def contract_yaml(contract):
    """A contracts file holding the one torch_op contract (the style of
    docs/contracts.md: one flow mapping per contract)."""
    fields = ["%s: %s" % (k, _yaml_value(contract[k]))
              for k in ("torch_op", "op", "args", "attrs", "profile") if contract.get(k) is not None
              and contract.get(k) != {}]
    return "contracts:\n  - {%s}\n" % ", ".join(fields)
