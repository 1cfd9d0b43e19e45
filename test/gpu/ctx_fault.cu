// test/gpu/ctx_fault.cu — does a kernel fault in one CUDA context leave
// another context of the same process usable? The question behind running
// a risky shadow run where its fault cannot reach the application's
// context (issue 34 item 4). One process per case (a fault may end more
// than the context it happened in):
//   ctx_fault separate   the fault in a context of its own (cuCtxCreate)
//   ctx_fault green      the fault in a green context of the device
//   ctx_fault same       the fault in the primary context itself (control)
// Each case first runs a kernel in the primary context, then the faulting
// kernel in the case's context, then again the kernel in the primary
// context and compares its result. Prints one line:
//   CASE <case> fault=<error of the faulting run> primary_after=<error>
//        result=<ok|wrong|none> fault_ctx_destroy=<error>
// and exits 0 when the primary context still ran the kernel correctly.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

__global__ void fill(int *p, int n, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v + i;
}

// Writes far past any allocation: an illegal address.
__global__ void wild(int *p) { p[(size_t)1 << 38] = 1; }

static const char *err(CUresult r) {
  const char *s = nullptr;
  cuGetErrorName(r, &s);
  return s ? s : "?";
}

static CUresult run_fill(int *d, int n, int v) {
  fill<<<(n + 255) / 256, 256>>>(d, n, v);
  cudaError_t e = cudaDeviceSynchronize();
  return e == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

static CUresult make_green(CUdevice dev, CUcontext *out, CUgreenCtx *g) {
  CUdevResource all, part[1], rest;
  unsigned int groups = 1;
  CUresult r = cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
  if (r) return r;
  r = cuDevSmResourceSplitByCount(part, &groups, &all, &rest, 0, 8);
  if (r) return r;
  CUdevResourceDesc desc;
  r = cuDevResourceGenerateDesc(&desc, part, 1);
  if (r) return r;
  r = cuGreenCtxCreate(g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
  if (r) return r;
  return cuCtxFromGreenCtx(out, *g);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "separate";
  const int n = 1 << 20;
  cudaSetDevice(0);
  cudaFree(0); // the primary context
  CUcontext primary = nullptr;
  cuCtxGetCurrent(&primary);
  CUdevice dev;
  cuCtxGetDevice(&dev);
  int *d = nullptr;
  cudaMalloc(&d, n * sizeof(int));
  if (run_fill(d, n, 1) != CUDA_SUCCESS) {
    printf("CASE %s setup failed\n", mode);
    return 2;
  }

  CUcontext other = nullptr;
  CUgreenCtx green = nullptr;
  CUresult made = CUDA_SUCCESS;
  if (!strcmp(mode, "separate"))
    made = cuCtxCreate(&other, nullptr, 0, dev);
  else if (!strcmp(mode, "green"))
    made = make_green(dev, &other, &green);
  else
    other = primary;
  if (made != CUDA_SUCCESS) {
    printf("CASE %s context not made: %s\n", mode, err(made));
    return 2;
  }
  cuCtxSetCurrent(other);
  int *o = nullptr;
  cudaMalloc(&o, 4096);
  wild<<<1, 1>>>(o);
  CUresult fault = cuCtxSynchronize();

  cuCtxSetCurrent(primary);
  CUresult after = run_fill(d, n, 7) == CUDA_SUCCESS ? CUDA_SUCCESS : cuCtxSynchronize();
  if (after == CUDA_SUCCESS) after = cuCtxSynchronize();
  const char *result = "none";
  if (after == CUDA_SUCCESS) {
    static int h[1 << 20];
    CUresult c = cuMemcpyDtoH(h, (CUdeviceptr)d, n * sizeof(int));
    result = "ok";
    if (c != CUDA_SUCCESS) result = "none";
    for (int i = 0; c == CUDA_SUCCESS && i < n; i++)
      if (h[i] != 7 + i) {
        result = "wrong";
        break;
      }
  }
  CUresult destroyed = CUDA_SUCCESS;
  if (green)
    destroyed = cuGreenCtxDestroy(green);
  else if (other != primary)
    destroyed = cuCtxDestroy(other);
  // the primary context once more, after the faulted context is gone
  CUresult later = run_fill(d, n, 9) == CUDA_SUCCESS ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
  printf("CASE %s fault=%s primary_after=%s result=%s fault_ctx_destroy=%s primary_later=%s\n",
         mode, err(fault), err(after), result, err(destroyed), err(later));
  return (!strcmp(result, "ok") && later == CUDA_SUCCESS) ? 0 : 1;
}
