"""The audit's driver: trace each task once here, then run each candidate
in its own process under `kcheck run --torch` (torch_budget=1: every gate
at the first call; gates=all: shapes too) with a timeout, and turn the
records into audit.jsonl (schema kcheck.audit/1, docs/audit.md)."""
import glob
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from kcheck.audit import verdict as vd

SCHEMA = "kcheck.audit/1"
_PY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def discover(paths):
    """[(task, [candidates])] from `TASK CAND...` or from directories:
    a manifest DIR/audit.jsonl of {"task": PATH, "candidate": PATH} rows
    (paths relative to DIR), else DIR/<task>/reference.py beside
    DIR/<task>/*.py (or a DIR that is one such task folder)."""
    if len(paths) >= 2 and os.path.isfile(paths[0]) and \
            all(os.path.isfile(p) or _is_function(p) for p in paths[1:]):
        return [(paths[0], list(paths[1:]))]
    out = []
    for d in paths:
        if not os.path.isdir(d):
            raise ValueError("%s: expected TASK.py CANDIDATE.py... or a directory" % d)
        if os.path.isfile(os.path.join(d, "audit.jsonl")):
            out += manifest(d)
            continue
        refs = [os.path.join(d, "reference.py")] if os.path.isfile(os.path.join(d, "reference.py")) \
            else sorted(glob.glob(os.path.join(d, "*", "reference.py")))
        for ref in refs:
            cands = sorted(p for p in glob.glob(os.path.join(os.path.dirname(ref), "*.py"))
                           if os.path.basename(p) != "reference.py")
            out.append((ref, cands))
    if not out:
        raise ValueError("no task found in %s" % ", ".join(paths))
    return out


def manifest(d):
    """[(task, [candidates])] from DIR/audit.jsonl's rows, in the order the
    tasks first appear; a path is relative to DIR unless absolute. An
    audit's own output (records with a "type") is not a manifest."""
    path = os.path.join(d, "audit.jsonl")
    pairs = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ValueError("%s:%d: not JSON (%s)" % (path, n, e)) from None
            if not isinstance(row, dict) or "type" in row:
                raise ValueError("%s:%d: an audit's output, not a manifest of {\"task\": PATH, "
                                 "\"candidate\": PATH} rows" % (path, n))
            if not isinstance(row.get("task"), str) or not isinstance(row.get("candidate"), str):
                raise ValueError("%s:%d: a manifest row needs \"task\" and \"candidate\" paths"
                                 % (path, n))
            task = os.path.normpath(os.path.join(d, row["task"]))
            cand = row["candidate"]
            if not _is_function(cand) or os.path.exists(os.path.join(d, cand)):
                cand = os.path.normpath(os.path.join(d, cand))
            for p in (task, cand):
                if not os.path.isfile(p) and not _is_function(p):
                    raise ValueError("%s:%d: %s: no such file" % (path, n, p))
            pairs.setdefault(task, []).append(cand)
    if not pairs:
        raise ValueError("%s: an empty manifest" % path)
    return list(pairs.items())


_SYNTH = '''"""The task of `kcheck audit --reference %(ref)s --inputs %(inputs)s`
(written by kcheck audit: a KernelBench-layout module around them)."""
import importlib
import os
import sys

import torch

from kcheck.audit.task import load_file

sys.path.insert(0, %(cwd)r)


def _load(spec):
    target, _, fn = spec.rpartition(":")
    mod = load_file(os.path.join(%(cwd)r, target)) if target.endswith(".py") \\
        else importlib.import_module(target)
    return getattr(mod, fn)


_REFERENCE = _load(%(ref)r)
_INIT = _load(%(init)r)() if %(init)r else ()


class Model(torch.nn.Module):
    def __init__(self, *init):
        super().__init__()
        self.init = init

    def forward(self, *args):
        return _REFERENCE(*args, *self.init)


def get_inputs():
    return list(_load(%(inputs)r)())


def get_init_inputs():
    return list(_INIT)
'''


def synthesize_task(reference, inputs, init, out):
    """A task file under OUT for a reference function and an input
    function (`module_or_file:function` each; init: values passed after
    the inputs, or None); its name is the reference function's."""
    for what, spec in (("--reference", reference), ("--inputs", inputs), ("--init", init)):
        if spec is not None and not _is_function(spec):
            raise ValueError("%s %s: expected module_or_file:function" % (what, spec))
    folder = os.path.join(out, "tasks")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, reference.rpartition(":")[2] + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_SYNTH % {"ref": reference, "inputs": inputs, "init": init or "",
                          "cwd": os.getcwd()})
    return path


def _is_function(spec):
    """`module_or_file:function`, a candidate callable."""
    target, _, fn = spec.rpartition(":")
    return bool(target and fn.isidentifier() and (os.path.isfile(target) or "/" not in target))


