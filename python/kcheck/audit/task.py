"""Tasks and candidates in KernelBench's layout.

A task file defines `class Model(nn.Module)`, `get_inputs()` and
`get_init_inputs()`; a candidate file defines `class ModelNew`, or a
candidate is `module_or_file:function`, called with the task's inputs.
Construction is seeded as KernelBench does: the seed set before the
reference is built and again before the candidate is, so that models
whose parameters are drawn at __init__ get the same values."""
import importlib
import importlib.util
import os
import sys

# The seed KernelBench sets before building each model and the seeds of
# the task's own inputs (docs/audit.md: three calls, each judged).
BUILD_SEED = 42
INPUT_SEEDS = (0, 1, 2)


class TaskError(Exception):
    """The task or candidate cannot be loaded or built: str(e) says why."""


def load_file(path, name=None):
    """The module a Python file defines (its folder importable, as a
    KernelBench sample's own helpers may be)."""
    path = os.path.abspath(path)
    name = name or "kcheck_audit_%s" % os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise TaskError("%s: not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


class Task:
    """A reference: its module, Model, get_inputs, get_init_inputs."""

    def __init__(self, path):
        self.path = path
        self.module = load_file(path)
        for name in ("Model", "get_inputs", "get_init_inputs"):
            if not hasattr(self.module, name):
                raise TaskError("%s defines no %s (KernelBench layout)" % (path, name))

    def init_inputs(self):
        return list(self.module.get_init_inputs())

    def inputs(self, seed):
        import torch
        torch.manual_seed(seed)
        return list(self.module.get_inputs())

    def build(self, device):
        import torch
        torch.manual_seed(BUILD_SEED)
        return self.module.Model(*self.init_inputs()).to(device)


class Candidate:
    """A candidate: a file with ModelNew, or `module_or_file:function`."""

    def __init__(self, spec):
        self.spec = spec
        self.function = None
        target, _, fn = spec.rpartition(":") if ":" in spec and not os.path.exists(spec) \
            else (spec, "", "")
        if fn:
            mod = load_file(target) if target.endswith(".py") else importlib.import_module(target)
            self.path = getattr(mod, "__file__", target)
            self.function = getattr(mod, fn, None)
            if self.function is None:
                raise TaskError("%s defines no %s" % (target, fn))
        else:
            mod = load_file(target)
            self.path = target
            if not hasattr(mod, "ModelNew"):
                raise TaskError("%s defines no ModelNew (KernelBench layout)" % target)
        self.module = mod

    def build(self, task, device):
        """The candidate as a module (a function is wrapped in one)."""
        import torch
        if self.function is not None:
            fn, init = self.function, task.init_inputs()

            class _Function(torch.nn.Module):
                # a function gets the task's init values after its inputs,
                # as the reference function of --reference/--init does
                def forward(self, *args):
                    return fn(*args, *init)
            return _Function()
        torch.manual_seed(BUILD_SEED)
        return self.module.ModelNew(*task.init_inputs()).to(device)

    def forward_line(self):
        """file:line of the code the candidate runs (its forward, or the
        function): the line a finding points at where the binding's stack
        names only the audit's own frames."""
        import inspect
        target = self.function or getattr(self.module.ModelNew, "forward", None)
        try:
            return "%s:%d" % (os.path.basename(inspect.getsourcefile(target)),
                              inspect.getsourcelines(target)[1])
        except (TypeError, OSError):
            return None


def tensors(model):
    out = dict(model.named_parameters())
    out.update(dict(model.named_buffers()))
    return {k: v.detach() for k, v in out.items()}


def equal_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.device == b.device and \
        bool((a.reshape(-1).view(torch_int(a)) == b.reshape(-1).view(torch_int(b))).all())


def torch_int(t):
    import torch
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]


