// Shared by the GPU audit corpus's kernels (test/audit_gpu): float32
// tensors on the current stream, one thread per element unless a kernel
// says otherwise.
#pragma once
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_fp16.h>

#define KC_STREAM at::cuda::getCurrentCUDAStream()
#define KC_CHECK_FLOAT(t) TORCH_CHECK((t).is_cuda() && (t).scalar_type() == at::kFloat, \
                                      #t " must be a float32 CUDA tensor")

static inline unsigned kc_blocks(int64_t n, int threads) {
  return (unsigned)((n + threads - 1) / threads);
}

// A block-wide sum in a fixed order (the same bits every call), for
// blockDim.x a power of two <= 1024.
__device__ inline float kc_block_sum(float v, float* smem) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) smem[threadIdx.x] += smem[threadIdx.x + s];
    __syncthreads();
  }
  float r = smem[0];
  __syncthreads();
  return r;
}

// max that keeps NaN, as ATen's reductions and pooling do.
__device__ inline float kc_nanmax(float a, float b) {
  return (a > b || isnan(a)) ? a : b;
}

__device__ inline float kc_block_max(float v, float* smem) {
  smem[threadIdx.x] = v;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) smem[threadIdx.x] = kc_nanmax(smem[threadIdx.x], smem[threadIdx.x + s]);
    __syncthreads();
  }
  float r = smem[0];
  __syncthreads();
  return r;
}
