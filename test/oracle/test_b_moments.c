/* test/oracle/test_b_moments.c — var and std along an axis (oc_check_var):
 * fp32 kernels that evaluate them as ATen may (Welford updates, Welford
 * merges in a tree, two passes, in any order) pass for every correction;
 * a kernel that divides by n where n - 1 is asked, one that uses the
 * one-pass formula sum x^2 - n mean^2 on data with a large mean, and one
 * that accumulates in fp16 fail; Inf/NaN rows give NaN, n <= correction
 * divides by zero. */
#include "test_b_util.h"

enum { R = 24, N = 2000 };

struct wf {
  float n, m, m2;
};

/* ATen's WelfordOps in fp32: reduce (one point) and combine (two states). */
static struct wf wf_reduce(struct wf a, float x) {
  float nf = a.n + 1, d = x - a.m, m = a.m + d / nf, d2 = x - m;
  return (struct wf){nf, m, a.m2 + d * d2};
}
static struct wf wf_combine(struct wf a, struct wf b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  float d = b.m - a.m, nn = a.n + b.n, r = b.n / nn;
  return (struct wf){nn, a.m + d * r, a.m2 + b.m2 + d * d * a.n * r};
}

enum alg { SEQ, TREE, LANES, TWOPASS, BIASED, ONEPASS, HALF, NALG };
static const char *const alg_name[NALG] = {"welford_seq", "welford_tree", "welford_32_lanes",
                                           "two_pass",    "divides_by_n", "sum_sq_minus_mean",
                                           "fp16_welford"};

/* Welford over x[lo, hi) by halves: each leaf a run of up to 4 updates */
static struct wf wf_tree(const float *x, int lo, int hi) {
  if (hi - lo <= 4) {
    struct wf a = {0, 0, 0};
    for (int i = lo; i < hi; i++)
      a = wf_reduce(a, x[i]);
    return a;
  }
  int mid = lo + (hi - lo) / 3;
  return wf_combine(wf_tree(x, lo, mid), wf_tree(x, mid, hi));
}

static float kernel(enum alg a, const float *x, int n, float corr, int sq) {
  struct wf s = {0, 0, 0};
  switch (a) {
  case SEQ:
  case BIASED:
    for (int i = 0; i < n; i++)
      s = wf_reduce(s, x[i]);
    break;
  case TREE: s = wf_tree(x, 0, n); break;
  case LANES: { /* 32 lanes strided, then a shuffle-down tree */
    struct wf l[32];
    memset(l, 0, sizeof l);
    for (int i = 0; i < n; i++)
      l[i % 32] = wf_reduce(l[i % 32], x[i]);
    for (int off = 16; off > 0; off /= 2)
      for (int k = 0; k < off; k++)
        l[k] = wf_combine(l[k], l[k + off]);
    s = l[0];
    break;
  }
  case TWOPASS: {
    float t = 0;
    for (int i = n - 1; i >= 0; i--)
      t += x[i];
    float m = t / (float)n, q = 0;
    for (int i = 0; i < n; i++)
      q += (x[i] - m) * (x[i] - m);
    s = (struct wf){(float)n, m, q};
    break;
  }
  case ONEPASS: {
    float t = 0, q = 0;
    for (int i = 0; i < n; i++)
      t += x[i], q += x[i] * x[i];
    s = (struct wf){(float)n, t / n, q - t * t / n};
    break;
  }
  case HALF: { /* the Welford state kept in fp16 */
    double m = 0, m2 = 0;
    for (int i = 0; i < n; i++) {
      double d = t_rnd(OC_FP16, x[i] - m);
      m = t_rnd(OC_FP16, m + t_rnd(OC_FP16, d / (i + 1)));
      m2 = t_rnd(OC_FP16, m2 + t_rnd(OC_FP16, d * t_rnd(OC_FP16, x[i] - m)));
    }
    s = (struct wf){(float)n, (float)m, (float)m2};
    break;
  }
  case NALG: break;
  }
  float dv = a == BIASED ? s.n : s.n - corr;
  float v = s.m2 / dv;
  return sq ? sqrtf(v) : v;
}