def align(reference, candidate):
    """(how, names): the candidate's parameters and buffers matched to the
    reference's, names being {candidate name: reference name}. 'name': by
    name and shape, the reference's values loaded into the candidate;
    'value': by bitwise-equal values after the seeded construction (a
    candidate that names its weights its own way), each matched once;
    'none': the candidate has none; 'constants': neither (the child then
    tries weights as constants: match_values, hold)."""
    ref, cand = tensors(reference), tensors(candidate)
    if not cand:
        return "none", {}
    if all(k in ref and ref[k].shape == v.shape and ref[k].dtype == v.dtype for k, v in cand.items()):
        candidate.load_state_dict({k: v for k, v in reference.state_dict().items() if k in cand},
                                  strict=False)
        return "name", {k: k for k in cand}
    names, taken = {}, set()
    for k, v in cand.items():
        hits = [r for r, t in ref.items() if r not in taken and equal_bits(v, t)]
        if len(hits) != 1:
            return "constants", {}
        names[k] = hits[0]
        taken.add(hits[0])
    return "value", names


def to_device(values, device):
    import torch
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


# The seed of the caching probe's generated parameter values (parameter
# k: PROBE_SEED + k).
PROBE_SEED = 29


def snapshot(model):
    """Copies of a model's parameters and buffers as its construction left
    them (before align loads the reference's values into it)."""
    return {k: v.clone() for k, v in tensors(model).items()}


def _same_bits(a, b):
    """Bit for bit, any NaN matching any NaN (a result compared with
    itself after a parameter changed)."""
    import torch
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return False
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.is_floating_point():
        return bool((a == b).all())
    ai, bi = a.contiguous().view(torch_int(a)), b.contiguous().view(torch_int(b))
    return bool(((ai == bi) | (a.isnan() & b.isnan())).all())


def _first(out):
    return (out[0] if isinstance(out, (tuple, list)) else out).detach()


def probe_cached(reference, candidate, names, inputs):
    """The caching probe: the aligned parameters the candidate ignores as
    arguments. Each floating parameter or buffer in turn is replaced by
    generated values (torch.func.functional_call, the wrapper op's way of
    passing it) in the candidate and, under its reference name, in the
    reference; where the reference's output changes and the candidate's
    stays bit for bit the same, the candidate computes from something
    else: a copy derived at __init__ (transposed, fused, fp16), whose
    values generated inputs never reach. Run with no mode on.
    Returns [candidate name]."""
    import torch
    from torch.func import functional_call

    def call(model, params):
        xs = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            return _first(functional_call(model, params, tuple(xs)) if params else model(*xs))
    mine, theirs = tensors(candidate), tensors(reference)
    try:
        ref0, cand0 = call(reference, {}), call(candidate, {})
    except Exception:  # a candidate that raises: the run says so, with its stage
        return []
    ignored = []
    for k, (cname, rname) in enumerate(sorted(names.items())):
        t = mine[cname]
        if not t.is_floating_point() or not t.numel():
            continue
        g = torch.Generator().manual_seed(PROBE_SEED + k)
        new = torch.empty(t.shape, dtype=torch.float64).uniform_(-1.0, 1.0, generator=g)
        new = new.to(dtype=t.dtype, device=t.device)
        try:
            ref1 = call(reference, {rname: new.to(theirs[rname].dtype)})
            cand1 = call(candidate, {cname: new})
        except Exception:  # not evidence either way: the run judges it
            continue
        if not _same_bits(ref0, ref1) and _same_bits(cand0, cand1):
            ignored.append(cname)
    return ignored


def match_values(reference, construction):
    """(matched, unmatched): each of the reference's parameters and buffers
    given a value of the candidate's construction (construction: its
    snapshot), the one of the same name, shape and dtype, else one bitwise
    equal after the seeded construction (equal values: which one does
    not matter); matched is {reference name: value}, unmatched the
    reference's names that take none."""
    matched, unmatched = {}, []
    for r, t in tensors(reference).items():
        v = construction.get(r)
        if v is not None and v.shape == t.shape and v.dtype == t.dtype:
            matched[r] = v
            continue
        hits = [c for c in construction.values() if equal_bits(c, t)]
        if hits:
            matched[r] = hits[0]
        else:
            unmatched.append(r)
    return matched, unmatched


def hold(reference, candidate, construction, matched):
    """Weights as constants: the candidate gets back the values its
    construction produced (what any copy it derived at __init__ was derived
    from) and the reference the matched ones, so that both compute with
    the same weights."""
    import torch
    with torch.no_grad():
        for k, t in tensors(candidate).items():
            t.copy_(construction[k])
        ref = tensors(reference)
        for r, v in matched.items():
            ref[r].copy_(v)
