"""The dispatch-level hook: every ATen op the program runs passes through
KcheckMode.__torch_dispatch__ (below autograd and autocast, so backward ops
and autocast's casts are seen as the ops that really run).

Per call: ops the table does not cover, and tensors the oracle cannot
judge, pass through at once and are counted by reason. A covered call is
keyed by (op, dtypes, shapes, strides, arguments, settings); a key the
library's policy is done with is remembered here, so the steady-state cost
is one dict lookup. A call the policy selects is checked at op level:
inputs copied to host memory before the op (in place ops overwrite them),
the op run exactly as the program asked, its output copied after, and the
oracle judges output against inputs under the profile PyTorch's settings
define.

What the program can observe: the copies are device-to-host copies into
CPU memory (no CUDA caching-allocator allocation, no kernel launch, no RNG
use, nothing recorded by autograd); they synchronise the current stream,
which changes timing only. Views made for the copies are metadata only.
"""
import atexit
import contextlib
import ctypes
import itertools
import json
import os
import re
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, wait

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from kcheck import _api, _defs
from kcheck.op_report import computing
from kcheck.torch import (byte_verdicts, guards, judge, layouts, nondet, ops, profiles, timing,
                          trials)

_PKG_DIRS = tuple(os.path.dirname(os.path.realpath(m.__file__)) + os.sep
                  for m in (torch, sys.modules["kcheck"]))


_ORDER = judge.ORDER
# The ops of three operands (oracle/ops.def class pointwise) take a scalar
# as ATen does (a selection's value converted once to the result's type,
# lerp's weight in opmath): no double rounding to pass through.
_POINTWISE = _defs.oracle_ops("pointwise")
# Reasons that hold for this call only: the same signature is checked at a
# later call outside them.
_TRANSIENT = ("CUDA graph capture", "inside torch.compile")
# Reasons that depend on a scalar's value, which signatures leave out.
_PER_VALUE = "scalar operand"
# Host bytes of judgments waiting for a worker beyond which new signatures
# are deferred (the copies of inputs and outputs they judge). Judgments
# still pending at exit are finished before the report is closed.
_PENDING_BYTES = 1 << 30
# The longest steady-state interval between watched steps, in units of
# torch_watch_every (see on_step).
_WATCH_CAP = 8
# The cost assumed for a generated-input part before any has been timed
# (on the H200 bench they took 0.1-0.3 s each).
_FIRST_PART_GUESS = 0.1


# The inconclusive judgments kept by op for the summary (inconclusive_by_op):
# at most _INC_OPS ops, and _INC_REASONS (dtype, reason) pairs within an op;
# judgments beyond either are counted, not kept, so that a long run's
# summary stays bounded.
_INC_OPS = 32
_INC_REASONS = 8
# A measured number in a reason ("37 element(s)", "miss probability
# 0.0012 > 1e-06"): one reason whatever the number, so that one cause
# takes one row. Other integers are the reason's own ("n u >= 1", "[0, C)").
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+(?= element))"
                     r"(?![\w.])")


def _reason(text):
    """An inconclusive verdict's reason as counted (its numbers as N)."""
    if not text:
        return "no reason given"
    return _NUMBER.sub("N", text)[:200]


class Stats:
    """Counters for the summary: ops seen, checked, passed through by
    reason (with the ops most often behind each reason), inconclusive
    judgments by op, dtype and reason."""

    def __init__(self):
        self.seen = 0
        self.steps = 0
        self.watched_steps = 0
        self.covered = 0
        self.checked = 0
        self.violations = 0
        self.inconclusive = 0
        self.inc_by_op = {}  # op: [count, {(dtype, reason): count}, count left out]
        self.inc_left_out = 0  # of ops beyond _INC_OPS
        self.errors = 0
        self.generated_deferred = 0  # checks whose generated-input part waited (budget)
        self.last_check_step = 0  # optimizer steps before the last signature's check
        self.passed = {}
        self.by_reason_ops = {}
        # seconds per phase of the checks: on the program's thread (the
        # op's own call on the checked path, host copies, generated-input
        # trials, coverage) and on kcheck's workers (judge:<gate>)
        self.cost = {}
        self.lock = threading.Lock()

    def add_cost(self, phase, seconds):
        with self.lock:
            self.cost[phase] = self.cost.get(phase, 0.0) + seconds

    @contextlib.contextmanager
    def timed(self, phase):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add_cost(phase, time.perf_counter() - t)

    def pass_(self, reason, op):
        self.pass_n(reason, op, 1)

    def merge_fast(self, uncovered, done):
        """Adds the fast path's counters (kept without the lock: op not
        covered per OpOverload, signature done per key) to the reasons."""
        for func in list(uncovered):
            n = uncovered.pop(func, 0)
            if n:
                self.pass_n("op not covered", _op_name(func), n)
        for cell in list(done.values()):
            n, cell[0] = cell[0], 0
            if n:
                self.pass_n("signature done (policy)", cell[1], n)

    def pass_n(self, reason, op, n):
        with self.lock:
            self.passed[reason] = self.passed.get(reason, 0) + n
            per = self.by_reason_ops.setdefault(reason, {})
            if len(per) < 64 or op in per:
                per[op] = per.get(op, 0) + n

    def inconclusive_(self, op, dtype, reason):
        """One inconclusive judgment of op (an ATen op name) on inputs of
        dtype (the oracle's format name), with the verdict's reason."""
        key = (dtype or "?", _reason(reason))
        with self.lock:
            self.inconclusive += 1
            row = self.inc_by_op.get(op)
            if row is None:
                if len(self.inc_by_op) >= _INC_OPS:
                    self.inc_left_out += 1
                    return
                row = self.inc_by_op[op] = [0, {}, 0]
            row[0] += 1
            if key in row[1] or len(row[1]) < _INC_REASONS:
                row[1][key] = row[1].get(key, 0) + 1
            else:
                row[2] += 1

    def inconclusive_record(self):
        """inconclusive_by_op: {op: {count, reasons [{dtype, reason,
        count}], reasons_left_out}}, the most frequent first."""
        out = {}
        for op, (n, reasons, left) in sorted(self.inc_by_op.items(), key=lambda kv: -kv[1][0]):
            out[op] = {"count": n, "reasons_left_out": left, "reasons": [
                {"dtype": d, "reason": r, "count": c}
                for (d, r), c in sorted(reasons.items(), key=lambda kv: -kv[1])]}
        return out

    def record(self):
        top = {r: dict(sorted(per.items(), key=lambda kv: -kv[1])[:8])
               for r, per in self.by_reason_ops.items()}
        return {"ops_seen": self.seen, "optimizer_steps": self.steps,
                "watched_steps": self.watched_steps,
                "ops_covered": self.covered, "ops_checked": self.checked,
                "violations": self.violations, "inconclusive": self.inconclusive,
                "inconclusive_by_op": self.inconclusive_record(),
                "inconclusive_ops_left_out": self.inc_left_out,
                "errors": self.errors, "passed_through": dict(self.passed),
                "generated_part_deferred": self.generated_deferred,
                "async_copies": judge.ASYNC.copies if judge.ASYNC is not None else None,
                "last_check_after_steps": self.last_check_step,
                "cost_s": {k: round(v, 6) for k, v in sorted(self.cost.items())},
                "passed_through_ops": top, "torch_version": torch.__version__}


def _op_name(func):
    try:
        return "%s.%s" % (func._schema.name, func._overloadname)
    except AttributeError:
        return str(func)


def _user_stack():
    """The user's Python frames (innermost last), without torch's and
    kcheck's own. Backward ops run on autograd's threads, where no user
    frame exists: then the main thread's frames (the line that called
    backward) are given, marked so."""
    frames = traceback.extract_stack()
    user = [f for f in frames if not f.filename.startswith(_PKG_DIRS)]
    thread = "caller"
    if not user and threading.current_thread() is not threading.main_thread():
        top = sys._current_frames().get(threading.main_thread().ident)
        if top is not None:
            user = [f for f in traceback.extract_stack(top)
                    if not f.filename.startswith(_PKG_DIRS)]
            thread = "main (this op ran on an autograd thread)"
    return [{"file": f.filename, "line": f.lineno, "function": f.name}
            for f in user[-12:]], thread


def _off_device(args, kwargs, devices):
    """True when a call ran on no watched device: it has tensor arguments
    and none is on a watched device, or (a factory: zeros, randint) it has
    none and makes its result on another device (its device argument, else
    PyTorch's default device)."""
    found = False
    for a in itertools.chain(args, kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, torch.Tensor):
                if t.device.type in devices:
                    return False
                found = True
    if found:
        return True
    dev = kwargs.get("device")
    if dev is None:
        get = getattr(torch, "get_default_device", None)
        dev = get() if get is not None else "cpu"
    return torch.device(dev).type not in devices


def _tensor_reason(t, devices, index_ok=False):
    """Why tensor t cannot be judged (None when it can); index_ok: int32,
    int64 and bool tensors are an op's indices or condition
    (judge.HostTensor carries them as exact doubles)."""
    if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
        return "tensor subclass"
    if t.is_sparse or t.layout != torch.strided:
        return "sparse or non-strided layout"
    if t.is_nested:
        return "nested tensor"
    if t.is_quantized:
        return "quantized tensor"
    dev = t.device.type
    if dev == "meta":
        return "meta or fake tensor"
    if dev not in devices:
        return "%s tensor" % dev
    if t.is_complex():
        return "complex dtype"
    if profiles.fmt(t.dtype) is None and not (index_ok and t.dtype in judge.INDEX_DTYPES):
        return "dtype %s" % str(t.dtype).replace("torch.", "")
    if t.numel() == 0:
        return "empty tensor"
    return None


# The guard zones around a bounds trial's output: the C gates' (the shadow
# buffers' guard size and byte, contract/shadow_buffers.h via kcheck._defs).
_GUARD = _defs.GUARD_BYTES
_GUARD_BYTE = _defs.GUARD_BYTE
# A gate entry's status: the C gates' names (gates/gate_status.def). Before
# they were shared the binding wrote "not_run" where C writes "not run";
# readers accept both (kcheck.op_report).
_S_PASS, _S_FAIL, _S_NOT_RUN = _defs.STATUS_PASS, _defs.STATUS_FAIL, _defs.STATUS_NOT_RUN
_S_NOT_APPLICABLE, _S_SKIPPED = _defs.STATUS_NOT_APPLICABLE, _defs.STATUS_SKIPPED
_S_DEFERRED = _defs.STATUS_DEFERRED
# a layout variant the op refuses with a clean exception (layouts gate)
_S_UNSUPPORTED = _defs.STATUS_UNSUPPORTED
_S_INCONCLUSIVE = _defs.STATUS_INCONCLUSIVE
# a run's class that is a verdict on it (the oracle's, oracle/verdicts.def,
# or fail: a layouts variant's decided without it): the run was judged,
# whatever the verdict
_VERDICT_CLASSES = frozenset(_defs.VERDICTS + (_S_FAIL,)) - {_defs.VERDICT_INCONCLUSIVE}


