"""The GPU audit corpus's CUDA kernels as one extension, kcheck_audit_gpu
(the sources in _ext/: one .cu per family and the bindings, compiled in
parallel by ninja), which every CUDA candidate reaches as `ext`:

    from gpu_ext import ext
    ext.relu(x)

Many separate load_inline extensions would each compile the torch headers
again (minutes apiece); one extension is built once. Where the environment
names an already built module (KC_AUDIT_GPU_EXT=/path/kcheck_audit_gpu.so,
test/gpu/run_gpu_audit.sh sets it after building), it is imported as it is:
the candidates' processes then run no compiler. Otherwise it is built with
torch.utils.cpp_extension.load into TORCH_EXTENSIONS_DIR (MAX_JOBS jobs).

    python test/audit_gpu/gpu_ext.py     # builds it, prints the module's path
"""
import glob
import importlib.util
import os
import sys

NAME = "kcheck_audit_gpu"
SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext")


def sources():
    return [os.path.join(SOURCES, "bindings.cpp")] + sorted(glob.glob(os.path.join(SOURCES, "*.cu")))


def _import(path):
    spec = importlib.util.spec_from_file_location(NAME, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(verbose=False):
    import torch  # noqa: F401  (the extension links against libtorch, loaded first)
    from torch.utils.cpp_extension import load
    return load(name=NAME, sources=sources(), extra_cflags=["-O2"],
                extra_cuda_cflags=["-O2"],
                verbose=verbose)


def _load():
    import torch  # noqa: F401
    built = os.environ.get("KC_AUDIT_GPU_EXT")
    if built and os.path.isfile(built):
        return _import(built)
    return build()


ext = _load() if __name__ != "__main__" else None


if __name__ == "__main__":
    mod = build(verbose="-v" in sys.argv)
    print(mod.__file__)
