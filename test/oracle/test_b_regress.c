/* test/oracle/test_b_regress.c — regressions of the oracle's false verdicts
 * and blind spots: each case has a kernel that must stay silent (a correct
 * implementation of the declared profile) and one that must fire.
 *  - partial sums that overflow legitimately (fp32 pairwise Inf - Inf)
 *  - tf32 operands: flushed subnormals, FLT_MAX rounding to Inf
 *  - sigmoid/silu below -87 (elementwise and epilogue), silu/gelu at -Inf
 *  - fp32 arithmetic rounded to fp16 (double rounding)
 *  - the statistical verdict (fp16 running sums) and tf32 kernels
 *  - the Freivalds screen's single-element catch
 *  - signed zeros, flush-to-zero, e4m3fn GEMM overflow, all -Inf softmax rows */
#include <float.h>

#include "elementwise.h"
#include "test_b_util.h"

static struct oc_profile prof(const char *spec) {
  struct oc_profile p;
  if (oc_profile_parse(spec, &p)) {
    printf("bad profile %s\n", spec);
    exit(2);
  }
  return p;
}

/* GEMM of row-major A (M x K) and B (K x N) of format fin, output o of fout. */
static struct oc_verdict mm(const void *a, const void *b, const void *o, enum oc_format fin,
                            enum oc_format fout, int64_t M, int64_t N, int64_t K, int act,
                            const char *spec) {
  struct oc_tensor A, B, O;
  t_tensor2(&A, a, fin, M, K);
  t_tensor2(&B, b, fin, K, N);
  t_tensor2(&O, o, fout, M, N);
  struct oc_profile p = prof(spec);
  struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, act};
  struct oc_verdict v;
  EXPECT(oc_check_matmul(&ma, &O, &p, NULL, &v) == 0, "matmul rc");
  return v;
}

/* Elementwise check of n fp32 inputs (y NULL: unary) against out in fout. */
static struct oc_verdict ew(enum oc_op op, const char *spec, const float *x, const float *y,
                            const void *out, enum oc_format fout, int64_t n) {
  struct oc_tensor X, Y, O;
  int64_t sh[1] = {n};
  oc_tensor_make(&X, x, OC_FP32, 1, sh, NULL);
  if (y) oc_tensor_make(&Y, y, OC_FP32, 1, sh, NULL);
  oc_tensor_make(&O, out, fout, 1, sh, NULL);
  struct oc_profile p = prof(spec);
  struct oc_verdict v;
  EXPECT(oc_check_elementwise(op, &X, y ? &Y : NULL, &O, &p, NULL, &v) == 0, "ew rc");
  return v;
}

static struct oc_verdict ew1(enum oc_op op, const char *spec, float x, float y, int bin, float k) {
  return ew(op, spec, &x, bin ? &y : NULL, &k, OC_FP32, 1);
}

#define KIND(v) oc_verdict_name((v).kind)

/* [M, M, -M, -M] . [1, 1, 1, 1] in fp32: pairwise gives Inf - Inf = NaN,
 * left to right Inf; both are what an fp32 accumulator may do. */
static void partial_overflow(void) {
  int before = t_fail;
  const float M = FLT_MAX;
  float a[4] = {M, M, -M, -M}, b[4] = {1, 1, 1, 1}, o;
  o = NAN;
  struct oc_verdict v = mm(a, b, &o, OC_FP32, OC_FP32, 1, 1, 4, OC_ACT_NONE, "fp32");
  EXPECT(v.kind == OC_INCONCLUSIVE && strstr(v.detail, "may overflow"), "pairwise NaN: %s (%s)",
         KIND(v), v.detail);
  o = INFINITY;
  v = mm(a, b, &o, OC_FP32, OC_FP32, 1, 1, 4, OC_ACT_NONE, "fp32");
  EXPECT(v.kind == OC_INCONCLUSIVE, "sequential Inf: %s", KIND(v));
  o = 0;
  v = mm(a, b, &o, OC_FP32, OC_FP32, 1, 1, 4, OC_ACT_NONE, "fp32");
  EXPECT(v.kind == OC_BITWISE, "exact 0: %s", KIND(v));
  /* must fire: the same NaN where no partial sum can overflow */
  float c[4] = {1e37f, 1e37f, -1e37f, -1e37f};
  o = NAN;
  v = mm(c, b, &o, OC_FP32, OC_FP32, 1, 1, 4, OC_ACT_NONE, "fp32");
  EXPECT(v.kind == OC_FAIL_SPECIAL, "NaN in range: %s", KIND(v));
  /* the same for a sum reduction */
  struct oc_tensor X, O;
  int64_t sx[2] = {1, 4}, so[1] = {1};
  oc_tensor_make(&X, a, OC_FP32, 2, sx, NULL);
  oc_tensor_make(&O, &o, OC_FP32, 1, so, NULL);
  struct oc_profile p = prof("fp32");
  o = NAN;
  oc_check_reduce(OC_RED_SUM, &X, 1, &O, &p, NULL, &v);
  EXPECT(v.kind == OC_INCONCLUSIVE, "sum NaN: %s", KIND(v));
  oc_tensor_make(&X, c, OC_FP32, 2, sx, NULL);
  oc_check_reduce(OC_RED_SUM, &X, 1, &O, &p, NULL, &v);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "sum NaN in range: %s", KIND(v));
  t_line("overflowing partial sums: Inf/NaN inconclusive where the accumulator may overflow, "
         "fail_special where it cannot",
         before);
}

