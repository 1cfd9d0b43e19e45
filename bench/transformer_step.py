#!/usr/bin/env python3
"""bench/transformer_step.py — a small transformer training loop for timing
kcheck's checking cost (bench/run_check_bench.sh).

2 encoder layers, d_model 256, 4 heads, feed-forward 1024, sequence 128,
batch 16, vocabulary 1000, next-token cross-entropy, AdamW; fp32 (TF32 off)
or bf16 autocast (--bf16). Inputs are made on the CPU (seeded) and copied to
the GPU once. Every step is synchronised and timed on its own.

Prints
  STEP <i> <ms> <forward> <backward> <optimizer> <thread cpu> <process cpu>
                                for each step (1-based), flushed as it goes: host ms
                                of the step and its phases, CPU ms of the program's
                                thread and of the whole process in the step
  FIRST_SIGHT_MS_PER_STEP <ms>  mean of steps 1..5
  STEADY_MS_PER_STEP <ms>       mean of steps 6..N
  STEADY_MEDIAN_MS <ms>         median of steps 6..N
  LATE_MEDIAN_MS ...            medians of steps N/3+1..N (the first checks long done)
  THREAD_CPU_MS <ms> of <ms> <thread> <tid>   CPU time of the busiest threads in those steps
  CALIB_MS <ms> samples=<n>     median time of calibrate() (the process's CPU speed), run
                                after every 5th late step while no dispatch mode is on
  FINAL_LOSS <float.hex()>
  MEMORY allocated=.. reserved=.. max_allocated=.. max_reserved=.. requested=..
         max_requested=.. blocks=.. segments=..  (CUDA: torch.cuda.memory_stats())
With --memory-out FILE it also writes the caching allocator's live blocks
at the end ([size, requested size, pool], sorted). With --profile-out FILE it instead runs --steps steps plain under
torch.profiler (after 3 warm-up steps) and writes JSON: the mean device time
of each kernel by name, and the device-to-device copy bandwidth of a large
torch copy (copy_bytes_per_s = bytes copied / time).
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch


class LM(torch.nn.Module):
    def __init__(self, vocab, d, heads, ff, layers, seq):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, batch_first=True,
                                                 activation="gelu", norm_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(seq),
                             persistent=False)

    def forward(self, x):
        h = self.emb(x) + self.pos[: x.shape[1]]
        h = self.enc(h, mask=self.mask, is_causal=True)
        return self.head(self.norm(h))


def build(args, dev):
    torch.manual_seed(1234)
    model = LM(args.vocab, args.d_model, args.heads, 4 * args.d_model, args.layers, args.seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    g = torch.Generator(device="cpu").manual_seed(5)
    data = torch.randint(0, args.vocab, (8, args.batch, args.seq + 1), generator=g).to(dev)
    return model, opt, data


def step(model, opt, data, i, bf16, marks=None):
    """One training step; marks (a list) gets the perf_counter() after the
    forward and after the backward (host time: the step is launch-bound,
    so where the host time goes is where the step's time goes)."""
    batch = data[i % data.shape[0]]
    x, y = batch[:, :-1], batch[:, 1:]
    opt.zero_grad(set_to_none=True)
    with torch.autocast(data.device.type, dtype=torch.bfloat16, enabled=bf16):
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(),
                                                 y.reshape(-1))
    if marks is not None:
        marks.append(time.perf_counter())
    loss.backward()
    if marks is not None:
        marks.append(time.perf_counter())
    opt.step()
    return loss


def per_thread(read):
    """{thread id: read(tid)} over this process's threads (Linux /proc; a
    thread whose files cannot be read is left out; {} without /proc)."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            out[int(tid)] = read(tid)
        except (OSError, ValueError, IndexError):
            pass
    return out


def thread_cpu():
    """{thread id: nanoseconds on a CPU} of this process's threads (schedstat)."""
    def read(tid):
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    return per_thread(read)


