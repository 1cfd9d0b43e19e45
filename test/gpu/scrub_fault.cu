// test/gpu/scrub_fault.cu — a kernel that reads shared memory it never
// wrote and uses it as an index: the race gate's scrub re-run (shared
// memory filled with a pattern) faults where the application's run did
// not. Run by test/gpu/scrub_fault_check.sh, plain and under kcheck (with
// kernel_include=gather_uninit, so that `wipe` passes through unchecked).
// The application's run reads what the kernel before it left in shared
// memory: `wipe` writes zeros over the same large dynamic allocation on
// every SM first, so the index is 0 and the gather stays in bounds. Both
// read and write the top of a 160 KiB block (one block per SM): kcheck's
// own kernels that run between them (the pre-state's copy and hash) use a
// few KiB of static shared memory, which sits low in the SM's. Prints
//   RESULT gather=<ok|wrong|error> after=<error of a later CUDA call>
// and exits 0 when the gather gave in[0] everywhere and a later call
// still worked.
#include <cuda_runtime.h>

#include <cstdio>

constexpr int kThreads = 256;
constexpr int kSmemBytes = 160 * 1024;
constexpr int kTop = kSmemBytes / 4 - kThreads; // the words both kernels use

__global__ void wipe(unsigned *sink) {
  extern __shared__ unsigned z[];
  for (int i = threadIdx.x; i < kSmemBytes / 4; i += kThreads)
    z[i] = 0;
  __syncthreads();
  if (z[kTop + (threadIdx.x + 1) % kThreads] != 0) sink[0] = 1; // keeps the stores
}

// The defect: idx is never written before it is read.
__global__ void gather_uninit(float *out, const float *in) {
  extern __shared__ unsigned idx[];
  out[blockIdx.x * kThreads + threadIdx.x] = in[idx[kTop + threadIdx.x]];
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int blocks = sms * 8, n = blocks * kThreads;
  float *in = nullptr, *out = nullptr;
  unsigned *sink = nullptr;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&sink, sizeof(unsigned));
  float *h = new float[n];
  for (int i = 0; i < n; i++) h[i] = 1.0f + (float)i;
  cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaFuncSetAttribute(wipe, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  cudaFuncSetAttribute(gather_uninit, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
  wipe<<<blocks, kThreads, kSmemBytes>>>(sink);
  gather_uninit<<<blocks, kThreads, kSmemBytes>>>(out, in);
  cudaError_t e = cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost);
  const char *gather = "ok";
  if (e != cudaSuccess) {
    gather = "error";
  } else {
    for (int i = 0; i < n; i++)
      if (h[i] != 1.0f) {
        gather = "wrong";
        break;
      }
  }
  // a later call: does the context still work?
  wipe<<<blocks, kThreads, kSmemBytes>>>(sink);
  cudaError_t after = cudaDeviceSynchronize();
  printf("RESULT gather=%s gather_error=%s after=%s\n", gather, cudaGetErrorName(e),
         cudaGetErrorName(after));
  delete[] h;
  return (e == cudaSuccess && after == cudaSuccess && gather[0] == 'o') ? 0 : 1;
}
