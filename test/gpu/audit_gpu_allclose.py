"""KernelBench's own check on the GPU audit corpus, outside kcheck: for
each candidate, torch.allclose(atol = rtol = 1e-2) against its task's
reference at the audit's three input seeds, and the ratio
max |out - ref| / (atol + rtol |ref|) (allclose holds where it is <= 1).
A planted bug is only worth catching if this check accepts it.

Each task runs in its own process (a candidate's CUDA error ends that
task's process only), --jobs at a time; also builds the candidates, so
that the Triton cache is warm when the audit runs.

    python test/gpu/audit_gpu_allclose.py CORPUS [--jobs N] [--device cuda] -o allclose.json
"""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ATOL = RTOL = 1e-2


def ratio(ref, out):
    """max |out - ref| / (atol + rtol |ref|); inf for a shape mismatch or a
    NaN/Inf where the other side differs (allclose's equal_nan=False)."""
    import torch
    if ref.shape != out.shape:
        return math.inf
    r, o = ref.detach().double().reshape(-1), out.detach().double().reshape(-1)
    if r.numel() == 0:
        return 0.0
    same = (r == o)
    bad = (torch.isnan(r) | torch.isnan(o) | torch.isinf(r) | torch.isinf(o)) & ~same
    if bool(bad.any()):
        return math.inf
    q = torch.where(same, torch.zeros_like(r), (o - r).abs() / (ATOL + RTOL * r.abs()))
    return float(q.max())


def one_task(task_dir, device):
    """{candidate path: result} for one task folder, in this process."""
    import torch
    from kcheck.audit import task as tk
    out = {}
    task = tk.Task(os.path.join(task_dir, "reference.py"))
    for path in sorted(glob.glob(os.path.join(task_dir, "*.py"))):
        if os.path.basename(path) == "reference.py":
            continue
        res = {"allclose": None, "ratio": None, "seconds": None, "error": None}
        t0 = time.monotonic()
        try:
            cand = tk.Candidate(path)
            ref_model = task.build(device).eval()
            model = cand.build(task, device).eval()
            tk.align(ref_model, model)
            worst, ok = 0.0, True
            for seed in tk.INPUT_SEEDS:
                inputs = tk.to_device(task.inputs(seed), device)
                with torch.no_grad():
                    ref = ref_model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                    got = model(*inputs)
                if device == "cuda":
                    torch.cuda.synchronize()
                worst = max(worst, ratio(ref, got))
                ok = ok and ref.shape == got.shape and bool(
                    torch.allclose(ref.double(), got.double(), atol=ATOL, rtol=RTOL))
            res.update(allclose=ok, ratio=worst if math.isfinite(worst) else "inf")
        except Exception as e:  # noqa: BLE001  (reported, the next candidate runs)
            res["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
        res["seconds"] = round(time.monotonic() - t0, 2)
        out[os.path.abspath(path)] = res
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="audit_gpu_allclose.py")
    p.add_argument("corpus")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--device", default="cuda")
    p.add_argument("--one", action="store_true", help="(internal) one task folder, JSON on stdout")
    a = p.parse_args(argv)
    if a.one:
        json.dump(one_task(a.corpus, a.device), sys.stdout)
        return 0
    tasks = sorted(os.path.dirname(r) for r in glob.glob(os.path.join(a.corpus, "*", "reference.py")))

    def run(t):
        r = subprocess.run([sys.executable, os.path.abspath(__file__), t, "--one", "-o", "-",
                            "--device", a.device], capture_output=True, text=True)
        try:
            return json.loads(r.stdout)
        except ValueError:
            msg = "the task's process ended (exit %d): %s" % (r.returncode, r.stderr[-300:])
            return {os.path.abspath(c): {"allclose": None, "ratio": None, "seconds": None, "error": msg}
                    for c in glob.glob(os.path.join(t, "*.py")) if not c.endswith("reference.py")}
    results = {}
    with ThreadPoolExecutor(a.jobs) as pool:
        for r in pool.map(run, tasks):
            results.update(r)
    with open(a.output, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    bad = sum(1 for r in results.values() if r["error"])
    print("allclose: %d candidates, %d accepted, %d errors" % (
        len(results), sum(1 for r in results.values() if r["allclose"]), bad))
    return 0


if __name__ == "__main__":
    sys.exit(main())
