/* bench/serving_cpu.c — what the serving profile costs per eager launch
 * and per graph launch on the CPU stand-in driver, where launches cost
 * almost nothing, so kcheck's own time is not hidden by GPU latency. A
 * decode-like loop: each step launches a graph of 100 kernel nodes
 * (captured once), and every 8th step a prefill-like burst of 100 eager
 * launches of 16 kernels whose scalar parameter takes one of 24 values
 * (prompt lengths: 24 signatures per kernel).
 *
 *   serving_cpu [STEPS]   prints ns per eager launch and per graph launch
 *                         (best of 3 passes) */
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

#define NK 16
#define NODES 100
#define BURST 100

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  long steps = argc > 1 ? atol(argv[1]) : 20000;
  CUdevice dev;
  CUcontext ctx;
  CUfunction fns[NK];
  CUdeviceptr out;
  CUstream st;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  for (int k = 0; k < NK; k++) {
    CUmodule mod;
    CK(cuModuleLoadData(&mod, ".entry _Z8fill_i32Piii\n"));
    CK(cuModuleGetFunction(&fns[k], mod, "_Z8fill_i32Piii"));
  }
  CK(cuMemAlloc(&out, 64));
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  int value = 7, count = 0;
  void *params[] = {&out, &value, &count};
  /* The decode graph: NODES empty fills in a chain. */
  CUgraph g;
  CUgraphExec e;
  CK(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
  for (int i = 0; i < NODES; i++)
    CK(cuLaunchKernel(fns[i % NK], 1, 1, 1, 1, 1, 1, 0, st, params, NULL));
  CK(cuStreamEndCapture(st, &g));
  CK(cuGraphInstantiateWithFlags(&e, g, 0));
  double best_eager = 1e30, best_graph = 1e30;
  long eager_n = 0, graph_n = 0;
  for (int pass = 0; pass < 3; pass++) {
    double te = 0, tg = 0;
    eager_n = graph_n = 0;
    for (long s = 0; s < steps; s++) {
      if (s % 8 == 0) {
        double t0 = now();
        for (int i = 0; i < BURST; i++) {
          int v = (int)((s / 8 + (long)pass) % 24);
          void *p[] = {&out, &v, &count};
          CK(cuLaunchKernel(fns[i % NK], 1, 1, 1, 1, 1, 1, 0, st, p, NULL));
        }
        te += now() - t0;
        eager_n += BURST;
      }
      double t0 = now();
      CK(cuGraphLaunch(e, st));
      tg += now() - t0;
      graph_n++;
    }
    CK(cuStreamSynchronize(st));
    if (te / (double)eager_n < best_eager) best_eager = te / (double)eager_n;
    if (tg / (double)graph_n < best_graph) best_graph = tg / (double)graph_n;
  }
  printf("RESULT ns_per_eager_launch=%.1f ns_per_graph_launch=%.1f eager=%ld graph=%ld\n",
         1e9 * best_eager, 1e9 * best_graph, eager_n, graph_n);
  return 0;
}
