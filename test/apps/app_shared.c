/* test/apps/app_shared.c — threads whose GPU work kcheck's checks must never
 * touch, through the exported driver symbols (stand-in or real driver).
 *
 *   app_shared shared [T] [ITERS]   T threads own disjoint slices of ONE
 *       allocation (as tensors share a caching-allocator segment); each
 *       iteration copies its slice in (plain, pitched, batch or 3D batch
 *       copy), scales it on the device, memsets a tail word (1D or 2D
 *       memset) and copies it back (plain, batch, or through a CUDA array),
 *       and checks every value exactly.
 *   app_shared unordered [T] [ITERS]  shared, but the CUDA-array read-back
 *       does not wait for the device-to-array copy: the ordering bug that
 *       stream_races=1 must report (under GPU load its values can be wrong).
 *   app_shared managed [T] [ITERS]  ONE managed allocation (cuMemAllocManaged):
 *       thread 0 writes its slice with CPU stores, scales it on the device
 *       ITERS times and checks it; the other threads meanwhile write and
 *       read back their own slices with plain CPU stores and loads (no
 *       driver call: nothing holds them off while a launch is checked)
 *       until thread 0 is done. A check that restored the allocation
 *       would revert their stores.
 *   app_shared churn [T] [ITERS]    the same per thread, but each iteration
 *       allocates its own buffer and frees it (for save_all=1, whose checks
 *       snapshot every live allocation).
 *   app_shared graphs [T] [ITERS]   the same per thread as a CUDA graph: each
 *       thread captures copy in, scale, memset and copy back on its own
 *       stream once (thread-local capture mode: the other threads keep
 *       synchronising their streams meanwhile) and launches that graph every
 *       iteration with new host values (graph replays racing with other
 *       threads' graph launches).
 *   app_shared graphs_global [T] [ITERS]   the same with global-mode
 *       captures, for the CPU stand-in only (the real driver forbids the
 *       other threads' stream syncs during a global capture; the stand-in
 *       forbids copies and context syncs, like kcheck's checks make).
 *
 * Prints "app_shared: MODE threads T iters I wrong W launches L" (L: kernel
 * launches, or graph launches in graphs mode, the program made); exit
 * status 1 when a result was wrong. Uses the `scale` kernel (x[i] *= s) of the stand-in, or
 * of kcheck's own test PTX on a GPU (KC_SCALE_PTX=path). */
#include <cuda.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2048  /* floats per slice */
#define PAD 256 /* floats between slices (never touched) */

static const char *scale_name = "_Z5scalePffi";
static CUcontext ctx;
static CUfunction scale;
static CUdeviceptr shared_buf;
static int iters = 50, churn, graphs, global_capture, unordered, managed;
static _Atomic int launcher_done;
static long launches;
static long wrong;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