def _flat_bytes(t):
    """The bytes of t's storage span as a uint8 view (for poisoning)."""
    flat = torch.empty(0, dtype=torch.uint8, device=t.device)
    return flat.set_(t.untyped_storage(), 0, (t.untyped_storage().nbytes(),), (1,))


def _cpu_scalar(t):
    """A 0-dim CPU tensor: what a Python number becomes in a binary op;
    ATen's CUDA kernels take it as a scalar."""
    return t.dim() == 0 and t.device.type == "cpu"


_Tensor = torch.Tensor
_PLAIN = (int, float, bool, str, type(None))
_TORCH_VALUES = (torch.dtype, torch.device, torch.layout, torch.memory_format)
# The float values a signature keeps: 0 and 1, and the exponents at which
# pow is another op (ops_copy._pow: 2, 0.5, -0.5, -1); any other float
# value is judged the same way, so its calls share one signature.
_KEY_FLOATS = frozenset((0.0, 1.0, 2.0, 0.5, -0.5, -1.0))


def _key_part(a):
    """A hashable description of an argument: a tensor's dtype, shape,
    strides and device; integers, strings and torch's value types as they
    are; a float only as one of _KEY_FLOATS or another value (what the
    mappers and the profile tell apart: dropout, alpha, beta, pow's
    exponents computed by other kernels). A signature is (op, dtypes,
    shapes, strides, settings): an optimizer's per-step scalars (learning
    rate, bias correction) do not make a new one at every step. On every
    covered op of every watched step: kept cheap."""
    if isinstance(a, _Tensor):
        return (a.dtype, a.shape, a.stride(), a.device)
    if type(a) is float:
        return a if a in _KEY_FLOATS else float
    if isinstance(a, (list, tuple)):
        return tuple([_key_part(x) for x in a])
    if isinstance(a, dict):  # kwargs: approximate="tanh", dim=..., out=...
        return tuple(sorted([(k, _key_part(v)) for k, v in a.items()]))
    if isinstance(a, _PLAIN) or isinstance(a, _TORCH_VALUES):
        return a
    return type(a).__name__


_ALL_GATES = _defs.GATE_IDS  # what gates=all enables (gates/gates.def)
# The op level's gates by how it runs them (gates.def's op column), in the
# order the runs happen (ops.OP_KINDS): on the application's call (oracle,
# inputs), then on generated inputs (trials, poison, guards, shapes).
# (documented: named when called, __torch_dispatch__)
_GENERATED_KINDS = ops.OP_KINDS[2:]


def _op_gates(kind):
    return tuple(g.id for g in _defs.GATES if g.op == kind)


_GENERATED = ops.GENERATED_GATES
# Gate kinds that re-run the op on variants of its call: the KcheckMode
# method that lists the runs, and the reason when it lists none
_VARIANT_KINDS = {"shapes": ("_shapes", "no shape variants for this op"),
                  "layouts": ("_layouts", "no floating tensor input to lay out otherwise")}
# the gate that judges the application's own call (one: its job carries
# the call's context to every other gate)
(_ORACLE,) = _op_gates("oracle")
_LAYOUT_GATES = frozenset(_op_gates("layouts"))


def _lower_priority(nice):
    """A judgment thread's start: its nice value raised by `nice` (on Linux
    setpriority of a thread id acts on that thread alone), so that the
    program's own threads come first where CPUs are short."""
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:
        pass  # a sandbox may refuse it: the judgments run at the program's priority


