/* test/apps/app_threads.c — several threads launching at once through the
 * exported driver symbols, for kcheck's thread safety: every thread checks
 * its own results and the program prints how many launches it made. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fakecuda.h"

#define THREADS 4
#define LAUNCHES 300
#define N 4096

static CUcontext ctx;
static CUfunction vecadd;
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, CUresult r) {
  fprintf(stderr, "app_threads: %s failed: %d\n", what, (int)r);
  exit(1);
}
#define CK(x)                                                                                      \
  do {                                                                                             \
    CUresult r_ = (x);                                                                             \
    if (r_ != CUDA_SUCCESS) fail(#x, r_);                                                          \
  } while (0)

static void *worker(void *arg) {
  long id = (long)arg;
  CK(cuCtxSetCurrent(ctx));
  float *h = malloc(3 * N * sizeof *h);
  CUdeviceptr a, b, c;
  CK(cuMemAlloc(&a, N * sizeof(float)));
  CK(cuMemAlloc(&b, N * sizeof(float)));
  CK(cuMemAlloc(&c, N * sizeof(float)));
  for (int i = 0; i < N; i++)
    h[i] = (float)(i + id), h[N + i] = (float)(2 * i);
  CK(cuMemcpyHtoD(a, h, N * sizeof(float)));
  CK(cuMemcpyHtoD(b, h + N, N * sizeof(float)));
  int n = N;
  void *params[] = {&a, &b, &c, &n};
  for (int l = 0; l < LAUNCHES; l++)
    CK(cuLaunchKernel(vecadd, N / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
  CK(cuMemcpyDtoH(h + 2 * N, c, N * sizeof(float)));
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += h[2 * N + i] != (float)(i + id) + (float)(2 * i);
  pthread_mutex_lock(&lock);
  failures += bad;
  pthread_mutex_unlock(&lock);
  CK(cuMemFree(a));
  CK(cuMemFree(b));
  CK(cuMemFree(c));
  free(h);
  return NULL;
}

int main(void) {
  CUdevice dev;
  CUmodule mod;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&mod, ".entry " FK_K_VECADD "\n"));
  CK(cuModuleGetFunction(&vecadd, mod, FK_K_VECADD));
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  printf("app_threads: launches %d failures %d\n", THREADS * LAUNCHES, failures);
  return failures ? 1 : 0;
}
