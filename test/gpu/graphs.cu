// test/gpu/graphs.cu — CUDA graphs through the runtime API, for kcheck's
// node-by-node graph checks on a GPU. Prints one line per buffer the graphs
// leave behind: "graphs: MODE NAME checksum HEX" for buffers that must be
// bitwise equal with and without kcheck, "graphs: MODE NAME racy HEX" for
// the outputs of the planted racy kernels (whose bytes vary by design).
//
//   capture    cudaStreamBeginCapture (global mode): async H2D copy, memset,
//              scale, add, and two planted racy kernels that run only inside
//              the graph (racy_last_writer: every block stores to the same
//              slots; racy_uninit_smem: reads shared memory nothing wrote);
//              one instantiation, launched 5 times
//   clean      the same capture without the racy kernels
//   fork       a capture forked onto a second stream and joined with events
//              (two parallel branches in the graph)
//   explicit   cudaGraphAddKernelNode/MemsetNode/MemcpyNode/ChildGraphNode/
//              EventRecordNode with a diamond of dependencies
//   host       cudaLaunchHostFunc inside a capture (a host node)
// usage: graphs [MODE...]   (default: all)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
  do {                                                                                             \
    cudaError_t e_ = (x);                                                                          \
    if (e_ != cudaSuccess) {                                                                       \
      fprintf(stderr, "graphs: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

static const int N = 1 << 16;
static int failures;

__global__ void scale(float *x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
__global__ void add(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void fill(int *out, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v + i;
}
__global__ void racy_last_writer(int *out, int n_out) {
  for (int j = threadIdx.x; j < n_out; j += blockDim.x) out[j] = (int)blockIdx.x;
}
__global__ void racy_uninit_smem(unsigned *out, int never) {
  __shared__ unsigned sh[256];
  if (never == 12345) sh[threadIdx.x] = 0; // never true: nothing writes sh
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = sh[(threadIdx.x * 7) % 256];
}

static uint64_t fnv1a(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static void show(const char *mode, const char *name, const void *d, size_t bytes, int racy) {
  void *h = malloc(bytes);
  CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  printf("graphs: %s %s %s %016llx\n", mode, name, racy ? "racy" : "checksum",
         (unsigned long long)fnv1a(h, bytes));
  free(h);
}

static void mode_capture(int racy) {
  const char *mode = racy ? "capture" : "clean";
  float *hx; // pinned: pageable copies cannot be captured
  CK(cudaMallocHost(&hx, N * sizeof(float)));
  for (int i = 0; i < N; i++)
    hx[i] = (float)i * 0.5f;
  float *x, *y, *z;
  int *w;
  unsigned *u;
  CK(cudaMalloc(&x, N * 4));
  CK(cudaMalloc(&y, N * 4));
  CK(cudaMalloc(&z, N * 4));
  CK(cudaMalloc(&w, 256 * 4));
  CK(cudaMalloc(&u, 64 * 256 * 4));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t g;
  cudaGraphExec_t e;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMemcpyAsync(x, hx, N * 4, cudaMemcpyHostToDevice, s));
  CK(cudaMemsetAsync(y, 0, N * 4, s));
  add<<<N / 256, 256, 0, s>>>(x, y, y, N);
  scale<<<N / 256, 256, 0, s>>>(y, 3.0f, N);
  add<<<N / 256, 256, 0, s>>>(x, y, z, N);
  if (racy) {
    racy_last_writer<<<2048, 256, 0, s>>>(w, 256);
    racy_uninit_smem<<<64, 256, 0, s>>>(u, 0);
  }
  CK(cudaMemcpyAsync(y, z, N * 4, cudaMemcpyDeviceToDevice, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&e, g, 0));
  CK(cudaGraphDestroy(g)); // as PyTorch does: the exec lives on alone
  for (int l = 0; l < 5; l++)
    CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  float *hz = (float *)malloc(N * 4);
  CK(cudaMemcpy(hz, z, N * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < N; i++)
    if (hz[i] != hx[i] * 4.0f) {
      fprintf(stderr, "graphs: %s: z[%d] = %g, not %g\n", mode, i, hz[i], hx[i] * 4.0f);
      failures++;
      break;
    }
  show(mode, "x", x, N * 4, 0);
  show(mode, "y", y, N * 4, 0);
  show(mode, "z", z, N * 4, 0);
  if (racy) {
    show(mode, "w", w, 256 * 4, 1);
    show(mode, "u", u, 64 * 256 * 4, 1);
  }
  CK(cudaGraphExecDestroy(e));
  CK(cudaStreamDestroy(s));
  cudaFree(x), cudaFree(y), cudaFree(z), cudaFree(w), cudaFree(u);
  cudaFreeHost(hx), free(hz);
}

static void mode_fork(void) {
  float *a, *b, *c;
  CK(cudaMalloc(&a, N * 4));
  CK(cudaMalloc(&b, N * 4));
  CK(cudaMalloc(&c, N * 4));
  CK(cudaMemset(a, 0, N * 4));
  cudaStream_t s, t;
  cudaEvent_t forked, joined;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
  cudaGraph_t g;
  cudaGraphExec_t e;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(cudaMemsetAsync(b, 0, N * 4, s));
  CK(cudaEventRecord(forked, s));
  CK(cudaStreamWaitEvent(t, forked, 0));
  CK(cudaMemsetAsync(c, 0, N * 4, t));
  add<<<N / 256, 256, 0, s>>>(a, b, b, N);     // branch 1 on s
  scale<<<N / 256, 256, 0, t>>>(c, 2.0f, N);   // branch 2 on t
  CK(cudaEventRecord(joined, t));
  CK(cudaStreamWaitEvent(s, joined, 0));
  add<<<N / 256, 256, 0, s>>>(b, c, a, N);     // after both
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&e, g, 0));
  for (int l = 0; l < 3; l++)
    CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  show("fork", "a", a, N * 4, 0);
  show("fork", "b", b, N * 4, 0);
  show("fork", "c", c, N * 4, 0);
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  cudaFree(a), cudaFree(b), cudaFree(c);
}

static cudaGraphNode_t knode(cudaGraph_t g, const cudaGraphNode_t *deps, size_t nd, void *fn,
                             void **args) {
  cudaKernelNodeParams p;
  memset(&p, 0, sizeof p);
  p.func = fn;
  p.gridDim = dim3(N / 256);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  cudaGraphNode_t n;
  CK(cudaGraphAddKernelNode(&n, g, deps, nd, &p));
  return n;
}

static void mode_explicit(void) {
  int *p, *q, *r;
  unsigned char *t;
  CK(cudaMalloc(&p, N * 4));
  CK(cudaMalloc(&q, N * 4));
  CK(cudaMalloc(&r, N * 4));
  CK(cudaMalloc(&t, N));
  int *hq; // pinned, as memcpy nodes to host memory want
  CK(cudaMallocHost(&hq, N * 4));
  int n = N, v1 = 7, v2 = 11, v3 = 13;
  void *a1[] = {&p, &v1, &n}, *a2[] = {&q, &v2, &n}, *a3[] = {&r, &v3, &n};
  cudaGraph_t g, child;
  CK(cudaGraphCreate(&g, 0));
  CK(cudaGraphCreate(&child, 0));
  cudaGraphNode_t k1 = knode(g, NULL, 0, (void *)fill, a1);
  cudaGraphNode_t k2 = knode(g, NULL, 0, (void *)fill, a2);
  knode(child, NULL, 0, (void *)fill, a3);
  cudaGraphNode_t both[] = {k1, k2}, c, ev, ms, cp;
  CK(cudaGraphAddChildGraphNode(&c, g, both, 2, child));
  cudaEvent_t done;
  CK(cudaEventCreate(&done));
  CK(cudaGraphAddEventRecordNode(&ev, g, &c, 1, done));
  cudaMemsetParams m;
  memset(&m, 0, sizeof m);
  m.dst = t, m.value = 0x5a, m.elementSize = 1, m.width = N, m.height = 1, m.pitch = N;
  CK(cudaGraphAddMemsetNode(&ms, g, &ev, 1, &m));
  CK(cudaGraphAddMemcpyNode1D(&cp, g, &ms, 1, hq, q, N * 4, cudaMemcpyDeviceToHost));
  cudaGraphExec_t e;
  CK(cudaGraphInstantiate(&e, g, 0));
  CK(cudaGraphDestroy(child));
  CK(cudaGraphLaunch(e, 0));
  CK(cudaStreamSynchronize(0));
  for (int i = 0; i < N; i++)
    if (hq[i] != 11 + i) {
      fprintf(stderr, "graphs: explicit: q[%d] = %d copied back, not %d\n", i, hq[i], 11 + i);
      failures++;
      break;
    }
  show("explicit", "p", p, N * 4, 0);
  show("explicit", "q", q, N * 4, 0);
  show("explicit", "r", r, N * 4, 0);
  show("explicit", "t", t, N, 0);
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  cudaFree(p), cudaFree(q), cudaFree(r), cudaFree(t);
  cudaFreeHost(hq);
}

static int host_calls;
static void CUDART_CB on_host(void *arg) { host_calls += *(int *)arg; }

static void mode_host(void) {
  int *p;
  CK(cudaMalloc(&p, N * 4));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  static int one = 1;
  cudaGraph_t g;
  cudaGraphExec_t e;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  fill<<<N / 256, 256, 0, s>>>(p, 3, N);
  CK(cudaLaunchHostFunc(s, on_host, &one));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&e, g, 0));
  CK(cudaGraphLaunch(e, s));
  CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  if (host_calls != 2) {
    fprintf(stderr, "graphs: host node ran %d times, not 2\n", host_calls);
    failures++;
  }
  show("host", "p", p, N * 4, 0);
  printf("graphs: host calls %d\n", host_calls);
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(s));
  cudaFree(p);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int all = argc < 2;
  for (int i = all ? 0 : 1; i < (all ? 1 : argc); i++) {
    const char *m = all ? "all" : argv[i];
    int a = !strcmp(m, "all");
    if (a || !strcmp(m, "capture")) mode_capture(1);
    if (a || !strcmp(m, "clean")) mode_capture(0);
    if (a || !strcmp(m, "fork")) mode_fork();
    if (a || !strcmp(m, "explicit")) mode_explicit();
    if (a || !strcmp(m, "host")) mode_host();
  }
  CK(cudaDeviceSynchronize());
  if (failures) fprintf(stderr, "graphs: %d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