def thread_sched():
    """{thread id: (ns waiting on a run queue, timeslices, last CPU,
    involuntary switches)} (schedstat, stat and status): whether a busy
    thread waited for a CPU."""
    def read(tid):
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            _, wait, slices = (int(x) for x in f.read().split()[:3])
        with open(f"/proc/self/task/{tid}/stat") as f:
            cpu = int(f.read().rsplit(")", 1)[1].split()[36])
        nivcsw = 0
        with open(f"/proc/self/task/{tid}/status") as f:
            for line in f:
                if line.startswith("nonvoluntary_ctxt_switches"):
                    nivcsw = int(line.split()[1])
        return (wait, slices, cpu, nivcsw)
    return per_thread(read)


def process_usage():
    """(user s, system s, minor faults, major faults) of the whole process."""
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime, r.ru_stime, r.ru_minflt, r.ru_majflt)


class GcClock:
    """Python's garbage collections and the time they take (gc.callbacks)."""

    def __init__(self):
        import gc
        self.n, self.s, self.t0 = [0, 0, 0], 0.0, None
        gc.callbacks.append(self)

    def __call__(self, phase, info):
        if phase == "start":
            self.t0 = time.perf_counter()
        elif self.t0 is not None:
            self.n[info["generation"]] += 1
            self.s += time.perf_counter() - self.t0
            self.t0 = None


def thread_names():
    """{thread id: name}: Python's names for its threads, else the kernel's
    comm (C threads: CUDA's, the autograd engine's, OpenMP's, kcheck's)."""
    import threading
    names = {}
    for tid in thread_cpu():
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                names[tid] = f.read().strip()
        except OSError:
            names[tid] = "?"
    for t in threading.enumerate():
        if t.native_id in names:
            names[t.native_id] = "py:" + t.name
    return names


def copy_bandwidth(dev):
    n = 1 << 30  # 1 GiB
    a = torch.empty(n, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    b.copy_(a)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 10
    s.record()
    for _ in range(reps):
        b.copy_(a)
    e.record()
    torch.cuda.synchronize()
    sec = s.elapsed_time(e) / 1e3 / reps
    return n / sec


def profile(args, dev, out_path):
    from torch.profiler import ProfilerActivity, profile as tprofile
    model, opt, data = build(args, dev)
    for i in range(3):
        step(model, opt, data, i, args.bf16)
    torch.cuda.synchronize()
    with tprofile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
        for i in range(args.steps):
            step(model, opt, data, 3 + i, args.bf16)
        torch.cuda.synchronize()
    kernels = {}
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is None or "CUDA" not in str(dt):
            continue
        try:
            us = ev.time_range.elapsed_us()
        except Exception:
            continue
        k = kernels.setdefault(ev.name, {"total_us": 0.0, "count": 0})
        k["total_us"] += float(us)
        k["count"] += 1
    for k in kernels.values():
        k["mean_us"] = k["total_us"] / max(1, k["count"])
    bw = copy_bandwidth(dev)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"kernels": kernels, "copy_bytes_per_s": bw, "steps": args.steps}, f, indent=1)
    print(f"PROFILE kernels={len(kernels)} copy_GBps={bw / 1e9:.1f} -> {out_path}", flush=True)
    return 0


def pyprof(args, model, opt, data, sync):
    """args.pyprof untimed steps under cProfile: the functions (Python and
    builtins such as torch's C functions) by own time, as PYPROF lines
    (ms per step, calls per step)."""
    import cProfile
    import io
    import pstats
    prof = cProfile.Profile()
    sync()
    prof.enable()
    for i in range(args.pyprof):
        step(model, opt, data, args.steps + i, args.bf16)
        sync()
    prof.disable()
    st = pstats.Stats(prof)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])
    n = args.pyprof
    print(f"PYPROF_TOTAL_MS_PER_STEP {1e3 * st.total_tt / n:.3f}")
    for (file, line, name), (cc, nc, tt, ct, _) in rows[:40]:
        print(f"PYPROF {1e3 * tt / n:.3f} ms {nc / n:.1f} calls {name} {file}:{line}")
    if args.pyprof_out:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(200)
        with open(args.pyprof_out, "w", encoding="utf-8") as f:
            f.write(buf.getvalue())