def _reruns_estimate(args, kwargs):
    """Device bytes an op's re-runs may hold at once in kcheck's pool: its
    tensors (or their layouts) four times over — generated inputs, an
    output, coverage's two poisoned outputs."""
    total = 0
    for a in list(args) + list((kwargs or {}).values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            shape, dtype = getattr(t, "shape", None), getattr(t, "dtype", None)
            if shape is not None and isinstance(dtype, torch.dtype):
                n = 1
                for d in shape:
                    n *= int(d)
                total += n * dtype.itemsize
    return 4 * total


def _gates(spec):
    """The enabled gates of the gates option (as the C side reads it)."""
    names = {g for g in spec.split(",") if g}
    if "all" in names:
        return set(_ALL_GATES)
    return names - {"none"}


class KcheckMode(TorchDispatchMode):
    """The binding's TorchDispatchMode (install() pushes it)."""

    @classmethod
    def ignore_compile_internals(cls):
        # torch.compile compiles as without kcheck (the mode is off while it
        # traces); its Triton kernels are seen at kernel level only.
        return True

    def __init__(self, lib, devices):
        super().__init__()
        self.lib = lib
        self.devices = devices
        self.stats = Stats()
        self.entries = {}  # OpOverload -> ops.Entry or None
        self.uncovered = {}  # OpOverload -> calls (op not covered)
        # OpOverloads that compute no values (timing.computes_nothing): the
        # fast path asks where an uncovered op ran only for the others
        self.no_values = set()
        # calls that ran on the host only (no tensor on a watched device: a
        # model built on the CPU before .to("cuda")), left out of the judged
        # share by count as views are: they are no GPU work
        self.host_calls = {}
        self.nondet = {}  # OpOverload -> nondet.py's (when, doc): documented nondeterministic
        self.nondet_named = set()  # ops reported as such (once each)
        self.done = {}  # fast keys the policy will not check again -> [calls since, op]
        self.sample = float(_api.option("sample", "0") or 0)
        self.nchecks = 0
        self.log_path = _api.option("log_path", "kcheck")
        self.contracts = {c["torch_op"]: c for c in _api.torch_op_contracts()}
        self.gates = _gates(_api.option("gates", ""))
        self.watch_every = int(_api.option("torch_watch_every", "20") or 20)
        self.watching, self.new_keys, self.off_steps = True, 0, 0
        # steps between watched steps in steady state: torch_watch_every,
        # doubled after each watched step that met nothing new, up to
        # _WATCH_CAP times it; back to torch_watch_every at a new signature
        self.gap, self.off_len = self.watch_every, self.watch_every - 1
        # the judgments run beside the program (ctypes drops the GIL)
        workers = int(_api.option("torch_workers", "0") or 0)
        if workers < 0:
            workers = 0
        elif workers == 0:
            workers = max(1, min(8, (os.cpu_count() or 2) // 2))
        nice = int(_api.option("torch_worker_nice", "10") or 0)
        self.pool = (ThreadPoolExecutor(workers, thread_name_prefix="kcheck",
                                        initializer=_lower_priority, initargs=(nice,))
                     if workers else None)
        self.futures = set()  # judgments queued or running on the pool
        # what the exit left undone within torch_exit_budget (drain_at_exit)
        self.exit_not_run = {"generated_parts": 0, "judgments": 0, "ops": {}}
        self.drained = False
        self.finished = False  # the summary written (atexit or os._exit)
        # checks waiting for or on a worker, and their host bytes; beyond
        # the limits new signatures are deferred, never waited for
        self.inflight, self.pending_bytes = 0, 0
        self.max_inflight = 64 * max(1, workers)
        self.budget = float(_api.option("torch_budget", "0.5") or 0.5)
        # host copies that do not drain the device (judge.AsyncCopies)
        async_bytes = int(float(_api.option("torch_async_copies", str(256 << 20)) or 0))
        judge.ASYNC = judge.AsyncCopies(async_bytes) if async_bytes > 0 else None
        # from steady state on (the first watched step that met no new
        # signature), the program thread's share is torch_steady_budget
        self.steady_budget = float(_api.option("torch_steady_budget", "0.02") or 0)
        self.t_steady = None  # when steady state was first reached
        self.steady_s = 0.0  # program-thread seconds spent in checks since then
        self.parts_s, self.parts_n = 0.0, 0  # generated-input parts run later: their cost
        self.main_s = 0.0  # program-thread seconds spent in checks
        self.t_install = time.perf_counter()
        self.t_clock = None  # the budget's clock: from the first check
        self.waiting = set()  # keys deferred at their last call
        self.checked_keys = set()  # keys offered to the policy once
        self.later = []  # generated-input parts waiting for budget (run_later)
        # judged share: calls per OpOverload off the fast path (the fast
        # path's own counters, uncovered and done, are folded in at the
        # summary: _judged_share), calls whose
        # signature was judged (checked, or a repeat of a checked one)
        self.calls, self.judged_calls, self.judged_keys = {}, {}, set()
        # the timed step (timing.py): torch_time_step -1 the step after
        # steady state, 0 none, N the N-th optimizer step
        self.time_step = int(_api.option("torch_time_step", "-1") or -1)
        self.timer, self.time_at, self.step_times, self.time_error = None, None, None, None
        self.timed = None  # the timed step's ended profiler session (_timed_share reads it)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        # The fast path runs on every op of every watched step: counters
        # without the lock (resolved to names at the summary), no strings.
        kwargs = kwargs or {}
        st = self.stats
        st.seen += 1
        try:
            entry = self.entries[func]
        except KeyError:
            entry = self.entries[func] = self._entry(func)
            if timing.computes_nothing(func):
                self.no_values.add(func)
            nd = nondet.row_for(func)
            if nd is not None:
                self.nondet[func] = nd
        if func in self.nondet:
            self._nondeterministic(func, args, kwargs)
        if entry is None:
            un = self.uncovered
            un[func] = un.get(func, 0) + 1
            if func not in self.no_values:
                self._count_host(func, args, kwargs)
            return func(*args, **kwargs)
        st.covered += 1
        try:
            key = (func, _key_part(args), _key_part(kwargs) if kwargs else (), profiles.token())
            cell = self.done.get(key)
        except Exception:  # an argument kcheck cannot key: never the program's problem
            self._count_call(func)
            st.pass_("arguments kcheck cannot key", entry.name)
            return func(*args, **kwargs)
        if cell is not None:
            cell[0] += 1
            return func(*args, **kwargs)
        self.new_keys += 1
        self._count_call(func)
        t = time.perf_counter()
        try:
            return self._slow(func, entry, key, args, kwargs)
        finally:  # a new signature's whole cost on this thread (checked_call included)
            st.add_cost("new_signature", time.perf_counter() - t)

    def _nondeterministic(self, func, args, kwargs):
        """An op PyTorch documents as nondeterministic on CUDA (nondet.py):
        a `nondeterminism` finding, cause "documented by PyTorch", once per
        op. Under torch.use_deterministic_algorithms(True) PyTorch runs a
        deterministic algorithm or raises: nothing to name, and what the
        kernel-level gates find stays a violation."""
        name = func._schema.name
        if name in self.nondet_named or torch.are_deterministic_algorithms_enabled():
            return
        when, doc = self.nondet[func]
        try:
            dev = next((t.device.type for t in torch.utils._pytree.tree_leaves((args, kwargs))
                        if isinstance(t, torch.Tensor)), None)
            if dev not in self.devices or (when is not None and not when(args, kwargs)):
                return
        except Exception:  # an argument the row cannot read: not named
            return
        self.nondet_named.add(name)
        stack, thread = _user_stack()
        rec = {"op": name, "cause": "documented by PyTorch", "documented": doc,
               "source": nondet.SOURCE, "python_thread": thread, "stack": {"python": stack},
               "evidence": {"verdict": "documented_nondeterministic", "documented": doc}}
        for gate in _op_gates("documented"):
            self.lib.kcheck_op_report(
                gate.encode(), ("PyTorch documents %s as nondeterministic (%s): its result may "
                                 "differ run to run; torch.use_deterministic_algorithms(True) "
                                 "makes it deterministic or an error" % (name, doc)).encode(),
                json.dumps(rec).encode())
            with self.stats.lock:
                self.stats.violations += 1

    def _done(self, key, entry, judged=False, off_device=False):
        """The key will not be checked again (its first pass-through was
        counted under its own reason); judged: its signature was checked,
        so its later calls count as judged; off_device: it ran on no
        watched device, and so do its later calls (a key holds the
        devices)."""
        self.done[key] = [0, entry.name, judged, key[0], off_device]

    def _count_host(self, func, args, kwargs):
        """Counts a call that ran on no watched device (_off_device)."""
        try:
            if _off_device(args, kwargs, self.devices):
                h = self.host_calls
                h[func] = h.get(func, 0) + 1
                return True
        except Exception:  # an argument kcheck cannot read: counted as device work
            pass
        return False

    def on_step(self):
        """After each optimizer step (a safe point outside any op, on the
        thread that runs the loop): a step that met no new signature sends
        the binding to steady state, where it watches one step in
        torch_watch_every, then one in twice as many after each watched
        step that met nothing new (up to _WATCH_CAP times torch_watch_every:
        a loop whose signatures never change pays for a few watched steps
        only); a watched step with a new signature keeps it on and brings
        the interval back to torch_watch_every."""
        st = self.stats
        st.steps += 1
        if self.watching:
            st.watched_steps += 1
            if self.new_keys == 0 and self.t_steady is None:
                self.t_steady = time.perf_counter()
            if self.new_keys:
                self.gap = self.watch_every
            elif self.watch_every > 1 and self._on_top():
                self.__exit__(None, None, None)
                self.watching, self.off_steps = False, 0
                self.off_len = self.gap - 1
                self.gap = min(2 * self.gap, _WATCH_CAP * self.watch_every)
        else:
            self.off_steps += 1
            if self.off_steps >= self.off_len:
                self.__enter__()
                self.watching = True
        self.new_keys = 0
        self._time_boundary()
        if self.later:
            self.run_later()

    def _time_boundary(self):
        """At an optimizer step: ends the timed step, or starts it when it
        is due (timing.py). A profiler that cannot start (a user's own
        session is running) leaves the share not measured, with why."""
        if self.timer is not None:
            self._stop_timer()
            return
        if self.timed is not None or self.time_error or self.time_step == 0:
            return
        due = self.stats.steps == self.time_step if self.time_step > 0 else \
            self.t_steady is not None
        if not due:
            return
        try:
            cuda = "cuda" in self.devices and torch.cuda.is_initialized()
            self.timer = timing.StepTimer(cuda, self.lib)
            self.timer.start()
            self.time_at = self.stats.steps + 1
        except Exception as e:  # never the program's problem
            self.timer, self.time_error = None, "profiler: %s: %s" % (type(e).__name__, e)

    def _stop_timer(self, partial=False):
        """Ends the timed step; its events are read at the summary
        (_timed_share), off the program's steps."""
        try:
            self.timer.stop()
            self.timed = self.timer
            self.time_source = "cuda" if self.timer.cuda else "cpu"
            self.time_partial = partial
        except Exception as e:
            self.time_error = "profiler: %s: %s" % (type(e).__name__, e)
        self.timer = None

    def _timed_share(self, judged, seen):
        """time_judged's record from the timed step's events, or why not."""
        if self.timed is not None and self.step_times is None and not self.time_error:
            try:
                ops = {getattr(getattr(f, "_schema", None), "name", None) for f in list(self.entries)}
                self.step_times, self.loose_kernels = self.timed.result(ops)
            except Exception as e:
                self.time_error = "profiler: %s: %s" % (type(e).__name__, e)
        if self.step_times is None:
            return {"not_measured": self.time_error or (
                "no step timed (torch_time_step=0)" if self.time_step == 0 else
                "the program ended before the timed step")}
        t = timing.share(self.step_times, judged, seen)
        t.update(source=self.time_source, step=self.time_at, partial=self.time_partial,
                 kernels_outside_ops=[{"kernel": k[:200], "us": round(v, 1)}
                                      for k, v in self.loose_kernels])
        return t

    def _count_call(self, func):
        calls = self.calls
        calls[func] = calls.get(func, 0) + 1

    def _judged_share(self, rec):
        """rec's judged counts and, when a step was timed, the judged share
        of its GPU time (timing.share). Folds the fast path's counters
        (uncovered ops, repeats of done keys) into the calls per op before
        merge_fast takes them."""
        for func, n in list(self.uncovered.items()):
            self.calls[func] = self.calls.get(func, 0) + n
        for cell in list(self.done.values()):
            if cell[0]:
                self.calls[cell[3]] = self.calls.get(cell[3], 0) + cell[0]
            if cell[4] and cell[0]:
                self.host_calls[cell[3]] = self.host_calls.get(cell[3], 0) + cell[0]
            if cell[2] and cell[0]:
                self.judged_calls[cell[3]] = self.judged_calls.get(cell[3], 0) + cell[0]
        seen, judged, nothing = {}, {}, {}
        for func, n in list(self.calls.items()):
            name = getattr(getattr(func, "_schema", None), "name", str(func))
            seen[name] = seen.get(name, 0) + n
            if timing.computes_nothing(func):
                nothing[name] = nothing.get(name, 0) + n
        for func, n in list(self.judged_calls.items()):
            name = getattr(getattr(func, "_schema", None), "name", str(func))
            judged[name] = judged.get(name, 0) + n
        host = {}
        for func, n in list(self.host_calls.items()):
            name = getattr(getattr(func, "_schema", None), "name", str(func))
            if name not in nothing:
                host[name] = host.get(name, 0) + n
        rec["ops_judged"] = sum(judged.values())
        rec["ops_no_values"] = sum(nothing.values())  # views, reads: left out of the share
        rec["no_values_ops"] = dict(sorted(nothing.items(), key=lambda kv: -kv[1])[:12])
        # calls on no watched device (a model built on the CPU): no GPU work
        rec["ops_off_device"] = sum(host.values())
        rec["off_device_ops"] = dict(sorted(host.items(), key=lambda kv: -kv[1])[:12])
        rec["judged_by_op"] = {n: [judged.get(n, 0), k] for n, k in
                               sorted(seen.items(), key=lambda kv: -kv[1])}
        if self.timer is not None:
            self._stop_timer(partial=True)
        rec["time_judged"] = self._timed_share(judged, seen)

    def _on_top(self):
        from torch.utils._python_dispatch import _get_current_dispatch_mode
        return _get_current_dispatch_mode() is self

    def _entry(self, func):
        try:
            c = self.contracts.get(func._schema.name)
        except AttributeError:
            return None
        return ops.contract_entry(func, c) if c else ops.entry_for(func)

    def _slow(self, func, entry, key, args, kwargs):
        st = self.stats
        if key in self.waiting:  # mapped and profiled at an earlier call, deferred then
            why = self._deferred()
            if why:
                st.pass_(why, entry.name)
                return func(*args, **kwargs)
        reason = self._reason(entry, args, kwargs)
        plan = None
        if reason is None:
            try:
                plan = entry.mapper(entry.bind(args, kwargs))
            except ops.Skip as e:
                reason = str(e)
            except Exception as e:  # a mapping bug must not break the program
                reason = "mapping error: %s" % type(e).__name__
        if reason is None:
            reason, settings, in_fmt = self._profile(plan)
        if reason is not None:
            st.pass_(reason, entry.name)
            off = self._count_host(func, args, kwargs)  # once per key: its devices
            if reason not in _TRANSIENT and not reason.startswith(_PER_VALUE):
                self._done(key, entry, off_device=off)  # the same key gives the same reason
            return func(*args, **kwargs)
        why = self._deferred() if key not in self.checked_keys else None
        if why:
            # a signature never checked yet: checked at a later call of the same signature (a training
            # loop repeats them); counted, and named in the summary when
            # the program ends before that call
            self.waiting.add(key)
            st.pass_(why, entry.name)
            return func(*args, **kwargs)
        self.waiting.discard(key)
        self.checked_keys.add(key)  # offered to the policy: not deferred again
        # the plan's attrs as the key has its floats: a per-step scalar an
        # attr carries (_foreach_addcdiv_'s bias-corrected step size) must
        # not make the policy see a new signature at every step
        skey = "%s|%r|%s|%r|%s" % (entry.name, key[1:3], in_fmt, key[3],
                                   sorted((k, _key_part(v)) for k, v in plan.attrs.items()))
        why = ctypes.create_string_buffer(256)
        if not self.lib.kcheck_op_decide(entry.name.encode(), skey.encode(), why, len(why)):
            reason = why.value.decode() or "policy"
            st.pass_(reason, entry.name)
            judged = key in self.judged_keys
            if judged:
                self.judged_calls[func] = self.judged_calls.get(func, 0) + 1
            if self.sample == 0 or "max_checks" in reason:
                self._done(key, entry, judged)
            return func(*args, **kwargs)
        self.judged_keys.add(key)
        self.judged_calls[func] = self.judged_calls.get(func, 0) + 1
        t = time.perf_counter()
        now = not self._over_budget(self._part_estimate())
        if not now:
            st.generated_deferred += 1
        try:
            return self._check(func, entry, plan, settings, skey, args, kwargs, now)
        finally:
            dt = time.perf_counter() - t
            self._spent(dt)
            st.add_cost("checked_call", dt)

    def _deferred(self):
        """Why a new signature is not checked at this call (None: it is):
        the workers hold enough pending judgments (their host copies)."""
        if self.inflight >= self.max_inflight or self.pending_bytes > _PENDING_BYTES:
            return "deferred: judgments pending"
        return None

    def _spent(self, dt):
        self.main_s += dt
        if self.t_steady is not None:
            self.steady_s += dt

    def _over_budget(self, est=0.0):
        """Has the program's thread spent its share of the time on checks,
        counting the estimated cost est of the work about to start (so that
        one generated-input part, ~0.1-0.3 s on the H200, runs only once the
        program has run long enough to pay for it)? The first steps (until
        steady state): torch_budget of the time since the first check (from
        the first check, not from the binding's install: the program's
        start-up, model building and CUDA initialisation must not buy
        checks in the first step; nor does the first check itself, whose
        generated-input part waits like the others). From steady state on:
        torch_steady_budget of the time since then. What the program's run
        does not pay for runs at its exit (torch_exit_budget)."""
        if self.budget >= 1:
            return False
        now = time.perf_counter()
        if self.t_clock is None:
            self.t_clock = now
        if self.t_steady is not None:
            return self.steady_s + est >= self.steady_budget * (now - self.t_steady)
        return self.main_s + est > self.budget * (now - self.t_clock)

    def _part_estimate(self):
        """The mean cost of the generated-input parts run so far, inline or
        later (_FIRST_PART_GUESS before the first)."""
        return self.parts_s / self.parts_n if self.parts_n else _FIRST_PART_GUESS

    def _reason(self, entry, args, kwargs):
        if torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing():
            return "CUDA graph capture"
        if torch.compiler.is_compiling():
            return "inside torch.compile"
        index_ok = getattr(entry.mapper, "index_args", False)
        # data_args: the arguments that are the op's data (the others, an
        # RNG state or sequence offsets, maybe empty or integer, are not read)
        data = getattr(entry.mapper, "data_args", None)
        values = list(args) + list(kwargs.values()) if data is None else \
            [v for n, v in entry.bind(args, kwargs).items() if n in data]
        # empty_ok: the mapper leaves empty tensors out (cat's empty inputs)
        empty_ok = getattr(entry.mapper, "empty_ok", False)
        for a in values:
            for t in (a if isinstance(a, (list, tuple)) else (a,)):
                if isinstance(t, torch.Tensor) and not _cpu_scalar(t) and \
                        not (empty_ok and t.numel() == 0):
                    r = _tensor_reason(t, self.devices, index_ok)
                    if r:
                        return r
        makes_on = getattr(entry.mapper, "makes_on", None)
        if makes_on is not None:  # a factory (zeros, full): no tensor argument names its device
            dev = makes_on(entry.bind(args, kwargs))
            if dev not in self.devices:
                return "%s tensor" % dev
        return None

    def _profile(self, plan):
        """(reason, settings, input format): the reason is None when a
        documented profile exists for the call."""
        # indices and conditions (int, bool) are not the op's data
        tensors = [t for n, t in plan.inputs
                   if isinstance(t, torch.Tensor) and profiles.fmt(t.dtype) is not None]
        in_fmts = {profiles.fmt(t.dtype) for t in tensors}
        if len(in_fmts) > 1 and plan.klass == "elementwise":
            # type promotion: computed in the widest input type
            in_fmts = {min(in_fmts, key=_ORDER.index)}
        elif len(in_fmts) > 1 and plan.klass in ("norm_grad", "attention_grad", "batch_norm"):
            # the forward's statistics are kept in acc_type: the gradient's type
            in_fmts = {profiles.fmt(tensors[0].dtype)}
        if len(in_fmts) != 1:
            return "inputs of different dtypes", None, None
        in_fmt = in_fmts.pop()
        for _, v in plan.inputs:
            if not isinstance(v, torch.Tensor) and in_fmt in ("bf16", "fp16") and \
                    plan.op not in _POINTWISE:
                # ATen computes in float with the scalar as a float: unless
                # the scalar is exact in the tensor's type, the result is
                # rounded twice, which the oracle's 0-ulp budget rejects.
                narrow = torch.tensor(v, dtype=torch.float32).to(tensors[0].dtype).double()
                if narrow.item() != torch.tensor(v, dtype=torch.float32).double().item():
                    return "scalar operand not exact in %s (double rounding)" % in_fmt, None, None
        s = profiles.settings()
        try:
            profiles.profile(plan.klass, in_fmt, in_fmt, s)
        except profiles.Unsupported as e:
            return str(e), None, None
        return None, s, in_fmt

    def _check(self, func, entry, plan, settings, skey, args, kwargs, generated_now=True):
        """The application's call, checked: oracle and immutability on its
        own inputs, the generated-input gates and coverage on kcheck's
        tensors. Device work and host copies happen here; the judgments
        run on kcheck's worker threads. generated_now False (torch_budget
        spent): the generated-input part waits for a safe point with
        budget left (after an optimizer step) or the program's exit; it
        needs only the call's layout, never the application's tensors."""
        st = self.stats
        t0 = time.perf_counter()
        with st.timed("copy_inputs"):
            copies = {}
            inputs = self._copy_inputs(plan, copies)
            more = self._more_inputs(plan, copies)
        mark = self.lib.kcheck_thread_launches()
        with st.timed("op"):
            res = func(*args, **kwargs)
        try:
            with st.timed("copy_output"):
                jobs, ctx = self._job(_ORACLE, 0, entry, plan, settings, inputs, res, mark, None)
                more_jobs = self._more_jobs(entry, more, res, ctx)
            gates = {}
            imm = None
            for gate in _op_gates("inputs"):
                if gate not in self.gates:
                    continue
                with st.timed(gate):  # the copies only: compared on the worker
                    imm = (gate, self._immutability_copies(entry, plan, inputs))
                gates[gate] = None  # (its place in the record)
            trial_jobs = {}
            if jobs is not None:
                wanted = [g for g in _GENERATED if g in self.gates]
                for gate in wanted:
                    if gate in entry.not_applicable:
                        gates[gate] = {"status": _S_NOT_APPLICABLE,
                                       "reason": entry.not_applicable[gate]}
                if generated_now:
                    tg = time.perf_counter()
                    trial_jobs = self._generated(func, entry, plan.op, settings, args, kwargs,
                                                 gates, ctx)
                    self.parts_s += time.perf_counter() - tg
                    self.parts_n += 1
                elif any(g not in gates for g in wanted):
                    for g in wanted:
                        gates.setdefault(g, {"status": _S_DEFERRED,
                                             "reason": "torch_budget: run at a later safe point"})
                    self.later.append((func, entry, plan.op, settings, skey,
                                       trials.specs(args, kwargs, self.devices), ctx))
            else:
                gates[_ORACLE] = ctx.get("_result")
            self._submit(entry, plan, skey, jobs, trial_jobs, gates, ctx, t0, imm=imm,
                         more=more_jobs)
        except Exception as e:  # never the program's problem: count, say once
            self._internal(entry, e)
        return res

    def _generated(self, func, entry, op, settings, args, kwargs, gates, ctx):
        """The generated-input gates' trials and coverage, run on the device
        now ({gate: trials} for the judgments; coverage's result in gates).
        args may be the call's tensors or their layouts (trials.specs).
        Refused by device_mem_budget: each such gate a recorded skip."""
        trial_jobs = {}
        try:
            with trials.own_memory(self._device(args), self.lib, _reruns_estimate(args, kwargs)):
                self._generated_in_pool(func, entry, op, settings, args, kwargs, gates, ctx,
                                        trial_jobs)
        except trials.OverBudget as e:  # a recorded skip, never an OOM in the program
            for g in _GENERATED:
                if g in self.gates and g not in gates:
                    gates[g] = {"status": _S_SKIPPED, "reason": str(e)}
        return trial_jobs

    def _generated_in_pool(self, func, entry, op, settings, args, kwargs, gates, ctx, trial_jobs):
        """_generated's runs, inside kcheck's pool, in gates.def's op kinds'
        order: trials into trial_jobs, the other gates' results into
        gates."""
        st = self.stats
        for kind in _GENERATED_KINDS:
            for gate in _op_gates(kind):
                if gate not in self.gates or gate in gates:
                    continue
                if kind == "trials":
                    with st.timed("trials:" + gate):
                        trial_jobs[gate] = self._trials(gate, func, entry, op, settings,
                                                        args, kwargs, ctx)
                elif kind == "poison":
                    with st.timed(gate):
                        gates[gate] = self._coverage(gate, func, entry, settings, args,
                                                     kwargs, ctx)
                elif kind == "guards":
                    with st.timed(gate):
                        gates[gate] = self._bounds(gate, func, entry, args, kwargs, ctx)
                elif kind in _VARIANT_KINDS:  # the op re-run at other shapes / layouts
                    method, none = _VARIANT_KINDS[kind]
                    with st.timed(gate):
                        tl = getattr(self, method)(gate, func, entry, settings, args, kwargs, ctx)
                    if isinstance(tl, str):  # none, the method's reason
                        gates[gate] = {"status": _S_NOT_APPLICABLE, "reason": tl}
                    elif tl:
                        trial_jobs[gate] = tl
                    else:
                        gates[gate] = {"status": _S_NOT_APPLICABLE, "reason": none}

    def run_later(self, until_budget=True, deadline=None):
        """The generated-input parts left by torch_budget, at a safe point
        (no op running, the program's thread): while budget is left, or
        all of them (at exit). Their ops are kcheck's own: no mode sees
        them."""
        if until_budget and self.later and self._over_budget(self._part_estimate()):
            return  # the common case in steady state, at every optimizer step: kept cheap
        from torch.utils._python_dispatch import _disable_current_modes
        if until_budget and ((torch.cuda.is_initialized() and
                              torch.cuda.is_current_stream_capturing()) or
                             torch.compiler.is_compiling()):
            return  # never inside a CUDA graph capture or a compiled region
        while self.later:
            if until_budget and self._over_budget(self._part_estimate()):
                return
            if deadline is not None and time.perf_counter() >= deadline:
                return  # torch_exit_budget spent: the rest is counted as not run
            func, entry, op, settings, skey, (args, kwargs), ctx = self.later.pop(0)
            t = time.perf_counter()
            try:
                with _disable_current_modes():
                    gates = {}
                    for g in entry.not_applicable:
                        gates[g] = {"status": _S_NOT_APPLICABLE}
                    trial_jobs = self._generated(func, entry, op, settings, args, kwargs, gates,
                                                 ctx)
                    for g in entry.not_applicable:
                        gates.pop(g, None)
                when = ("after optimizer step %d" % self.stats.steps) if until_budget else "exit"
                self._submit(entry, None, skey, None, trial_jobs, gates, ctx, t, later=when)
            except Exception as e:  # never the program's problem
                self._internal(entry, e)
            finally:
                dt = time.perf_counter() - t
                self._spent(dt)
                self.parts_s += dt
                self.parts_n += 1
                self.stats.add_cost("later_generated", dt)

    def _internal(self, entry, e):
        st = self.stats
        with st.lock:
            st.errors += 1
            first = st.errors == 1
        if first:
            sys.stderr.write("kcheck: torch: internal error checking %s: %s: %s (further ones "
                             "counted)\n" % (entry.name, type(e).__name__, e))

    def _submit(self, entry, plan, skey, job, trial_jobs, gates, ctx, t0, later=False, imm=None,
                more=()):
        """Runs the judgments on a worker: the oracle's, then each gate's
        trials in order until one is a violation; then the op_check record
        and the policy's bookkeeping. later: the generated-input part of a
        signature checked before (its own op_check record, part
        "generated", run_at saying when it ran; the policy counted the
        signature then). imm: the immutability gate's copies, compared
        first. more: the other outputs' judgments (_more_jobs), run after
        the primary's; the oracle gate fails when any output fails."""
        prep = time.perf_counter() - t0

        def task():
            try:
                t1 = time.perf_counter()
                if imm is not None:
                    t = time.perf_counter()
                    gates[imm[0]] = self._immutability(imm[0], imm[1], ctx)
                    self.stats.add_cost("judge:" + imm[0], time.perf_counter() - t)
                if job is not None:
                    t = time.perf_counter()
                    status, res = job.run()
                    if more:
                        status, res = self._run_more(plan, status, res, more)
                    self.stats.add_cost("judge:" + _ORACLE, time.perf_counter() - t)
                    gates[_ORACLE] = res
                    self._count(status, res, entry.name, job.fmt)
                for gate, tl in trial_jobs.items():
                    runs = []
                    gates[gate] = {"status": _S_PASS if tl else _S_NOT_RUN, "runs": runs}
                    # layouts: every variant judged (the record lists each
                    # one's class), the first failure alone a violation
                    every = gate in _LAYOUT_GATES
                    for meta, j in tl:
                        if j is None:  # a class of its own (unsupported) or skipped
                            runs.append(dict({"class": _S_SKIPPED}, **meta))
                            continue
                        if every and gates[gate]["status"] == _S_FAIL:
                            j.quiet()
                        t = time.perf_counter()
                        status, res = j.run()
                        self.stats.add_cost("judge:" + gate, time.perf_counter() - t)
                        cov = res.get("coverage") or {}
                        runs.append(dict(meta, **{"class": res.get("class", res.get("status")),
                                                  "checked": cov.get("checked"),
                                                  "total": cov.get("total")}))
                        if runs[-1]["class"] not in _VERDICT_CLASSES and res.get("reason"):
                            runs[-1]["reason"] = res["reason"]
                        if status == _api.VIOLATION:
                            with self.stats.lock:
                                self.stats.violations += 1
                            gates[gate]["status"] = _S_FAIL
                            if not every:
                                break
                    if every:
                        n = sum(r["class"] == _S_UNSUPPORTED for r in runs)
                        if n:
                            gates[gate]["unsupported"] = n
                        # judged but undecided (no finite bound at that
                        # dtype): the gate passes on what was decided, and
                        # says how many were not
                        n = sum(r["class"] == _S_INCONCLUSIVE for r in runs)
                        if n:
                            gates[gate]["inconclusive"] = n
                    if runs and gates[gate]["status"] == _S_PASS and \
                            not any(r["class"] in _VERDICT_CLASSES for r in runs):
                        # nothing judged (every run skipped, refused, an
                        # error or inconclusive): not a pass (the C gates'
                        # rule, gates/trial.c)
                        why = next((r["reason"] for r in runs if r.get("reason")), None)
                        gates[gate]["status"] = _S_INCONCLUSIVE
                        gates[gate]["reason"] = "no run judged" + (": " + why if why else "")
                clean = all(g.get("status") != _S_FAIL for g in gates.values())
                dt = prep + time.perf_counter() - t1
                rec = {"op": entry.name, "oracle_op": ctx.get("oracle_op"),
                       "profile": ctx.get("profile"),
                       "key": skey[:512], "gates": gates, "kernels": ctx.get("kernels"),
                       "kernels_launched": ctx.get("kernels_launched"), "cost_ms": 1e3 * dt,
                       "host_ms": 1e3 * prep,
                       "stack": {"python": ctx.get("stack", {}).get("python", [])[-3:]}}
                if later:
                    rec["part"] = "generated"
                    rec["run_at"] = later
                    self.lib.kcheck_record(b"op_check", json.dumps(rec).encode())
                    return
                self.lib.kcheck_op_done(entry.name.encode(), skey.encode(), int(clean), dt,
                                        json.dumps(rec).encode())
                with self.stats.lock:
                    self.stats.checked += 1
                    self.stats.last_check_step = self.stats.steps
            except Exception as e:
                self._internal(entry, e)
            finally:
                with self.stats.lock:
                    self.inflight -= 1
                    self.pending_bytes -= nbytes

        jobs = ([job] if job is not None else []) + [j for tl in trial_jobs.values()
                                                     for _, j in tl if j is not None] + [
            j for _, j, _ in more if j is not None]
        nbytes = sum(j.nbytes() for j in jobs) + sum(
            a.raw.numel() * a.raw.element_size() for _, _, a in (imm[1] if imm else ()))
        with self.stats.lock:
            self.inflight += 1
            self.pending_bytes += nbytes
        if self.pool is None:
            task()
            return
        try:
            f = self.pool.submit(task)
            self.futures.add(f)
            f.add_done_callback(self.futures.discard)
        except RuntimeError:  # at exit the pool takes no new work (interpreter shutdown)
            task()

    def _count(self, status, res, op, fmt):
        st = self.stats
        if status != _api.VIOLATION and res.get("class") == "inconclusive":
            st.inconclusive_(op, fmt, res.get("reason"))
            return
        with st.lock:
            if status == _api.VIOLATION:
                st.violations += 1
            elif status == _api.ERROR:
                st.errors += 1

    @staticmethod
    def _device(args):
        for a in args:
            if isinstance(a, (torch.Tensor, trials.TensorSpec)) and a.dim() > 0:
                return a.device
        return torch.device("cpu")

    def _copy_inputs(self, plan, copies=None):
        """Host copies of plan's inputs; copies ({(id, name): HostTensor})
        shares them between the plans of one call (q, k, v of dq, dk, dv)."""
        out = []
        for name, v in plan.inputs:
            if not isinstance(v, torch.Tensor):
                out.append(("scalar", name, v))
                continue
            key = (id(v), name)
            h = copies.get(key) if copies is not None else None
            if h is None:
                h = judge.HostTensor(name, v)
                if copies is not None:
                    copies[key] = h
            out.append(h)
        return out

    def _more_inputs(self, plan, copies):
        """[(plan, settings, host inputs, reason)] for plan's other outputs,
        copied before the call (an in-place op's inputs are its old values);
        reason set (and no copies) where the output cannot be judged."""
        out = []
        for sub in plan.more:
            reason, settings, _ = self._profile(sub)
            inputs = self._copy_inputs(sub, copies) if reason is None else None
            out.append((sub, settings, inputs, reason))
        return out

    def _more_jobs(self, entry, more, res, ctx0):
        """[(plan, Job or None, result when None)] for the other outputs
        of the call whose primary judgment has context ctx0."""
        jobs = []
        for sub, settings, inputs, reason in more:
            if reason is not None:
                jobs.append((sub, None, {"status": _S_SKIPPED, "reason": reason}))
                continue
            try:
                j, ctx = self._job(_ORACLE, 0, entry, sub, settings, inputs, res, None, None, ctx0)
            except Exception as e:  # one output's mapping: the others still judged
                jobs.append((sub, None, {"status": _S_SKIPPED,
                                         "reason": "output: %s" % type(e).__name__}))
                continue
            if j is not None:
                j.ctx["output"] = sub.label
            jobs.append((sub, j, ctx.get("_result") if j is None else None))
        return jobs

    def _run_more(self, plan, status, res, more):
        """The primary judgment (status, res) merged with the other
        outputs': res gains "outputs" (label, oracle op, class each); the
        worst status wins (a violation over an inconclusive over a pass),
        each violation reported by its own judgment."""
        rank = {_api.VIOLATION: 3, _api.ERROR: 2, _api.INCONCLUSIVE: 1}
        outs = [{"label": plan.label, "oracle_op": plan.op,
                 "class": res.get("class", res.get("status"))}]
        worst = status
        for sub, j, r in more:
            st = None
            if j is not None:
                st, r = j.run()
                if rank.get(st, 0) > rank.get(worst, 0):
                    worst, res = st, dict(r)
            outs.append({"label": sub.label, "oracle_op": sub.op,
                         "class": r.get("class", r.get("status"))})
        res = dict(res, outputs=outs)
        return worst, res

    def _job(self, gate, mask, entry, plan, settings, inputs, res, mark, exposed, ctx0=None):
        """A judgment of plan's output in res against the host copies of
        its inputs: (Job, context), or (None, context with "_result") when
        the output cannot be judged. exposed: None for the application's
        inputs, else the generated inputs' description (exposed_by)."""
        out = plan.out(res)
        if not isinstance(out, torch.Tensor):
            raise TypeError("the op's result is not a tensor")
        why = _tensor_reason(out, self.devices, plan.op in ops.INDEX_OUTPUTS)
        if why:
            return None, {"_result": {"status": _S_SKIPPED, "reason": "output " + why}}
        st = self.stats
        with st.timed("in_job:out_copy"):  # inside the caller's phase (copy_output, trials:*)
            oh = judge.HostTensor(plan.label, out)
        kernels, nk = [], 0
        if mark is not None:
            names = ctypes.create_string_buffer(8192)
            nk = self.lib.kcheck_thread_kernels(mark, names, len(names))
            kernels = [k for k in names.value.decode(errors="replace").split("\n") if k]
        fmts = [h.fmt for h in inputs if isinstance(h, judge.HostTensor) and not h.index]
        in_fmt = min(fmts, key=judge.ORDER.index) if fmts else oh.fmt
        if plan.klass == "attention_grad":
            in_fmt = fmts[0]  # q's (the saved logsumexp is fp32 for every input type)
        prof = (plan.profile or profiles.profile(plan.klass, in_fmt, oh.fmt, settings)) + plan.suffix
        attrs = dict(plan.attrs)
        if plan.op == "attention" and "p_format" not in attrs:
            attrs["p_format"] = in_fmt
        # (a matmul with an infinite input is judged without the Freivalds
        # screen: libkcheck scans the inputs on the worker, kcheck_op_judge)
        hosts = []
        for h in inputs:
            if isinstance(h, tuple):
                h = judge.HostTensor.scalar(h[1], h[2], in_fmt, max(1, len(oh.shape)))
            hosts.append(h)
        if ctx0 is not None:  # the application's call this check stands for
            stack, thread = ctx0["stack"]["python"], ctx0["python_thread"]
        else:
            with st.timed("in_job:stack"):
                stack, thread = _user_stack()
        ctx = {"op": entry.name, "aten_op": entry.name.split(".")[0],
               "overload": entry.name.split(".", 1)[1] if "." in entry.name else "default",
               "oracle_op": plan.op, "profile": prof, "settings": settings,
               "kernels": kernels, "kernels_launched": nk, "python_thread": thread,
               "stack": {"python": stack},
               "inputs": [{"name": h.name, "dtype": str(h.dtype), "shape": h.shape,
                           "strides": h.strides} for h in hosts],
               "attrs": attrs}
        if entry.contract:
            ctx["contract"] = entry.contract.get("where")
        save = None
        if exposed is not None:
            ctx["exposed_by"] = exposed
            ctx["regenerate"] = exposed.get("commands")
        elif self.log_path not in (None, "none"):
            with self.stats.lock:
                self.nchecks += 1
                save = "%s.%d.op%d.pt" % (self.log_path, os.getpid(), self.nchecks)
        cap = judge.APP_CAP if exposed is None else judge.TRIAL_CAP
        sampling = None if exposed is None else judge.TRIAL_SAMPLING
        return judge.Job(self.lib, gate, mask, plan, hosts, oh, prof, attrs, ctx, cap, save,
                         sampling, fmt=in_fmt), ctx

    def _immutability_copies(self, entry, plan, inputs):
        """Host copies, right after the application's call, of the inputs
        the op does not declare written: [(name, before, after)] for
        _immutability, which compares them on a worker."""
        pairs = []
        for (name, v), h in zip(plan.inputs, inputs):
            if not isinstance(v, torch.Tensor) or not isinstance(h, judge.HostTensor):
                continue
            if name in entry.written or entry.inplace or entry.has_out:
                continue
            pairs.append((name, h, judge.HostTensor(name, v)))
        return pairs

    def _immutability(self, gate, pairs, ctx):
        """The inputs' bytes before and after the application's call
        compared by libkcheck's rule (byte_verdicts.changed, the C gate's;
        the GIL released: on kcheck's worker, beside the program); a
        changed input is a violation."""
        changed = []
        for name, hb, ha in pairs:
            before, after = hb.wait().raw, ha.wait().raw  # the bytes as read
            if before.numel() * before.element_size() != after.numel() * after.element_size():
                changed.append({"tensor": name, "first_byte": 0, "bytes_changed": 1})
                continue
            n, first, _ = byte_verdicts.changed(self.lib, before, after)
            if n:
                changed.append({"tensor": name, "first_byte": first, "bytes_changed": n})
        if not changed:
            return {"status": _S_PASS}
        rec = {k: v for k, v in ctx.items() if not k.startswith("_")}
        # the first changed input's fields as the kernel level names them
        # (tensor); every changed input in tensors
        rec["evidence"] = dict(changed[0], verdict="input_modified", tensors=changed)
        self.lib.kcheck_op_report(gate.encode(), ("the op changed its input '%s', which it does "
                                  "not declare written" % changed[0]["tensor"]).encode(),
                                  json.dumps(rec).encode())
        with self.stats.lock:
            self.stats.violations += 1
        return {"status": _S_FAIL, "tensors": changed}

    def _fresh(self, entry, args, kwargs, fill):
        """The call's arguments with every tensor replaced by one of
        kcheck's (fill(t, k) gives it)."""
        def make(t, k):
            if _cpu_scalar(t) and t.device.type not in self.devices:
                return t
            return fill(t, k)
        return trials.substitute(args, kwargs, make)

    def _trials(self, gate, func, entry, op, settings, args, kwargs, ctx0):
        """The gate's trials run on the device now: [(meta, Job or None)].
        The specials generator's trial runs once more per rotation its
        inputs need when one has fewer than 6 rows (trials.specials_seeds,
        as the C gates: gates/trial.c)."""
        tl, mask = trials.trials(self.lib, gate, op)

        def one(gen, tf, seed, rotation, rows):
            """One run at seed (rotation: which run of the specials
            generator past the first; 0: the first, or another generator);
            rows gets the rows generated for each float input (as the C
            gates count them: gates/trial.c fewest_rows)."""
            cmds = []
            meta = {"generator": gen, "transform": tf, "seed": seed}
            if rotation:
                meta["rotation"] = rotation

            def fill(t, k):
                cmds.append(trials.regen_command(gen, tf, seed + k, t, trials.role(k)))
                if profiles.fmt(t.dtype):
                    rows.append(trials.gen_rows(t))
                return trials.generate(self.lib, gen, tf, t, trials.role(k), seed + k)
            nargs, nkw = self._fresh(entry, args, kwargs, fill)
            plan = entry.mapper(entry.bind(nargs, nkw))
            inputs = self._copy_inputs(plan)
            self.lib.kcheck_own_begin()
            try:
                res = func(*nargs, **nkw)
            finally:
                self.lib.kcheck_own_end()
            exposed = dict(meta, inputs="generated", commands=cmds)
            j, _ = self._job(gate, mask, entry, plan, settings, inputs, res, None, exposed, ctx0)
            return meta, j

        out = []
        for gen, tf, seed in tl:
            rows = []
            out.append(one(gen, tf, seed, 0, rows))
            if gen == "specials":
                seeds = trials.specials_seeds(seed, min(rows, default=0))
                out += [one(gen, tf, s, i, []) for i, s in enumerate(seeds) if i]
        return out

    def _coverage(self, gate, func, entry, settings, args, kwargs, ctx0):
        """Two runs on generated inputs, the output memory poisoned with
        the C coverage gate's two fills (FILL_POISON_A, then FILL_POISON_B
        bytes): an element holding each run's poison was never written."""
        outs = []
        for poison in (_defs.FILL_POISON_A, _defs.FILL_POISON_B):
            def fill(t, k):
                return trials.generate(self.lib, "uniform", "none", t, trials.role(k),
                                       _defs.SEED_COVERAGE + k)
            nargs, nkw = self._fresh(entry, args, kwargs, fill)
            for name in entry.written | ({"out"} if entry.has_out else set()):
                t = nkw.get(name)
                if isinstance(t, torch.Tensor):  # an out= tensor: poisoned directly
                    _flat_bytes(t).fill_(poison)
            plan = entry.mapper(entry.bind(nargs, nkw))
            self.lib.kcheck_own_begin()
            try:
                # a freshly allocated output takes a block of kcheck's pool:
                # poison blocks of every size the op's outputs may need
                self._poison_pool(nargs, poison)
                res = func(*nargs, **nkw)
            finally:
                self.lib.kcheck_own_end()
            out = plan.out(res)
            if not isinstance(out, torch.Tensor) or entry.inplace:
                return {"status": _S_NOT_RUN, "reason": "in place, or no tensor output"}
            outs.append((poison, judge.host(out)[0].view(torch.uint8)))
        (p1, a), (p2, b) = outs
        if a.numel() != b.numel():
            return {"status": _S_NOT_RUN, "reason": "outputs of different sizes"}
        n, first, _ = byte_verdicts.unwritten(self.lib, a, b, p1, p2)
        if not n:
            return {"status": _S_PASS}
        rec = {"op": entry.name, "stack": {"python": ctx0["stack"]["python"]},
               "evidence": {"verdict": "unwritten", "first_byte": first, "bytes_unwritten": n,
                            "poison": [p1, p2]}}
        if entry.contract:
            rec["contract"] = entry.contract.get("where")
        with self.stats.lock:
            self.stats.violations += 1
        self.lib.kcheck_op_report(gate.encode(), ("%d output bytes of %s kept kcheck's poison in "
                                  "both runs: never written" % (n, entry.name)).encode(),
                                  json.dumps(rec).encode())
        return {"status": _S_FAIL, "bytes_unwritten": n}

    def _shapes(self, gate, func, entry, settings, args, kwargs, ctx0):
        """The op at the shaper's adversarial shapes (ops.SHAPERS), on
        generated inputs, judged by the oracle: [(meta, Job or None)], or
        the shaper's none_reason where it gives none (not applicable)."""
        sh = ops.shaper(entry)
        if sh is None:
            return []
        try:
            bound = entry.bind(args, kwargs)
            variants = sh(bound)
        except Exception:  # a layout the shaper does not handle: not applicable
            return []
        if not variants and getattr(sh, "none_reason", None):
            return sh.none_reason  # not applicable, saying why
        out = []
        seed = _defs.SEED_SHAPES
        for label, changes in variants:
            meta = {"shape": label, "generator": "uniform", "transform": "none", "seed": seed}
            cmds = []

            def fill(t, k):
                cmds.append(trials.regen_command("uniform", "none", seed + k, t, trials.role(k)))
                return trials.generate(self.lib, "uniform", "none", t, trials.role(k), seed + k)
            try:
                b2 = dict(bound)
                b2.update(changes)
                nargs, nkw = self._fresh(entry, *entry.unbind(b2), fill)
                plan = entry.mapper(entry.bind(nargs, nkw))
                inputs = self._copy_inputs(plan)
                self.lib.kcheck_own_begin()
                try:
                    # the pool's free blocks may hold an earlier run's
                    # output at this shape (the same generated inputs): an
                    # element the op never writes would read as correct
                    self._poison_pool(nargs, _defs.FILL_POISON_A)
                    res = func(*nargs, **nkw)
                finally:
                    self.lib.kcheck_own_end()
            except Exception as e:  # the op refuses the shape: recorded, not a finding
                out.append((dict(meta, reason="%s: %s" % (type(e).__name__, str(e)[:120])), None))
                continue
            exposed = dict(meta, inputs="generated", commands=cmds)
            j, _ = self._job(gate, 0, entry, plan, settings, inputs, res, None, exposed, ctx0)
            out.append((meta, j))
        return out

    def _layouts(self, gate, func, entry, settings, args, kwargs, ctx0):
        """The op re-run with each floating input in turn in another memory
        layout or dtype (layouts.VARIANTS), as kcheck's own work, on the
        call's own values (copies; a part run later, from the call's
        layouts: generated uniform ones): [(meta, Job, Finding or None)].
        The oracle judges each output against the inputs it was given (an
        expanded input's values, a dtype's rounded ones, are not the
        call's); a fresh output comes from a pool block poisoned with NaN,
        so an unwritten element fails. The empty variant runs only where
        the op's meta kernel accepts it, and its output must have the meta
        kernel's shape; a dtype variant only where the op's reference
        accepts that dtype (an ATen op's own kernels: one that raises is
        skipped; a torch_op contract's: layouts.dtype_reference), judged at
        the reference's profile there. A clean exception is unsupported
        (listed, not a failure); a device fault, or an empty variant's
        output of another shape, a Finding (reported on the worker)."""
        cmds = []

        def base(t, k):
            if isinstance(t, trials.TensorSpec):  # run later: the call's values are gone
                seed = _defs.SEED_LAYOUTS + k
                cmds.append(trials.regen_command("uniform", "none", seed, t, trials.role(k)))
                return trials.generate(self.lib, "uniform", "none", t, trials.role(k), seed)
            return t.clone()
        self.lib.kcheck_own_begin()
        try:
            nargs, nkw = self._fresh(entry, args, kwargs, base)
        except Exception as e:  # inputs kcheck cannot make (an integer layout run later)
            return [({"reason": "inputs: %s: %s" % (type(e).__name__, str(e)[:120])}, None)]
        finally:
            self.lib.kcheck_own_end()
        bound = entry.bind(nargs, nkw)
        self.lib.kcheck_own_begin()
        try:
            cases = layouts.cases(bound, entry.written)
        finally:
            self.lib.kcheck_own_end()
        exposed0 = {"inputs": "generated" if cmds else "application"}
        if cmds:
            exposed0.update(generator="uniform", transform="none", seed=_defs.SEED_LAYOUTS,
                            commands=cmds)
        out = []
        for vname, label, changes, v, also in cases:
            meta = {"variant": vname, "input": label, "layout": layouts.describe(v)}
            if also:
                meta["with"] = also
            b2 = layouts.apply(bound, changes)
            if vname == "empty" and isinstance(b2.get("out"), torch.Tensor):
                # an out= tensor resized from elements to none would make
                # PyTorch warn in the program's output: it starts empty
                b2["out"] = b2["out"].new_empty(0)
            vargs, vkw = entry.unbind(b2)
            in_dtype = vname in layouts.DTYPES
            ref = None
            if in_dtype and entry.contract:
                # the contract's profile is its reference's at the call's
                # dtype: at another, the reference's there, where it has one
                ref, why = layouts.dtype_reference(entry.contract, vname)
                if ref is None:
                    out.append((dict(meta, reason=why), None))
                    continue
            try:
                plan = entry.mapper(entry.bind(vargs, vkw))
                if ref is not None:
                    plan.profile = ref["profile"]
                inputs = self._copy_inputs(plan) if vname != "empty" else None
            except Exception as e:  # the mapper refuses the layout: not a finding
                out.append((dict(meta, reason="not mapped: %s: %s" % (
                    type(e).__name__, str(e)[:120])), None))
                continue
            expected, why, poison = None, None, _defs.FILL_NAN
            if vname == "empty":
                expected, why, na = self._empty_expected(func, entry, plan, vargs, vkw)
                if expected is None:
                    out.append((dict(meta, **({"class": _S_NOT_APPLICABLE} if na else {}),
                                     reason=why), None))
                    continue
                if isinstance(expected, torch.Tensor):
                    # the reference's values there may be NaN (an empty
                    # mean): an element left unwritten must not match them
                    poison = _defs.FILL_POISON_A
            err = None
            self.lib.kcheck_own_begin()
            try:
                o = vkw.get("out") if entry.has_out else None
                if isinstance(o, torch.Tensor):  # an out= tensor: poisoned directly
                    _flat_bytes(o).fill_(poison)
                # blocks of the inputs' sizes, the variant's larger
                # storage and the call's own (the output's, often), and
                # the reference's result's at the empty input
                self._poison_pool(tuple(vargs) + tuple(nargs) + (
                    (expected,) if isinstance(expected, torch.Tensor) else ()), poison)
                res = func(*vargs, **vkw)
                if v.device.type == "cuda":  # a fault surfaces here, named by this variant
                    torch.cuda.synchronize(v.device)
            except Exception as e:
                err = e
            finally:
                self.lib.kcheck_own_end()
            exposed = dict(exposed0, **meta)
            if err is not None:
                text = "%s: %s" % (type(err).__name__, str(err)[:200])
                if layouts.crashed(err):
                    out.append((dict(meta, reason=text), self._layout_finding(
                        gate, entry, ctx0, exposed, {"verdict": "crash", "detail": text},
                        "%s faulted with input '%s' %s: %s" % (entry.name, label, vname,
                                                               text))))
                    return out  # the device context may be unusable: no more runs
                if in_dtype and not entry.contract:
                    # an ATen op is its own reference: a dtype it refuses
                    # is one the reference does not accept, not the op's fault
                    out.append((dict(meta, reason="the op does not accept %s: %s" % (
                        vname, text)), None))
                    continue
                out.append((dict(meta, **{"class": _S_UNSUPPORTED, "reason": text}), None))
                continue
            got = plan.out(res) if ref is not None and ref.get("out") else None
            if isinstance(got, torch.Tensor) and str(got.dtype) != "torch." + ref["out"]:
                # computed as another dtype (a float32 result for float64
                # inputs): not the reference's arithmetic there, nor wrong
                out.append((dict(meta, **{"class": _S_UNSUPPORTED, "reason": "returned %s where "
                                          "the reference returns %s" % (
                                              str(got.dtype).replace("torch.", ""),
                                              ref["out"])}), None))
                continue
            if vname == "empty":
                out.append(self._empty_verdict(gate, entry, ctx0, exposed, meta, label, plan,
                                               res, expected))
                continue
            try:
                j, _ = self._job(gate, 0, entry, plan, settings, inputs, res, None, exposed,
                                 ctx0)
            except Exception as e:  # no tensor output
                out.append((dict(meta, reason="output: %s" % type(e).__name__), None))
                continue
            out.append((meta, j))
        return out

    def _empty_expected(self, func, entry, plan, vargs, vkw):
        """What the empty variant's output must be: (the reference's result
        at these inputs, None, False) for a torch_op contract's op whose
        reference can be run (layouts.reference_call); else (its shape by
        the op's meta kernel, None, False); (None, why, not applicable)
        where the reference raises (it rejects the empty input: not
        applicable) or the meta kernel refuses or is missing."""
        ref = layouts.empty_reference(entry.contract) if entry.contract else None
        if ref is None:
            shape, why = layouts.meta_shape(func, vargs, vkw, plan.out)
            # only where the op's meta kernel accepts the shapes: an op
            # that does not check an input's size may read past an empty
            # one (native_batch_norm's weight on the CPU)
            return shape, None if shape is not None else \
                "not accepted by the op's meta kernel: " + why, False
        self.lib.kcheck_own_begin()
        try:
            # copies: the candidate gets the variant's own tensors after
            expected = ref(*[a.clone() if isinstance(a, torch.Tensor) else a for a in vargs],
                           **{k: v.clone() if isinstance(v, torch.Tensor) else v
                              for k, v in vkw.items() if k != "out"})
        except Exception as e:  # the reference rejects the empty input
            return None, "the reference rejects the empty input: %s: %s" % (
                type(e).__name__, str(e)[:160]), True
        finally:
            self.lib.kcheck_own_end()
        if not isinstance(expected, torch.Tensor):
            return None, "the reference gives no tensor at the empty input", True
        return expected, None, False

    def _empty_verdict(self, gate, entry, ctx0, exposed, meta, label, plan, res, expected):
        """The empty variant's (meta, Finding or None): its output against
        the reference's result there (a tensor: layouts.empty_mismatch) or
        the meta kernel's shape (a list)."""
        got = plan.out(res)
        if isinstance(expected, torch.Tensor):
            ev = layouts.empty_mismatch(expected, got, plan.label)
            want = "the reference's %s %s%s" % (
                list(expected.shape), str(expected.dtype).replace("torch.", ""),
                " (%s at %s)" % (ev["exact"], ev["index"]) if ev and "exact" in ev else "")
        else:
            shape = list(got.shape) if isinstance(got, torch.Tensor) else None
            ev = None if shape == expected else {
                "verdict": "wrong_shape", "tensor": plan.label, "shape": shape,
                "expected_shape": expected}
            want = "shape %s" % expected
        if ev is None:
            return dict(meta, **{"class": _S_PASS, "shape": list(got.shape)}), None
        if ev["verdict"] == "wrong_shape":
            gave = "shape %s" % ev["shape"]
        elif ev["verdict"] == "wrong_dtype":
            gave = ev["dtype"]
        else:  # wrong_value
            gave = "%s at %s" % (ev["kernel"], ev["index"])
        return meta, self._layout_finding(
            gate, entry, ctx0, exposed, ev, "%s with input '%s' empty gave %s, not %s" % (
                entry.name, label, gave, want))

    def _layout_finding(self, gate, entry, ctx0, exposed, ev, message):
        """A layouts violation decided without the oracle (layouts.Finding)."""
        rec = {"op": entry.name, "stack": {"python": ctx0["stack"]["python"]}, "evidence": ev,
               "exposed_by": exposed}
        if entry.contract:
            rec["contract"] = entry.contract.get("where")
        return layouts.Finding(self.lib, gate, message, rec,
                               {"class": _S_FAIL, "verdict": ev["verdict"]})

    def _bounds(self, gate, func, entry, args, kwargs, ctx0):
        """The op's out= overload run on generated inputs into an output
        that sits inside a larger buffer of kcheck's, between guard zones
        of _GUARD bytes filled with _GUARD_BYTE (the C bounds gate's guard
        zones): a guard byte that changed was
        written outside the output. (A functional op's fresh output has no
        neighbour kcheck owns: its out= overload, the same kernels in ATen,
        stands for it.)"""
        if entry.inplace:
            return {"status": _S_NOT_APPLICABLE, "reason": "in place: it writes its input"}
        outf = func if entry.has_out else ops.out_overload(func)
        if outf is None:
            return {"status": _S_NOT_APPLICABLE, "reason": "no out= overload with one output"}

        def fill(t, k):
            return trials.generate(self.lib, "uniform", "none", t, trials.role(k),
                                   _defs.SEED_BOUNDS + k)
        nargs, nkw = self._fresh(entry, args, kwargs, fill)
        self.lib.kcheck_own_begin()
        try:
            ref = nkw.get("out") if entry.has_out else func(*nargs, **nkw)
            if not isinstance(ref, torch.Tensor):
                return {"status": _S_NOT_RUN, "reason": "no tensor output"}
            span = 1
            for n, st in zip(ref.shape, ref.stride()):
                span += (n - 1) * st if n else 0
            esize = ref.element_size()
            buf = torch.empty(span * esize + 2 * _GUARD, dtype=torch.uint8, device=ref.device)
            buf.fill_(_GUARD_BYTE)
            out = torch.empty(0, dtype=ref.dtype, device=ref.device)
            out.set_(buf.untyped_storage(), _GUARD // esize, ref.shape, ref.stride())
            outf(*nargs, **dict(nkw, out=out))
            before = buf[:_GUARD].cpu()
            after = buf[_GUARD + span * esize:].cpu()
        finally:
            self.lib.kcheck_own_end()
        nb, _, last_b = byte_verdicts.not_fill(self.lib, before, _GUARD_BYTE)
        na, first_a, _ = byte_verdicts.not_fill(self.lib, after, _GUARD_BYTE)
        if not nb and not na:
            return {"status": _S_PASS, "overload": _op_name(outf)}
        # the kernel level's names (gates/bounds.c) where the meaning is the
        # same: changed guard bytes on each side; the first changed byte
        # after the end as bytes past it
        ev = {"verdict": "out_of_bounds", "overload": _op_name(outf), "guard_bytes": _GUARD,
              "changed_bytes_before": nb, "changed_bytes_after": na,
              "bytes_past_end": first_a if na else None,
              "last_before_start": _GUARD - 1 - last_b if nb else None}
        rec = {"op": entry.name, "stack": {"python": ctx0["stack"]["python"]}, "evidence": ev,
               "exposed_by": {"inputs": "generated", "generator": "uniform",
                              "seed": _defs.SEED_BOUNDS}}
        if entry.contract:
            rec["contract"] = entry.contract.get("where")
        with self.stats.lock:
            self.stats.violations += 1
        self.lib.kcheck_op_report(gate.encode(), ("%s wrote %d bytes outside its output (guard zones "
                                  "of %d bytes around an out= tensor)" % (
                                      _op_name(outf), nb + na, _GUARD)).encode(),
                                  json.dumps(rec).encode())
        return {"status": _S_FAIL, "bytes_outside": nb + na}

    def _poison_pool(self, nargs, poison):
        if guards.active():
            # no pool: the guard-zone allocator fills each new block
            guards.fill(poison)
            return
        if not trials.pooled():
            return
        sizes = set()
        for a in nargs:
            if isinstance(a, torch.Tensor):
                sizes.add(a.untyped_storage().nbytes())
        blocks = [torch.empty(n, dtype=torch.uint8, device=self._device(nargs)).fill_(poison)
                  for n in sizes if n]
        del blocks

    def record(self):
        """The summary's counters, the fast path's included."""
        rec = {}
        self._judged_share(rec)  # before merge_fast takes the done cells' counts
        self.stats.merge_fast(self.uncovered, self.done)
        rec.update(self.stats.record())
        # the judged share's denominator: calls that compute values on a watched device
        rec["ops_computing"] = rec["ops_seen"] - rec["ops_no_values"] - rec["ops_off_device"]
        waiting = {}
        for key in list(self.waiting):
            e = self.entries.get(key[0])
            name = e.name if e is not None else _op_name(key[0])
            waiting[name] = waiting.get(name, 0) + 1
        # deferred at their last call and never met again: not checked
        rec["signatures_deferred_unchecked"] = len(self.waiting)
        rec["deferred_unchecked_ops"] = dict(sorted(waiting.items(), key=lambda kv: -kv[1])[:16])
        rec["torch_budget"] = self.budget
        rec["exit_not_run"] = self.exit_not_run
        rec["program_thread_check_s"] = round(self.main_s, 6)
        rec["since_install_s"] = round(time.perf_counter() - self.t_install, 6)
        return rec

    def summary(self):
        rec = self.record()
        self.lib.kcheck_record(b"torch_summary", json.dumps(rec).encode())
        st = self.stats
        top = sorted(st.passed.items(), key=lambda kv: -kv[1])[:6]
        steps = (" in %d of %d optimizer steps" % (st.watched_steps, st.steps)) if st.steps else ""
        left = (", %d signatures deferred and never met again (not checked)" %
                rec["signatures_deferred_unchecked"]) if rec["signatures_deferred_unchecked"] else ""
        sys.stderr.write("kcheck: torch: %d ops seen%s, %d covered, %d judged (%s), %d checked "
                         "(%d violations, %d inconclusive, %d errors)%s%s; passed through: %s\n" %
                         (st.seen, steps, st.covered, rec["ops_judged"], judged_share(rec),
                          st.checked, st.violations, st.inconclusive, st.errors, left,
                          inconclusive_ops(rec), ", ".join("%s %d" % kv for kv in top) or "none"))


def inconclusive_ops(rec, n=4):
    """'; inconclusive: OP COUNT (DTYPES), ...' for the n ops of a
    torch_summary record with the most inconclusive judgments ('' when
    none; the reasons are in the record and in `kcheck report`)."""
    by_op = rec.get("inconclusive_by_op") or {}
    if not by_op:
        return ""
    parts = []
    for op, row in sorted(by_op.items(), key=lambda kv: -kv[1].get("count", 0))[:n]:
        dts = []
        for r in row.get("reasons", []):
            if r.get("dtype") not in dts:
                dts.append(r.get("dtype"))
        parts.append("%s %d%s" % (op, row.get("count", 0), " (%s)" % ",".join(dts) if dts else ""))
    more = max(0, len(by_op) - n)
    if more or rec.get("inconclusive_ops_left_out"):
        # ops beyond the record's cap are counted by judgment, not by op
        parts.append("%d%s more ops" % (more, "+" if rec.get("inconclusive_ops_left_out") else ""))
    return "; inconclusive: %s (reasons: kcheck report)" % ", ".join(parts)


def judged_share(rec):
    """'N% of the ops, M% of their GPU time' from a torch_summary record."""
    seen = computing(rec)
    out = "%.0f%% of the %d ops that compute values" % (
        100.0 * rec.get("ops_judged", 0) / seen, seen) if seen > 0 else "no ops"
    t = rec.get("time_judged") or {}
    if t.get("share") is not None:
        out += ", %.0f%% of their %s time (step %s)" % (
            100.0 * t["share"], "GPU" if t.get("source") == "cuda" else "CPU", t.get("step"))
    elif t.get("not_measured"):
        out += ", time not measured: %s" % t["not_measured"]
    return out


def hold_constants(op, qualname, constants):
    """Judges a torch_op contract's op (the custom op `op`, named qualname)
    with some of the contract's arguments held as constants (constants:
    {contract argument name: tensor}) rather than taken from the op's
    call: every run the binding makes (oracle, trials, coverage, shapes,
    layouts) replaces the op's own arguments only, and the oracle computes
    with these values. The shapes gate keeps only the variants of the
    contract's op class that vary the dims no constant has (held_shaper)
    and changes only the op's arguments. Installed in the active mode
    before the op's first call; False where no mode or no contract for the
    op is loaded."""
    m = _MODE
    c = m.contracts.get(op._schema.name) if m is not None else None
    if c is None:
        return False
    entry = ops.contract_entry(op, c)
    base = entry.mapper

    def mapper(a):
        b = dict(a)
        b.update(constants)
        return base(b)
    mapper.index_args = getattr(base, "index_args", False)
    entry.mapper = mapper
    ops.SHAPERS[qualname] = held_shaper(c, constants)  # a custom op's own (ops.shaper)
    m.entries[op] = entry
    return True


def held_shaper(c, constants):
    """The shapes gate's shaper of a torch_op contract's op with some
    arguments held as constants (hold_constants): its class's variants
    of the dims no constant has (ops.contract_shaper's held: a Linear's
    M with its K and N, a norm's rows with its length), each changing
    only the op's own arguments; a variant that would change a
    constant's shape is left out. Where none is left (every dim tied to
    a constant) the shaper's none_reason says so."""
    derived = ops.contract_shaper(c, held=constants)

    def shaper(a):
        b = dict(a)
        b.update(constants)
        out = []
        variants = derived(b) if derived else []
        for label, changes in variants:
            if all(tuple(v.shape) == tuple(constants[n].shape)
                   for n, v in changes.items() if n in constants):
                kept = {n: v for n, v in changes.items() if n not in constants}
                if kept:
                    out.append((label, kept))
        if not variants and getattr(derived, "none_reason", None):
            shaper.none_reason = derived.none_reason  # a view chain's reason
        return out
    shaper.none_reason = ("every shape variant of the op's class changes a dim of %s, held as "
                          "constants (weights as constants: their shapes stay)"
                          % ", ".join(sorted(constants)))
    return shaper


_MODE = None


def install():
    """Pushes the mode on this thread (autograd's threads inherit it for
    backward). Returns the mode, or None when kcheck is not active."""
    global _MODE
    if _MODE is not None:
        return _MODE
    lib = _api.api()
    if lib is None:
        return None
    devices = set((_api.option("torch_devices", "cuda") or "cuda").split(","))
    _MODE = KcheckMode(lib, devices)
    _MODE.__enter__()
    atexit.register(_finish)
    _wrap_os_exit()
    try:  # before concurrent.futures' own exit hook (they run in reverse order)
        threading._register_atexit(_drain_at_exit)
    except (AttributeError, RuntimeError):
        pass  # _finish drains instead
    try:  # steady state is decided at optimizer steps (global hook, PyTorch >= 2.0)
        from torch.optim.optimizer import register_optimizer_step_post_hook
        register_optimizer_step_post_hook(lambda opt, args, kwargs: _MODE.on_step())
    except ImportError:
        pass
    return _MODE


_OS_EXIT = os._exit


def _wrap_os_exit():
    """os._exit skips atexit: the binding's summary and the judgments still
    queued (within torch_exit_budget) go first, in the process that
    installed it (a forked child has none of its worker threads), then the
    real os._exit, whose C _exit writes libkcheck's part."""
    pid = os.getpid()

    def _exit(status):
        if os.getpid() == pid:
            _finish()
        _OS_EXIT(status)

    _exit.__doc__ = _OS_EXIT.__doc__
    os._exit = _exit


def _drain_at_exit():
    """The checks still waiting when the program exits, within
    torch_exit_budget seconds: deferred generated-input parts first, then
    the judgments queued on the workers. What is left is never run, and is
    counted and named in the summary (exit_not_run), so an exit never
    waits on an unbounded queue. Runs from threading's exit hooks, before
    concurrent.futures joins the workers (which would run every queued
    judgment first), and from atexit when that hook was not available."""
    m = _MODE
    if m is None or m.drained:
        return
    m.drained = True
    try:
        budget = float(_api.option("torch_exit_budget", "10") or 10)
    except ValueError:
        budget = 10.0
    t = time.perf_counter()
    deadline = None if budget < 0 else t + budget
    try:
        m.run_later(until_budget=False, deadline=deadline)
        m.stats.add_cost("exit_generated", time.perf_counter() - t)
        left = m.exit_not_run
        for item in m.later:
            left["generated_parts"] += 1
            left["ops"][item[1].name] = left["ops"].get(item[1].name, 0) + 1
        m.later = []
        futs = list(m.futures)
        if futs:
            wait(futs, timeout=None if deadline is None else max(0.0, deadline - time.perf_counter()))
        for f in list(m.futures):
            if f.cancel():  # still queued: never started
                left["judgments"] += 1
                with m.stats.lock:
                    m.inflight -= 1
    except Exception:
        pass


def _finish():
    m = _MODE
    if m is None or m.finished:
        return
    m.finished = True
    try:
        _drain_at_exit()
        if m.pool is not None:
            m.pool.shutdown(wait=True)  # every pending judgment lands in the report
        m.summary()
    except Exception as e:  # never the program's problem, but said
        sys.stderr.write("kcheck: torch: summary not written: %s: %s\n" % (type(e).__name__, e))
