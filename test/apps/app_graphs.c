/* test/apps/app_graphs.c — CUDA graphs on the CPU stand-in, for kcheck's
 * node-by-node graph checks: every mode prints one checksum line per
 * device buffer it ends with (so a run under kcheck can be compared byte
 * for byte with a plain run) and checks the values it can predict.
 *
 *   app_graphs capture   stream capture: async H2D copy, 32-bit memset,
 *                        scale, vecadd, D2D copy, and a racy kernel
 *                        (last_writer) that runs only inside the graph;
 *                        instantiated once, launched three times
 *   app_graphs clean     the same capture without the racy kernel
 *   app_graphs explicit  a graph built node by node: a DAG of fills, a
 *                        child graph, an event record node, an empty join,
 *                        an 8-bit memset and a D2H copy node
 *   app_graphs host      a graph with a host node (kcheck cannot replay it)
 *   app_graphs update    cuGraphExecKernelNodeSetParams and cuGraphExecUpdate
 *                        between launches, and an edit kcheck does not mirror
 *   app_graphs nccl      a communication kernel (name contains "nccl") inside
 *                        a graph and eagerly: prints how often it really ran
 *   app_graphs uninit    a captured vecadd that reads an allocation nothing
 *                        ever wrote (graph_uninit finds it)
 *   app_graphs uninit_ok the same with that allocation written first: by an
 *                        eager memset, by a memset node and by a fill node
 *                        of the graph (silent)
 *   app_graphs all       all of the above */
#include "apps_linked.h"

static const char *app_name = "app_graphs";

#define N 1024
#define BLK 128

static void print_buf(const char *mode, const char *what, CUdeviceptr d, size_t bytes) {
  unsigned char *h = malloc(bytes);
  CK(cuMemcpyDtoH(h, d, bytes));
  printf("%s: %s %s checksum %016llx\n", app_name, mode, what, (unsigned long long)fnv1a(h, bytes));
  free(h);
}

static CUgraphExec instantiate(CUgraph g) {
  CUgraphExec e;
  CK(cuGraphInstantiateWithFlags(&e, g, 0));
  return e;
}

/* ---- capture / clean --------------------------------------------------- */

