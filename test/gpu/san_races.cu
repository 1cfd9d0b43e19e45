// test/gpu/san_races.cu — kernels for the Compute Sanitizer route
// (test/gpu/run_gpu_sanitizer.sh), built SASS only (-gencode
// arch=compute_90,code=sm_90: no PTX, as ATen's and cuBLAS's kernels), so
// kcheck's PTX route cannot apply. One kernel a run: san_races NAME. Prints
// the kernel's own time on a plain launch (plain_ms=...), after a warm-up
// launch on scratch buffers (that warm-up is the launch kcheck checks).
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#define N_BLOCKS 64
#define N_THREADS 256

// Cross-block lost update: one thread per block reads, adds, writes back.
__global__ void lost_update(int *counter) {
  if (threadIdx.x == 0) {
    int v = *counter;
    for (int i = 0; i < 32; i++) v += (v & 1) + 1; // widen the window a little
    *counter = v;
  }
}

// Missing __syncthreads: each thread reads its neighbour's shared slot,
// written by another warp, with no barrier in between.
__global__ void missing_sync(const int *in, int *out) {
  __shared__ int s[N_THREADS];
  int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  s[t] = in[g] * 3 + 1;
  out[g] = s[(t + 32) % blockDim.x];
}

// Float atomic sum into few bins: order-dependent rounding (nondeterminism).
__global__ void float_sum(const float *in, float *bins) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&bins[g % 4], in[g]);
}

// Integer atomic histogram: race-free and deterministic.
__global__ void int_atomic(const int *in, int *bins) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&bins[in[g] & 7], 1);
}

// Each block owns its slots: race-free.
__global__ void block_slots(const int *in, int *out) {
  __shared__ int s[N_THREADS];
  int t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  s[t] = in[g];
  __syncthreads();
  out[g] = s[(t + 1) % blockDim.x] + s[t];
}

// Reads 1 KiB past the end of a 4 KiB input allocated last: in the
// program's own run the read lands on memory the driver mapped and does
// not fault; in kcheck's patched copy the guard stops it before it is
// made (the route stands down, the program goes on).
__global__ void past_end(const int *in, int *out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  out[g] = in[g % 1024] + (g == 0 ? in[1024 + 256] : 0);
}

static int launch(const char *name, void *a, void *b) {
  if (!strcmp(name, "lost_update")) lost_update<<<N_BLOCKS, N_THREADS>>>((int *)b);
  else if (!strcmp(name, "missing_sync")) missing_sync<<<N_BLOCKS, N_THREADS>>>((int *)a, (int *)b);
  else if (!strcmp(name, "float_sum")) float_sum<<<N_BLOCKS, N_THREADS>>>((float *)a, (float *)b);
  else if (!strcmp(name, "int_atomic")) int_atomic<<<N_BLOCKS, N_THREADS>>>((int *)a, (int *)b);
  else if (!strcmp(name, "block_slots")) block_slots<<<N_BLOCKS, N_THREADS>>>((int *)a, (int *)b);
  else if (!strcmp(name, "past_end")) past_end<<<N_BLOCKS, N_THREADS>>>((const int *)a, (int *)b);
  else return 1;
  return 0;
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "lost_update";
  const int n = N_BLOCKS * N_THREADS;
  static float hf[N_BLOCKS * N_THREADS];
  static int hi[N_BLOCKS * N_THREADS];
  for (int i = 0; i < n; i++) hf[i] = 1.0f / (float)(i % 97 + 1) * (i % 3 ? 1e3f : 1e-3f), hi[i] = i * 7919;
  void *a, *b;
  if (cudaMalloc(&a, n * 4) != cudaSuccess || cudaMalloc(&b, n * 4) != cudaSuccess) {
    fprintf(stderr, "no CUDA device\n");
    return 2;
  }
  int is_float = !strcmp(name, "float_sum");
  cudaMemcpy(a, is_float ? (void *)hf : (void *)hi, n * 4, cudaMemcpyHostToDevice);
  cudaMemset(b, 0, n * 4);
  if (!strcmp(name, "past_end")) { // its input: 4 KiB, the last allocation
    void *z;
    if (cudaMalloc(&z, 4096) != cudaSuccess) return 2;
    cudaMemcpy(z, hi, 4096, cudaMemcpyHostToDevice);
    a = z;
  }
  if (launch(name, a, b)) {
    fprintf(stderr, "unknown kernel %s\n", name);
    return 1;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) {
    fprintf(stderr, "the checked launch failed: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 3;
  }
  // the plain run's time (later launches of one signature are not checked)
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  cudaEventRecord(e0);
  for (int i = 0; i < 10; i++) launch(name, a, b);
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  printf("%s plain_ms=%.4f\n", name, ms / 10);
  return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