def calibrate(reps=300):
    """This process's CPU speed, in ms, outside the timed steps: host work of
    the kinds a launch-bound step is made of (Python, the dispatcher, the
    CPU allocator) on small CPU tensors, no CUDA call. The plain runs of
    one machine spread 10-50% between processes while each process keeps
    its own speed; a step time over this figure compares processes free of
    that (the bench tables print both, and how well the two correlate)."""
    a, b = torch.ones(64), torch.ones(64)
    t0 = time.perf_counter()
    for _ in range(reps):
        c = torch.add(a, b)
        c.mul_(0.5)
        sum(range(64))
    return 1e3 * (time.perf_counter() - t0)


def dispatch_modes():
    """Modes on the dispatch stack (kcheck's binding pushes one in the steps it watches)."""
    try:
        return torch._C._len_torch_dispatch_stack()
    except AttributeError:
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--vocab", type=int, default=1000)
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast (default fp32)")
    ap.add_argument("--device", default="cuda", help="cuda (default), or cpu for the binding's "
                    "CPU tests (torch_devices=cuda,cpu)")
    ap.add_argument("--memory-out", help="write the live CUDA blocks at the end (size, requested "
                    "size, pool) as JSON")
    ap.add_argument("--profile-out", help="profile kernels and copy bandwidth into this JSON file")
    ap.add_argument("--pyprof", type=int, default=0, metavar="N",
                    help="after the timed steps, N more steps under cProfile (not timed, not in "
                    "the means); the functions with the most own time are printed as PYPROF lines")
    ap.add_argument("--kcheck-mode-off", action="store_true",
                    help="under kcheck's PyTorch binding: take its dispatch mode off before the "
                    "model is built (the binding installed, its mode never on: what installing "
                    "it costs)")
    ap.add_argument("--pyprof-out", help="with --pyprof: also write the full pstats table here")
    ap.add_argument("--attention", choices=("default", "math"), default="default",
                    help="math: scaled-dot-product attention by its math kernels only (flash and "
                    "memory-efficient off): the memory-efficient backward accumulates in a "
                    "varying order, so only then is the final loss the same in every plain run")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("CUDA is not available", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if args.attention == "math":
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        torch.backends.cuda.enable_cudnn_sdp(False)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    if args.profile_out:
        return profile(args, dev, args.profile_out)

    if args.kcheck_mode_off:
        from kcheck.torch import mode as kmode
        if kmode._MODE is not None and kmode._MODE._on_top():
            kmode._MODE.__exit__(None, None, None)  # on_step never pushes it again
    model, opt, data = build(args, dev)
    times = []
    # per step, ms: forward (zero_grad included), backward, optimizer + sync
    # (host time), then the CPU time of the program's thread and of the
    # whole process (every thread) during the step
    phases = []
    late_from = max(5, args.steps // 3)  # after the first third: the first checks long done
    calib = []  # calibrate() after every 5th late step with no dispatch mode on
    cpu_at = None
    gcc = GcClock()
    loss = None
    for i in range(args.steps):
        if i == late_from:
            cpu_at = (time.perf_counter(), thread_cpu(), thread_sched(), process_usage(),
                      list(gcc.n), gcc.s)
        sync()
        marks = [time.perf_counter()]
        c0, p0 = time.thread_time(), time.process_time()
        loss = step(model, opt, data, i, args.bf16, marks)
        sync()
        marks.append(time.perf_counter())
        c1, p1 = time.thread_time(), time.process_time()
        ms = 1e3 * (marks[-1] - marks[0])
        times.append(ms)
        phases.append([1e3 * (b - a) for a, b in zip(marks, marks[1:])] +
                      [1e3 * (c1 - c0), 1e3 * (p1 - p0)])
        print(f"STEP {i + 1} {ms:.3f} " + " ".join(f"{p:.3f}" for p in phases[-1]), flush=True)
        if i >= late_from and (i - late_from) % 5 == 4 and not dispatch_modes():
            calib.append(calibrate())
    first, steady = times[:5], times[5:]
    print(f"FIRST_SIGHT_MS_PER_STEP {statistics.fmean(first):.3f}")
    if steady:
        print(f"STEADY_MS_PER_STEP {statistics.fmean(steady):.3f}")
        print(f"STEADY_MEDIAN_MS {statistics.median(steady):.3f}")
        late = phases[late_from:]
        lt = times[late_from:]
        med = [statistics.median(p[k] for p in late) for k in range(5)]
        print("LATE_MEDIAN_MS step=%.3f forward=%.3f backward=%.3f optimizer=%.3f "
              "thread_cpu=%.3f process_cpu=%.3f (steps %d-%d)" % (
                  statistics.median(lt), *med, late_from + 1, len(phases)))
        if cpu_at is not None:  # which threads ran during the late steps
            wall = time.perf_counter() - cpu_at[0]
            now, names = thread_cpu(), thread_names()
            used = sorted(((now[t] - cpu_at[1].get(t, 0)) / 1e6, t) for t in now)[::-1]
            sched = thread_sched()
            for ms_, tid in used[:8]:
                if ms_ >= 1:
                    print(f"THREAD_CPU_MS {ms_:.1f} of {1e3 * wall:.0f} {names.get(tid, '?')} {tid}")
                    a, b = cpu_at[2].get(tid, (0, 0, 0, 0)), sched.get(tid)
                    if b:  # waiting for a CPU (run queue), slices, involuntary switches, last CPU
                        print(f"THREAD_SCHED {names.get(tid, '?')} {tid} runqueue_wait_ms "
                              f"{(b[0] - a[0]) / 1e6:.1f} slices {b[1] - a[1]} involuntary "
                              f"{b[3] - a[3]} last_cpu {b[2]}")
            print(f"THREADS {len(now)}")
            u = process_usage()
            n = len(phases) - late_from
            print("LATE_PROCESS user_ms=%.3f system_ms=%.3f minor_faults=%.1f major_faults=%.1f "
                  "gc_collections=%s gc_ms=%.3f (per step)" % (
                      1e3 * (u[0] - cpu_at[3][0]) / n, 1e3 * (u[1] - cpu_at[3][1]) / n,
                      (u[2] - cpu_at[3][2]) / n, (u[3] - cpu_at[3][3]) / n,
                      "/".join(str(b - a) for a, b in zip(cpu_at[4], gcc.n)),
                      1e3 * (gcc.s - cpu_at[5]) / n))
    if calib:
        print(f"CALIB_MS {statistics.median(calib):.3f} samples={len(calib)}")
    if args.pyprof:
        pyprof(args, model, opt, data, sync)
    print(f"FINAL_LOSS {float(loss.item()).hex()}")
    if dev.type == "cuda":  # the program's view of the caching allocator
        c = torch.cuda
        ms = c.memory_stats()
        # requested: the bytes the live tensors asked for (allocated is the
        # caching allocator's blocks, which depend on the allocation history)
        print(f"MEMORY allocated={c.memory_allocated()} reserved={c.memory_reserved()} "
              f"max_allocated={c.max_memory_allocated()} max_reserved={c.max_memory_reserved()} "
              f"requested={ms.get('requested_bytes.all.current')} "
              f"max_requested={ms.get('requested_bytes.all.peak')} "
              f"blocks={ms.get('allocation.all.current')} segments={ms.get('segment.all.current')}")
    if dev.type == "cuda" and args.memory_out:  # every live block: what differs from plain
        blocks = []
        for seg in torch.cuda.memory_snapshot():
            for b in seg.get("blocks", []):
                if b.get("state") == "active_allocated":
                    blocks.append([b.get("size"), b.get("requested_size"), seg.get("segment_type")])
        with open(args.memory_out, "w", encoding="utf-8") as f:
            json.dump(sorted(blocks), f)
    name = torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu"
    print(f"VERSIONS torch={torch.__version__} device={name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