static float tf32_flush(float x) {
  return fabsf(x) < 0x1p-126f ? 0.0f : (float)oc_round(OC_TF32, x, OC_OVF_IEEE);
}

/* 5 x 7 x 33 with fp32-subnormal operands against large ones; the kernel
 * rounds operands to tf32 (flushing subnormals) and accumulates in fp32. */
static void tf32_operands(void) {
  int before = t_fail;
  enum { M = 5, N = 7, K = 33 };
  float a[M * K], b[K * N], o[M * N];
  uint64_t st = 5;
  for (int i = 0; i < M * K; i++) {
    double r = oc_rand_unit(&st) * 2 - 1;
    /* every third a subnormal (k % 3 == 0, K = 33), meeting b ~ 2^105: those
     * products (~1e-7) dominate the normal ones (~1e-9) */
    a[i] = (float)(i % 3 == 0 ? r * 0x1p-128 : r * 0x1p-30);
  }
  for (int i = 0; i < K * N; i++)
    b[i] = (float)((oc_rand_unit(&st) * 2 - 1) * ((i / N) % 3 == 0 ? 0x1p105 : 1));
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0;
      for (int k = 0; k < K; k++)
        acc = fmaf(tf32_flush(a[i * K + k]), tf32_flush(b[k * N + j]), acc);
      o[i * N + j] = acc;
    }
  struct oc_verdict v = mm(a, b, o, OC_FP32, OC_FP32, M, N, K, OC_ACT_NONE, "tf32");
  EXPECT(!oc_verdict_is_fail(v.kind) && v.stat != OC_STAT_REJECTED, "flushed tf32: %s, stat %s",
         KIND(v), oc_stat_name(v.stat));
  t_print_verdict(&v);
  /* must fire: an error 30 times the flushed terms' whole mass */
  float keep = o[3 * N + 4];
  o[3 * N + 4] = keep + 1e-4f;
  v = mm(a, b, o, OC_FP32, OC_FP32, M, N, K, OC_ACT_NONE, "tf32");
  EXPECT(oc_verdict_is_fail(v.kind), "tf32 off by 1e-4: %s", KIND(v));
  o[3 * N + 4] = keep;
  /* FLT_MAX rounds to Inf in tf32: Inf is the profile's own result */
  float a2[2] = {FLT_MAX, 1}, b2[2] = {1e-10f, 1}, inf = INFINITY;
  v = mm(a2, b2, &inf, OC_FP32, OC_FP32, 1, 1, 2, OC_ACT_NONE, "tf32");
  EXPECT(v.kind == OC_INCONCLUSIVE, "tf32 FLT_MAX -> Inf: %s", KIND(v));
  v = mm(a2, b2, &inf, OC_FP32, OC_FP32, 1, 1, 2, OC_ACT_NONE, "fp32");
  EXPECT(v.kind == OC_FAIL_SPECIAL, "fp32 FLT_MAX * 1e-10 = Inf: %s", KIND(v));
  t_line("tf32: flushed subnormal operands pass, a dropped term fails; FLT_MAX -> Inf is "
         "inconclusive under tf32, fail_special under fp32",
         before);
}

enum { NS = 4096 };

