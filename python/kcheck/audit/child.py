"""One candidate, run in its own process under `kcheck run --torch`.

The binding judges the wrapper op from the contract the driver generated
(tier A). Beside it this process computes what needs no contract: the
reference's output at the task's inputs (with the binding's mode off, so
that only the candidate is judged), KernelBench's allclose, bitwise
equality for the exact tier and, where no contract covers the wrapper op,
the inputs' and parameters' bytes before and after (immutability).
Its findings go to --result as one JSON object.

    python -m kcheck.audit.child --task T --candidate C --tier A --device cpu --result R
"""
import argparse
import json
import sys
import traceback

# KernelBench's correctness check (its first versions): allclose at
# atol = rtol = 1e-2; computed for comparison only, never a verdict.
KB_ATOL = KB_RTOL = 1e-2
# The seed of tier C's specials inputs (input k: SPECIALS_SEED + k).
SPECIALS_SEED = 17


def _plain():
    """A context with the binding's mode (and any other) off."""
    from torch.utils._python_dispatch import _disable_current_modes
    return _disable_current_modes()


def _bitwise_equal(a, b):
    """Bit for bit, any NaN matching any NaN (docs/audit.md, tier C)."""
    import torch
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, {"reference": "%s %s" % (tuple(a.shape), a.dtype),
                       "candidate": "%s %s" % (tuple(b.shape), b.dtype)}
    if not a.is_floating_point():
        diff = a != b
    else:
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        diff = (a.contiguous().view(bits) != b.contiguous().view(bits)) & ~(a.isnan() & b.isnan())
    n = int(diff.sum())
    if n == 0:
        return True, None
    idx = [int(i) for i in diff.nonzero()[0]]
    # repr: a NaN or Inf stays readable JSON
    return False, {"elements_differing": n, "index": idx, "candidate": repr(float(b[tuple(idx)])),
                   "reference": repr(float(a[tuple(idx)]))}


def _allclose(ref, out):
    import torch
    return bool(ref.shape == out.shape and
                torch.allclose(ref.double(), out.double(), atol=KB_ATOL, rtol=KB_RTOL))


def _snapshot(tensors):
    return {k: v.detach().clone() for k, v in tensors.items()}


def _changed(before, after):
    out = []
    for k, v in before.items():
        ok, _ = _bitwise_equal(v, after[k].detach())
        if not ok:
            out.append(k)
    return out


def _error_line(cand_path):
    """The candidate file's innermost line in the exception's traceback."""
    import os
    tb = traceback.extract_tb(sys.exc_info()[2])
    for fr in reversed(tb):
        if os.path.abspath(fr.filename) == os.path.abspath(cand_path):
            return "%s:%d" % (os.path.basename(fr.filename), fr.lineno)
    return None


