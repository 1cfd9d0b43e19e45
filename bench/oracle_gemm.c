/* bench/oracle_gemm.c — time to a verdict on a sampled 4096x4096x4096 bf16
 * GEMM (goal: under a second on one core), with and without the Freivalds
 * screen, and the per-element cost of the full row-op checks. */
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

static uint16_t bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16); /* values generated exactly representable */
}
static float bf16_val(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
  uint64_t st = 42;
  uint16_t *a = malloc((size_t)(n * n) * 2), *b = malloc((size_t)(n * n) * 2);
  float *af = malloc((size_t)(n * n) * 4), *bf = malloc((size_t)(n * n) * 4),
        *c = calloc((size_t)(n * n), 4);
  if (!a || !b || !af || !bf || !c) return 1;
  for (int64_t i = 0; i < n * n; i++) {
    a[i] = bf16_bits((float)(oc_rand_unit(&st) * 2 - 1) * 0.99f) & 0xfff8;
    b[i] = bf16_bits((float)(oc_rand_unit(&st) * 2 - 1) * 0.99f) & 0xfff8;
    af[i] = bf16_val(a[i]);
    bf[i] = bf16_val(b[i]);
  }
  double t0 = now();
  for (int64_t i = 0; i < n; i++) /* the "kernel": fp32 accumulation, i-k-j order */
    for (int64_t k = 0; k < n; k++) {
      float x = af[i * n + k];
      const float *brow = bf + k * n;
      float *crow = c + i * n;
      for (int64_t j = 0; j < n; j++)
        crow[j] += x * brow[j];
    }
  double tk = now() - t0;
  struct oc_tensor A, B, C;
  int64_t sh[2] = {n, n};
  oc_tensor_make(&A, a, OC_BF16, 2, sh, NULL);
  oc_tensor_make(&B, b, OC_BF16, 2, sh, NULL);
  oc_tensor_make(&C, c, OC_FP32, 2, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("bf16_fp32acc:out=fp32", &p);
  struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  struct oc_options o;
  oc_options_default(&o);
  struct oc_verdict v;
  char line[640];
  printf(
      "oracle_gemm: %lldx%lldx%lld bf16 -> fp32 (CPU reference kernel took %.1f s, not counted)\n",
      (long long)n, (long long)n, (long long)n, tk);
  printf("%-34s %10s %12s %s\n", "check", "seconds", "ns/element", "verdict");
  for (int screen = 1; screen >= 0; screen--) {
    o.screen = screen;
    t0 = now();
    oc_check_matmul(&ma, &C, &p, &o, &v);
    double t = now() - t0;
    printf("%-34s %10.3f %12.1f %s (checked %lld, miss<=%.1g)\n",
           screen ? "gemm sampled + Freivalds screen" : "gemm sampled, no screen", t,
           1e9 * t / (double)v.checked, oc_verdict_name(v.kind), (long long)v.checked, v.miss_prob);
  }
  oc_verdict_format(&v, line, sizeof line);
  printf("  %s\n", line);

  /* Row ops checked in full: 256 rows of 1024 fp32 values. */
  int64_t rows = 256, len = 1024;
  float *x = malloc((size_t)(rows * len) * 4), *y = malloc((size_t)(rows * len) * 4);
  for (int64_t i = 0; i < rows * len; i++)
    x[i] = (float)(oc_rand_unit(&st) * 8 - 4);
  struct oc_tensor X, Y, S;
  int64_t s2[2] = {rows, len};
  oc_tensor_make(&X, x, OC_FP32, 2, s2, NULL);
  oc_tensor_make(&Y, y, OC_FP32, 2, s2, NULL);
  oc_tensor_make(&S, y, OC_FP32, 1, s2, NULL);
  oc_profile_preset("fp32", &p);
  for (int64_t r = 0; r < rows; r++) { /* two-pass softmax */
    float m = -INFINITY, s = 0;
    for (int64_t k = 0; k < len; k++)
      m = fmaxf(m, x[r * len + k]);
    for (int64_t k = 0; k < len; k++)
      s += expf(x[r * len + k] - m);
    for (int64_t k = 0; k < len; k++)
      y[r * len + k] = expf(x[r * len + k] - m) / s;
  }
  t0 = now();
  oc_check_softmax(OC_SOFTMAX, &X, 1, &Y, &p, NULL, &v);
  double t = now() - t0;
  printf("%-34s %10.3f %12.1f %s\n", "softmax 256x1024 (full)", t, 1e9 * t / (double)v.checked,
         oc_verdict_name(v.kind));
  for (int64_t r = 0; r < rows; r++) {
    float mu = 0, var = 0;
    for (int64_t k = 0; k < len; k++)
      mu += x[r * len + k];
    mu /= (float)len;
    for (int64_t k = 0; k < len; k++)
      var += (x[r * len + k] - mu) * (x[r * len + k] - mu);
    float rs = 1 / sqrtf(var / (float)len + 1e-5f);
    for (int64_t k = 0; k < len; k++)
      y[r * len + k] = (x[r * len + k] - mu) * rs;
  }
  t0 = now();
  oc_check_layer_norm(&X, NULL, NULL, 1e-5, &Y, &p, NULL, &v);
  t = now() - t0;
  printf("%-34s %10.3f %12.1f %s\n", "layer_norm 256x1024 (full)", t, 1e9 * t / (double)v.checked,
         oc_verdict_name(v.kind));
  for (int64_t r = 0; r < rows; r++) {
    float s = 0;
    for (int64_t k = 0; k < len; k++)
      s += x[r * len + k];
    y[r] = s;
  }
  t0 = now();
  oc_check_reduce(OC_RED_SUM, &X, 1, &S, &p, NULL, &v);
  t = now() - t0;
  printf("%-34s %10.3f %12.1f %s (per input element)\n", "sum 256x1024 (full)", t,
         1e9 * t / (double)(rows * len), oc_verdict_name(v.kind));
  free(a), free(b), free(af), free(bf), free(c), free(x), free(y);
  return 0;
}