static struct oc_verdict run(enum alg a, const float *x, int n, float corr, int sq, float *o) {
  for (int r = 0; r < R; r++)
    o[r] = kernel(a, x + r * n, n, corr, sq);
  struct oc_tensor X, O;
  t_tensor2(&X, x, OC_FP32, R, n);
  int64_t sh[1] = {R};
  oc_tensor_make(&O, o, OC_FP32, 1, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct oc_verdict v;
  EXPECT(oc_check_var(&X, 1, corr, sq, &O, &p, NULL, &v) == 0, "rc");
  return v;
}

static void algorithms(void) {
  int before = t_fail;
  static float x[R * N], o[R];
  uint64_t st = 7;
  for (int n = 2; n <= N; n = n * 3 + 1)
    for (int shift = 0; shift < 3; shift++) {
      /* zero mean; a mean 10 times the spread; 3000 times (one-pass loses it) */
      double mean = shift == 0 ? 0 : shift == 1 ? 10 : 3000;
      for (int i = 0; i < R * n; i++)
        x[i] = (float)(mean + 2 * oc_rand_unit(&st) - 1);
      for (int sq = 0; sq < 2; sq++)
        for (int ci = 0; ci < 3; ci++) {
          float corr = ci == 0 ? 1.0f : ci == 1 ? 0.0f : 0.5f;
          for (int a = 0; a < NALG; a++) {
            struct oc_verdict v = run((enum alg)a, x, n, corr, sq, o);
            int wrong = (a == BIASED && corr != 0 && n < 40) || (a == ONEPASS && shift == 2) ||
                        (a == HALF && shift > 0);
            int right = a <= TWOPASS || (a == BIASED && corr == 0);
            if (right)
              EXPECT(!oc_verdict_is_fail(v.kind), "%s n=%d mean=%g corr=%g %s: %s", alg_name[a], n,
                     mean, corr, sq ? "std" : "var", oc_verdict_name(v.kind));
            if (wrong)
              EXPECT(oc_verdict_is_fail(v.kind), "%s n=%d mean=%g corr=%g %s: %s", alg_name[a], n,
                     mean, corr, sq ? "std" : "var", oc_verdict_name(v.kind));
          }
        }
    }
  t_line("var/std: Welford (sequential, tree, 32 lanes) and two passes pass for corrections 1, 0, "
         "0.5; dividing by n, sum x^2 - n mean^2 at a large mean and an fp16 state fail",
         before);
}

static void specials(void) {
  int before = t_fail;
  static float x[R * 4], o[R];
  for (int i = 0; i < R * 4; i++)
    x[i] = (float)(i % 5) - 2;
  x[1] = INFINITY;
  x[6] = NAN;
  for (int k = 8; k < 12; k++)
    x[k] = 1.5f; /* equal points: exactly 0 */
  struct oc_verdict v = run(SEQ, x, 4, 1, 0, o);
  EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "Inf/NaN rows: %s", oc_verdict_name(v.kind));
  EXPECT(o[0] != o[0] && o[1] != o[1] && o[2] == 0, "the kernel's own specials");
  o[0] = 0;
  struct oc_tensor X, O;
  t_tensor2(&X, x, OC_FP32, R, 4);
  int64_t sh[1] = {R};
  oc_tensor_make(&O, o, OC_FP32, 1, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  EXPECT(oc_check_var(&X, 1, 1, 0, &O, &p, NULL, &v) == 0 && v.kind == OC_FAIL_SPECIAL,
         "a number for an Inf row: %s", oc_verdict_name(v.kind));
  /* n = 4 <= correction 4: M2 / 0, Inf (or NaN), NaN where M2 is 0 */
  v = run(SEQ, x, 4, 4, 0, o);
  EXPECT(!oc_verdict_is_fail(v.kind) && isinf(o[3]), "zero divisor: %s", oc_verdict_name(v.kind));
  o[3] = 7;
  EXPECT(oc_check_var(&X, 1, 4, 0, &O, &p, NULL, &v) == 0 && v.kind == OC_FAIL_SPECIAL,
         "a number for a zero divisor: %s", oc_verdict_name(v.kind));
  /* fp64 subnormal data: every square underflows, a correct kernel's
   * var is 0 and its std 0 where the exact std is about 1e-310 */
  static double xd[8] = {3e-310, -2e-310, 1e-310, 4e-310, -3e-310, 2e-310, 0, 5e-311};
  double od = 0;
  struct oc_tensor XD, OD;
  int64_t shd[1] = {1};
  t_tensor2(&XD, xd, OC_FP64, 1, 8);
  oc_tensor_make(&OD, &od, OC_FP64, 1, shd, NULL);
  struct oc_profile pd;
  oc_profile_parse("fp64", &pd);
  for (int sq = 0; sq < 2; sq++)
    EXPECT(oc_check_var(&XD, 1, 1, sq, &OD, &pd, NULL, &v) == 0 && !oc_verdict_is_fail(v.kind),
           "fp64 subnormal %s 0: %s", sq ? "std" : "var", oc_verdict_name(v.kind));
  /* a bf16 accumulator over rows of 200: no finite bound, inconclusive */
  static float xl[R * 200], ol[R];
  for (int i = 0; i < R * 200; i++)
    xl[i] = (float)(i % 17) / 16;
  for (int r = 0; r < R; r++)
    ol[r] = kernel(SEQ, xl + r * 200, 200, 1, 0);
  struct oc_tensor XL, OL;
  t_tensor2(&XL, xl, OC_FP32, R, 200);
  int64_t shl[1] = {R};
  oc_tensor_make(&OL, ol, OC_FP32, 1, shl, NULL);
  struct oc_profile pb;
  EXPECT(oc_profile_parse("fp32:acc=bf16", &pb) == 0, "fp32:acc=bf16");
  EXPECT(oc_check_var(&XL, 1, 1, 0, &OL, &pb, NULL, &v) == 0 && v.kind == OC_INCONCLUSIVE,
         "bf16 accumulator, n = 200: %s", oc_verdict_name(v.kind));
  t_line("var/std: Inf/NaN rows give NaN, equal points 0, a zero divisor Inf or NaN; fp64 "
         "subnormal data whose squares underflow; no finite bound: inconclusive",
         before);
}

int main(void) {
  algorithms();
  specials();
  return t_done("test_b_moments");
}
