/* test/oracle/test_b_specials.c — special values and overflow regimes in
 * which correct IEEE kernels (and PyTorch) must not be flagged, and the
 * wrong answers there that must still be: attention with NaN/Inf in V (per
 * column), masked keys (skip, multiply, either), subnormal outputs from
 * underflowing weights. */
#include <float.h>

#include "test_b_util.h"

/* ---------------------------------------------------------- attention */

enum { AS = 8, AD = 4 };

/* A flash-style fp32 kernel over fp32 q, k, v [AS, AD]: online softmax;
 * masked: 0 skips the masked keys, 1 multiplies them by weight 0 (math
 * SDPA). */
static void att_sim(const float *q, const float *k, const float *v, int causal, int masked,
                    float *o) {
  for (int i = 0; i < AS; i++) {
    float m = -INFINITY, l = 0, acc[AD] = {0};
    for (int j = 0; j < AS; j++) {
      int hidden = causal && j > i;
      if (hidden && !masked) continue;
      float s = 0;
      for (int d = 0; d < AD; d++)
        s = fmaf(q[i * AD + d], k[j * AD + d], s);
      s *= 0.5f;
      if (hidden) s = -INFINITY;
      float nm = s > m ? s : m, cor = expf(m - nm), pj = expf(s - nm);
      l = l * cor + pj;
      for (int d = 0; d < AD; d++)
        acc[d] = acc[d] * cor + pj * v[j * AD + d];
      m = nm;
    }
    for (int d = 0; d < AD; d++)
      o[i * AD + d] = acc[d] / l;
  }
}