static void sigmoid_tail(void) {
  int before = t_fail;
  static float x[NS], s[NS], si[NS], si2[NS];
  uint64_t st = 9;
  for (int i = 0; i < NS; i++) {
    x[i] = (float)(-87 - 17 * oc_rand_unit(&st)); /* [-104, -87] */
    s[i] = 1.0f / (1.0f + expf(-x[i]));
    si[i] = x[i] * s[i];
    si2[i] = x[i] / (1.0f + expf(-x[i]));
  }
  struct oc_verdict v = ew(OC_OP_SIGMOID, "fp32", x, NULL, s, OC_FP32, NS);
  EXPECT(!oc_verdict_is_fail(v.kind), "sigmoid 1/(1+expf(-x)) below -87: %s", KIND(v));
  t_print_verdict(&v);
  v = ew(OC_OP_SILU, "fp32", x, NULL, si, OC_FP32, NS);
  EXPECT(!oc_verdict_is_fail(v.kind), "silu x*sigmoid below -87: %s", KIND(v));
  v = ew(OC_OP_SILU, "fp32", x, NULL, si2, OC_FP32, NS);
  EXPECT(!oc_verdict_is_fail(v.kind), "silu x/(1+expf(-x)) below -87: %s", KIND(v));
  v = ew(OC_OP_SIGMOID, "fp32:math=fast", x, NULL, s, OC_FP32, NS);
  EXPECT(!oc_verdict_is_fail(v.kind) && v.kind != OC_INCONCLUSIVE, "fast math: %s", KIND(v));
  /* must fire: 0 where exp(-x) cannot overflow (x in [-80, -70]: normal results) */
  for (int i = 0; i < NS; i++) {
    x[i] = (float)(-70 - 10 * oc_rand_unit(&st));
    s[i] = i == 17 ? 0.0f : 1.0f / (1.0f + expf(-x[i]));
  }
  v = ew(OC_OP_SIGMOID, "fp32", x, NULL, s, OC_FP32, NS);
  EXPECT(oc_verdict_is_fail(v.kind) && v.n_fail == 1, "0 at x=%g: %s", x[17], KIND(v));
  /* the GEMM epilogue: z = -100 .. -88 and z = -50 */
  float a[4] = {-100, -95, -90, -88}, one = 1, o[4], ys[4];
  for (int i = 0; i < 4; i++) {
    o[i] = 1.0f / (1.0f + expf(-a[i]));
    ys[i] = a[i] * o[i];
  }
  v = mm(a, &one, o, OC_FP32, OC_FP32, 4, 1, 1, OC_ACT_SIGMOID, "fp32");
  EXPECT(!oc_verdict_is_fail(v.kind) && v.kind != OC_INCONCLUSIVE, "epilogue sigmoid: %s", KIND(v));
  v = mm(a, &one, ys, OC_FP32, OC_FP32, 4, 1, 1, OC_ACT_SILU, "fp32");
  EXPECT(!oc_verdict_is_fail(v.kind) && v.kind != OC_INCONCLUSIVE, "epilogue silu: %s", KIND(v));
  v = mm(a, &one, o, OC_FP32, OC_FP32, 4, 1, 1, OC_ACT_SIGMOID, "fp32:math=fast");
  EXPECT(!oc_verdict_is_fail(v.kind) && v.kind != OC_INCONCLUSIVE, "epilogue fast: %s", KIND(v));
  float z = -50, zero = 0;
  v = mm(&z, &one, &zero, OC_FP32, OC_FP32, 1, 1, 1, OC_ACT_SIGMOID, "fp32");
  EXPECT(oc_verdict_is_fail(v.kind), "epilogue sigmoid(-50) = 0: %s", KIND(v));
  /* -Inf: the limit -0 or the formulas' NaN; anything else fails */
  static const enum oc_op lim[] = {OC_OP_SILU, OC_OP_GELU_ERF, OC_OP_GELU_TANH};
  for (int i = 0; i < 3; i++) {
    v = ew1(lim[i], "fp32", -INFINITY, 0, 0, NAN);
    EXPECT(v.kind == OC_PASS, "%s(-inf) = NaN: %s", oc_op_name(lim[i]), KIND(v));
    v = ew1(lim[i], "fp32", -INFINITY, 0, 0, -0.0f);
    EXPECT(v.kind == OC_BITWISE, "%s(-inf) = -0: %s", oc_op_name(lim[i]), KIND(v));
    v = ew1(lim[i], "fp32", -INFINITY, 0, 0, -1.0f);
    EXPECT(oc_verdict_is_fail(v.kind), "%s(-inf) = -1: %s", oc_op_name(lim[i]), KIND(v));
    v = ew1(lim[i], "fp32", -3.0f, 0, 0, NAN);
    EXPECT(v.kind == OC_FAIL_SPECIAL, "%s(-3) = NaN: %s", oc_op_name(lim[i]), KIND(v));
  }
  float ninf = -INFINITY, nan = NAN;
  v = mm(&ninf, &one, &nan, OC_FP32, OC_FP32, 1, 1, 1, OC_ACT_SILU, "fp32");
  EXPECT(v.kind == OC_PASS, "epilogue silu(-inf) = NaN: %s", KIND(v));
  v = mm(&ninf, &one, &zero, OC_FP32, OC_FP32, 1, 1, 1, OC_ACT_RELU, "fp32");
  EXPECT(!oc_verdict_is_fail(v.kind), "epilogue relu(-inf) = 0: %s", KIND(v));
  t_line("sigmoid/silu below -87 (elementwise, epilogue, fast math) pass; 0 for a normal result "
         "fails; silu/gelu at -Inf accept -0 and NaN only",
         before);
}

static float h2f(uint16_t h) { return (float)oc_decode(OC_FP16, h); }