def run(args):
    import torch
    from kcheck.audit import task as tk
    from kcheck.audit.wrapper import Wrapper, hold_constants
    res = {"allclose": None, "exact": None, "immutability": None, "error": None,
           "weights": None, "calls": 0}
    # before anything can allocate CUDA memory (the task's and the
    # candidate's imports included): PyTorch's allocator cannot be swapped
    # once in use
    res["bounds"] = _install_guards(args.device)
    if args.dtypes:
        # the wrapper op's contract states the reference's profile at the
        # task's dtype; the binding runs its other dtypes at these
        from kcheck.audit.wrapper import QUALNAME
        from kcheck.torch import layouts
        layouts.reference_dtypes(QUALNAME, json.loads(args.dtypes))
    try:
        task = tk.Task(args.task)
        cand = tk.Candidate(args.candidate)
        res["line"] = cand.forward_line()
        # construction is not the candidate's call: the binding judges
        # only the wrapper op (kernel-level gates still see any launch)
        with _plain():
            ref_model = task.build(args.device).eval()
            model = cand.build(task, args.device).eval()
            built = tk.snapshot(model)
            res["weights"], names = tk.align(ref_model, model)
            constants = _weights(res, task, ref_model, model, built, names, args.device)
    except Exception as e:
        res["error"] = {"stage": "build", "message": "%s: %s" % (type(e).__name__, e),
                        "line": _error_line(args.candidate)}
        return res
    _cudnn_benchmark_off(res)
    if res["weights"] == "constants":
        names = {}  # the candidate's parameters are no arguments of the wrapper op
    # weights the reference could not be given: no comparison with it
    compared = res.get("weights_held") is not False
    # aligned parameters become the wrapper's arguments, under the
    # reference's names the contract uses (generated inputs reach them);
    # with weights as constants the wrapper takes the forward's inputs
    # only, and the contract's parameters are the reference's values
    params = {k: v for k, v in tk.tensors(model).items() if k in names}
    held = tk.tensors(model) if constants is not None else {}
    wrap = None
    allclose, exact, changed = [], [], set()
    for seed in tk.INPUT_SEEDS:
        with _plain():
            inputs = tk.to_device(task.inputs(seed), args.device)
            with torch.no_grad():
                ref = ref_model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
            if isinstance(ref, (tuple, list)):
                ref = ref[0]
        if wrap is None:
            wrap = Wrapper(model, inputs, names)
            if constants is not None and args.tier == "A" and \
                    not hold_constants(wrap.op, constants):
                res["weights_held"] = False
                res["weights_reason"] = res["weights_reason"].split("; judged with")[0] + \
                    "; no binding or no contract is loaded to hold the weights as constants"
            if args.tier == "A" and compared and res.get("weights_held") is not False:
                # the layouts gate's empty variant: the candidate against
                # the reference's result at the empty input (a custom op
                # has no meta kernel to tell even its shape)
                from kcheck.audit.wrapper import QUALNAME
                from kcheck.torch import layouts
                layouts.reference_call(QUALNAME, wrap.reference(ref_model, names))
        watched = {"input %d" % i: x for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)}
        watched.update({"parameter %s" % k: v for k, v in params.items()})
        watched.update({"parameter %s" % k: v for k, v in held.items()})
        with _plain():
            before = _snapshot(watched)
        try:
            with torch.no_grad():
                out = wrap.call(inputs, params)
        except Exception as e:
            res["error"] = {"stage": "run", "seed": seed,
                            "message": "%s: %s" % (type(e).__name__, str(e)[:300]),
                            "line": _error_line(args.candidate)}
            return res
        res["calls"] += 1
        with _plain():
            out = out.detach()
            _check_bounds(res, {"inputs": "task", "seed": seed},
                          dict(watched, output=out) if isinstance(out, torch.Tensor) else watched)
            changed.update(_changed(before, watched))
            allclose.append(_allclose(ref, out))
            if args.tier == "C" and compared:
                ok, ev = _bitwise_equal(ref, out)
                exact.append({"equal": ok, "evidence": ev,
                              "exposed_by": {"inputs": "task", "seed": seed}})
    res["allclose"] = all(allclose)
    res["immutability"] = sorted(changed)
    try:
        res["run_to_run"] = _run_to_run(task, ref_model, wrap, params, args.device)
    except Exception as e:
        res["error"] = {"stage": "run", "inputs": "run to run",
                        "message": "%s: %s" % (type(e).__name__, str(e)[:300]),
                        "line": _error_line(args.candidate)}
        return res
    if args.tier == "C" and compared:
        try:
            exact.append(_exact_on_specials(task, ref_model, wrap, params, args.device))
        except Exception as e:
            res["error"] = {"stage": "run", "inputs": "specials",
                            "message": "%s: %s" % (type(e).__name__, str(e)[:300]),
                            "line": _error_line(args.candidate)}
            return res
        res["exact"] = [e for e in exact if e is not None]
    # the later calls' (run to run, specials): their tensors are gone
    _check_bounds(res, {"inputs": "run to run, specials"}, {})
    return res


def _install_guards(device):
    """The bounds gate's start: the guard-zone allocator installed as
    PyTorch's CUDA allocator (kcheck.torch.guards), or the gate not run
    with the reason (a CPU device, CUDA already initialised, no
    CUDAPluggableAllocator): never a pass it did not earn."""
    from kcheck import _api
    from kcheck.torch import guards
    from kcheck.torch.mode import _gates
    if "bounds" not in _gates(_api.option("gates", "") or ""):
        # a run that leaves the gate out keeps PyTorch's own allocator
        return {"status": "not run", "reason": "the bounds gate is not among the gates (the "
                "gates option): PyTorch's own allocator kept"}
    why = guards.install(device)
    if why is not None:
        return {"status": "not run", "reason": why}
    return {"status": "pass", "checks": 0, "damaged": 0, "evidence": []}


