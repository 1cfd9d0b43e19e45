#!/usr/bin/env python3
"""test/gpu/torch_cnn.py — a small CNN (conv, batch norm, ReLU, max pool,
avg pool without the padding counted, adaptive avg pool, linear,
cross-entropy, SGD with momentum or AdamW) trained a few steps on CUDA,
fp32 and bf16 autocast, plain and under `kcheck run --torch`: losses,
parameters and running statistics bitwise equal; no violation (PyTorch's
documented nondeterminism named as such is an INFO line); every batch-norm
and pooling output judged by its oracle op; the binding's coverage (ops
covered / seen, and the share of the step's GPU time in covered ops, from
torch.profiler on the plain run) printed.

  python3 test/gpu/torch_cnn.py [--modes fp32,bf16] [--steps 4] [--optim sgd|adamw]
                                [--out DIR]

Prints PASS/FAIL lines and a COVERAGE line per mode; exits 1 on a FAIL.
The worker (--worker) prints LOSS <hex> per step, STATE <sha256> and, with
--profile, GPU_TIME lines.
"""
import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Oracle ops whose outputs the step must have had judged (each output of a
# multi-output op named in its op_check record).
WANT_ORACLE = ["batch_norm", "batch_norm_mean", "batch_norm_invstd", "batch_norm_running_mean",
               "batch_norm_running_var", "batch_norm_backward", "batch_norm_backward_weight",
               "batch_norm_backward_bias", "max_pool2d", "max_pool2d_indices",
               "max_pool2d_backward", "avg_pool2d", "avg_pool2d_backward",
               "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward"]
# judged where the eval pass's batch norm is a signature of its own (an
# INFO line otherwise)
MAYBE_ORACLE = ["batch_norm_eval"]
OK_CLASSES = {"bitwise", "pass", "suspect", "inconclusive"}


def worker(args):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    # cuDNN's deterministic algorithms: the plain and checked runs must
    # be comparable bit for bit (the binding reruns ops on its own inputs)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = args.device
    # 32x32 -> 16 (max) -> 8 (avg 3/2/1) -> 4 (adaptive: windows that tile
    # exactly, so its CUDA backward gathers instead of adding atomically)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                        nn.ReLU(), nn.AvgPool2d(3, 2, 1, count_include_pad=False),
                        nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(32 * 16, 10)).to(dev)
    opt = (torch.optim.AdamW(net.parameters(), lr=1e-3) if args.optim == "adamw"
           else torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9))
    x = torch.randn(16, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (16,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.mode == "bf16"):
            loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.steps):
        print("LOSS", step().float().item().hex(), flush=True)
    if args.profile and dev == "cuda":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            step()
            torch.cuda.synchronize()
        for ev in prof.key_averages():
            t = getattr(ev, "self_device_time_total", None)
            if t is None:
                t = getattr(ev, "self_cuda_time_total", 0)
            if ev.key.startswith("aten::") and t > 0:
                print("GPU_TIME", ev.key, t)
    net.eval()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16,
                                         enabled=args.mode == "bf16"):
        out = net(x)
    h = hashlib.sha256()
    for t in list(net.state_dict().values()) + [out]:
        h.update(t.detach().float().contiguous().cpu().numpy().tobytes())
    print("STATE", h.hexdigest(), flush=True)


