/* test/oracle/test_b_pointwise.c — the ops of three operand tensors
 * (oc_check_pointwise): where is exact (bitwise, -0 kept, a wrong
 * selection or a lost -0 fails); addcmul, addcdiv and lerp evaluated in
 * fp32 as ATen's CUDA and CPU kernels order them (and fused) pass, for
 * fp32 and bf16 tensors; a product rounded to bf16 on the way, a
 * reciprocal in bf16 and a weight rounded to bf16 fail; non-finite
 * inputs take IEEE's values. */
#include "test_b_util.h"

enum { R = 32, C = 48, N = R * C };

static float fma_f(float a, float b, float c) { return fmaf(a, b, c); }

/* fp32 kernels: form 0..2 correct orders; 3 the planted bug */
static float addcmul_k(int form, float x, float y, float z, float al) {
  switch (form) {
  case 0: return x + al * (y * z);
  case 1: return x + (al * y) * z;
  case 2: return fma_f(al * y, z, x);
  default: return x + al * (float)t_rnd(OC_BF16, y * z);
  }
}
static float addcdiv_k(int form, float x, float y, float z, float al) {
  switch (form) {
  case 0: return x + al * (y / z);
  case 1: return x + (al * y) / z;
  case 2: return fma_f(al, y / z, x);
  default: return x + al * y * (float)t_rnd(OC_BF16, 1.0f / z);
  }
}
static float lerp_k(int form, float x, float e, float w) {
  switch (form) {
  case 0: return fabsf(w) < 0.5f ? x + w * (e - x) : e - (e - x) * (1 - w);
  case 1: return fabsf(w) < 0.5f ? fma_f(w, e - x, x) : fma_f(-(e - x), 1 - w, e);
  case 2: return fabsf(w) < 0.5f ? fma_f(w, e - x, x) : e - (e - x) * (1 - w);
  default: {
    float wb = (float)t_rnd(OC_BF16, w);
    return fabsf(w) < 0.5f ? x + wb * (e - x) : e - (e - x) * (1 - wb);
  }
  }
}

static struct oc_verdict judge(enum oc_pw_op op, enum oc_format f, const float *x, const float *y,
                               const float *z, double al, const float *o) {
  static unsigned char b[4][N * 4];
  const float *src[4] = {x, y, z, o};
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < N; i++)
      t_put(b[t], f, i, src[t][i]);
  struct oc_tensor T[4];
  for (int t = 0; t < 4; t++)
    t_tensor2(&T[t], b[t], f, R, C);
  struct oc_profile p;
  char spec[64];
  snprintf(spec, sizeof spec, "fp32:in=%s:out=%s", oc_format_info(f)->name,
           oc_format_info(f)->name);
  EXPECT(oc_profile_parse(spec, &p) == 0, "%s", spec);
  struct oc_pointwise_args a = {&T[0], &T[1], &T[2], al};
  struct oc_verdict v;
  EXPECT(oc_check_pointwise(op, &a, &T[3], &p, NULL, &v) == 0, "rc");
  return v;
}

static void arithmetic(void) {
  int before = t_fail;
  static float x[N], y[N], z[N], o[N];
  static const enum oc_pw_op ops[] = {OC_PW_ADDCMUL, OC_PW_ADDCDIV, OC_PW_LERP};
  static const char *const names[] = {"addcmul", "addcdiv", "lerp"};
  static const enum oc_format fs[] = {OC_FP32, OC_BF16};
  uint64_t st = 11;
  for (int fi = 0; fi < 2; fi++)
    for (int k = 0; k < 3; k++)
      for (int form = 0; form < 4; form++) {
        enum oc_format f = fs[fi];
        for (int i = 0; i < N; i++) {
          x[i] = (float)t_rnd(f, 4 * oc_rand_unit(&st) - 2);
          y[i] = (float)t_rnd(f, 4 * oc_rand_unit(&st) - 2);
          z[i] = (float)t_rnd(f, ops[k] == OC_PW_LERP ? 1.6 * oc_rand_unit(&st) - 0.3
                                                      : (1 + oc_rand_unit(&st)) * (i % 2 ? -1 : 1));
        }
        double al = ops[k] == OC_PW_LERP ? 0 : 0.3;
        for (int i = 0; i < N; i++) {
          float r = ops[k] == OC_PW_ADDCMUL   ? addcmul_k(form, x[i], y[i], z[i], (float)al)
                    : ops[k] == OC_PW_ADDCDIV ? addcdiv_k(form, x[i], y[i], z[i], (float)al)
                                              : lerp_k(form, x[i], y[i], z[i]);
          o[i] = (float)t_rnd(f, r);
        }
        struct oc_verdict v = judge(ops[k], f, x, y, z, al, o);
        if (form < 3)
          EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "%s %s form %d: %s", names[k],
                 oc_format_info(f)->name, form, oc_verdict_name(v.kind));
        else if (f == OC_FP32) /* bf16 outputs round the bug's error away */
          EXPECT(oc_verdict_is_fail(v.kind), "%s %s planted: %s", names[k], oc_format_info(f)->name,
                 oc_verdict_name(v.kind));
      }
  t_line("addcmul, addcdiv, lerp: ATen's CUDA and CPU orders and fused forms pass in fp32 and "
         "bf16; a product, reciprocal or weight rounded to bf16 fails",
         before);
}

