#!/usr/bin/env python3
"""test/gpu/torch_ext.py — a torch.utils.cpp_extension.load_inline extension
with CUDA custom ops for the planted-bug checks of torch_bugs.py (contracts
in torch_bugs.yaml): kcext::scale_ok, kcext::scale_scratch (y = 2x; the
second also uses its input as scratch space), kcext::rowsum_ok,
kcext::rowsum_half (sums over the last axis; the second accumulates in
fp16).

  python3 torch_ext.py build DIR   compile it into DIR (nvcc, a few minutes
                                   on a small machine; the GPU run carries
                                   the built library instead)
  load(DIR)                        loads DIR's library (built here if missing)

The library registers its ops with TORCH_LIBRARY (no Python module), so
the built .so depends on the torch version only, not on Python's.
"""
import glob
import os
import sys

NAME = "kcheck_torch_ext"
CUDA_SRC = r"""
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_fp16.h>
#include <torch/library.h>

__global__ void scale_kernel(float *x, float *y, long n, int bug) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    if (bug) x[i] = v * 4.0f; /* the bug: the input used as scratch space */
    y[i] = v * 2.0f;
  }
}

static at::Tensor scale(const at::Tensor &x, int bug) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.is_contiguous(),
              "kcext: contiguous float32 CUDA tensors only");
  at::Tensor y = at::empty_like(x);
  long n = x.numel();
  if (n)
    scale_kernel<<<(unsigned)((n + 255) / 256), 256, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, bug);
  return y;
}
__global__ void rowsum_kernel(const float *x, float *y, long rows, long n, int bug) {
  long r = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float *p = x + r * n;
  if (bug) { /* the bug: the sum accumulated in fp16 */
    __half acc = __float2half(0.0f);
    for (long i = 0; i < n; i++) acc = __hadd(acc, __float2half(p[i]));
    y[r] = __half2float(acc);
  } else {
    float acc = 0.0f;
    for (long i = 0; i < n; i++) acc += p[i];
    y[r] = acc;
  }
}

static at::Tensor rowsum(const at::Tensor &x, int bug) {
  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.is_contiguous() && x.dim() >= 1,
              "kcext: contiguous float32 CUDA tensors only");
  std::vector<int64_t> sizes = x.sizes().vec();
  long n = sizes.back();
  sizes.pop_back();
  at::Tensor y = at::empty(sizes, x.options());
  long rows = y.numel();
  if (rows)
    rowsum_kernel<<<(unsigned)((rows + 127) / 128), 128, 0, c10::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), rows, n, bug);
  return y;
}
static at::Tensor rowsum_ok(const at::Tensor &x) { return rowsum(x, 0); }
static at::Tensor rowsum_half(const at::Tensor &x) { return rowsum(x, 1); }
static at::Tensor scale_ok(const at::Tensor &x) { return scale(x, 0); }
static at::Tensor scale_scratch(const at::Tensor &x) { return scale(x, 1); }

TORCH_LIBRARY(kcext, m) {
  m.def("scale_ok(Tensor x) -> Tensor");
  m.def("scale_scratch(Tensor x) -> Tensor");
  m.def("rowsum_ok(Tensor x) -> Tensor");
  m.def("rowsum_half(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(kcext, CUDA, m) {
  m.impl("scale_ok", scale_ok);
  m.impl("scale_scratch", scale_scratch);
  m.impl("rowsum_ok", rowsum_ok);
  m.impl("rowsum_half", rowsum_half);
}
"""


def build(directory):
    from torch.utils.cpp_extension import load_inline
    os.makedirs(directory, exist_ok=True)
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    load_inline(NAME, cpp_sources="", cuda_sources=CUDA_SRC, is_python_module=False,
                build_directory=directory, verbose=False)
    return library(directory)


def library(directory):
    found = glob.glob(os.path.join(directory, NAME + "*.so"))
    return found[0] if found else None


def load(directory):
    """Loads the extension's ops (torch.ops.kcext.*), building it if needed."""
    import torch
    path = library(directory) or build(directory)
    torch.ops.load_library(path)
    return path


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "build":
        print(build(sys.argv[2]))
        sys.exit(0)
    sys.exit("usage: torch_ext.py build DIR")
