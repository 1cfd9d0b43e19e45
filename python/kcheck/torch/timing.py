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
steps), so kcheck's own copies and re-runs do not weigh in. A second
profiler session cancels the first one's trace: when the program's own
session is running at the timed step, the share is recorded as not
measured, with the reason (torch_time_step=0 turns timing off for a
program that starts its own profiler at arbitrary steps).
"""
import torch

# Ops with kernel time but no ATen op around them (a user's raw kernel
# launches, a Triton kernel called outside any custom op).
NO_OP = "(no ATen op)"
_TOP = 24  # ops listed by time in the report


class StepTimer:
    """Profiles the ops between start() and stop(); stop() returns
    {ATen op name: microseconds} or raises with the reason."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.prof = None

    def start(self):
        if torch.autograd._profiler_enabled():
            # a second session would cancel the program's own trace
            raise RuntimeError("a profiler session of the program's is running")
        acts = [torch.profiler.ProfilerActivity.CPU]
        if self.cuda:
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=acts)
        self.prof.__enter__()

    def stop(self):
        prof, self.prof = self.prof, None
        if self.cuda:
            torch.cuda.synchronize()
        prof.__exit__(None, None, None)
        return by_op(prof.events(), self.cuda)


def by_op(events, cuda):
    """{op name: microseconds}: each event's own kernel time (cuda) or own
    CPU time, given to its innermost enclosing ATen op (runtime calls such
    as cudaLaunchKernel hold their kernels' time below the op)."""
    out = {}
    for e in events:
        t = e.self_device_time_total if cuda else e.self_cpu_time_total
        if t <= 0 or (not cuda and not e.name.startswith("aten::")):
            continue
        p = e
        while p is not None and not p.name.startswith("aten::"):
            p = p.cpu_parent
        name = p.name if p is not None else NO_OP
        out[name] = out.get(name, 0.0) + t
    return out


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
