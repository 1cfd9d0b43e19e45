/* test/oracle/test_b_elementwise.c — oc_check_elementwise over tensors:
 * a correctly rounded kernel is bitwise, one 1 ulp off passes a 2-ulp
 * budget, 3 ulps off or a wrong value fails, the math mode widens the
 * budget, broadcasting works, and a swallowed NaN is fail_special. */
#include "test_b_util.h"

enum { N = 2048 };

/* k ulps up (k > 0) or down (k < 0) */
static float f32_steps(float r, int k) {
  for (int i = 0; i < (k < 0 ? -k : k); i++)
    r = nextafterf(r, k < 0 ? -INFINITY : INFINITY);
  return r;
}

static struct oc_verdict run1(enum oc_op op, const char *prof, const float *x, const float *out) {
  struct oc_tensor X, O;
  int64_t sh[2] = {N / 64, 64};
  oc_tensor_make(&X, x, OC_FP32, 2, sh, NULL);
  oc_tensor_make(&O, out, OC_FP32, 2, sh, NULL);
  struct oc_profile p;
  oc_profile_parse(prof, &p);
  struct oc_verdict v;
  int rc = oc_check_elementwise(op, &X, NULL, &O, &p, NULL, &v);
  EXPECT(rc == 0, "rc %d", rc);
  EXPECT(v.checked == N && v.total == N && v.miss_prob == 0, "coverage %lld", (long long)v.checked);
  return v;
}

static void test_fp32_exp(void) {
  int before = t_fail;
  static float x[N], o[N];
  uint64_t st = 11;
  for (int i = 0; i < N; i++)
    x[i] = (float)(20 * oc_rand_unit(&st) - 10);
  for (int i = 0; i < N; i++)
    o[i] = (float)oc_op_round(OC_OP_EXP, OC_FP32, OC_OVF_IEEE, x[i], 0);
  struct oc_verdict v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(v.kind == OC_BITWISE && v.n_bitwise == N, "correctly rounded: %s",
         oc_verdict_name(v.kind));
  /* both signs: >= 64 errors all of one sign would be reported suspect */
  for (int i = 0; i < N; i += 3)
    o[i] = f32_steps(o[i], i % 2 ? 1 : -1);
  v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(v.kind == OC_PASS, "1 ulp off, 2-ulp budget: %s", oc_verdict_name(v.kind));
  t_print_verdict(&v);
  o[100] = f32_steps((float)oc_op_round(OC_OP_EXP, OC_FP32, OC_OVF_IEEE, x[100], 0), 3);
  v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(v.kind == OC_FAIL_VALUE && v.n_fail == 1 && v.index[0] == 1 && v.index[1] == 36,
         "3 ulps off: %s n_fail %lld", oc_verdict_name(v.kind), (long long)v.n_fail);
  t_print_verdict(&v);
  /* the same 3 ulps are within __expf's 2 + floor(1.173|x|) when |x| >= 0.86 */
  x[100] = 2.5f;
  o[7] = f32_steps(o[7], -1); /* keep the signs of the errors mixed */
  o[100] = f32_steps((float)oc_op_round(OC_OP_EXP, OC_FP32, OC_OVF_IEEE, x[100], 0), 3);
  v = run1(OC_OP_EXP, "fp32:math=fast", x, o);
  EXPECT(v.kind == OC_PASS, "fast math widens the budget: %s", oc_verdict_name(v.kind));
  v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(v.kind == OC_FAIL_VALUE, "precise does not: %s", oc_verdict_name(v.kind));
  /* a wrong value */
  o[100] = (float)oc_op_round(OC_OP_EXP, OC_FP32, OC_OVF_IEEE, x[100], 0);
  o[7] *= 1.01f;
  v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(v.kind == OC_FAIL_VALUE && v.n_fail == 1, "wrong value: %s", oc_verdict_name(v.kind));
  o[7] = (float)oc_op_round(OC_OP_EXP, OC_FP32, OC_OVF_IEEE, x[7], 0);
  /* NaN in, number out */
  x[9] = NAN;
  o[9] = 0;
  v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(v.kind == OC_FAIL_SPECIAL && v.n_special == 1, "NaN swallowed: %s",
         oc_verdict_name(v.kind));
  t_print_verdict(&v);
  o[9] = NAN;
  v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(!oc_verdict_is_fail(v.kind), "NaN propagated: %s", oc_verdict_name(v.kind));
  /* overflow: exp(100) is +Inf in fp32 and must be */
  x[9] = 100;
  o[9] = 3.4e38f;
  v = run1(OC_OP_EXP, "fp32", x, o);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "finite where Inf is due: %s", oc_verdict_name(v.kind));
  t_line(
      "elementwise exp fp32: bitwise, 1 ulp passes, 3 ulps/wrong value fail, math mode, NaN, Inf",
      before);
}

