"""The share of the program's GPU time that the oracle judged.

Counting ops says little about reach (a training step is a few thousand
small ops and a few large matmuls), so the binding times one optimizer
step with torch.profiler (CUPTI's kernel records: the duration of every
kernel, attributed to the innermost ATen op that launched it) and weights
each ATen op's kernel time by the share of that op's calls the binding
judged over its watched steps. On a CPU-only run the ops' own CPU time
stands in for kernel time (source "cpu"): that is what the binding's CPU
tests exercise.

The timed step is one where the binding checks nothing new (by default
the step after steady state is reached, when the binding watches few
steps), and libkcheck's kernel-level checks are paused while it runs
(kcheck_checks_pause), so kcheck's own copies and re-runs do not weigh
in. A second
profiler session cancels the first one's trace: when the program's own
session is running at the timed step, the share is recorded as not
measured, with the reason (torch_time_step=0 turns timing off for a
program that starts its own profiler at arbitrary steps).
"""
import os

import torch

# Ops with kernel time but no ATen op around them (a user's raw kernel
# launches, a Triton kernel called outside any custom op).
NO_OP = "(no ATen op)"
_TOP = 24  # ops listed by time in the report


class StepTimer:
    """Profiles the ops between start() and stop(); stop() returns
    by_op's result or raises with the reason."""

    def __init__(self, cuda, lib=None):
        self.cuda = cuda
        self.lib = lib  # libkcheck: its kernel-level checks paused while timing
        self.prof = None
        self.done = None  # the ended session, its events not read yet
        self.out = None  # result()'s value

    def start(self):
        if torch.autograd._profiler_enabled():
            # a second session would cancel the program's own trace
            raise RuntimeError("a profiler session of the program's is running")
        # Kineto leaves CUPTI's callbacks on after a session unless told to
        # tear it down (cuptiFinalize), and every later kernel launch pays
        # for them: measured on the GPT bench, the steps after the timed
        # one cost 1.04x. A user's own TEARDOWN_CUPTI is respected, and
        # torch.profiler itself turns it off where CUDA graphs need that.
        os.environ.setdefault("TEARDOWN_CUPTI", "1")
        acts = [torch.profiler.ProfilerActivity.CPU]
        if self.cuda:
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=acts)
        self.prof.__enter__()
        if self.lib is not None:
            self.lib.kcheck_checks_pause(1)

    def stop(self):
        """Ends the session. Its events are read later (result()): parsing
        a step's thousands of events takes long enough to show as a slow
        step of the program's if done here."""
        prof, self.prof = self.prof, None
        try:
            if self.cuda:
                torch.cuda.synchronize()
        finally:
            if self.lib is not None:
                self.lib.kcheck_checks_pause(0)
        prof.__exit__(None, None, None)
        self.done = prof

    def result(self, seen=None):
        """by_op over the ended session's events (read once)."""
        if self.out is None:
            self.out = by_op(self.done.events(), self.cuda, seen)
            self.done = None
        return self.out


def _owner(e, seen):
    """The ATen op an event's time belongs to: the outermost enclosing op
    the binding saw (an op's own implementation calls others — relu's
    CUDA kernel is clamp_min's — below the dispatch mode, which sees the
    outer one; composite ops such as linear are never seen, their parts
    are), else the innermost ATen op, else NO_OP."""
    inner = best = None
    p = e
    while p is not None:
        if p.name.startswith("aten::"):
            inner = inner or p.name
            if seen is not None and p.name in seen:
                best = p.name
        p = p.cpu_parent
    return best or inner or NO_OP


def by_op(events, cuda, seen=None):
    """({op name: microseconds}, [(kernel, microseconds)]): each event's
    own kernel time (cuda) or own CPU time, given to its owner (_owner;
    seen: the op names the binding saw, None: the innermost ATen op);
    kernels no CPU event holds go to NO_OP, and the most costly of them
    are listed by name."""
    from torch.autograd import DeviceType
    out = {}
    kernels = 0.0
    held = {}  # (kernel name, duration) of the kernels a CPU event holds
    loose = []
    for e in events:
        if e.device_type == DeviceType.CPU:
            for k in getattr(e, "kernels", ()):
                held[(k.name, k.duration)] = held.get((k.name, k.duration), 0) + 1
    for e in events:
        if getattr(e, "is_user_annotation", False):
            continue  # a record_function range (Optimizer.step#AdamW.step), not a kernel
        if e.device_type != DeviceType.CPU:
            # a kernel's own event: its time is also its launching op's
            # (self_device_time_total below); counted once, for the total
            kernels += e.device_time_total if cuda else 0.0
            k = (e.name, e.device_time_total)
            if held.get(k):
                held[k] -= 1
            else:
                loose.append(k)
            continue
        t = e.self_device_time_total if cuda else e.self_cpu_time_total
        if t <= 0 or (not cuda and not e.name.startswith("aten::")):
            continue
        name = _owner(e, seen)
        out[name] = out.get(name, 0.0) + t
    rest = kernels - sum(out.values())
    if cuda and rest > 0:  # kernels no CPU event holds (launched outside any op)
        out[NO_OP] = out.get(NO_OP, 0.0) + rest
    by_name = {}
    for name, t in loose:
        by_name[name] = by_name.get(name, 0.0) + t
    return out, sorted(by_name.items(), key=lambda kv: -kv[1])[:8]


def share(times, judged, seen):
    """The judged share of times: op name -> (judged calls, seen calls)
    from the binding's counters, keyed by the profiler's op names (the
    schema name, aten::mm). An op the binding never saw (outside its
    watched steps, or below another op) counts as not judged."""
    total = sum(times.values())
    done = 0.0
    rows = []
    for name, t in times.items():
        n = seen.get(name, 0)
        frac = judged.get(name, 0) / n if n else 0.0
        done += t * frac
        rows.append((name, t, frac))
    rows.sort(key=lambda r: -r[1])
    return {"total_us": round(total, 1), "judged_us": round(done, 1),
            "share": round(done / total, 4) if total else None,
            "by_op": [{"op": n, "us": round(t, 1), "judged": round(f, 4)}
                      for n, t, f in rows[:_TOP]]}


_EMPTY = ("aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
          "aten::new_empty_strided",
          "aten::_unsafe_view")  # a view whose schema does not say so (reshape's)


def computes_nothing(func):
    """Calls that compute no values, left out of the judged share by count:
    views (every tensor result aliases an input), ops that return no tensor
    and write none (item(), record_function markers) and empty tensors."""
    sch = getattr(func, "_schema", None)
    if sch is None:
        return False
    if sch.name in _EMPTY:
        return True
    if any(a.alias_info is not None and a.alias_info.is_write for a in sch.arguments):
        return False
    tensors = [r for r in sch.returns if "Tensor" in str(r.type)]
    return all(r.alias_info is not None and not r.alias_info.is_write for r in tensors)