/* fp32 inputs, fp32 arithmetic, fp16 output: the second rounding may land
 * on the other neighbour of an fp16 midpoint. */
static void double_rounding(void) {
  int before = t_fail;
  float x = 1 + 0x1p-11f, y = 0x1p-30f;
  uint16_t k = (uint16_t)oc_encode(OC_FP16, (double)(x + y), OC_OVF_IEEE);
  EXPECT(h2f(k) == 1.0f, "the construction: fp32 sum rounds to the fp16 midpoint");
  struct oc_verdict v = ew(OC_OP_ADD, "fp32:out=fp16", &x, &y, &k, OC_FP16, 1);
  EXPECT(v.kind == OC_PASS, "(half)(x + y): %s", KIND(v));
  uint16_t below = 0x3BFF; /* 1 - 2^-11 */
  v = ew(OC_OP_ADD, "fp32:out=fp16", &x, &y, &below, OC_FP16, 1);
  EXPECT(v.kind == OC_FAIL_VALUE, "the other side: %s", KIND(v));
  static const enum oc_op ops[] = {OC_OP_ADD, OC_OP_SUB, OC_OP_MUL, OC_OP_DIV, OC_OP_SQRT};
  static float a[NS], b[NS];
  static uint16_t o[NS];
  uint64_t st = 3;
  for (int oi = 0; oi < 5; oi++) {
    for (int i = 0; i < NS; i++) {
      a[i] = (float)(oc_rand_unit(&st) * 4);
      b[i] = (float)(oc_rand_unit(&st) * 4 + 0.25);
      float r = ops[oi] == OC_OP_ADD   ? a[i] + b[i]
                : ops[oi] == OC_OP_SUB ? a[i] - b[i]
                : ops[oi] == OC_OP_MUL ? a[i] * b[i]
                : ops[oi] == OC_OP_DIV ? a[i] / b[i]
                                       : sqrtf(a[i]);
      o[i] = (uint16_t)oc_encode(OC_FP16, r, OC_OVF_IEEE);
    }
    v = ew(ops[oi], "fp32:out=fp16", a, oc_op_arity(ops[oi]) == 2 ? b : NULL, o, OC_FP16, NS);
    EXPECT(!oc_verdict_is_fail(v.kind), "%s: %s", oc_op_name(ops[oi]), KIND(v));
    o[5] = (uint16_t)(o[5] + 2); /* two fp16 steps: no double rounding explains it */
    v = ew(ops[oi], "fp32:out=fp16", a, oc_op_arity(ops[oi]) == 2 ? b : NULL, o, OC_FP16, NS);
    EXPECT(v.kind == OC_FAIL_VALUE && v.n_fail == 1, "%s 2 steps off: %s", oc_op_name(ops[oi]),
           KIND(v));
  }
  t_line("fp32 arithmetic rounded to fp16: double rounding passes, two steps off fails", before);
}

static double gauss(uint64_t *st) {
  double u = oc_rand_unit(st), w = oc_rand_unit(st);
  return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(6.283185307179586 * w);
}

/* fp16 running sums of 10^4 N(0,1) values stay inside the rigorous fp32
 * bound; the statistical verdict rejects them, and keeps correct fp32 sums. */
