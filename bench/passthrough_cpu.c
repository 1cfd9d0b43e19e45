/* bench/passthrough_cpu.c — kcheck's own cost per launch, measured on the
 * CPU stand-in driver where a launch costs almost nothing, so the wrapper's
 * cost is not hidden by GPU launch latency. Launches an empty kernel (fill
 * with n = 0) N times through cuLaunchKernel and prints ns per launch.
 *
 *   passthrough_cpu [N] [K]   K modules of the kernel (default 1), launched
 *                             in turn: K distinct kernels, as a training
 *                             step cycles through dozens. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    CUresult r_ = (x);                                                                             \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "%s failed: %d\n", #x, (int)r_);                                             \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 2000000;
  int nk = argc > 2 ? atoi(argv[2]) : 1;
  if (nk < 1 || nk > 256) nk = 1;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fns[256];
  CUdeviceptr out;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  for (int k = 0; k < nk; k++) {
    CK(cuModuleLoadData(&mod, ".entry _Z8fill_i32Piii\n"));
    CK(cuModuleGetFunction(&fns[k], mod, "_Z8fill_i32Piii"));
  }
  CK(cuMemAlloc(&out, 64));
  int value = 7, count = 0;
  void *params[] = {&out, &value, &count};
  for (int i = 0; i < 1000 * nk; i++)
    CK(cuLaunchKernel(fns[i % nk], 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    for (long i = 0; i < n; i++)
      CK(cuLaunchKernel(fns[i % nk], 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("RESULT ns_per_launch=%.2f launches=%ld kernels=%d\n", 1e9 * best / (double)n, n, nk);
  return 0;
}
