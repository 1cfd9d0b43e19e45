// test/unit/data/sass_atomics.cu — one atomic a kernel, for test_sass_atomics.c: built to
// sass_atomics.sm_NN.cubin by `nvcc -cubin -arch=sm_NN` (nvcc 13.0; no PTX), and to
// sass_atomics.fatbin by `nvcc -fatbin -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90`.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k_i32_red(int *p) { atomicAdd(p + threadIdx.x, 3); }
extern "C" __global__ void k_i32_atom(int *p, int *o) { int r = atomicAdd(p, 3); o[r] = 1; }
extern "C" __global__ void k_f32_red(float *p, float v) { atomicAdd(p + threadIdx.x, v); }
extern "C" __global__ void k_f32_atom(float *p, float *o, float v) { float r = atomicAdd(p, v); o[threadIdx.x] = r; }
extern "C" __global__ void k_f64_red(double *p, double v) { atomicAdd(p + threadIdx.x, v); }
extern "C" __global__ void k_u64_red(unsigned long long *p) { atomicAdd(p + threadIdx.x, 3ull); }
extern "C" __global__ void k_h2_red(__half2 *p, __half2 v) { atomicAdd(p + threadIdx.x, v); }
extern "C" __global__ void k_bf2_red(__nv_bfloat162 *p, __nv_bfloat162 v) { atomicAdd(p + threadIdx.x, v); }
extern "C" __global__ void k_i32_max(int *p, int v) { atomicMax(p + threadIdx.x, v); }
extern "C" __global__ void k_f32_sh(float *o, float v) { __shared__ float s[64]; s[threadIdx.x%64]=0; __syncthreads(); atomicAdd(&s[threadIdx.x % 7], v); __syncthreads(); o[threadIdx.x] = s[threadIdx.x%64]; }
extern "C" __global__ void k_i32_sh(int *o, int v) { __shared__ int s[64]; s[threadIdx.x%64]=0; __syncthreads(); atomicAdd(&s[threadIdx.x % 7], v); __syncthreads(); o[threadIdx.x] = s[threadIdx.x%64]; }
extern "C" __global__ void k_f32_gen(float *p, float v, int sh) { __shared__ float s[64]; float *q = sh ? s : p; atomicAdd(q + threadIdx.x, v); if (sh) p[threadIdx.x]=s[threadIdx.x]; }
extern "C" __global__ void k_i32_cas(int *p) { atomicCAS(p + threadIdx.x, 0, 5); }
extern "C" __global__ void k_i32_exch(int *p) { atomicExch(p + threadIdx.x, 5); }
extern "C" __global__ void k_f32_exch(float *p) { atomicExch(p + threadIdx.x, 5.0f); }
extern "C" __global__ void g_i32_gen(int *p, int v, int sh) { __shared__ int s[64]; int *q = sh ? s : p; atomicAdd(q + threadIdx.x, v); if (sh) p[threadIdx.x]=s[threadIdx.x]; }
extern "C" __global__ void g_i32_genr(int *p, int v, int sh) { __shared__ int s[64]; int *q = sh ? s : p; int r = atomicAdd(q + threadIdx.x, v); p[r&63]=s[threadIdx.x]; }
extern "C" __global__ void g_f32_genr(float *p, float v, int sh) { __shared__ float s[64]; float *q = sh ? s : p; float r = atomicAdd(q + threadIdx.x, v); p[threadIdx.x]=r+s[threadIdx.x]; }
extern "C" __global__ void g_h1_red(__half *p, __half v) { atomicAdd(p + threadIdx.x, v); }
extern "C" __global__ void g_f32_sub(float *p, float v) { atomicAdd(p + threadIdx.x, -v); }
extern "C" __global__ void g_i32_and(int *p, int v) { atomicAnd(p + threadIdx.x, v); }
extern "C" __global__ void g_u32_inc(unsigned *p, unsigned v) { atomicInc(p + threadIdx.x, v); }
// module variables (cubin_vars.c) and a fatbin to take a cubin out of
__device__ int kc_dev_var[4];
__constant__ float kc_const_var[8];
extern "C" __global__ void v_use(int *o) { o[threadIdx.x] = kc_dev_var[threadIdx.x & 3] + (int)kc_const_var[threadIdx.x & 7]; }