static void statistical(void) {
  int before = t_fail;
  enum { R = 4, L = 10000 };
  uint16_t *x = malloc(R * L * 2);
  float o16[R], o32[R];
  uint64_t st = 21;
  for (int r = 0; r < R; r++) {
    double s16 = 0;
    float s32 = 0;
    for (int i = 0; i < L; i++) {
      x[r * L + i] = (uint16_t)oc_encode(OC_FP16, gauss(&st), OC_OVF_IEEE);
      double xi = oc_decode(OC_FP16, x[r * L + i]);
      s16 = oc_round(OC_FP16, s16 + xi, OC_OVF_IEEE);
      s32 += (float)xi;
    }
    o16[r] = (float)s16;
    o32[r] = s32;
  }
  struct oc_tensor X, O;
  int64_t sx[2] = {R, L}, so[1] = {R};
  oc_tensor_make(&X, x, OC_FP16, 2, sx, NULL);
  struct oc_profile p = prof("fp16_fp32acc:out=fp32");
  struct oc_verdict v;
  oc_tensor_make(&O, o16, OC_FP32, 1, so, NULL);
  oc_check_reduce(OC_RED_SUM, &X, 1, &O, &p, NULL, &v);
  t_print_verdict(&v);
  EXPECT(!oc_verdict_is_fail(v.kind) && v.stat == OC_STAT_REJECTED && v.stat_alpha == 1e-6,
         "fp16 running sum: %s, statistical %s", KIND(v), oc_stat_name(v.stat));
  oc_tensor_make(&O, o32, OC_FP32, 1, so, NULL);
  oc_check_reduce(OC_RED_SUM, &X, 1, &O, &p, NULL, &v);
  EXPECT(!oc_verdict_is_fail(v.kind) && v.stat == OC_STAT_CONSISTENT,
         "fp32 running sum: %s, statistical %s", KIND(v), oc_stat_name(v.stat));
  free(x);
  /* GEMM: fp16 accumulation at K = 8192 on signed data */
  enum { K = 8192 };
  uint16_t *a = malloc(2 * K * 2), *b = malloc(K * 2 * 2);
  float o[4], o2[4];
  for (int i = 0; i < 2 * K; i++) {
    a[i] = (uint16_t)oc_encode(OC_FP16, gauss(&st), OC_OVF_IEEE);
    b[i] = (uint16_t)oc_encode(OC_FP16, gauss(&st), OC_OVF_IEEE);
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      double s = 0;
      float f = 0;
      for (int k = 0; k < K; k++) {
        double pr = oc_decode(OC_FP16, a[i * K + k]) * oc_decode(OC_FP16, b[k * 2 + j]);
        s = oc_round(OC_FP16, s + pr, OC_OVF_IEEE);
        f = fmaf((float)oc_decode(OC_FP16, a[i * K + k]), (float)oc_decode(OC_FP16, b[k * 2 + j]),
                 f);
      }
      o[i * 2 + j] = (float)s;
      o2[i * 2 + j] = f;
    }
  v = mm(a, b, o, OC_FP16, OC_FP32, 2, 2, K, OC_ACT_NONE, "fp16_fp32acc:out=fp32");
  EXPECT(v.stat == OC_STAT_REJECTED, "fp16 accumulation K=8192: %s, statistical %s", KIND(v),
         oc_stat_name(v.stat));
  v = mm(a, b, o2, OC_FP16, OC_FP32, 2, 2, K, OC_ACT_NONE, "fp16_fp32acc:out=fp32");
  EXPECT(!oc_verdict_is_fail(v.kind) && v.stat == OC_STAT_CONSISTENT,
         "fp32 FMA K=8192: %s, statistical %s", KIND(v), oc_stat_name(v.stat));
  /* truncating accumulation has no statistical model */
  v = mm(a, b, o2, OC_FP16, OC_FP32, 2, 2, K, OC_ACT_NONE, "tensorcore_fp16:out=fp32");
  EXPECT(v.stat == OC_STAT_NONE, "tensorcore: statistical %s", oc_stat_name(v.stat));
  free(a), free(b);
  t_line("statistical verdict: fp16 accumulation rejected at K=8192 and over 10^4 N(0,1) sums; "
         "correct fp32 kernels consistent; none for truncating profiles",
         before);
}

/* A correct 1024 x 1024 x 32 GEMM, then one element corrupted by the
 * screen's stated catch factor (and by 500 times its own bound). */
static void screen_catch(void) {
  int before = t_fail;
  enum { M = 1024, N = 1024, K = 32 };
  uint16_t *a = malloc(M * K * 2), *b = malloc(K * N * 2);
  float *o = malloc((size_t)M * N * 4);
  oc_generate(OC_GEN_UNIFORM, OC_BF16, OC_ROLE_A, M, K, 4, NULL, a);
  oc_generate(OC_GEN_UNIFORM, OC_BF16, OC_ROLE_B, K, N, 4, NULL, b);
  double *ad = malloc(M * K * 8), *bd = malloc(K * N * 8);
  for (int i = 0; i < M * K; i++)
    ad[i] = oc_decode(OC_BF16, a[i]);
  for (int i = 0; i < K * N; i++)
    bd[i] = oc_decode(OC_BF16, b[i]);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float f = 0;
      for (int k = 0; k < K; k++)
        f = fmaf((float)ad[i * K + k], (float)bd[k * N + j], f);
      o[(size_t)i * N + j] = f;
    }
  const char *spec = "bf16_fp32acc:out=fp32";
  struct oc_verdict v = mm(a, b, o, OC_BF16, OC_FP32, M, N, K, OC_ACT_NONE, spec);
  t_print_verdict(&v);
  EXPECT(!oc_verdict_is_fail(v.kind) && v.screen_vectors == 2 && v.screen_failed == 0 &&
             v.screen_miss <= 1e-6 && v.screen_catch > 1 && v.screen_catch < 2 * N,
         "correct: %s, %d flagged, catch %g", KIND(v), v.screen_failed, v.screen_catch);
  double catch_f = v.screen_catch;
  /* the bounds of row 517 */
  struct oc_tensor A1, B;
  t_tensor2(&A1, a + 517 * K, OC_BF16, 1, K);
  t_tensor2(&B, b, OC_BF16, K, N);
  struct oc_matmul_args ma = {&A1, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  struct oc_profile p = prof(spec);
  double *ref = malloc(N * 8), *bnd = malloc(N * 8);
  int64_t os[2] = {1, N};
  oc_reference_matmul(&ma, os, 2, &p, ref, bnd);
  double bmax = 0;
  for (int j = 0; j < N; j++)
    bmax = fmax(bmax, bnd[j]);
  /* 601 is no tail, tile sample or residue class of row 517 by luck: any
   * column works, the screen is what finds it */
  float keep = o[517 * N + 601];
  o[517 * N + 601] = (float)(ref[601] + 1.01 * catch_f * bmax);
  v = mm(a, b, o, OC_BF16, OC_FP32, M, N, K, OC_ACT_NONE, spec);
  EXPECT(oc_verdict_is_fail(v.kind) && v.screen_failed >= 1 && v.index[0] == 517 &&
             v.index[1] == 601,
         "catch x bound: %s, %d flagged", KIND(v), v.screen_failed);
  if (catch_f < 500) {
    o[517 * N + 601] = (float)(ref[601] + 500 * bnd[601]);
    v = mm(a, b, o, OC_BF16, OC_FP32, M, N, K, OC_ACT_NONE, spec);
    EXPECT(oc_verdict_is_fail(v.kind) && v.screen_failed >= 1, "500 x its bound: %s", KIND(v));
  }
  printf("  screen single-element catch factor at N=%d: %.1f\n", N, catch_f);
  o[517 * N + 601] = keep;
  free(a), free(b), free(o), free(ad), free(bd), free(ref), free(bnd);
  t_line("screen: a correct GEMM is not flagged; one element beyond the stated catch factor "
         "(and 500x its bound) is found",
         before);
}