def _cudnn_benchmark_off(res):
    """cuDNN's benchmark mode asks the allocator for its largest free block
    (cacheInfo), which PyTorch's CUDAPluggableAllocator refuses with an
    exception: under the guard-zone allocator a candidate (or task) that
    turned it on would fail as an error. Turned off, said so: it chooses
    among algorithms, all of which must compute the same op."""
    import torch
    from kcheck.torch import guards
    if guards.active() and torch.backends.cudnn.benchmark:
        torch.backends.cudnn.benchmark = False
        res["bounds"]["note"] = "torch.backends.cudnn.benchmark turned off: the guard-zone " \
            "allocator has no cacheInfo, which benchmark mode asks for"


# Damaged allocations kept as evidence (all are counted).
BOUNDS_EVIDENCE = 8


def _check_bounds(res, exposed_by, tensors):
    """The guard zones read after the candidate's calls: every allocation
    whose zones changed since the last check (the gates' generated runs
    inside the binding's call included) is a store outside a tensor;
    tensors ({name: tensor}) names the ones still held."""
    from kcheck.torch import guards
    b = res.get("bounds")
    if not b or b["status"] == "not run":
        return
    try:
        n, damage = guards.check()
    except guards.CheckError as e:
        if b["status"] != "fail":
            b.update(status="error", reason=str(e))
        return
    b["checks"] += 1
    if not n:
        return
    b["status"] = "fail"
    b["damaged"] += n
    evs = [guards.attribute(d, tensors) for d in damage]
    # the named tensors first: the worst evidence says which one
    for ev in sorted(evs, key=lambda e: "shape" not in e):
        if len(b["evidence"]) < BOUNDS_EVIDENCE:
            ev["exposed_by"] = dict(exposed_by) if "shape" in ev else dict(
                exposed_by, note="stored during these calls, the binding's generated, shape "
                                 "and layout runs inside them included")
            b["evidence"].append(ev)


def _weights(res, task, ref_model, model, built, names, device):
    """Weights as constants (docs/audit.md, Parameters), decided before
    any call: None where the aligned parameters become the wrapper op's
    arguments, else {wrapper argument name: the reference's tensor} with
    the reference given the candidate's construction values (tk.hold).
    Two cases: the caching probe finds aligned parameters the candidate
    ignores as arguments (a copy derived at __init__), or the parameters
    are not aligned; either way every tensor of the reference must take a
    value of the candidate's construction (by name, else by bitwise-equal
    value), and for a cached copy each aligned parameter's construction
    value must be the reference's (the probe's calls saw those), or
    nothing is compared with the reference (res["weights_held"] False,
    the reason said). res gets weights, weights_held, weights_reason
    and, for a cached copy, cached."""
    from kcheck.audit import task as tk
    from kcheck.audit.wrapper import param_name
    if res["weights"] in ("name", "value"):
        from kcheck import _api
        inputs = tk.to_device(task.inputs(tk.INPUT_SEEDS[0]), device)
        lib = _api.api()
        if lib is not None:  # kcheck's own work: the kernel gates judge the wrapper's calls
            lib.kcheck_own_begin()
        try:
            cached = tk.probe_cached(ref_model, model, names, inputs)
        finally:
            if lib is not None:
                lib.kcheck_own_end()
        if not cached:
            return None
        res["cached"] = cached
        why = ("cached copy: with generated values for %s the candidate's output is bitwise "
               "unchanged and the reference's is not (a copy derived at __init__)"
               % ", ".join(cached))
    elif res["weights"] == "constants":
        why = "not aligned: the candidate's parameters match the reference's neither by name " \
              "and shape nor by value"
    else:
        return None
    res["weights"] = "constants"
    matched, unmatched = tk.match_values(ref_model, built)
    differ = []
    if res.get("cached"):
        # the probe called the candidate with the values align loaded, the
        # reference's: a copy made at the first call holds those, one made
        # at __init__ the construction's; held only where the two agree
        ref = tk.tensors(ref_model)
        differ = [r for c, r in sorted(names.items()) if not tk.equal_bits(built[c], ref[r])]
    if unmatched or differ:
        # judging the candidate against weights it may not compute with
        # would be a guess: nothing is compared with the reference
        res["weights_held"] = False
        res["weights_reason"] = why + "".join((
            "; no tensor of the candidate's construction has the name or the value of the "
            "reference's %s" % ", ".join(unmatched) if unmatched else "",
            "; the values the candidate's construction gave %s differ from the reference's"
            % ", ".join(differ) if differ else "")) + \
            ", so the reference cannot be given its weights"
        return None
    tk.hold(ref_model, model, built, matched)
    res["weights_held"] = True
    res["weights_reason"] = why + "; judged with the weights as constants: the reference takes " \
        "the values the candidate's construction produced, generated inputs replace only the " \
        "forward's inputs"
    return {param_name(r): t for r, t in tk.tensors(ref_model).items()}


