/* bench/oracle_ops.c — per-element cost of the oracle's elementwise checks
 * (fp32 inputs through MPFR, 16-bit inputs through the tabulated function)
 * and per state-element-step cost of the gated delta rule check, one core. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "oracle.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void ew(enum oc_op op, enum oc_format f, int64_t n, const char *prof) {
  void *x = malloc((size_t)n * 4), *o = malloc((size_t)n * 4);
  uint64_t st = 1;
  for (int64_t i = 0; i < n; i++) {
    double v = 16 * oc_rand_unit(&st) - 8;
    uint64_t b = oc_encode(f, v, OC_OVF_IEEE),
             r = oc_op_encode(op, f, OC_OVF_IEEE, oc_decode(f, b), 0);
    if (oc_format_size(f) == 4)
      ((uint32_t *)x)[i] = (uint32_t)b, ((uint32_t *)o)[i] = (uint32_t)r;
    else
      ((uint16_t *)x)[i] = (uint16_t)b, ((uint16_t *)o)[i] = (uint16_t)r;
  }
  struct oc_tensor X, O;
  int64_t sh[1] = {n};
  oc_tensor_make(&X, x, f, 1, sh, NULL);
  oc_tensor_make(&O, o, f, 1, sh, NULL);
  struct oc_profile p;
  oc_profile_parse(prof, &p);
  struct oc_verdict v;
  oc_check_elementwise(op, &X, NULL, &O, &p, NULL, &v); /* builds a table once, if any */
  double t0 = now();
  oc_check_elementwise(op, &X, NULL, &O, &p, NULL, &v);
  double dt = now() - t0;
  printf("| elementwise %-9s | %-6s | %8lld | %9.3f | %8.0f | %s |\n", oc_op_name(op),
         oc_format_info(f)->name, (long long)n, dt, 1e9 * dt / (double)n, oc_verdict_name(v.kind));
  free(x), free(o);
}

static void gdelta(int H, int T, int K, int V) {
  size_t nq = (size_t)H * T * K, nv = (size_t)H * T * V, ng = (size_t)H * T;
  float *q = malloc(nq * 4), *k = malloc(nq * 4), *vv = malloc(nv * 4), *g = malloc(ng * 4);
  float *b = malloc(ng * 4), *o = calloc(nv, 4);
  uint64_t st = 3;
  for (size_t i = 0; i < nq; i++)
    q[i] = (float)(oc_rand_unit(&st) - 0.5), k[i] = (float)((oc_rand_unit(&st) - 0.5) / sqrt(K));
  for (size_t i = 0; i < nv; i++)
    vv[i] = (float)(oc_rand_unit(&st) - 0.5);
  for (size_t i = 0; i < ng; i++)
    g[i] = -0.1f, b[i] = 0.5f;
  int64_t sq[3] = {H, T, K}, sv[3] = {H, T, V}, sg[2] = {H, T};
  struct oc_tensor Q, Kt, Vt, G, B, O;
  oc_tensor_make(&Q, q, OC_FP32, 3, sq, NULL);
  oc_tensor_make(&Kt, k, OC_FP32, 3, sq, NULL);
  oc_tensor_make(&Vt, vv, OC_FP32, 3, sv, NULL);
  oc_tensor_make(&G, g, OC_FP32, 2, sg, NULL);
  oc_tensor_make(&B, b, OC_FP32, 2, sg, NULL);
  oc_tensor_make(&O, o, OC_FP32, 3, sv, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct oc_delta_args da = {&Q, &Kt, &Vt, &G, &B, 1 / sqrt((double)K), 1};
  struct oc_verdict v;
  double t0 = now();
  oc_check_gated_delta(&da, &O, &p, NULL, &v);
  double dt = now() - t0, steps = (double)H * T * K * V;
  printf("| gated_delta H%d T%d dk%d dv%d | %.3f s | %.1f ns per state element-step | %s (zero "
         "output) |\n",
         H, T, K, V, dt, 1e9 * dt / steps, oc_verdict_name(v.kind));
  free(q), free(k), free(vv), free(g), free(b), free(o);
}

int main(void) {
  printf("| check | format | elements | seconds | ns/element | verdict "
         "|\n|---|---|---|---|---|---|\n");
  ew(OC_OP_EXP, OC_FP32, 200000, "fp32");
  ew(OC_OP_TANH, OC_FP32, 200000, "fp32");
  ew(OC_OP_GELU_ERF, OC_FP32, 50000, "fp32");
  ew(OC_OP_SILU, OC_FP32, 200000, "fp32");
  ew(OC_OP_GELU_ERF, OC_BF16, 1000000, "bf16");
  ew(OC_OP_EXP, OC_FP16, 1000000, "fp16");
  printf("\n");
  gdelta(4, 256, 64, 64);
  gdelta(1, 1024, 128, 128);
  return 0;
}
