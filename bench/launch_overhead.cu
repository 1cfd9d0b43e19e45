// bench/launch_overhead.cu — launch-heavy microbenchmark for kcheck's
// pass-through cost: many launches of a one-block, almost empty kernel,
// timed with the host clock around the launch loop and the final
// cudaDeviceSynchronize.
//
//   runtime: kernel<<<1, 32>>>(...)                 (libcudart -> driver)
//   driver:  cuLaunchKernel(CUfunction, ...)        (linked driver symbol)
//
// Usage: launch_overhead [launches per rep, default 200000] [reps, default 3]
// Output, one line per variant (best of the reps):
//   RESULT <variant> ns_per_launch=<total> submit_ns_per_launch=<loop only>
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
      exit(2);                                                                                \
    }                                                                                         \
  } while (0)
#define CKD(x)                                                                                \
  do {                                                                                        \
    CUresult r_ = (x);                                                                        \
    if (r_ != CUDA_SUCCESS) {                                                                 \
      fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, (int)r_);            \
      exit(2);                                                                                \
    }                                                                                         \
  } while (0)

// Takes a pointer and scalars like a real kernel; writes only when v < 0,
// which the benchmark never passes, so the work per launch is nil.
extern "C" __global__ void kc_bench_tiny(int *p, int v, float f) {
  if (threadIdx.x == 0 && v < 0) p[blockIdx.x] = (int)f;
}

using clk = std::chrono::steady_clock;

struct Timing {
  double total_ns, submit_ns;
};

template <typename F>
static Timing time_loop(long n, F launch) {
  CK(cudaDeviceSynchronize());
  auto t0 = clk::now();
  for (long i = 0; i < n; i++) launch(i);
  auto t1 = clk::now();
  CK(cudaDeviceSynchronize());
  auto t2 = clk::now();
  Timing t;
  t.total_ns = std::chrono::duration<double, std::nano>(t2 - t0).count() / (double)n;
  t.submit_ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / (double)n;
  return t;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 200000;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  if (n < 1 || reps < 1) {
    fprintf(stderr, "usage: %s [launches] [reps]\n", argv[0]);
    return 2;
  }
  CK(cudaSetDevice(0));
  int *d = nullptr;
  CK(cudaMalloc(&d, 4096));
  cudaFunction_t fn = nullptr;
  CK(cudaGetFuncBySymbol(&fn, (const void *)kc_bench_tiny));

  int v = 1;
  float f = 2.0f;
  void *params[] = {(void *)&d, (void *)&v, (void *)&f};

  auto rt = [&](long) { kc_bench_tiny<<<1, 32>>>(d, v, f); };
  auto drv = [&](long) {
    CUresult r = cuLaunchKernel((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr);
    if (r != CUDA_SUCCESS) {
      fprintf(stderr, "cuLaunchKernel failed (%d)\n", (int)r);
      exit(2);
    }
  };
  // Warm-up: lazy module loading, first-launch costs, kcheck's first sight.
  time_loop(2000, rt);
  time_loop(2000, drv);
  CK(cudaGetLastError());

  Timing best_rt = {1e30, 1e30}, best_drv = {1e30, 1e30};
  for (int r = 0; r < reps; r++) {
    Timing a = time_loop(n, rt);
    Timing b = time_loop(n, drv);
    if (a.total_ns < best_rt.total_ns) best_rt = a;
    if (b.total_ns < best_drv.total_ns) best_drv = b;
  }
  CK(cudaGetLastError());
  CK(cudaFree(d));
  printf("RESULT runtime ns_per_launch=%.2f submit_ns_per_launch=%.2f launches=%ld reps=%d\n",
         best_rt.total_ns, best_rt.submit_ns, n, reps);
  printf("RESULT driver ns_per_launch=%.2f submit_ns_per_launch=%.2f launches=%ld reps=%d\n",
         best_drv.total_ns, best_drv.submit_ns, n, reps);
  return 0;
}
