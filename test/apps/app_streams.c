/* test/apps/app_streams.c — work on several streams, ordered correctly or
 * not, for kcheck's cross-stream ordering races (stream_races=1). Each mode
 * has a buggy and a correct form; the program's own results do not show the
 * bug on the stand-in (it runs everything in issue order), kcheck must.
 *
 *   app_streams MODE [fixed]
 *   copy     an async H2D copy on a copy stream, then a kernel reading the
 *            buffer on a compute stream; fixed: event record + stream wait
 *   sync     the same; fixed: cuStreamSynchronize of the copy stream
 *   query    the same; fixed: poll cuEventQuery until the copy is done
 *   legacy   a copy on a stream, then a kernel on the legacy default stream;
 *            buggy: the stream is non-blocking; fixed: a blocking stream
 *   reuse    a kernel on a side stream reads a buffer, then the main stream
 *            overwrites it (the record_stream omission: memory reused while
 *            still in use); fixed: the main stream waits for the side one
 *   copy2d   as copy, the buffer written by a pitched H2D cuMemcpy2DAsync
 *            (32 rows of 128 bytes); fixed: event record + stream wait
 *   graph    a CUDA graph (captured on the copy stream: a memset of the
 *            buffer) launched on the copy stream, then a kernel reading the
 *            buffer on the compute stream; fixed: event record + stream wait
 *   kernels  a kernel writes a buffer on one stream and another reads it on
 *            a second stream (the write is known from a check of the first
 *            kernel); fixed: event wait
 *   batch    as copy, the buffer written by a batch copy (cuMemcpyBatchAsync);
 *            fixed: event record + stream wait
 *   batch3d  as copy, the buffer written by a 3D batch copy; fixed: the same
 *   array    a device-to-array copy (it runs on the legacy stream and the
 *            host does not wait for it), then an async array-to-host copy
 *            on a non-blocking stream; fixed: the legacy stream is
 *            synchronised in between */
#include "apps_linked.h"

static const char *app_name = "app_streams";

#define N 1024

/* The correct forms' ordering: `later` waits for what `earlier` has queued. */
static void order_after(CUstream later, CUstream earlier, CUevent ev) {
  CK(cuEventRecord(ev, earlier));
  CK(cuStreamWaitEvent(later, ev, 0));
}

