/* bench/oracle_mm_layout.c — time to a verdict on sampled fp32 matmuls of
 * the shapes and layouts a transformer's training step gives the PyTorch
 * binding (its linear layers' forward and backward mm's: an operand
 * row-major or transposed), and the verdict, for each. The binding judges
 * these on worker threads while the program runs; their cost is how long
 * the first steps' checks stay in flight.
 *
 *   oracle_mm_layout [M N K]   (default 2048 1000 2048, as the bench's
 *                               vocabulary projection's backward) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oracle.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* C = A B in fp32 with an fp32 accumulator (the "kernel"), A and B read
 * through their strides. */
static void gemm(const float *a, const int64_t *sa, const float *b, const int64_t *sb, float *c,
                 int64_t M, int64_t N, int64_t K) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      float s = 0;
      for (int64_t k = 0; k < K; k++)
        s += a[i * sa[0] + k * sa[1]] * b[k * sb[0] + j * sb[1]];
      c[i * N + j] = s;
    }
}

int main(int argc, char **argv) {
  int64_t M = argc > 3 ? atoll(argv[1]) : 2048, N = argc > 3 ? atoll(argv[2]) : 1000,
          K = argc > 3 ? atoll(argv[3]) : 2048;
  uint64_t st = 7;
  float *a = malloc((size_t)(M * K) * 4), *b = malloc((size_t)(K * N) * 4),
        *c = malloc((size_t)(M * N) * 4);
  if (!a || !b || !c) return 1;
  for (int64_t i = 0; i < M * K; i++)
    a[i] = (float)(oc_rand_unit(&st) * 2 - 1);
  for (int64_t i = 0; i < K * N; i++)
    b[i] = (float)(oc_rand_unit(&st) * 2 - 1);
  struct oc_profile p;
  oc_profile_preset("fp32", &p);
  struct oc_options o;
  oc_options_default(&o);
  printf("oracle_mm_layout: fp32 %lldx%lldx%lld, sampled with the Freivalds screen\n", (long long)M,
         (long long)N, (long long)K);
  printf("%-22s %10s %10s %12s %s\n", "layout (A, B)", "seconds", "checked", "us/checked",
         "verdict");
  for (int layout = 0; layout < 4; layout++) {
    int at = layout & 1, bt = layout >> 1; /* transposed operands */
    int64_t sa[2] = {at ? 1 : K, at ? M : 1}, sb[2] = {bt ? 1 : N, bt ? K : 1};
    gemm(a, sa, b, sb, c, M, N, K);
    struct oc_tensor A, B, C;
    int64_t sha[2] = {M, K}, shb[2] = {K, N}, shc[2] = {M, N};
    oc_tensor_make(&A, a, OC_FP32, 2, sha, sa);
    oc_tensor_make(&B, b, OC_FP32, 2, shb, sb);
    oc_tensor_make(&C, c, OC_FP32, 2, shc, NULL);
    struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
    struct oc_verdict v;
    double t0 = now();
    if (oc_check_matmul(&ma, &C, &p, &o, &v)) return 1;
    double t = now() - t0;
    printf("%-22s %10.3f %10lld %12.2f %s\n",
           at ? (bt ? "transposed, transposed" : "transposed, row-major")
              : (bt ? "row-major, transposed" : "row-major, row-major"),
           t, (long long)v.checked, 1e6 * t / (double)(v.checked ? v.checked : 1),
           oc_verdict_name(v.kind));
  }
  free(a);
  free(b);
  free(c);
  return 0;
}
