/* test/apps/app_atexit.c — a program with exit work of its own (an atexit
 * handler registered before its first CUDA call, one after, and an ELF
 * destructor) and of a library it links (atexit_lib.c), launching a racy
 * kernel so that kcheck finds a violation: with exitcode=N the status must
 * be N and every handler and destructor must still run. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static void before(void) { printf("app_atexit: handler registered before CUDA ran\n"); }
static void after(void) { printf("app_atexit: handler registered after CUDA ran\n"); }
__attribute__((destructor)) static void dtor(void) { printf("app_atexit: destructor ran\n"); }

#define CK(x)                                                                                      \
  do {                                                                                             \
    if ((x) != CUDA_SUCCESS) {                                                                     \
      fprintf(stderr, "app_atexit: %s failed\n", #x);                                              \
      return 2;                                                                                    \
    }                                                                                              \
  } while (0)

int atexit_lib_loaded(void);

int main(void) {
  if (!atexit_lib_loaded()) return 2;
  atexit(before);
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction f;
  CUdeviceptr out;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&mod, ".entry _Z11last_writerPi\n"));
  CK(cuModuleGetFunction(&f, mod, "_Z11last_writerPi"));
  CK(cuMemAlloc(&out, sizeof(int)));
  void *args[] = {&out};
  CK(cuLaunchKernel(f, 64, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
  CK(cuCtxSynchronize());
  atexit(after);
  /* Buffered on purpose: exit must still flush it. */
  printf("app_atexit: main done\n");
  return 0;
}