int main(int argc, char **argv) {
  (void)app_run;
  const char *mode = argc > 1 ? argv[1] : "copy";
  int fixed = argc > 2 && !strcmp(argv[2], "fixed");
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct app a;
  memset(&a, 0, sizeof a);
  app_setup(&a);
  static float h[N], back[N];
  for (int i = 0; i < N; i++)
    h[i] = (float)i;
  CUdeviceptr x = app_alloc(sizeof h), y = app_alloc(sizeof h), z = app_alloc(sizeof h);
  CK(cuMemsetD8(y, 0, sizeof h));
  int n = N;
  float two = 2.0f;
  void *sargs[] = {&x, &two, &n}, *vargs[] = {&x, &y, &z, &n};
  CUfunction scale = app_func(&a, FK_K_SCALE), vecadd = app_func(&a, FK_K_VECADD);
  CUstream s1, s2;
  int blocking = !strcmp(mode, "legacy") && fixed;
  CK(cuStreamCreate(&s1, blocking ? 0 : CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CUevent ev;
  CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  if (!strcmp(mode, "copy") || !strcmp(mode, "sync") || !strcmp(mode, "query") ||
      !strcmp(mode, "legacy")) {
    CK(cuMemcpyHtoDAsync(x, h, sizeof h, s1));
    if (fixed && !strcmp(mode, "copy")) {
      order_after(s2, s1, ev);
    } else if (fixed && !strcmp(mode, "sync")) {
      CK(cuStreamSynchronize(s1));
    } else if (fixed && !strcmp(mode, "query")) {
      CK(cuEventRecord(ev, s1));
      while (cuEventQuery(ev) != CUDA_SUCCESS)
        ;
    }
    CUstream k = !strcmp(mode, "legacy") ? NULL : s2;
    CK(cuLaunchKernel(scale, N / 128, 1, 1, 128, 1, 1, 0, k, sargs, NULL));
  } else if (!strcmp(mode, "copy2d")) {
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = h;
    c.srcPitch = 128;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = x;
    c.dstPitch = 128;
    c.WidthInBytes = 128;
    c.Height = sizeof h / 128;
    CK(cuMemcpy2DAsync(&c, s1));
    if (fixed) order_after(s2, s1, ev);
    CK(cuLaunchKernel(scale, N / 128, 1, 1, 128, 1, 1, 0, s2, sargs, NULL));
  } else if (!strcmp(mode, "graph")) {
    CUgraph g;
    CUgraphExec ge;
    CK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuMemsetD32Async(x, 0x40000000u, N, s1)); /* 2.0f: recorded, not run */
    CK(cuStreamEndCapture(s1, &g));
    CK(cuGraphInstantiateWithFlags(&ge, g, 0));
    CK(cuGraphLaunch(ge, s1));
    if (fixed) order_after(s2, s1, ev);
    CK(cuLaunchKernel(scale, N / 128, 1, 1, 128, 1, 1, 0, s2, sargs, NULL));
    CK(cuStreamSynchronize(s2));
    CK(cuGraphExecDestroy(ge));
    CK(cuGraphDestroy(g));
  } else if (!strcmp(mode, "reuse")) {
    CK(cuMemcpyHtoD(x, h, sizeof h));
    CK(cuLaunchKernel(vecadd, N / 128, 1, 1, 128, 1, 1, 0, s2, vargs, NULL)); /* reads x */
    if (fixed) order_after(s1, s2, ev);
    CK(cuMemcpyHtoDAsync(x, back, sizeof back, s1)); /* x's memory, reused */
  } else if (!strcmp(mode, "kernels")) {
    int v = 5;
    void *fargs[] = {&x, &v, &n};
    for (int it = 0; it < 2; it++) {
      CK(cuLaunchKernel(app_func(&a, FK_K_FILL), N / 128, 1, 1, 128, 1, 1, 0, s1, fargs, NULL));
      if (fixed) order_after(s2, s1, ev);
      CK(cuLaunchKernel(vecadd, N / 128, 1, 1, 128, 1, 1, 0, s2, vargs, NULL));
      CK(cuStreamSynchronize(s1));
      CK(cuStreamSynchronize(s2));
    }
  } else if (!strcmp(mode, "batch") || !strcmp(mode, "batch3d")) {
    if (mode[5]) {
      CUDA_MEMCPY3D_BATCH_OP op;
      memset(&op, 0, sizeof op);
      op.src.type = op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
      op.src.op.ptr.ptr = (CUdeviceptr)h, op.dst.op.ptr.ptr = x;
      op.extent.width = sizeof h, op.extent.height = op.extent.depth = 1;
      op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      CK(cuMemcpy3DBatchAsync(1, &op, 0, s1));
    } else {
      CUdeviceptr dst = x, src = (CUdeviceptr)h;
      size_t bytes = sizeof h, idx = 0;
      CUmemcpyAttributes at;
      memset(&at, 0, sizeof at);
      at.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
      CK(cuMemcpyBatchAsync(&dst, &src, &bytes, 1, &at, &idx, 1, s1));
    }
    if (fixed) order_after(s2, s1, ev);
    CK(cuLaunchKernel(scale, N / 128, 1, 1, 128, 1, 1, 0, s2, sargs, NULL));
  } else if (!strcmp(mode, "array")) {
    CUarray arr;
    CUDA_ARRAY_DESCRIPTOR ad;
    memset(&ad, 0, sizeof ad);
    ad.Width = N, ad.Format = CU_AD_FORMAT_FLOAT, ad.NumChannels = 1;
    CK(cuArrayCreate(&arr, &ad));
    CK(cuMemcpyHtoD(x, h, sizeof h));
    CK(cuMemcpyDtoA(arr, 0, x, sizeof h));
    if (fixed) CK(cuStreamSynchronize(CU_STREAM_LEGACY));
    CK(cuMemcpyAtoHAsync(back, arr, 0, sizeof back, s2));
    CK(cuStreamSynchronize(s2));
    CK(cuArrayDestroy(arr));
  } else {
    fprintf(stderr, "%s: unknown mode '%s'\n", app_name, mode);
    return 2;
  }
  CK(cuCtxSynchronize());
  CK(cuMemcpyDtoH(back, x, sizeof back));
  printf("%s: %s %s x checksum %016llx\n", app_name, mode, fixed ? "fixed" : "buggy",
         (unsigned long long)fnv1a(back, sizeof back));
  CK(cuEventDestroy(ev));
  CK(cuStreamDestroy(s1));
  CK(cuStreamDestroy(s2));
  CK(cuMemFree(x));
  CK(cuMemFree(y));
  CK(cuMemFree(z));
  app_teardown(&a);
  return app_failures ? 1 : 0;
}