static void mode_capture(struct app *a, int racy) {
  const char *mode = racy ? "capture" : "clean";
  static float hx[N];
  for (int i = 0; i < N; i++)
    hx[i] = (float)i;
  CUdeviceptr x = app_alloc(sizeof hx), y = app_alloc(sizeof hx), z = app_alloc(sizeof hx);
  CUdeviceptr w = app_alloc(64);
  CK(cuMemsetD8(z, 0, sizeof hx));
  CK(cuMemsetD8(w, 0, 64));
  int n = N;
  float s = 2.0f;
  void *sargs[] = {&y, &s, &n}, *vargs[] = {&x, &y, &z, &n}, *largs[] = {&w};
  CUgraph g;
  CK(cuStreamBeginCapture(a->stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(cuMemcpyHtoDAsync(x, hx, sizeof hx, a->stream));
  CK(cuMemsetD32Async(y, 0x3f800000u, N, a->stream)); /* 1.0f */
  CK(cuLaunchKernel(app_func(a, FK_K_SCALE), N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, sargs, NULL));
  CK(cuLaunchKernel(app_kernel(a, FK_K_VECADD), N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, vargs,
                    NULL));
  if (racy)
    CK(cuLaunchKernel(app_func(a, FK_K_LAST_WRITER), 64, 1, 1, 32, 1, 1, 0, a->stream, largs,
                      NULL));
  CK(cuMemcpyDtoDAsync(y, z, sizeof hx, a->stream));
  CK(cuStreamEndCapture(a->stream, &g));
  CUgraphExec e = instantiate(g);
  CK(cuGraphDestroy(g)); /* as PyTorch does: the exec lives on alone */
  for (int l = 0; l < 3; l++)
    CK(cuGraphLaunch(e, a->stream));
  CK(cuStreamSynchronize(a->stream));
  static float hz[N];
  CK(cuMemcpyDtoH(hz, z, sizeof hz));
  for (int i = 0; i < N; i++)
    EXPECT(hz[i] == (float)i + 2.0f, "%s: z[%d] = %g", mode, i, hz[i]);
  print_buf(mode, "x", x, sizeof hx);
  print_buf(mode, "y", y, sizeof hx);
  print_buf(mode, "z", z, sizeof hx);
  if (racy) print_buf(mode, "w", w, 64);
  CK(cuGraphExecDestroy(e));
  CUdeviceptr all[] = {x, y, z, w};
  for (int i = 0; i < 4; i++)
    CK(cuMemFree(all[i]));
}

/* ---- explicit ---------------------------------------------------------- */

static CUgraphNode kernel_node(CUgraph g, CUfunction f, const CUgraphNode *deps, size_t ndeps,
                               void **args, unsigned grid) {
  CUDA_KERNEL_NODE_PARAMS p;
  memset(&p, 0, sizeof p);
  p.func = f;
  p.gridDimX = grid, p.gridDimY = 1, p.gridDimZ = 1;
  p.blockDimX = BLK, p.blockDimY = 1, p.blockDimZ = 1;
  p.kernelParams = args;
  CUgraphNode node;
  CK(cuGraphAddKernelNode(&node, g, deps, ndeps, &p));
  return node;
}

static void mode_explicit(struct app *a) {
  CUdeviceptr p = app_alloc(N * 4), q = app_alloc(N * 4), r = app_alloc(N * 4), t = app_alloc(N);
  static int hq[N];
  int n = N, v1 = 7, v2 = 11;
  void *f1[] = {&p, &v1, &n}, *f2[] = {&q, &v2, &n};
  CUgraph g, child;
  CK(cuGraphCreate(&g, 0));
  CK(cuGraphCreate(&child, 0));
  /* Two independent fills, then a child graph that fills r after both. */
  CUgraphNode a1 = kernel_node(g, app_func(a, FK_K_FILL), NULL, 0, f1, N / BLK);
  CUgraphNode a2 = kernel_node(g, app_func(a, FK_K_FILL), NULL, 0, f2, N / BLK);
  int v3 = 13;
  void *f3[] = {&r, &v3, &n};
  kernel_node(child, app_func(a, FK_K_FILL), NULL, 0, f3, N / BLK);
  CUgraphNode both[] = {a1, a2}, c, ev, join, ms, cp;
  CK(cuGraphAddChildGraphNode(&c, g, both, 2, child));
  CUevent done;
  CK(cuEventCreate(&done, CU_EVENT_DEFAULT));
  CK(cuGraphAddEventRecordNode(&ev, g, &c, 1, done));
  CK(cuGraphAddEmptyNode(&join, g, &ev, 1));
  CUDA_MEMSET_NODE_PARAMS m = {
      .dst = t, .pitch = N, .value = 0x5a, .elementSize = 1, .width = N, .height = 1};
  CK(cuGraphAddMemsetNode(&ms, g, &join, 1, &m, a->ctx));
  CUDA_MEMCPY3D cpy;
  memset(&cpy, 0, sizeof cpy);
  cpy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  cpy.srcDevice = q;
  cpy.dstMemoryType = CU_MEMORYTYPE_HOST;
  cpy.dstHost = hq;
  cpy.WidthInBytes = sizeof hq;
  cpy.Height = cpy.Depth = 1;
  CK(cuGraphAddMemcpyNode(&cp, g, &ms, 1, &cpy, a->ctx));
  CUgraphExec e = instantiate(g);
  CK(cuGraphDestroy(child));
  CK(cuGraphLaunch(e, a->stream));
  CK(cuStreamSynchronize(a->stream));
  for (int i = 0; i < N; i++)
    EXPECT(hq[i] == 11, "explicit: q[%d] = %d (copied by the graph)", i, hq[i]);
  print_buf("explicit", "p", p, N * 4);
  print_buf("explicit", "q", q, N * 4);
  print_buf("explicit", "r", r, N * 4);
  print_buf("explicit", "t", t, N);
  CK(cuGraphExecDestroy(e));
  CK(cuGraphDestroy(g));
  CK(cuEventDestroy(done));
  CUdeviceptr all[] = {p, q, r, t};
  for (int i = 0; i < 4; i++)
    CK(cuMemFree(all[i]));
}

/* ---- host -------------------------------------------------------------- */

static int host_calls;
static void CUDA_CB on_host(void *arg) { host_calls += *(int *)arg; }

static void mode_host(struct app *a) {
  CUdeviceptr p = app_alloc(N * 4);
  int n = N, v = 3, one = 1;
  void *f[] = {&p, &v, &n};
  CUgraph g;
  CK(cuGraphCreate(&g, 0));
  CUgraphNode k = kernel_node(g, app_func(a, FK_K_FILL), NULL, 0, f, N / BLK), h;
  CUDA_HOST_NODE_PARAMS hp = {on_host, &one};
  CK(cuGraphAddHostNode(&h, g, &k, 1, &hp));
  CUgraphExec e = instantiate(g);
  CK(cuGraphLaunch(e, a->stream));
  CK(cuGraphLaunch(e, a->stream));
  CK(cuStreamSynchronize(a->stream));
  EXPECT(host_calls == 2, "host node ran %d times, not 2", host_calls);
  print_buf("host", "p", p, N * 4);
  printf("%s: host calls %d\n", app_name, host_calls);
  CK(cuGraphExecDestroy(e));
  CK(cuGraphDestroy(g));
  CK(cuMemFree(p));
}

/* ---- update ------------------------------------------------------------ */

static void mode_update(struct app *a) {
  CUdeviceptr p = app_alloc(N * 4);
  int n = N, v = 1;
  void *f[] = {&p, &v, &n};
  CUgraph g, g2;
  CK(cuGraphCreate(&g, 0));
  CUgraphNode k = kernel_node(g, app_func(a, FK_K_FILL), NULL, 0, f, N / BLK);
  CUgraphExec e = instantiate(g);
  CK(cuGraphLaunch(e, a->stream));
  /* New parameters for the node of the executable graph only. */
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  int v2 = 2;
  void *f2[] = {&p, &v2, &n};
  kp.func = app_func(a, FK_K_FILL);
  kp.gridDimX = N / BLK, kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = BLK, kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = f2;
  CK(cuGraphExecKernelNodeSetParams(e, k, &kp));
  CK(cuGraphLaunch(e, a->stream));
  static int h[N];
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(h, p, sizeof h));
  EXPECT(h[0] == 2 && h[N - 1] == 2, "update: after set params p[0] = %d", h[0]);
  /* A whole-graph update from a graph of the same shape. */
  CK(cuGraphCreate(&g2, 0));
  int v3 = 3;
  void *f3[] = {&p, &v3, &n};
  kernel_node(g2, app_func(a, FK_K_FILL), NULL, 0, f3, N / BLK);
  CUgraphExecUpdateResultInfo info;
  CK(cuGraphExecUpdate(e, g2, &info));
  CK(cuGraphLaunch(e, a->stream));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(h, p, sizeof h));
  EXPECT(h[0] == 3 && h[N - 1] == 3, "update: after exec update p[0] = %d", h[0]);
  print_buf("update", "p", p, N * 4);
  CK(cuGraphExecDestroy(e));
  CK(cuGraphDestroy(g));
  CK(cuGraphDestroy(g2));
  /* An edit kcheck does not mirror (a memset node's parameters). */
  CUgraph gm;
  CK(cuGraphCreate(&gm, 0));
  CUgraphNode km = kernel_node(gm, app_func(a, FK_K_FILL), NULL, 0, f, N / BLK), mn;
  CUDA_MEMSET_NODE_PARAMS m = {
      .dst = p, .pitch = 64, .value = 9, .elementSize = 4, .width = 16, .height = 1};
  CK(cuGraphAddMemsetNode(&mn, gm, &km, 1, &m, a->ctx));
  CUgraphExec em = instantiate(gm);
  m.value = 10;
  CK(cuGraphExecMemsetNodeSetParams(em, mn, &m, a->ctx));
  CK(cuGraphLaunch(em, a->stream));
  CK(cuStreamSynchronize(a->stream));
  CK(cuMemcpyDtoH(h, p, sizeof h));
  EXPECT(h[0] == 10 && h[16] == 1, "update: after memset edit p[0] = %d p[16] = %d", h[0], h[16]);
  print_buf("update", "p2", p, N * 4);
  CK(cuGraphExecDestroy(em));
  CK(cuGraphDestroy(gm));
  CK(cuMemFree(p));
}