static enum oc_verdict_kind att_judge(const float *q, const float *k, const float *v,
                                      const float *o, int causal, enum oc_masked masked) {
  int64_t sh[2] = {AS, AD};
  struct oc_tensor Q, K, V, O;
  oc_tensor_make(&Q, q, OC_FP32, 2, sh, NULL);
  oc_tensor_make(&K, k, OC_FP32, 2, sh, NULL);
  oc_tensor_make(&V, v, OC_FP32, 2, sh, NULL);
  oc_tensor_make(&O, o, OC_FP32, 2, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32:softmax=online", &p);
  struct oc_attention_args a = {&Q, &K, &V, 0.5, causal, OC_FP32, masked};
  struct oc_verdict vd;
  if (oc_check_attention(&a, &O, &p, NULL, &vd)) return OC_FAIL_VALUE + 100;
  if (vd.kind != OC_PASS && vd.kind != OC_BITWISE) t_print_verdict(&vd);
  return vd.kind;
}

#define PASSES(k) ((k) == OC_PASS || (k) == OC_BITWISE)

static void test_attention(void) {
  int before = t_fail;
  float q[AS * AD], k[AS * AD], v[AS * AD], o[AS * AD];
  for (int i = 0; i < AS * AD; i++) {
    q[i] = (float)sin(1.3 * i);
    k[i] = (float)cos(0.7 * i);
    v[i] = (float)sin(0.31 * i + 1);
  }
  /* A NaN in V column 1 (row 2), no mask: only output column 1 is NaN. */
  float vn[AS * AD];
  memcpy(vn, v, sizeof v);
  vn[2 * AD + 1] = NAN;
  att_sim(q, k, vn, 0, 0, o);
  EXPECT(isnan(o[0 * AD + 1]) && !isnan(o[0 * AD + 2]), "the kernel's own semantics");
  EXPECT(PASSES(att_judge(q, k, vn, o, 0, OC_MASKED_EITHER)), "NaN in V: per column");
  float bad[AS * AD];
  memcpy(bad, o, sizeof o);
  bad[3 * AD + 1] = 0.5f; /* a number where NaN must be */
  EXPECT(att_judge(q, k, vn, bad, 0, OC_MASKED_EITHER) == OC_FAIL_SPECIAL, "NaN dropped");
  memcpy(bad, o, sizeof o);
  bad[3 * AD + 2] = NAN; /* NaN in a column without one */
  EXPECT(att_judge(q, k, vn, bad, 0, OC_MASKED_EITHER) == OC_FAIL_SPECIAL, "NaN spread");

  /* An Inf in V with a positive weight: +-Inf in that column. */
  float vi[AS * AD];
  memcpy(vi, v, sizeof v);
  vi[5 * AD + 3] = -INFINITY;
  att_sim(q, k, vi, 0, 0, o);
  EXPECT(o[0] == o[0] && o[0 * AD + 3] == -INFINITY, "the kernel's own semantics");
  EXPECT(PASSES(att_judge(q, k, vi, o, 0, OC_MASKED_EITHER)), "Inf in V gives Inf");
  memcpy(bad, o, sizeof o);
  bad[4 * AD + 3] = NAN;
  EXPECT(att_judge(q, k, vi, bad, 0, OC_MASKED_EITHER) == OC_FAIL_SPECIAL, "NaN for -Inf");
  /* +Inf and -Inf in one column: NaN */
  vi[6 * AD + 3] = INFINITY;
  att_sim(q, k, vi, 0, 0, o);
  EXPECT(isnan(o[3]) && PASSES(att_judge(q, k, vi, o, 0, OC_MASKED_EITHER)), "Inf - Inf");

  /* Causal, a NaN in V at key 5: queries 0..4 do not attend to it. */
  memcpy(vn, v, sizeof v);
  vn[5 * AD + 0] = NAN;
  float skip[AS * AD], mult[AS * AD];
  att_sim(q, k, vn, 1, 0, skip);
  att_sim(q, k, vn, 1, 1, mult);
  EXPECT(!isnan(skip[2 * AD]) && isnan(mult[2 * AD]), "the kernels' own semantics");
  EXPECT(PASSES(att_judge(q, k, vn, skip, 1, OC_MASKED_EITHER)), "skip under either");
  EXPECT(PASSES(att_judge(q, k, vn, mult, 1, OC_MASKED_EITHER)), "multiply under either");
  EXPECT(PASSES(att_judge(q, k, vn, skip, 1, OC_MASKED_SKIP)), "skip under skip");
  EXPECT(PASSES(att_judge(q, k, vn, mult, 1, OC_MASKED_MULTIPLY)), "multiply under multiply");
  EXPECT(att_judge(q, k, vn, mult, 1, OC_MASKED_SKIP) == OC_FAIL_SPECIAL, "multiply under skip");
  EXPECT(att_judge(q, k, vn, skip, 1, OC_MASKED_MULTIPLY) == OC_FAIL_SPECIAL,
         "skip under multiply");
  /* Forgetting the mask is still caught under either. */
  att_sim(q, k, v, 0, 0, o);
  EXPECT(att_judge(q, k, v, o, 1, OC_MASKED_EITHER) == OC_FAIL_VALUE, "no causal mask");

  /* Underflowing weights: scores 0 and -100 (e^-100 is subnormal in fp32);
   * the kernel's fp32 weight keeps a few bits, the output ~3.6e-41 is off
   * by ~2% relative: correct all the same. */
  float q1[AS * AD] = {0}, k1[AS * AD] = {0}, v1[AS * AD] = {0};
  for (int i = 0; i < AS; i++)
    q1[i * AD] = 1;
  k1[0] = 0;         /* key 0: score 0, v 0 */
  k1[1 * AD] = -200; /* key 1: score 0.5 * -200 = -100 */
  for (int j = 2; j < AS; j++)
    k1[j * AD] = -400; /* score -200: weight 0 in fp32 */
  for (int d = 0; d < AD; d++)
    v1[1 * AD + d] = 1000;
  att_sim(q1, k1, v1, 0, 0, o);
  EXPECT(o[0] > 0 && o[0] < 1e-38f, "a subnormal output (%g)", o[0]);
  EXPECT(PASSES(att_judge(q1, k1, v1, o, 0, OC_MASKED_EITHER)), "subnormal from underflow");
  memcpy(bad, o, sizeof o);
  bad[0] = 1e-30f; /* far off, in absolute terms too */
  EXPECT(att_judge(q1, k1, v1, bad, 0, OC_MASKED_EITHER) != OC_PASS, "a wrong tiny output");
  t_line("attention: NaN/Inf in V per column, masked keys, underflowing weights", before);
}

/* -------------------------------------------------------------- norms */

enum { NR = 3, NC = 16 };

/* PyTorch's rms_norm / layer_norm in fp32 (two-pass), per row. */
static void norm_sim(int rms, const float *x, const float *w, const float *b, float *y) {
  for (int r = 0; r < NR; r++) {
    const float *xr = x + r * NC;
    float mu = 0, ss = 0;
    if (!rms) {
      for (int k = 0; k < NC; k++)
        mu += xr[k];
      mu /= NC;
    }
    for (int k = 0; k < NC; k++)
      ss += (xr[k] - mu) * (xr[k] - mu);
    float rs = 1.0f / sqrtf(ss / NC + 1e-5f);
    for (int k = 0; k < NC; k++)
      y[r * NC + k] = (xr[k] - mu) * rs * (w ? w[k] : 1.0f) + (b ? b[k] : 0.0f);
  }
}

static enum oc_verdict_kind norm_judge(int rms, const float *x, const float *w, const float *b,
                                       const float *y, struct oc_verdict *vd) {
  int64_t sh[2] = {NR, NC}, sw[1] = {NC};
  struct oc_tensor X, W, B, Y;
  oc_tensor_make(&X, x, OC_FP32, 2, sh, NULL);
  oc_tensor_make(&W, w, OC_FP32, 1, sw, NULL);
  oc_tensor_make(&B, b, OC_FP32, 1, sw, NULL);
  oc_tensor_make(&Y, y, OC_FP32, 2, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  int r = rms ? oc_check_rms_norm(&X, w ? &W : NULL, 1e-5, &Y, &p, NULL, vd)
              : oc_check_layer_norm(&X, w ? &W : NULL, b ? &B : NULL, 1e-5, &Y, &p, NULL, vd);
  if (r) return OC_FAIL_VALUE + 100;
  if (vd->kind != OC_PASS && vd->kind != OC_BITWISE) t_print_verdict(vd);
  return vd->kind;
}

static void test_norms(void) {
  int before = t_fail;
  float x[NR * NC], w[NC], b[NC], y[NR * NC], bad[NR * NC];
  struct oc_verdict vd;
  for (int i = 0; i < NR * NC; i++)
    x[i] = (float)sin(0.9 * i + 0.2);
  for (int k = 0; k < NC; k++)
    w[k] = (float)(1 + 0.1 * k), b[k] = (float)(0.05 * k - 0.3);
  /* rms_norm, a +Inf in row 1: its finite elements +-0, the Inf NaN */
  float xi[NR * NC];
  memcpy(xi, x, sizeof x);
  xi[1 * NC + 4] = INFINITY;
  norm_sim(1, xi, w, NULL, y);
  EXPECT(y[NC] == 0 && isnan(y[NC + 4]) && isfinite(y[0]), "the kernel's own semantics");
  EXPECT(PASSES(norm_judge(1, xi, w, NULL, y, &vd)), "rms_norm with an Inf in the row");
  memcpy(bad, y, sizeof y);
  bad[NC + 5] = 0.25f; /* a number where the limit is 0 */
  EXPECT(norm_judge(1, xi, w, NULL, bad, &vd) != OC_PASS && vd.kind != OC_BITWISE,
         "a wrong element in the Inf row");
  memcpy(bad, y, sizeof y);
  for (int k = 0; k < NC; k++)
    bad[NC + k] = NAN; /* the old expectation: the whole row NaN */
  EXPECT(norm_judge(1, xi, w, NULL, bad, &vd) == OC_FAIL_SPECIAL, "a NaN row is wrong");
  /* an Inf weight: +-Inf where x is nonzero, rows otherwise untouched */
  float wi[NC];
  memcpy(wi, w, sizeof w);
  wi[3] = -INFINITY;
  norm_sim(1, x, wi, NULL, y);
  EXPECT(isinf(y[3]) && isfinite(y[2]), "the kernel's own semantics");
  EXPECT(PASSES(norm_judge(1, x, wi, NULL, y, &vd)), "rms_norm with an Inf weight");
  norm_sim(0, x, wi, b, y);
  EXPECT(PASSES(norm_judge(0, x, wi, b, y, &vd)), "layer_norm with an Inf weight");
  float bi[NC];
  memcpy(bi, b, sizeof b);
  bi[7] = INFINITY;
  norm_sim(0, x, w, bi, y);
  EXPECT(PASSES(norm_judge(0, x, w, bi, y, &vd)), "layer_norm with an Inf bias");
  memcpy(bad, y, sizeof y);
  bad[7] = 1.0f;
  EXPECT(norm_judge(0, x, w, bi, bad, &vd) == OC_FAIL_SPECIAL, "a number for an Inf bias");
  /* a 1e20 in a row: x^2 overflows fp32, the kernel's row is 0:
   * inconclusive (the documented overflow regime), with its evidence */
  float xo[NR * NC];
  memcpy(xo, x, sizeof x);
  xo[2 * NC + 1] = 1e20f;
  norm_sim(1, xo, w, NULL, y);
  EXPECT(y[2 * NC + 1] == 0, "the kernel's overflow");
  EXPECT(norm_judge(1, xo, w, NULL, y, &vd) == OC_INCONCLUSIVE, "rms_norm overflow regime");
  EXPECT(vd.rank == 2 && vd.index[0] == 2 && vd.exact != 0 && vd.bound > 0,
         "its evidence: an element of the overflowing row (exact %g, bound %g)", vd.exact,
         vd.bound);
  norm_sim(0, xo, w, b, y);
  EXPECT(norm_judge(0, xo, w, b, y, &vd) == OC_INCONCLUSIVE, "layer_norm overflow regime");
  /* ... and a kernel that gets it right there (scaled) passes */
  for (int r = 0; r < NR; r++) {
    double ss = 0;
    for (int k = 0; k < NC; k++)
      ss += (double)xo[r * NC + k] * xo[r * NC + k];
    for (int k = 0; k < NC; k++)
      y[r * NC + k] = (float)(xo[r * NC + k] / sqrt(ss / NC + 1e-5) * w[k]);
  }
  EXPECT(PASSES(norm_judge(1, xo, w, NULL, y, &vd)), "a right value in the overflow regime");
  t_line("norms: Inf in the row, Inf weight or bias, overflowing squares", before);
}

/* ---------------------------------------------- the statistical verdict */

/* Sequential fp32 sums of rows: const (0.1 repeated), near (0.1 plus a
 * tiny deterministic ripple). */
static int sum_stat(int kind, int64_t n, struct oc_verdict *vd) {
  float *x = malloc((size_t)n * sizeof *x), s = 0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = kind == 0 ? 0.1f : 0.1f + 1e-7f * (float)(i % 3);
    s += x[i];
  }
  int64_t sh[1] = {n};
  struct oc_tensor X, Y;
  oc_tensor_make(&X, x, OC_FP32, 1, sh, NULL);
  oc_tensor_make(&Y, &s, OC_FP32, 0, sh, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  int r = oc_check_reduce(OC_RED_SUM, &X, 0, &Y, &p, NULL, vd);
  free(x);
  if (r) return -1;
  if (vd->stat == OC_STAT_REJECTED) t_print_verdict(vd);
  return vd->stat;
}

/* C = A B in fp32, A constant (0.1), B: kind 0 random in [-1, 1], kind 1
 * ones, sequential accumulation. */
static int mm_stat(int kind, int64_t K, struct oc_verdict *vd) {
  enum { M = 4, N = 4 };
  float *a = malloc((size_t)(M * K) * sizeof *a), *b = malloc((size_t)(K * N) * sizeof *b);
  float c[M * N];
  uint64_t st = 12345;
  for (int64_t i = 0; i < M * K; i++)
    a[i] = 0.1f;
  for (int64_t i = 0; i < K * N; i++) {
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    b[i] = kind ? 1.0f : (float)((double)(st >> 11) * 0x1p-52 - 1);
  }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc = fmaf(a[i * K + k], b[k * N + j], acc);
      c[i * N + j] = acc;
    }
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  struct oc_tensor A, B, C;
  oc_tensor_make(&A, a, OC_FP32, 2, sa, NULL);
  oc_tensor_make(&B, b, OC_FP32, 2, sb, NULL);
  oc_tensor_make(&C, c, OC_FP32, 2, sc, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  int r = oc_check_matmul(&ma, &C, &p, NULL, vd);
  free(a), free(b);
  if (r) return -1;
  if (vd->stat == OC_STAT_REJECTED) t_print_verdict(vd);
  return vd->stat;
}

static void test_statistical(void) {
  int before = t_fail;
  struct oc_verdict vd;
  for (int kind = 0; kind < 2; kind++)
    for (int64_t n = 1000; n <= 100000; n *= 10) {
      int sv = sum_stat(kind, n, &vd);
      EXPECT(sv != OC_STAT_REJECTED && PASSES(vd.kind), "%s row, n %lld: %s",
             kind ? "near-constant" : "constant", (long long)n,
             sv >= 0 ? oc_stat_name((enum oc_stat_kind)sv) : "error");
    }
  for (int kind = 0; kind < 2; kind++)
    for (int64_t K = 1024; K <= 16384; K *= 4) {
      int sv = mm_stat(kind, K, &vd);
      EXPECT(sv != OC_STAT_REJECTED && PASSES(vd.kind), "constant-A GEMM (%s B), K %lld: %s",
             kind ? "ones" : "random", (long long)K,
             sv >= 0 ? oc_stat_name((enum oc_stat_kind)sv) : "error");
    }
  /* ... while a row of varied terms still gets its verdict: a sum off by a
   * third of the worst-case bound (a bias no random rounding gives) */
  {
    enum { RN = 10000 };
    static float x[RN];
    uint64_t st = 99;
    for (int i = 0; i < RN; i++) {
      st = st * 6364136223846793005ULL + 1442695040888963407ULL;
      x[i] = (float)((double)(st >> 11) * 0x1p-53);
    }
    int64_t sh[1] = {RN};
    struct oc_tensor X, Y;
    float y = 0;
    oc_tensor_make(&X, x, OC_FP32, 1, sh, NULL);
    oc_tensor_make(&Y, &y, OC_FP32, 0, sh, NULL);
    struct oc_profile p;
    oc_profile_parse("fp32", &p);
    double ex = 0;
    for (int i = 0; i < RN; i++)
      ex += x[i];
    y = (float)ex;
    EXPECT(oc_check_reduce(OC_RED_SUM, &X, 0, &Y, &p, NULL, &vd) == 0 &&
               vd.stat == OC_STAT_CONSISTENT,
           "a varied row, rounded once: consistent (%d)", vd.stat);
    y = (float)(ex + vd.bound / 3);
    EXPECT(oc_check_reduce(OC_RED_SUM, &X, 0, &Y, &p, NULL, &vd) == 0 && PASSES(vd.kind) &&
               vd.stat == OC_STAT_REJECTED,
           "a varied row off by a third of its bound: rejected (%d)", vd.stat);
    char line[640];
    oc_verdict_format(&vd, line, sizeof line);
    EXPECT(!strstr(line, "independent"), "the message claims no independence: %s", line);
  }
  t_line("statistical verdict: constant and near-constant rows", before);
}

/* ---------------------------------------- overflow Inf, verdict evidence */

static void test_overflow_and_evidence(void) {
  int before = t_fail;
  struct oc_verdict vd;
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  /* 3e38 + 3e38 in fp32: Inf is the correctly rounded sum */
  float x[2] = {3e38f, 3e38f}, y = x[0] + x[1];
  int64_t sh[1] = {2};
  struct oc_tensor X, Y;
  oc_tensor_make(&X, x, OC_FP32, 1, sh, NULL);
  oc_tensor_make(&Y, &y, OC_FP32, 0, sh, NULL);
  EXPECT(isinf(y) && oc_check_reduce(OC_RED_SUM, &X, 0, &Y, &p, NULL, &vd) == 0 && PASSES(vd.kind),
         "3e38 + 3e38 = Inf passes (%s)", oc_verdict_name(vd.kind));
  EXPECT(vd.kernel == INFINITY && vd.exact > 3.4e38, "its evidence: kernel %g, exact %g", vd.kernel,
         vd.exact);
  y = 3.4e38f; /* a finite value where the sum must overflow */
  EXPECT(oc_check_reduce(OC_RED_SUM, &X, 0, &Y, &p, NULL, &vd) == 0 && vd.kind == OC_FAIL_SPECIAL,
         "a finite sum that must overflow");
  /* a GEMM element 2 * FLT_MAX: [FLT_MAX, FLT_MAX] . [1, 1] */
  float a[2] = {FLT_MAX, FLT_MAX}, b[2] = {1, 1}, c = a[0] * b[0] + a[1] * b[1];
  int64_t sa[2] = {1, 2}, sb[2] = {2, 1}, sc[2] = {1, 1};
  struct oc_tensor A, B, C;
  oc_tensor_make(&A, a, OC_FP32, 2, sa, NULL);
  oc_tensor_make(&B, b, OC_FP32, 2, sb, NULL);
  oc_tensor_make(&C, &c, OC_FP32, 2, sc, NULL);
  struct oc_matmul_args ma = {&A, &B, NULL, NULL, 1, 0, OC_ACT_NONE};
  EXPECT(isinf(c) && oc_check_matmul(&ma, &C, &p, NULL, &vd) == 0 && PASSES(vd.kind),
         "a GEMM element 2 FLT_MAX = Inf passes (%s)", oc_verdict_name(vd.kind));
  /* NaN matching NaN: the evidence names the element, not zeros */
  float xn[4] = {1, NAN, 2, 3}, yn = NAN;
  int64_t s4[1] = {4};
  oc_tensor_make(&X, xn, OC_FP32, 1, s4, NULL);
  oc_tensor_make(&Y, &yn, OC_FP32, 0, s4, NULL);
  EXPECT(oc_check_reduce(OC_RED_SUM, &X, 0, &Y, &p, NULL, &vd) == 0 && PASSES(vd.kind) &&
             isnan(vd.kernel) && isnan(vd.exact),
         "NaN for NaN: evidence kernel %g exact %g", vd.kernel, vd.exact);
  /* inconclusive by overflow: a partial sum may overflow (1e38 * 4 - 3e38
   * ...), the kernel's Inf proves nothing; the evidence is that element */
  float xo[4] = {3e38f, 3e38f, -3e38f, -3e38f}, yo = INFINITY;
  oc_tensor_make(&X, xo, OC_FP32, 1, s4, NULL);
  oc_tensor_make(&Y, &yo, OC_FP32, 0, s4, NULL);
  EXPECT(oc_check_reduce(OC_RED_SUM, &X, 0, &Y, &p, NULL, &vd) == 0 && vd.kind == OC_INCONCLUSIVE &&
             vd.kernel == INFINITY && vd.exact == 0 && vd.bound > 0,
         "overflow inconclusive (%s): evidence kernel %g exact %g bound %g",
         oc_verdict_name(vd.kind), vd.kernel, vd.exact, vd.bound);
  t_line("overflow: a correctly rounded Inf passes; evidence of special verdicts", before);
}

int main(void) {
  test_attention();
  test_norms();
  test_statistical();
  test_overflow_and_evidence();
  return t_done("test_b_specials");
}