def _absolute(spec):
    """A candidate spec with its file made absolute (the child runs
    elsewhere); a module's name stays as it is."""
    if os.path.exists(spec):
        return os.path.abspath(spec)
    target, _, fn = spec.rpartition(":")
    return "%s:%s" % (os.path.abspath(target), fn) if os.path.isfile(target) else spec


def candidate_name(spec):
    """The candidate's folder under OUT/<task>/: its file's name, with
    _<function> for a callable."""
    target, _, fn = spec.rpartition(":") if not os.path.exists(spec) else (spec, "", "")
    base = os.path.basename(target)
    base = base[:-3] if base.endswith(".py") else base
    return base + ("_" + fn if fn else "")


def task_name(task_path):
    base = os.path.basename(task_path)
    return os.path.basename(os.path.dirname(os.path.abspath(task_path))) \
        if base == "reference.py" else os.path.splitext(base)[0]


def trace_task(task_path, device):
    """(audit_task record, tier, reason); a task that cannot be built or
    traced is tier "unjudged". A tier-A task's record has the layouts
    gate's other dtypes: dtypes, {dtype: {"profile": the reference's
    there, "out": its result's dtype}}, and dtypes_refused, {dtype: why
    not} (trace.dtype_profiles)."""
    import torch
    from kcheck.audit.task import Task, INPUT_SEEDS, to_device
    from kcheck.audit.trace import Trace, dtype_profiles
    rec = {"type": "audit_task", "schema": SCHEMA, "task": task_path}
    try:
        task = Task(task_path)
        model = task.build(device).eval()
        inputs = to_device(task.inputs(INPUT_SEEDS[0]), device)
        tr = Trace(model, inputs)
    except Exception as e:
        rec.update(tier="unjudged", reason="the reference could not be run or traced: %s: %s"
                   % (type(e).__name__, e))
        return rec, "unjudged", rec["reason"]
    rec.update(tr.record())
    if tr.tier == "A":
        rec["dtypes"], rec["dtypes_refused"] = dtype_profiles(model, inputs, tr.contract)
    rec["settings"] = {"allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                       "float32_matmul_precision": torch.get_float32_matmul_precision()}
    return rec, tr.tier, tr.reason


class Options:
    """profile: --profile, the spec every tier-A contract states at the
    task's dtype instead of the one PyTorch's settings imply (checked by
    the caller), or None."""

    def __init__(self, lib, out, device, timeout, jobs, extra=(), profile=None):
        self.lib, self.out, self.device = lib, out, device
        self.timeout, self.jobs, self.extra = timeout, jobs, list(extra)
        self.profile = profile


def _kcheck_options(opts, prefix, contract_path):
    o = ["log_path=" + prefix, "torch_budget=1", "gates=all", "check_first=3"]
    if opts.device == "cpu":  # the CPU stand-in: the binding judges CPU tensors too
        o.append("torch_devices=cuda,cpu")
    if contract_path:
        o.append("contracts=" + contract_path)
    return o + opts.extra


def run_candidate(opts, task_path, tier, contract_path, cand, folder, dtypes=None):
    """(child result or None, records, timed_out, rc, seconds). dtypes:
    the audit_task's (the reference at each other dtype it accepts), for
    the layouts gate (the child tells the binding)."""
    from kcheck.report import read_records
    os.makedirs(folder, exist_ok=True)
    prefix = os.path.join(folder, "kc")
    for old in glob.glob(prefix + ".*.jsonl"):
        os.unlink(old)
    result_path = os.path.join(folder, "result.json")
    if os.path.exists(result_path):
        os.unlink(result_path)
    cmd = [sys.executable, "-m", "kcheck", "--lib", opts.lib, "run", "--torch", "--allow-unchecked"]
    for o in _kcheck_options(opts, prefix, contract_path):
        cmd += ["-o", o]
    cmd += ["--", sys.executable, "-m", "kcheck.audit.child", "--task", os.path.abspath(task_path),
            "--candidate", _absolute(cand), "--tier", tier,
            "--device", opts.device, "--result", result_path]
    if dtypes:
        cmd += ["--dtypes", json.dumps(dtypes)]
    env = dict(os.environ)
    env["PYTHONPATH"] = _PY + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    t0 = time.monotonic()
    with open(os.path.join(folder, "stderr.txt"), "w") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=err, stderr=subprocess.STDOUT,
                                start_new_session=True)
        timed_out = False
        try:
            rc = proc.wait(timeout=opts.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the candidate's own process group only
            rc = proc.wait()
    result = None
    if os.path.exists(result_path):
        with open(result_path) as f:
            result = json.load(f)
    records = []
    for path in sorted(glob.glob(prefix + ".*.jsonl")):
        try:
            records += read_records(path)
        except Exception:  # a report cut short by a crash: what was written
            continue
    return result, records, timed_out, rc, time.monotonic() - t0


def prepare_task(task_path, opts):
    """The task traced and its contract written to OUT/<task>/contract.yaml:
    (audit_task record, tier, reason)."""
    trec, tier, reason = trace_task(task_path, opts.device)
    if trec.get("contract") and opts.profile:
        # the user's word over PyTorch's settings, both recorded
        trec["profile_derived"] = trec["contract"]["profile"]
        trec["contract"]["profile"] = opts.profile
    if trec.get("contract"):
        from kcheck.audit.trace import contract_yaml
        path = os.path.abspath(os.path.join(opts.out, task_name(task_path), "contract.yaml"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(contract_yaml(trec["contract"]))
        trec["contract_file"] = path
    return trec, tier, reason


def judge_candidate(opts, trec, tier, reason, cand):
    """One candidate's audit_candidate record (its process run here)."""
    task_path = trec["task"]
    folder = os.path.join(opts.out, task_name(task_path), candidate_name(cand))
    rec = {"type": "audit_candidate", "schema": SCHEMA, "task": task_path, "candidate": cand,
           "tier": tier}
    if tier == "unjudged":
        rec.update(verdict="unjudged", reason=reason, failed=[], allclose=None)
        return rec
    result, records, timed_out, rc, secs = run_candidate(
        opts, task_path, tier, trec.get("contract_file"), cand, folder, trec.get("dtypes"))
    verdict, fields = vd.judge(tier, result, records, reason, timed_out, rc)
    rec.update(fields)
    rec["verdict"] = verdict
    rec["cost_s"] = {"audit": round(secs, 2)}
    rec["reports"] = sorted(glob.glob(os.path.join(folder, "kc.*.jsonl")))
    return rec


def audit(pairs, opts, on_candidate=None):
    """Runs every candidate of every task, --jobs at a time across tasks;
    returns the records in audit.jsonl order (each task, its candidates,
    then the summary). on_candidate(task, None) and (task, candidate) are
    called in that order as results come in."""
    os.makedirs(opts.out, exist_ok=True)
    tasks = [(prepare_task(t, opts), cands) for t, cands in pairs]
    out = []
    with ThreadPoolExecutor(opts.jobs) as pool:
        futures = [[pool.submit(judge_candidate, opts, trec, tier, reason, c) for c in cands]
                   for (trec, tier, reason), cands in tasks]
        for ((trec, _, _), _), fs in zip(tasks, futures):
            out.append(trec)
            if on_candidate:
                on_candidate(trec, None)
            for f in fs:
                out.append(f.result())
                if on_candidate:
                    on_candidate(trec, out[-1])
    out.append(summary(out))
    with open(os.path.join(opts.out, "audit.jsonl"), "w") as f:
        for r in out:
            f.write(json.dumps(r) + "\n")
    from kcheck.audit.html import audit_html
    with open(os.path.join(opts.out, "audit.html"), "w", encoding="utf-8") as f:
        f.write(audit_html(out))
    return out


def summary(records):
    cands = [r for r in records if r["type"] == "audit_candidate"]
    tiers = {r["task"]: r for r in records if r["type"] == "audit_task"}
    by_verdict, by_gate, by_family = {}, {}, {}
    for r in cands:
        by_verdict[r["verdict"]] = by_verdict.get(r["verdict"], 0) + 1
        for g in r.get("failed") or []:
            by_gate[g] = by_gate.get(g, 0) + 1
        fam = tiers.get(r["task"], {}).get("family", "composite")
        f = by_family.setdefault(fam, {})
        f[r["verdict"]] = f.get(r["verdict"], 0) + 1
    return {"type": "audit_summary", "schema": SCHEMA, "candidates": len(cands),
            "by_verdict": by_verdict, "by_gate": by_gate, "by_family": by_family,
            "allclose_pass_broken": sum(1 for r in cands
                                        if r["verdict"] == "broken" and r.get("allclose"))}


def unsupported(rec):
    """How many layouts gate variants of an audit_candidate went
    undecided: refused with a clean exception (or answered in another
    dtype than the reference), or judged inconclusive (no finite bound at
    that dtype)."""
    g = (rec.get("gates") or {}).get("layouts") or {}
    return g.get("unsupported", 0) + g.get("inconclusive", 0)


def exit_status(records, error_exitcode=1, allow_unchecked=False, strict=False):
    """docs/audit.md: 1 (or N) when a candidate is broken or error (or,
    strict, partial or with unsupported or inconclusive layouts), 5 when every candidate
    is unjudged, else 0."""
    cands = [r for r in records if r["type"] == "audit_candidate"]
    bad = ("broken", "error", "partial") if strict else ("broken", "error")
    if any(r["verdict"] in bad or (strict and unsupported(r)) for r in cands):
        return error_exitcode
    if not allow_unchecked and (not cands or all(r["verdict"] == "unjudged" for r in cands)):
        return 5
    return 0