static void signed_zeros(void) {
  int before = t_fail;
  struct {
    enum oc_op op;
    float x, y, right, wrong;
  } const cases[] = {
      {OC_OP_RELU, -3, 0, 0.0f, -0.0f},
      {OC_OP_NEG, 0.0f, 0, -0.0f, 0.0f},
      {OC_OP_NEG, -0.0f, 0, 0.0f, -0.0f},
      {OC_OP_ABS, -0.0f, 0, 0.0f, -0.0f},
      {OC_OP_SQRT, -0.0f, 0, -0.0f, 0.0f},
      {OC_OP_MUL, -2, 0.0f, -0.0f, 0.0f},
      {OC_OP_ADD, -0.0f, -0.0f, -0.0f, 0.0f},
      {OC_OP_ADD, 1, -1, 0.0f, -0.0f},
      {OC_OP_SUB, 1, 1, 0.0f, -0.0f},
      {OC_OP_DIV, 0.0f, -4, -0.0f, 0.0f},
      {OC_OP_TANH, -0.0f, 0, -0.0f, 0.0f},
      {OC_OP_SILU, -0.0f, 0, -0.0f, 0.0f},
      {OC_OP_MUL, 1e-30f, -1e-30f, -0.0f, 0.0f}, /* underflow keeps the sign */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int bin = oc_op_arity(cases[i].op) == 2;
    struct oc_verdict v = ew1(cases[i].op, "fp32", cases[i].x, cases[i].y, bin, cases[i].right);
    EXPECT(v.kind == OC_BITWISE, "%s(%g, %g) = %g: %s", oc_op_name(cases[i].op), cases[i].x,
           cases[i].y, cases[i].right, KIND(v));
    v = ew1(cases[i].op, "fp32", cases[i].x, cases[i].y, bin, cases[i].wrong);
    EXPECT(v.kind == OC_FAIL_SPECIAL && strstr(v.detail, "sign of zero"), "%s(%g, %g) = %g: %s",
           oc_op_name(cases[i].op), cases[i].x, cases[i].y, cases[i].wrong, KIND(v));
  }
  /* relu(+-0): fmaxf(x, 0) and x > 0 ? x : 0 differ, both are relu */
  struct oc_verdict v = ew1(OC_OP_RELU, "fp32", -0.0f, 0, 0, -0.0f);
  EXPECT(!oc_verdict_is_fail(v.kind), "relu(-0) = -0: %s", KIND(v));
  v = ew1(OC_OP_RELU, "fp32", -0.0f, 0, 0, 0.0f);
  EXPECT(!oc_verdict_is_fail(v.kind), "relu(-0) = +0: %s", KIND(v));
  t_line("signed zeros: relu(-3) = +0, neg(+0) = -0, abs(-0) = +0, sqrt(-0) = -0 and IEEE "
         "sums/products are checked; relu(+-0) either",
         before);
}