/* ---- uninit / uninit_ok ------------------------------------------------ */

static void mode_uninit(struct app *a, int ok) {
  const char *mode = ok ? "uninit_ok" : "uninit";
  CUdeviceptr x = app_alloc(N * 4), y = app_alloc(N * 4), z = app_alloc(N * 4);
  CUdeviceptr u = app_alloc(N * 4), v = app_alloc(N * 4), w = app_alloc(N * 4);
  CK(cuMemsetD32(y, 0x3f800000u, N));         /* 1.0f */
  if (ok) CK(cuMemsetD32(x, 0x40000000u, N)); /* 2.0f: the bug's missing initialisation */
  int n = N, fv = 5;
  void *vargs[] = {&x, &y, &z, &n}, *uargs[] = {&u, &y, &w, &n}, *fargs[] = {&v, &fv, &n};
  void *wargs[] = {&v, &y, &w, &n};
  CUgraph g;
  CK(cuStreamBeginCapture(a->stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(cuLaunchKernel(app_kernel(a, FK_K_VECADD), N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, vargs,
                    NULL)); /* z = x + y: x never written in the bug */
  if (ok) {
    /* Written inside the graph before they are read: a memset node, a kernel node. */
    CK(cuMemsetD32Async(u, 0x3f800000u, N, a->stream));
    CK(cuLaunchKernel(app_kernel(a, FK_K_VECADD), N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, uargs,
                      NULL));
    CK(cuLaunchKernel(app_func(a, FK_K_FILL), N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, fargs, NULL));
    CK(cuLaunchKernel(app_kernel(a, FK_K_VECADD), N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, wargs,
                      NULL));
  }
  CK(cuStreamEndCapture(a->stream, &g));
  CUgraphExec e = instantiate(g);
  CK(cuGraphDestroy(g));
  for (int l = 0; l < 2; l++)
    CK(cuGraphLaunch(e, a->stream));
  CK(cuStreamSynchronize(a->stream));
  print_buf(mode, "z", z, N * 4);
  if (ok) print_buf(mode, "w", w, N * 4);
  CK(cuGraphExecDestroy(e));
  CUdeviceptr all[] = {x, y, z, u, v, w};
  for (int i = 0; i < 6; i++)
    CK(cuMemFree(all[i]));
}

/* ---- nccl -------------------------------------------------------------- */

/* A stand-in for a collective: counts its real executions. */
static long comm_runs;
static void k_comm(const struct fk_launch_ctx *c, void *const *params) {
  if (c->blockIdx.x == 0 && c->blockIdx.y == 0 && c->blockIdx.z == 0) comm_runs++;
  float *x = *(float **)params[0];
  int n = *(int *)params[1];
  for (unsigned t = 0; t < c->blockDim.x; t++) {
    unsigned i = c->blockIdx.x * c->blockDim.x + t;
    if ((int)i < n) x[i] += 1.0f;
  }
}
#define COMM_NAME "_Z25ncclDevKernel_AllReduce_fPfi"
static const struct fk_kernel_def comm_def = {COMM_NAME, k_comm, 2, {8, 4}, {0}, 0, 0};
static const char comm_ptx[] = ".version 8.5\n.target sm_90\n.address_size 64\n"
                               ".visible .entry " COMM_NAME "(.param .u64 x, .param .u32 n)\n"
                               "{\n\tret;\n}\n";

static void mode_nccl(struct app *a) {
  if (fakecuda_register_kernel(&comm_def) && !fakecuda_find_kernel(COMM_NAME)) {
    fprintf(stderr, "%s: cannot register the communication kernel\n", app_name);
    exit(1);
  }
  CUmodule m;
  CUfunction comm;
  CK(cuModuleLoadData(&m, comm_ptx));
  CK(cuModuleGetFunction(&comm, m, COMM_NAME));
  CUdeviceptr x = app_alloc(N * 4), y = app_alloc(N * 4);
  CK(cuMemsetD32(x, 0, N));
  CK(cuMemsetD32(y, 0x3f800000u, N));
  int n = N;
  float s = 3.0f;
  void *cargs[] = {&x, &n}, *sargs[] = {&y, &s, &n};
  CUgraph g;
  CK(cuStreamBeginCapture(a->stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CK(cuLaunchKernel(app_func(a, FK_K_SCALE), N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, sargs, NULL));
  CK(cuLaunchKernel(comm, N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, cargs, NULL));
  CK(cuStreamEndCapture(a->stream, &g));
  CUgraphExec e = instantiate(g);
  CK(cuGraphLaunch(e, a->stream));
  CK(cuGraphLaunch(e, a->stream));
  CK(cuLaunchKernel(comm, N / BLK, 1, 1, BLK, 1, 1, 0, a->stream, cargs, NULL)); /* eager */
  CK(cuStreamSynchronize(a->stream));
  static float hx[N];
  CK(cuMemcpyDtoH(hx, x, sizeof hx));
  EXPECT(hx[0] == 3.0f && hx[N - 1] == 3.0f, "nccl: x[0] = %g, not 3", hx[0]);
  printf("%s: nccl comm runs %ld\n", app_name, comm_runs);
  print_buf("nccl", "x", x, N * 4);
  print_buf("nccl", "y", y, N * 4);
  CK(cuGraphExecDestroy(e));
  CK(cuGraphDestroy(g));
  CK(cuMemFree(x));
  CK(cuMemFree(y));
  CK(cuModuleUnload(m));
}

int main(int argc, char **argv) {
  (void)app_run; /* apps.h's scenarios: this program has its own */
  const char *mode = argc > 1 ? argv[1] : "all";
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct app a;
  memset(&a, 0, sizeof a);
  app_setup(&a);
  int all = !strcmp(mode, "all"), known = all;
  if (all || !strcmp(mode, "capture")) known = 1, mode_capture(&a, 1);
  if (all || !strcmp(mode, "clean")) known = 1, mode_capture(&a, 0);
  if (all || !strcmp(mode, "explicit")) known = 1, mode_explicit(&a);
  if (all || !strcmp(mode, "host")) known = 1, mode_host(&a);
  if (all || !strcmp(mode, "update")) known = 1, mode_update(&a);
  if (all || !strcmp(mode, "nccl")) known = 1, mode_nccl(&a);
  if (all || !strcmp(mode, "uninit")) known = 1, mode_uninit(&a, 0);
  if (all || !strcmp(mode, "uninit_ok")) known = 1, mode_uninit(&a, 1);
  if (!known) {
    fprintf(stderr, "%s: unknown mode '%s'\n", app_name, mode);
    return 2;
  }
  app_teardown(&a);
  if (app_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", app_name, app_failures);
    return 1;
  }
  return 0;
}
