/* test/oracle/test_b_util.h — shared pieces of the op-level oracle tests:
 * ok/FAIL reporting that really counts, and simulated kernels (correct and
 * deliberately imprecise accumulation orders) run on the CPU. */
#ifndef TEST_B_UTIL_H
#define TEST_B_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "oracle.h"
#include "verdict.h"

static int t_fail, t_ok;

#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (cond) {                                                                                    \
      t_ok++;                                                                                      \
    } else {                                                                                       \
      t_fail++;                                                                                    \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                       \
      printf(__VA_ARGS__);                                                                         \
      printf("\n");                                                                                \
    }                                                                                              \
  } while (0)

static inline void t_line(const char *what, int bad_before) {
  printf("%s %s\n", t_fail == bad_before ? "ok" : "FAIL", what);
}

static inline int t_done(const char *name) {
  printf("%s: %d checks, %d failed\n", name, t_ok + t_fail, t_fail);
  return t_fail ? 1 : 0;
}

static inline void t_print_verdict(const struct oc_verdict *v) {
  char buf[640];
  oc_verdict_format(v, buf, sizeof buf);
  printf("  %s\n", buf);
}

/* Round a double to p significant bits toward zero (narrow accumulators). */
static inline double t_trunc_bits(double x, int p) {
  if (x == 0 || !isfinite(x)) return x;
  int e;
  double m = frexp(x, &e);
  return ldexp(trunc(ldexp(m, p)), e - p);
}
static inline double t_rnd(enum oc_format f, double x) { return oc_round(f, x, OC_OVF_IEEE); }

enum t_sim {
  SIM_FP32_SEQ,      /* fp32 running sum, products rounded to fp32 */
  SIM_FP32_FMA,      /* fp32 fmaf chain */
  SIM_FP32_PAIRWISE, /* pairwise tree in fp32 */
  SIM_FP32_SPLITK,   /* 4 fp32 partial sums over interleaved K, then summed */
  SIM_FP32_REVERSE,  /* fp32 running sum from the end */
  SIM_TC_TRUNC,      /* blocks of 4: exact block sum plus accumulator, truncated to fp32 */
  SIM_FP16_ACC,      /* fp16 accumulator */
  SIM_BF16_ACC,      /* bf16 accumulator */
  SIM_ACC14_P128,    /* 14-bit truncating accumulator, promoted to fp32 every 128 */
  SIM_COUNT
};
static const char *const t_sim_name[SIM_COUNT] = {"fp32_seq",    "fp32_fma",     "fp32_pairwise",
                                                  "fp32_splitk", "fp32_reverse", "tc_trunc",
                                                  "fp16_acc",    "bf16_acc",     "acc14_p128"};

static inline float t_pairwise(const double *a, const double *b, int64_t n, int64_t inc) {
  if (n == 1) return (float)(a[0] * b[0]);
  int64_t h = n / 2;
  return t_pairwise(a, b, h, inc) + t_pairwise(a + h * inc, b + h * inc, n - h, inc);
}

/* a and b are length-n vectors of exactly representable operand values. */
static inline double t_sim_dot(enum t_sim s, const double *a, const double *b, int64_t n) {
  switch (s) {
  case SIM_FP32_SEQ: {
    float acc = 0;
    for (int64_t k = 0; k < n; k++)
      acc = acc + (float)(a[k] * b[k]);
    return acc;
  }
  case SIM_FP32_REVERSE: {
    float acc = 0;
    for (int64_t k = n - 1; k >= 0; k--)
      acc = acc + (float)(a[k] * b[k]);
    return acc;
  }
  case SIM_FP32_FMA: {
    float acc = 0;
    for (int64_t k = 0; k < n; k++)
      acc = fmaf((float)a[k], (float)b[k], acc);
    return acc;
  }
  case SIM_FP32_PAIRWISE: return n ? t_pairwise(a, b, n, 1) : 0;
  case SIM_FP32_SPLITK: {
    float part[4] = {0, 0, 0, 0};
    for (int64_t k = 0; k < n; k++)
      part[k % 4] = fmaf((float)a[k], (float)b[k], part[k % 4]);
    return (part[0] + part[1]) + (part[2] + part[3]);
  }
  case SIM_TC_TRUNC: {
    double acc = 0;
    for (int64_t k = 0; k < n; k += 4) {
      double t = acc;
      for (int64_t q = k; q < k + 4 && q < n; q++)
        t += a[q] * b[q];
      acc = t_trunc_bits(t, 24);
    }
    return acc;
  }
  case SIM_FP16_ACC:
  case SIM_BF16_ACC: {
    enum oc_format f = s == SIM_FP16_ACC ? OC_FP16 : OC_BF16;
    double acc = 0;
    for (int64_t k = 0; k < n; k++)
      acc = t_rnd(f, acc + t_rnd(f, a[k] * b[k]));
    return acc;
  }
  case SIM_ACC14_P128: {
    double outer = 0, inner = 0;
    for (int64_t k = 0; k < n; k++) {
      inner = t_trunc_bits(inner + a[k] * b[k], 14);
      if (k % 128 == 127 || k == n - 1) {
        outer = (float)(outer + inner);
        inner = 0;
      }
    }
    return outer;
  }
  default: return NAN;
  }
}

/* Writes value x encoded in format f at element i of buf. */
static inline void t_put(void *buf, enum oc_format f, int64_t i, double x) {
  uint64_t b = oc_encode(f, x, OC_OVF_IEEE);
  unsigned char *p = (unsigned char *)buf + i * (int64_t)oc_format_size(f);
  switch (oc_format_size(f)) {
  case 8: memcpy(p, &b, 8); break;
  case 4: {
    uint32_t v = (uint32_t)b;
    memcpy(p, &v, 4);
    break;
  }
  case 2: {
    uint16_t v = (uint16_t)b;
    memcpy(p, &v, 2);
    break;
  }
  default: *p = (unsigned char)b;
  }
}

static inline void t_tensor2(struct oc_tensor *t, const void *d, enum oc_format f, int64_t r,
                             int64_t c) {
  int64_t sh[2] = {r, c};
  oc_tensor_make(t, d, f, 2, sh, NULL);
}

#endif