static void ftz_elementwise(void) {
  int before = t_fail;
  const float sub = 3e-39f; /* fp32 subnormal */
  struct {
    enum oc_op op;
    float x, y, flushed;
  } const cases[] = {
      {OC_OP_MUL, sub, 2, 0.0f},      /* input flushed */
      {OC_OP_MUL, 1e-20f, 1e-20f, 0}, /* result flushed */
      {OC_OP_ADD, sub, sub, 0.0f},    /* both */
      {OC_OP_RELU, sub, 0, 0.0f},     /* input flushed */
      {OC_OP_MUL, -sub, 2, -0.0f},    /* sign kept */
      {OC_OP_DIV, 1, sub, INFINITY},  /* a flushed divisor is a zero divisor */
      {OC_OP_SQRT, -sub, 0, -0.0f},   /* sqrt(-0), not sqrt(-tiny) = NaN */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int bin = oc_op_arity(cases[i].op) == 2;
    struct oc_verdict v =
        ew1(cases[i].op, "fp32:ftz=1", cases[i].x, cases[i].y, bin, cases[i].flushed);
    EXPECT(!oc_verdict_is_fail(v.kind), "ftz %s(%g, %g) = %g: %s", oc_op_name(cases[i].op),
           cases[i].x, cases[i].y, cases[i].flushed, KIND(v));
    v = ew1(cases[i].op, "fp32", cases[i].x, cases[i].y, bin, cases[i].flushed);
    EXPECT(oc_verdict_is_fail(v.kind), "no ftz %s(%g, %g) = %g: %s", oc_op_name(cases[i].op),
           cases[i].x, cases[i].y, cases[i].flushed, KIND(v));
  }
  struct oc_verdict v = ew1(OC_OP_MUL, "fp32:ftz=1", 2, 3, 1, 0);
  EXPECT(oc_verdict_is_fail(v.kind), "ftz 2*3 = 0: %s", KIND(v));
  v = ew1(OC_OP_MUL, "fp32:ftz=1", -sub, 2, 1, 0.0f);
  EXPECT(oc_verdict_is_fail(v.kind), "ftz -sub*2 = +0: %s", KIND(v));
  v = ew1(OC_OP_EXP, "fp32:ftz=1", -100, 0, 0, 0);
  EXPECT(!oc_verdict_is_fail(v.kind), "ftz exp(-100) = 0: %s", KIND(v));
  v = ew1(OC_OP_EXP, "fp32:ftz=1", -80, 0, 0, 0);
  EXPECT(oc_verdict_is_fail(v.kind), "ftz exp(-80) = 0 (a normal result): %s", KIND(v));
  t_line("flush-to-zero: flushed inputs and results pass under ftz=1 and fail without it; "
         "zeros of normal results still fail",
         before);
}

static void e4m3fn_gemm(void) {
  int before = t_fail;
  float a[2] = {250, 250}, b[2] = {1, 1}, c[2] = {220, 220};
  uint8_t nan = 0x7F, max = 0x7E;
  struct oc_verdict v = mm(a, b, &nan, OC_FP32, OC_E4M3FN, 1, 1, 2, OC_ACT_NONE, "fp32:out=e4m3fn");
  EXPECT(v.kind == OC_BITWISE, "500 -> NaN: %s", KIND(v));
  v = mm(a, b, &max, OC_FP32, OC_E4M3FN, 1, 1, 2, OC_ACT_NONE, "fp32:out=e4m3fn");
  EXPECT(v.kind == OC_FAIL_SPECIAL, "500 -> 448: %s", KIND(v));
  v = mm(c, b, &max, OC_FP32, OC_E4M3FN, 1, 1, 2, OC_ACT_NONE, "fp32:out=e4m3fn");
  EXPECT(v.kind == OC_BITWISE, "440 -> 448: %s", KIND(v));
  v = mm(c, b, &nan, OC_FP32, OC_E4M3FN, 1, 1, 2, OC_ACT_NONE, "fp32:out=e4m3fn");
  EXPECT(v.kind == OC_FAIL_SPECIAL, "440 -> NaN: %s", KIND(v));
  v = mm(a, b, &max, OC_FP32, OC_E4M3FN, 1, 1, 2, OC_ACT_NONE, "fp32:out=e4m3fn:ovf=saturate");
  EXPECT(!oc_verdict_is_fail(v.kind), "saturate 500 -> 448: %s", KIND(v));
  t_line("GEMM into e4m3fn: NaN above 464 under ovf=ieee, 448 below; saturate clamps", before);
}