static void selection_and_specials(void) {
  int before = t_fail;
  static float c[N], a[N], b[N], o[N];
  uint64_t st = 5;
  for (int i = 0; i < N; i++) {
    c[i] = (float)(i % 3 == 0);
    a[i] = (float)(oc_rand_unit(&st) - 0.5);
    b[i] = (float)(oc_rand_unit(&st) - 0.5);
  }
  a[0] = -0.0f, b[1] = -0.0f, a[3] = NAN, b[4] = INFINITY;
  for (int i = 0; i < N; i++)
    o[i] = c[i] != 0 ? a[i] : b[i];
  struct oc_verdict v = judge(OC_PW_WHERE, OC_FP32, c, a, b, 0, o);
  EXPECT(v.kind == OC_BITWISE, "where: %s", oc_verdict_name(v.kind));
  o[7] = a[7]; /* c[7] == 0: the wrong operand */
  v = judge(OC_PW_WHERE, OC_FP32, c, a, b, 0, o);
  EXPECT(oc_verdict_is_fail(v.kind), "where, a wrong selection: %s", oc_verdict_name(v.kind));
  o[7] = b[7], o[1] = 0.0f;
  v = judge(OC_PW_WHERE, OC_FP32, c, a, b, 0, o);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "where, -0 lost: %s", oc_verdict_name(v.kind));
  /* addcmul with Inf and NaN: IEEE's values; 0 * Inf = NaN */
  static float x[N], y[N], z[N];
  for (int i = 0; i < N; i++)
    x[i] = 1, y[i] = 2, z[i] = 3;
  x[0] = INFINITY, y[1] = INFINITY, z[1] = 0, y[2] = NAN, x[3] = INFINITY, y[3] = -INFINITY;
  for (int i = 0; i < N; i++)
    o[i] = addcmul_k(0, x[i], y[i], z[i], 0.5f);
  v = judge(OC_PW_ADDCMUL, OC_FP32, x, y, z, 0.5, o);
  EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "addcmul specials: %s",
         oc_verdict_name(v.kind));
  o[1] = 0;
  v = judge(OC_PW_ADDCMUL, OC_FP32, x, y, z, 0.5, o);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "addcmul 0 * Inf as a number: %s", oc_verdict_name(v.kind));
  /* addcdiv by zero */
  z[5] = 0, y[5] = 1, x[5] = 1;
  for (int i = 0; i < N; i++)
    o[i] = addcdiv_k(0, x[i], y[i], z[i], 0.5f);
  v = judge(OC_PW_ADDCDIV, OC_FP32, x, y, z, 0.5, o);
  EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "addcdiv specials: %s",
         oc_verdict_name(v.kind));
  /* a subnormal value t1 over a tiny t2: CPU's (value t1) / t2 keeps the
   * subnormal's few bits, CUDA's value (t1 / t2) does not */
  for (int i = 0; i < N; i++) {
    x[i] = 1e-3f * (float)(i % 7);
    y[i] = 3e-39f * (float)(1 + i % 5);
    z[i] = 1.7e-33f * (float)(1 + i % 3);
  }
  for (int form = 0; form < 2; form++) {
    for (int i = 0; i < N; i++)
      o[i] = addcdiv_k(form, x[i], y[i], z[i], 0.3f);
    v = judge(OC_PW_ADDCDIV, OC_FP32, x, y, z, 0.3, o);
    EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "addcdiv underflow, form %d: %s", form,
           oc_verdict_name(v.kind));
  }
  /* fp64: a subnormal value t1 over a subnormal t2 (the extremes gate's
   * inputs; ATen's CPU kernel keeps the product's few bits) */
  double xd = -2.0586610887243127e-308, yd = 3.5320689374696e-311, zd = -2.0831889560404736e-308;
  double od = xd + (-0.7 * yd) / zd;
  struct oc_tensor X1, Y1, Z1, O1;
  int64_t s1[1] = {1};
  oc_tensor_make(&X1, &xd, OC_FP64, 1, s1, NULL);
  oc_tensor_make(&Y1, &yd, OC_FP64, 1, s1, NULL);
  oc_tensor_make(&Z1, &zd, OC_FP64, 1, s1, NULL);
  oc_tensor_make(&O1, &od, OC_FP64, 1, s1, NULL);
  struct oc_profile pd;
  oc_profile_parse("fp64", &pd);
  struct oc_pointwise_args ad = {&X1, &Y1, &Z1, -0.7};
  EXPECT(oc_check_pointwise(OC_PW_ADDCDIV, &ad, &O1, &pd, NULL, &v) == 0 &&
             !oc_verdict_is_fail(v.kind),
         "fp64 addcdiv of subnormals: %s", oc_verdict_name(v.kind));
  t_line("where bitwise (-0, NaN, Inf selected); a wrong selection or a lost -0 fails; addcmul "
         "and addcdiv take IEEE's values at Inf, NaN and a zero divisor; an underflowed "
         "value t1 over a tiny t2 passes",
         before);
}

int main(void) {
  arithmetic();
  selection_and_specials();
  return t_done("test_b_pointwise");
}