#define CK(x)                                                                                      \
  do {                                                                                             \
    CUresult r_ = (x);                                                                             \
    if (r_ != CUDA_SUCCESS) {                                                                      \
      fprintf(stderr, "app_shared: %s failed: %d\n", #x, (int)r_);                                 \
      exit(2);                                                                                     \
    }                                                                                              \
  } while (0)

/* graphs mode: one graph per thread, launched every iteration. */
static long graph_worker(long t, CUstream s, float *h, float *back) {
  CUdeviceptr x = shared_buf + (CUdeviceptr)t * (N + PAD) * sizeof(float);
  size_t n = N;
  float f = 2.0f;
  int ni = (int)n;
  void *params[] = {&x, &f, &ni};
  CUgraph g;
  CUgraphExec e;
  CK(cuStreamBeginCapture(s, global_capture ? CU_STREAM_CAPTURE_MODE_GLOBAL
                                            : CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CK(cuMemcpyHtoDAsync(x, h, n * sizeof(float), s));
  CK(cuLaunchKernel(scale, (unsigned)((n + 127) / 128), 1, 1, 128, 1, 1, 0, s, params, NULL));
  CK(cuMemsetD32Async(x + n * sizeof(float), 0x3f800000u + (unsigned)t, 1, s));
  CK(cuMemcpyDtoHAsync(back, x, (n + 1) * sizeof(float), s));
  CK(cuStreamEndCapture(s, &g));
  CK(cuGraphInstantiateWithFlags(&e, g, 0));
  CK(cuGraphDestroy(g));
  long bad = 0;
  for (int it = 0; it < iters; it++) {
    for (size_t i = 0; i < n; i++)
      h[i] = (float)(t * 4096 + it) + 0.25f * (float)i;
    CK(cuGraphLaunch(e, s));
    CK(cuStreamSynchronize(s));
    for (size_t i = 0; i < n; i++)
      bad += back[i] != 2.0f * h[i];
    unsigned tail;
    memcpy(&tail, &back[n], 4);
    bad += tail != 0x3f800000u + (unsigned)t;
  }
  CK(cuGraphExecDestroy(e));
  return bad;
}

/* managed mode: CPU stores and loads of slice t of the managed allocation
 * (threads 1..T-1), or thread 0's kernel launches on its slice. */
static long managed_worker(long t) {
  volatile float *x = (volatile float *)(uintptr_t)(shared_buf + (CUdeviceptr)t * (N + PAD) * 4);
  long bad = 0;
  if (t) {
    for (int it = 0; !atomic_load(&launcher_done) || it < 2; it++) {
      for (int i = 0; i < N; i++)
        x[i] = (float)(t * 4096 + it) + 0.25f * (float)i;
      for (int spin = 0; spin < 20; spin++) {
        for (int i = 0; i < N; i += 7)
          bad += x[i] != (float)(t * 4096 + it) + 0.25f * (float)i;
        sched_yield();
      }
    }
    return bad;
  }
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  /* and a device buffer beside it: its launches are checked (save_all=1
   * saves every allocation but the managed one) */
  CUdeviceptr dev;
  float *h = malloc(N * sizeof *h);
  CK(cuMemAlloc(&dev, N * sizeof(float)));
  for (int it = 0; it < iters; it++) {
    for (int i = 0; i < N; i++)
      h[i] = (float)it - 0.5f * (float)i;
    CK(cuMemcpyHtoD(dev, h, N * sizeof(float)));
    float f2 = 3.0f;
    int n2 = N;
    void *p2[] = {&dev, &f2, &n2};
    CK(cuLaunchKernel(scale, N / 128, 1, 1, 128, 1, 1, 0, s, p2, NULL));
    CK(cuStreamSynchronize(s));
    CK(cuMemcpyDtoH(h, dev, N * sizeof(float)));
    for (int i = 0; i < N; i++)
      bad += h[i] != 3.0f * ((float)it - 0.5f * (float)i);
    for (int i = 0; i < N; i++)
      x[i] = (float)it + 0.25f * (float)i;
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)x;
    float f = 2.0f;
    int ni = N;
    void *params[] = {&d, &f, &ni};
    CK(cuLaunchKernel(scale, N / 128, 1, 1, 128, 1, 1, 0, s, params, NULL));
    CK(cuStreamSynchronize(s));
    for (int i = 0; i < N; i++)
      bad += x[i] != 2.0f * ((float)it + 0.25f * (float)i);
  }
  CK(cuMemFree(dev));
  free(h);
  CK(cuStreamDestroy(s));
  atomic_store(&launcher_done, 1);
  return bad;
}

static void *worker(void *arg) {
  long t = (long)arg;
  CK(cuCtxSetCurrent(ctx));
  if (managed) {
    long bad = managed_worker(t);
    pthread_mutex_lock(&lock);
    wrong += bad;
    pthread_mutex_unlock(&lock);
    return NULL;
  }
  CUstream s;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  float *h = malloc(N * sizeof *h), *back = malloc((N + 1) * sizeof *back);
  CUarray arr;
  CUDA_ARRAY_DESCRIPTOR ad = {0};
  ad.Width = N + 1, ad.Height = 0, ad.Format = CU_AD_FORMAT_FLOAT, ad.NumChannels = 1;
  CK(cuArrayCreate(&arr, &ad));
  long bad = 0;
  for (int it = 0; graphs && it < 1; it++)
    bad = graph_worker(t, s, h, back);
  for (int it = 0; !graphs && it < iters; it++) {
    CUdeviceptr x = shared_buf + (CUdeviceptr)t * (N + PAD) * sizeof(float);
    size_t n = N - (size_t)(it % 5); /* a few signatures per thread */
    if (churn) CK(cuMemAlloc(&x, (n + 1) * sizeof(float)));
    for (size_t i = 0; i < n; i++)
      h[i] = (float)(t * 4096 + it) + 0.25f * (float)i;
    if (it % 4 == 1) {
      CK(cuMemcpyHtoDAsync(x, h, n * sizeof(float), s));
    } else if (it % 4 == 2) { /* the batch entries are fenced too */
      CUdeviceptr dst = x, src = (CUdeviceptr)h;
      size_t bytes = n * sizeof(float), idx = 0;
      CUmemcpyAttributes at = {0};
      at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      CK(cuMemcpyBatchAsync(&dst, &src, &bytes, 1, &at, &idx, 1, s));
    } else if (it % 4 == 3) {
      CUDA_MEMCPY3D_BATCH_OP op = {0};
      op.src.type = op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
      op.src.op.ptr.ptr = (CUdeviceptr)h, op.dst.op.ptr.ptr = x;
      op.extent.width = n * sizeof(float), op.extent.height = op.extent.depth = 1;
      op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      CK(cuMemcpy3DBatchAsync(1, &op, 0, s));
    } else { /* the pitched entries are fenced too */
      CUDA_MEMCPY2D c2 = {0};
      c2.srcMemoryType = CU_MEMORYTYPE_HOST, c2.srcHost = h, c2.srcPitch = n * sizeof(float);
      c2.dstMemoryType = CU_MEMORYTYPE_DEVICE, c2.dstDevice = x, c2.dstPitch = n * sizeof(float);
      c2.WidthInBytes = n * sizeof(float), c2.Height = 1;
      CK(cuMemcpy2DAsync(&c2, s));
    }
    float f = 2.0f;
    int ni = (int)n;
    void *params[] = {&x, &f, &ni};
    CK(cuLaunchKernel(scale, (unsigned)((n + 127) / 128), 1, 1, 128, 1, 1, 0, s, params, NULL));
    if (it % 2)
      CK(cuMemsetD32Async(x + n * sizeof(float), 0x3f800000u + (unsigned)t, 1, s));
    else
      CK(cuMemsetD2D32Async(x + n * sizeof(float), 4, 0x3f800000u + (unsigned)t, 1, 1, s));
    if (it % 3 == 1) { /* through a CUDA array: device -> array -> host */
      CK(cuStreamSynchronize(s));
      CK(cuMemcpyDtoA(arr, 0, x, (n + 1) * sizeof(float)));
      /* A device-to-array copy returns before it is done and runs on the
       * legacy stream, which a non-blocking stream does not wait for. */
      if (!unordered) CK(cuStreamSynchronize(CU_STREAM_LEGACY));
      CK(cuMemcpyAtoHAsync(back, arr, 0, (n + 1) * sizeof(float), s));
    } else if (it % 3 == 2) {
      CUdeviceptr dst = (CUdeviceptr)back, src = x;
      size_t bytes = (n + 1) * sizeof(float), idx = 0;
      CUmemcpyAttributes at = {0};
      at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      CK(cuMemcpyBatchAsync(&dst, &src, &bytes, 1, &at, &idx, 1, s));
    } else {
      CK(cuMemcpyDtoHAsync(back, x, (n + 1) * sizeof(float), s));
    }
    CK(cuStreamSynchronize(s));
    long was = bad;
    for (size_t i = 0; i < n; i++)
      bad += back[i] != 2.0f * h[i];
    unsigned tail;
    memcpy(&tail, &back[n], 4);
    bad += tail != 0x3f800000u + (unsigned)t;
    if (bad != was) /* which copies the wrong iteration used */
      fprintf(stderr,
              "app_shared: thread %ld iter %d: %ld wrong (in %d back %d), first %g want %g\n", t,
              it, bad - was, it % 4, it % 3, (double)back[0], (double)(2.0f * h[0]));
    if (churn) CK(cuMemFree(x));
  }
  pthread_mutex_lock(&lock);
  wrong += bad;
  pthread_mutex_unlock(&lock);
  CK(cuStreamDestroy(s));
  CK(cuArrayDestroy(arr));
  free(h);
  free(back);
  return NULL;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (b && fread(b, 1, (size_t)n, f) == (size_t)n)
    b[n] = 0;
  else
    free(b), b = NULL;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "shared";
  int threads = argc > 2 ? atoi(argv[2]) : 4;
  if (argc > 3) iters = atoi(argv[3]);
  if (threads < 1 || threads > 64 || iters < 1) return 2;
  churn = !strcmp(mode, "churn");
  managed = !strcmp(mode, "managed");
  unordered = !strcmp(mode, "unordered");
  global_capture = !strcmp(mode, "graphs_global");
  graphs = global_capture || !strcmp(mode, "graphs");
  launches = managed ? 2L * iters : (long)threads * iters;
  CUdevice dev;
  CUmodule mod;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  const char *ptx = getenv("KC_SCALE_PTX");
  char *image = ptx ? read_file(ptx) : NULL;
  if (ptx && !image) {
    fprintf(stderr, "app_shared: cannot read %s\n", ptx);
    return 2;
  }
  CK(cuModuleLoadData(&mod, image ? image : ".entry _Z5scalePffi\n"));
  free(image);
  CK(cuModuleGetFunction(&scale, mod, scale_name));
  if (managed)
    CK(cuMemAllocManaged(&shared_buf, (size_t)threads * (N + PAD) * sizeof(float),
                         CU_MEM_ATTACH_GLOBAL));
  else
    CK(cuMemAlloc(&shared_buf, (size_t)threads * (N + PAD) * sizeof(float)));
  pthread_t t[64];
  for (long i = 0; i < threads; i++)
    pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  CK(cuMemFree(shared_buf));
  printf("app_shared: %s threads %d iters %d wrong %ld launches %ld\n", mode, threads, iters, wrong,
         launches);
  return wrong ? 1 : 0;
}
