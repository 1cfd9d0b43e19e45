/* bench/passthrough_cpu.c — kcheck's own cost per launch, measured on the
 * CPU stand-in driver where a launch costs almost nothing, so the wrapper's
 * cost is not hidden by GPU launch latency. Launches an empty kernel (fill
 * with n = 0) N times through cuLaunchKernel and prints ns per launch.
 *
 *   passthrough_cpu [N] [K]   K modules of the kernel (default 1), launched
 *                             in turn: K distinct kernels, as a training
 *                             step cycles through dozens.
 *   passthrough_cpu N K ti    the stand-in's TensorIterator-like kernel
 *                             instead (one 1048-byte struct parameter, n = 0:
 *                             no work): three pointers among sizes, strides
 *                             and stale words that look like addresses, as
 *                             PyTorch's structs carry, for the pointer
 *                             resolution and the trace=1 record's cost.
 *   passthrough_cpu N K mt    the stand-in's multi_ptr kernel (a 600-byte
 *                             struct of 72 tensor pointers, as PyTorch's
 *                             multi-tensor kernels pass, n = 0: no work). */
#include <cuda.h>
#include <stdint.h>
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
  int ti = argc > 3 && argv[3][0] == 't', mt = argc > 3 && argv[3][0] == 'm';
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fns[256];
  CUdeviceptr out;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  const char *name = ti   ? "_Z13ti_add_kernel8TIParams"
                     : mt ? "_Z9multi_ptr11MultiParams"
                          : "_Z8fill_i32Piii";
  char image[128];
  snprintf(image, sizeof image, ".entry %s\n", name);
  for (int k = 0; k < nk; k++) {
    CK(cuModuleLoadData(&mod, image));
    CK(cuModuleGetFunction(&fns[k], mod, name));
  }
  CK(cuMemAlloc(&out, 64));
  int value = 7, count = 0;
  void *params[] = {&out, &value, &count};
  /* The struct: n = 0 at 0, pointers at 16, 528, 1032; between them sizes
   * (small), int pairs (k, k + 1) and host-stack-like words. */
  static uint64_t tip[131];
  for (int w = 0; w < 131; w++)
    tip[w] = w % 3 == 0   ? (uint64_t)w
             : w % 3 == 1 ? ((uint64_t)(w + 1) << 32) | (uint64_t)w
                          : 0x7ffc00001000ull + 64u * (uint64_t)w;
  tip[0] = 0;
  tip[2] = tip[66] = tip[129] = out;
  void *tparams[] = {tip};
  /* multi_ptr: n = 0, count = 72, racy = 0, then 72 pointers of their own */
  static uint64_t mtp[75];
  mtp[1] = 72;
  for (int w = 0; w < 72; w++)
    CK(cuMemAlloc((CUdeviceptr *)&mtp[3 + w], 4096));
  void *mparams[] = {mtp};
  void **args = ti ? tparams : mt ? mparams : params;
  for (int i = 0; i < 1000 * nk; i++)
    CK(cuLaunchKernel(fns[i % nk], 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    for (long i = 0; i < n; i++)
      CK(cuLaunchKernel(fns[i % nk], 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    double t = now() - t0;
    if (t < best) best = t;
  }
  printf("RESULT ns_per_launch=%.2f launches=%ld kernels=%d\n", 1e9 * best / (double)n, n, nk);
  return 0;
}
