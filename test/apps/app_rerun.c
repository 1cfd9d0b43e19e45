/* test/apps/app_rerun.c — a kernel registered with the CPU stand-in that
 * behaves differently when kcheck re-runs it: every execution after the
 * first also writes a word of its input (an allocation the application's
 * own launch leaves unchanged). A check must report that, and restore that
 * input before the next re-run, so each starts from the application's
 * state. The application's buffers are checked after the launch: kcheck
 * must leave them as the launch did.
 *   app_rerun   one launch of scribble(in, out, n): out[i] = in[i] + 1 */
#include "apps_linked.h"

static const char *app_name = "app_rerun";

#define SCRIBBLE "_Z8scribblePiS_i"
#define N 1024

/* Executions so far (block 0 counts): the first is the application's. */
static long scribble_runs;
static void k_scribble(const struct fk_launch_ctx *c, void *const *params) {
  int *in = *(int **)params[0], *out = *(int **)params[1];
  int n = *(int *)params[2];
  int lead = c->blockIdx.x == 0 && c->blockIdx.y == 0 && c->blockIdx.z == 0;
  if (lead) scribble_runs++;
  for (unsigned t = 0; t < c->blockDim.x; t++) {
    unsigned i = c->blockIdx.x * c->blockDim.x + t;
    if ((int)i < n) out[i] = in[i] + 1;
  }
  if (lead && scribble_runs > 1) in[7] = (int)(1000 + scribble_runs);
}
/* 64 bytes of static shared memory: the scrub strategy applies to it. */
static const struct fk_kernel_def scribble_def = {SCRIBBLE, k_scribble, 3, {8, 8, 4}, {0}, 64, 0};
static const char scribble_ptx[] =
    ".version 8.5\n.target sm_90\n.address_size 64\n"
    ".visible .entry " SCRIBBLE "(.param .u64 in, .param .u64 out, .param .u32 n)\n"
    "{\n\tret;\n}\n";

int main(int argc, char **argv) {
  (void)app_run; /* apps.h's scenarios: this program has its own */
  (void)argc;
  (void)argv;
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct app a;
  memset(&a, 0, sizeof a);
  app_setup(&a);
  if (fakecuda_register_kernel(&scribble_def) && !fakecuda_find_kernel(SCRIBBLE)) {
    fprintf(stderr, "%s: cannot register the kernel\n", app_name);
    return 1;
  }
  CUmodule m;
  CUfunction f;
  CK(cuModuleLoadData(&m, scribble_ptx));
  CK(cuModuleGetFunction(&f, m, SCRIBBLE));
  static int hin[N], hout[N];
  for (int i = 0; i < N; i++)
    hin[i] = 3 * i;
  CUdeviceptr in, out;
  CK(cuMemAlloc(&in, sizeof hin));
  CK(cuMemAlloc(&out, sizeof hout));
  CK(cuMemcpyHtoD(in, hin, sizeof hin));
  CK(cuMemsetD32(out, 0, N));
  int n = N;
  void *args[] = {&in, &out, &n};
  CK(cuLaunchKernel(f, N / 128, 1, 1, 128, 1, 1, 0, a.stream, args, NULL));
  CK(cuStreamSynchronize(a.stream));
  CK(cuMemcpyDtoH(hin, in, sizeof hin));
  CK(cuMemcpyDtoH(hout, out, sizeof hout));
  for (int i = 0; i < N; i++) {
    EXPECT(hin[i] == 3 * i, "in[%d] = %d, not %d", i, hin[i], 3 * i);
    EXPECT(hout[i] == 3 * i + 1, "out[%d] = %d, not %d", i, hout[i], 3 * i + 1);
  }
  printf("%s: scribble executions %ld\n", app_name, scribble_runs);
  CK(cuMemFree(in));
  CK(cuMemFree(out));
  CK(cuModuleUnload(m));
  app_teardown(&a);
  if (app_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", app_name, app_failures);
    return 1;
  }
  return 0;
}