def run(cmd, timeout=600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def lines(out, key):
    return [ln.split(None, 1)[1] for ln in out.splitlines() if ln.startswith(key + " ")]


def covered_names():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from kcheck.torch import ops
    return {n for names, _, _, _ in ops.ROWS for n in names}


def check_mode(args, mode, outdir):
    res = []

    def note(ok, what):
        res.append(ok)
        print("%s %s %s" % ("PASS" if ok else "FAIL", mode, what), flush=True)

    me = [sys.executable, os.path.abspath(__file__), "--worker", "--mode", mode,
          "--steps", str(args.steps), "--optim", args.optim, "--device", args.device]
    rc0, plain, err0 = run(me)
    note(rc0 == 0, "plain run exits 0" + ("" if rc0 == 0 else ": " + err0[-800:]))
    # the step's GPU time per ATen op: a third, profiled plain run (one
    # step more, so not the one compared)
    _, profiled, _ = run(me + ["--profile"])
    log = os.path.join(outdir, "cnn_" + mode)
    kc = [sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "run", "--torch",
          "-o", "log_path=" + log, "-o", "torch_watch_every=1",
          "-o", "torch_budget=%s" % args.budget,
          # the step timed for the judged share of the GPU time: a late one
          # of the few (steady state is not reached in them)
          "-o", "torch_time_step=%d" % max(1, args.steps - 1)]
    for o in args.opts:
        kc += ["-o", o]
    kc.append("--")
    rc1, checked, err1 = run(kc + me)
    with open(log + ".stderr.txt", "w") as f:
        f.write(err1)
    note(rc1 == 0, "run under the binding exits 0" + ("" if rc1 == 0 else ": " + err1[-800:]))
    a = lines(plain, "LOSS") + lines(plain, "STATE")
    b = lines(checked, "LOSS") + lines(checked, "STATE")
    note(bool(a) and a == b, "losses, parameters, running statistics bitwise equal (%s)" %
         (a[-2:] if a == b else "plain %s binding %s" % (a, b)))
    recs = []
    for p in sorted(glob.glob(log + ".*.jsonl")):
        with open(p) as f:
            recs += [json.loads(ln) for ln in f if ln.strip()]
    viol = [r for r in recs if r.get("type") == "violation"]
    documented = [r for r in viol if r.get("cause") == "documented by PyTorch"]
    for v in documented:
        print("INFO %s documented nondeterminism: %s (%s)" % (mode, v.get("op"),
                                                              v.get("documented")))
    viol = [r for r in viol if r not in documented]
    note(not viol, "no violation%s" % ("" if not viol else ": " + "; ".join(
        "%s %s %s" % (v.get("gate"), v.get("op"), v.get("output", "")) for v in viol[:5])))
    judged = {}
    for c in recs:
        if c.get("type") != "op_check" or "part" in c:
            continue
        o = c["gates"].get("oracle") or {}
        outs = o.get("outputs") or [{"oracle_op": c.get("oracle_op"),
                                     "class": o.get("class") or o.get("status")}]
        for x in outs:
            judged.setdefault(x["oracle_op"], set()).add(x.get("class"))
    for op in WANT_ORACLE:
        cls = judged.get(op, set())
        note(bool(cls & OK_CLASSES) and not (cls - OK_CLASSES - {None}),
             "oracle op %s judged: %s" % (op, sorted(c for c in cls if c) or "never"))
    # which ATen spellings of batch norm and pooling this torch dispatches
    # on this device (cuDNN's, native, _with_update)
    names = {c["op"] for c in recs if c.get("type") == "op_check"}
    for r in recs:
        if r.get("type") == "torch_summary":
            for ops_ in (r.get("passed_through_ops") or {}).values():
                names |= set(ops_)
    print("INFO %s ATen ops seen: %s" % (mode, ", ".join(sorted(
        n for n in names if "norm" in n or "pool" in n))))
    for op in MAYBE_ORACLE:
        print("INFO %s oracle op %s judged: %s" % (mode, op, sorted(
            c for c in judged.get(op, set()) if c) or "never"))
    summ = [r for r in recs if r.get("type") == "torch_summary"]
    if summ:
        s = summ[-1]
        seen, cov = s.get("ops_seen", 0), s.get("ops_covered", 0)
        un = (s.get("passed_through_ops") or {}).get("op not covered", {})
        times = {}
        for ln in lines(profiled, "GPU_TIME"):
            name, t = ln.rsplit(None, 1)
            times[name] = times.get(name, 0.0) + float(t)
        names = covered_names()
        tot = sum(times.values())
        cov_t = sum(t for n, t in times.items() if n.split("::", 1)[1] in names)
        print("COVERAGE %s ops covered/seen %d/%d (%.1f%%), checked %d; GPU time in covered "
              "ops %.1f%% of %.0f us; not covered: %s" % (
                  mode, cov, seen, 100.0 * cov / max(seen, 1), s.get("ops_checked", 0),
                  100.0 * cov_t / tot if tot else 0.0, tot,
                  ", ".join("%s %d" % kv for kv in sorted(un.items(), key=lambda kv: -kv[1]))))
        # the binding's own judged share (ops that compute values; the
        # timed step's GPU time weighted by each op's judged share)
        from kcheck.op_report import computing
        vals = computing(s)
        t = s.get("time_judged") or {}
        print("JUDGED %s %d of %d ops that compute values (%.1f%%); time: %s; not judged: %s" % (
            mode, s.get("ops_judged", 0), vals, 100.0 * s.get("ops_judged", 0) / max(vals, 1),
            ("%.1f%% of %.0f us (step %s)" % (100 * t["share"], t.get("total_us", 0),
                                              t.get("step")))
            if t.get("share") is not None else "not measured: %s" % t.get("not_measured"),
            ", ".join("%s %.0fus %.0f%%" % (r["op"], r["us"], 100 * r["judged"])
                      for r in t.get("by_op", []) if r["judged"] < 1)[:600] or "-"))
        top = sorted(times.items(), key=lambda kv: -kv[1])[:12]
        print("GPU_TIME %s top: %s" % (mode, "; ".join(
            "%s%s %.0f" % (n, "" if n.split("::", 1)[1] in names else " (not covered)", t)
            for n, t in top)))
    else:
        note(False, "a torch_summary record")
    return all(res)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--mode", default="fp32")
    ap.add_argument("--modes", default="fp32,bf16")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--optim", default="sgd", choices=("sgd", "adamw"))
    ap.add_argument("--out", default=None)
    # every new signature checked whole at its first call (the run is a
    # few steps: no later step to defer checks to)
    ap.add_argument("--budget", default="1")
    # a dry run of the plumbing on the CPU stand-in (tests): --device cpu
    # and kcheck options such as torch_devices=cuda,cpu
    ap.add_argument("--device", default="cuda")
    ap.add_argument("-o", dest="opts", action="append", default=[])
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return 0
    outdir = args.out or os.environ.get("OUT") or tempfile.mkdtemp(prefix="kcheck-cnn.")
    os.makedirs(outdir, exist_ok=True)
    ok = True
    for mode in args.modes.split(","):
        ok &= check_mode(args, mode, outdir)
    print("%s torch_cnn (reports in %s)" % ("PASS" if ok else "FAIL", outdir))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
