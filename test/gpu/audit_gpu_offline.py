"""Checks of the GPU audit corpus (test/audit_gpu) that need no GPU, for a
machine with nvcc and, for the Triton part, Triton installed:

    python test/gpu/audit_gpu_offline.py cuda      # builds the extension
        (TORCH_CUDA_ARCH_LIST=9.0 where no GPU is visible), then builds
        every CUDA candidate on the CPU and calls it: each must reach its
        function with arguments of the right types (the function then
        refuses the CPU tensor: "must be a float32 CUDA tensor")
    python test/gpu/audit_gpu_offline.py triton    # compiles every Triton
        candidate's kernels for sm_90 through a stand-in driver (the
        launch, after compilation, is refused)

Exit status 0 when every candidate passes."""
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "test", "audit_gpu")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, CORPUS)


def candidates(marker):
    for p in sorted(glob.glob(os.path.join(CORPUS, "*", "*.py"))):
        if os.path.basename(p) != "reference.py" and marker in open(p).read():
            yield p


def call_on_cpu(path):
    """The exception the candidate's forward raised on the task's CPU inputs."""
    from kcheck.audit import task as tk
    t = tk.Task(os.path.join(os.path.dirname(path), "reference.py"))
    ref, m = t.build("cpu"), tk.Candidate(path).build(t, "cpu")
    tk.align(ref, m)
    try:
        m(*t.inputs(0))
    except Exception as e:  # noqa: BLE001  (what it raised is the verdict)
        return e
    return None


def check_cuda():
    import gpu_ext
    os.environ["KC_AUDIT_GPU_EXT"] = gpu_ext.build().__file__
    bad = 0
    for p in candidates("from gpu_ext import ext"):
        e = call_on_cpu(p)
        if not (isinstance(e, RuntimeError) and "CUDA tensor" in str(e)):
            bad += 1
            print("FAIL %s: %r" % (os.path.relpath(p, CORPUS), e))
    return bad


class _StandIn:
    """Triton's driver for sm_90 with no GPU: enough to compile."""

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device("cpu")

    def __getattr__(self, name):
        raise RuntimeError("kcheck-stand-in: no GPU (%s)" % name)


def check_triton():
    from triton.runtime import driver
    driver.set_active(_StandIn())
    bad = 0
    for p in candidates("@triton.jit"):
        e = call_on_cpu(p)
        if "kcheck-stand-in" not in str(e):
            bad += 1
            print("FAIL %s: %r" % (os.path.relpath(p, CORPUS), e))
    return bad


def main(argv):
    what = argv[1:] or ["cuda", "triton"]
    bad = sum({"cuda": check_cuda, "triton": check_triton}[w]() for w in what)
    print("%s: %d failed" % (", ".join(what), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