static void masked_rows(void) {
  int before = t_fail;
  enum { L = 8 };
  float x[2 * L], o[2 * L];
  for (int i = 0; i < L; i++) {
    x[i] = (float)i;
    x[L + i] = -INFINITY;
  }
  double ref[L];
  struct oc_tensor X, O;
  int64_t sh[2] = {2, L}, s1[2] = {1, L};
  oc_tensor_make(&X, x, OC_FP32, 2, s1, NULL);
  struct oc_profile p = prof("fp32");
  oc_reference_softmax(OC_SOFTMAX, &X, 1, &p, ref, NULL);
  for (int i = 0; i < L; i++)
    o[i] = (float)ref[i];
  oc_tensor_make(&X, x, OC_FP32, 2, sh, NULL);
  oc_tensor_make(&O, o, OC_FP32, 2, sh, NULL);
  for (int m = 0; m < 2; m++) {
    struct oc_profile q = prof(m ? "fp32:masked_row=zero" : "fp32");
    struct oc_verdict v;
    for (int i = 0; i < L; i++)
      o[L + i] = m ? 0.0f : NAN;
    oc_check_softmax(OC_SOFTMAX, &X, 1, &O, &q, NULL, &v);
    EXPECT(!oc_verdict_is_fail(v.kind), "masked_row=%s, right value: %s", m ? "zero" : "nan",
           KIND(v));
    for (int i = 0; i < L; i++)
      o[L + i] = m ? NAN : 0.0f;
    oc_check_softmax(OC_SOFTMAX, &X, 1, &O, &q, NULL, &v);
    EXPECT(v.kind == OC_FAIL_SPECIAL, "masked_row=%s, other value: %s", m ? "zero" : "nan",
           KIND(v));
  }
  t_line("all -Inf softmax row: NaN by default (PyTorch), 0 under masked_row=zero", before);
}

/* relu_fmax (fmaxf(x, 0)): NaN -> +0; relu keeps NaN. clamp: exact. */
static void relu_variant_clamp(void) {
  int before = t_fail;
  struct oc_verdict v = ew1(OC_OP_RELU_FMAX, "fp32", NAN, 0, 0, 0.0f);
  EXPECT(v.kind == OC_BITWISE, "relu_fmax(NaN) = 0: %s", KIND(v));
  v = ew1(OC_OP_RELU_FMAX, "fp32", NAN, 0, 0, NAN);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "relu_fmax(NaN) = NaN: %s", KIND(v));
  v = ew1(OC_OP_RELU, "fp32", NAN, 0, 0, 0.0f);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "relu(NaN) = 0: %s", KIND(v));
  v = ew1(OC_OP_RELU_FMAX, "fp32", -3, 0, 0, -0.0f);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "relu_fmax(-3) = -0: %s", KIND(v));
  v = ew1(OC_OP_RELU_FMAX, "fp32", 2.5f, 0, 0, 2.5f);
  EXPECT(v.kind == OC_BITWISE, "relu_fmax(2.5): %s", KIND(v));
  float x[5] = {-3, 0.5f, 7, NAN, -0.0f}, ok[5] = {-1, 0.5f, 2, NAN, -0.0f};
  struct oc_tensor X, O;
  int64_t sh[1] = {5};
  oc_tensor_make(&X, x, OC_FP32, 1, sh, NULL);
  oc_tensor_make(&O, ok, OC_FP32, 1, sh, NULL);
  struct oc_profile p = prof("fp32");
  EXPECT(oc_check_clamp(&X, -1, 2, &O, &p, NULL, &v) == 0 && v.kind == OC_BITWISE,
         "clamp(x, -1, 2): %s", KIND(v));
  ok[2] = 7; /* upper bound ignored */
  oc_check_clamp(&X, -1, 2, &O, &p, NULL, &v);
  EXPECT(v.kind == OC_FAIL_VALUE && v.index[0] == 2, "clamp ignoring max: %s", KIND(v));
  ok[2] = 2;
  ok[3] = -1; /* NaN swallowed */
  oc_check_clamp(&X, -1, 2, &O, &p, NULL, &v);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "clamp swallowing NaN: %s", KIND(v));
  ok[3] = NAN;
  EXPECT(oc_check_clamp(&X, -INFINITY, 2, &O, &p, NULL, &v) == 0 && v.kind == OC_FAIL_VALUE,
         "clamp(x, max=2) with -3 -> -1: %s", KIND(v));
  float z[1] = {-5}, zo[1] = {-0.0f};
  int64_t s1[1] = {1};
  oc_tensor_make(&X, z, OC_FP32, 1, s1, NULL);
  oc_tensor_make(&O, zo, OC_FP32, 1, s1, NULL);
  oc_check_clamp(&X, 0.0, 1, &O, &p, NULL, &v);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "clamp(-5, +0, 1) = -0: %s", KIND(v));
  t_line("relu_fmax maps NaN to +0 (relu keeps it); clamp is exact, keeps NaN and the bound's "
         "zero sign",
         before);
}

int main(void) {
  partial_overflow();
  tf32_operands();
  sigmoid_tail();
  double_rounding();
  statistical();
  screen_catch();
  signed_zeros();
  ftz_elementwise();
  e4m3fn_gemm();
  masked_rows();
  relu_variant_clamp();
  return t_done("test_b_regress");
}