# Calls on the same inputs whose results must be bit for bit the same.
RUN_TO_RUN_CALLS = 3


def _run_to_run(task, ref_model, wrap, params, device):
    """The candidate called RUN_TO_RUN_CALLS times on copies of the first
    seed's inputs: the results must be bitwise equal, unless the
    reference's own results differ run to run (then not applicable). A
    result that changes with nothing changed is a race, an unordered
    reduction or state kept between calls; the oracle may accept each one."""
    import torch
    from kcheck.audit import task as tk

    def copies():
        with _plain():
            xs = tk.to_device(task.inputs(tk.INPUT_SEEDS[0]), device)
        return xs

    def first(r):
        return (r[0] if isinstance(r, (tuple, list)) else r).detach()
    with _plain(), torch.no_grad():
        refs = [first(ref_model(*copies())) for _ in range(2)]
        ok, _ = _bitwise_equal(refs[0], refs[1])
    if not ok:
        return {"status": "not_applicable", "reason": "the reference's own results differ run to run"}
    outs = []
    for _ in range(RUN_TO_RUN_CALLS):
        xs = copies()
        with torch.no_grad():
            outs.append(first(wrap.call(xs, params)))
    with _plain():
        for k in range(1, len(outs)):
            ok, ev = _bitwise_equal(outs[0], outs[k])
            if not ok:
                return {"status": "fail", "calls": RUN_TO_RUN_CALLS, "call": k, "evidence": ev,
                        "seed": tk.INPUT_SEEDS[0]}
    return {"status": "pass", "calls": RUN_TO_RUN_CALLS}


def _exact_on_specials(task, ref_model, wrap, params, device):
    """Tier C on the nonfinite gate's generator (kcheck_generate
    "specials": NaN, Inf, signed zeros, subnormals, extremes at the task's
    shapes): a selection or copy of values keeps each bit (a NaN may be
    any NaN), so e.g. a copy that turns NaN into 0 or -0 into +0 differs.
    An input of fewer than 6 rows holds only some of the special kinds
    at one seed: the runs the nonfinite gate makes (trials.specials_seeds)
    give it the others, the first unequal one reported. None where no
    libkcheck with the generator is loaded."""
    import torch
    from kcheck import _api
    from kcheck.audit import task as tk
    from kcheck.torch import trials
    lib = _api.api()
    if lib is None:
        return None
    with _plain():
        given = tk.to_device(task.inputs(tk.INPUT_SEEDS[0]), device)
    rows = [trials.gen_rows(x) for x in given
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()]
    res = None
    for seed0 in trials.specials_seeds(SPECIALS_SEED, min(rows) if rows else 0):
        res = _exact_on_specials_at(given, ref_model, wrap, params, seed0, lib)
        if not res["equal"]:
            break
    return res


def _exact_on_specials_at(given, ref_model, wrap, params, seed0, lib):
    """One run of _exact_on_specials: input k generated at seed0 + k."""
    import torch
    from kcheck.torch import trials
    with _plain():
        # fresh copies each run: a candidate that writes an input it is
        # given must not change the next run's
        inputs = [x.clone() if isinstance(x, torch.Tensor) else x for x in given]
        cmds, k = [], 0
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
                seed = seed0 + k
                inputs[i] = trials.generate(lib, "specials", "none", x, trials.role(k), seed)
                cmds.append(trials.regen_command("specials", "none", seed, x, trials.role(k)))
            if isinstance(x, torch.Tensor):
                k += 1
        with torch.no_grad():
            ref = ref_model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
        if isinstance(ref, (tuple, list)):
            ref = ref[0]
    with torch.no_grad():
        out = wrap.call(inputs, params)
    with _plain():
        ok, ev = _bitwise_equal(ref, out.detach())
    how = {"inputs": "generated", "generator": "specials", "seed": seed0}
    return {"equal": ok, "evidence": ev, "exposed_by": how, "regenerate": cmds}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m kcheck.audit.child")
    p.add_argument("--task", required=True)
    p.add_argument("--candidate", required=True)
    p.add_argument("--tier", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--result", required=True)
    p.add_argument("--dtypes", help="JSON: the reference's profile and result dtype at each "
                   "other dtype it accepts (the layouts gate's dtype variants of the wrapper op)")
    args = p.parse_args(argv)
    res = run(args)
    with open(args.result, "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