/* bf16 in and out (table path), computed the usual way in fp32 and rounded once. */
static void test_bf16_tables(void) {
  int before = t_fail;
  static uint16_t xb[N], ob[N];
  uint64_t st = 5;
  for (int i = 0; i < N; i++)
    t_put(xb, OC_BF16, i, 16 * oc_rand_unit(&st) - 8);
  int64_t sh[1] = {N};
  struct oc_tensor X, O;
  oc_tensor_make(&X, xb, OC_BF16, 1, sh, NULL);
  oc_tensor_make(&O, ob, OC_BF16, 1, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("bf16", &p);
  static const enum oc_op ops[] = {OC_OP_GELU_ERF, OC_OP_SILU, OC_OP_TANH, OC_OP_SIGMOID};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    for (int i = 0; i < N; i++) {
      float xv = (float)oc_tensor_at(&X, i), r;
      switch (ops[k]) {
      case OC_OP_GELU_ERF: r = 0.5f * xv * (1 + erff(xv * 0.70710678f)); break;
      case OC_OP_SILU: r = xv / (1 + expf(-xv)); break;
      case OC_OP_TANH: r = tanhf(xv); break;
      default: r = 1 / (1 + expf(-xv));
      }
      t_put(ob, OC_BF16, i, r);
    }
    struct oc_verdict v;
    EXPECT(oc_check_elementwise(ops[k], &X, NULL, &O, &p, NULL, &v) == 0, "rc");
    EXPECT(v.kind == OC_PASS || v.kind == OC_BITWISE, "%s: %s", oc_op_name(ops[k]),
           oc_verdict_name(v.kind));
    EXPECT(v.n_bitwise > N / 2, "%s: %lld bitwise", oc_op_name(ops[k]), (long long)v.n_bitwise);
    /* the same outputs judged as the wrong op fail */
    if (ops[k] == OC_OP_SILU) {
      EXPECT(oc_check_elementwise(OC_OP_GELU_ERF, &X, NULL, &O, &p, NULL, &v) == 0, "rc");
      EXPECT(v.kind == OC_FAIL_VALUE, "silu judged as gelu: %s", oc_verdict_name(v.kind));
    }
  }
  t_line("elementwise bf16 (tabulated): fp32 gelu/silu/tanh/sigmoid rounded once pass", before);
}

static void test_binary_broadcast(void) {
  int before = t_fail;
  enum { R = 32, C = 48 };
  static uint16_t xb[R * C], yb[C], ob[R * C];
  uint64_t st = 9;
  for (int i = 0; i < R * C; i++)
    t_put(xb, OC_FP16, i, 8 * oc_rand_unit(&st) - 4);
  for (int j = 0; j < C; j++)
    t_put(yb, OC_FP16, j, 4 * oc_rand_unit(&st) - 2);
  int64_t sh[2] = {R, C}, shy[2] = {1, C};
  struct oc_tensor X, Y, O;
  oc_tensor_make(&X, xb, OC_FP16, 2, sh, NULL);
  oc_tensor_make(&Y, yb, OC_FP16, 2, shy, NULL);
  oc_tensor_make(&O, ob, OC_FP16, 2, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("fp16", &p);
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++) /* fp32 then one rounding: innocuous (24 >= 2*11+2) */
      t_put(ob, OC_FP16, i * C + j,
            (float)oc_tensor_at(&X, i * C + j) / (float)oc_tensor_at(&Y, j));
  struct oc_verdict v;
  EXPECT(oc_check_elementwise(OC_OP_DIV, &X, &Y, &O, &p, NULL, &v) == 0, "rc");
  EXPECT(v.kind == OC_BITWISE, "fp16 div via fp32: %s", oc_verdict_name(v.kind));
  t_put(ob, OC_FP16, 5 * C + 7, oc_tensor_at(&O, 5 * C + 7) * 1.5);
  EXPECT(oc_check_elementwise(OC_OP_DIV, &X, &Y, &O, &p, NULL, &v) == 0, "rc");
  EXPECT(v.kind == OC_FAIL_VALUE && v.index[0] == 5 && v.index[1] == 7, "%s at (%lld,%lld)",
         oc_verdict_name(v.kind), (long long)v.index[0], (long long)v.index[1]);
  EXPECT(oc_check_elementwise(OC_OP_DIV, &X, NULL, &O, &p, NULL, &v) == -1, "binary without y");
  int64_t bad[2] = {2, C};
  struct oc_tensor Yb;
  oc_tensor_make(&Yb, yb, OC_FP16, 2, bad, NULL);
  EXPECT(oc_check_elementwise(OC_OP_ADD, &X, &Yb, &O, &p, NULL, &v) == -1, "shape mismatch");
  t_line("elementwise binary: broadcast y, bitwise fp16 div, corrupted element located", before);
}

int main(void) {
  test_fp32_exp();
  test_bf16_tables();
  test_binary_broadcast();
  return t_done("test_b_elementwise");
}
