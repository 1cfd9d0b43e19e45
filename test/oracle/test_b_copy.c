/* test/oracle/test_b_copy.c — data movement: index_select (embedding
 * rows) bit for bit, and the copy op (dtype conversions of _to_copy and
 * copy_): a correctly rounded conversion is bitwise between every
 * pair of float formats; one that truncates (round toward zero) fails;
 * NaN, Inf, -0 and overflow follow the output format; fp64 to a 16-bit
 * format through fp32 (c10's conversions) is accepted, a truncating one
 * is not. */
#include "test_b_util.h"

enum { N = 4096 };

static struct oc_verdict conv(enum oc_format fi, enum oc_format fo, const double *x,
                              const double *o) {
  static unsigned char xb[N * 8], ob[N * 8];
  for (int i = 0; i < N; i++) {
    t_put(xb, fi, i, x[i]);
    t_put(ob, fo, i, o[i]);
  }
  struct oc_tensor X, O;
  t_tensor2(&X, xb, fi, N / 64, 64);
  t_tensor2(&O, ob, fo, N / 64, 64);
  char spec[64];
  snprintf(spec, sizeof spec, "fp32:in=%s:out=%s", oc_format_info(fi)->name,
           oc_format_info(fo)->name);
  struct oc_profile p;
  EXPECT(oc_profile_parse(spec, &p) == 0, "%s", spec);
  struct oc_verdict v;
  EXPECT(oc_check_elementwise(OC_OP_COPY, &X, NULL, &O, &p, NULL, &v) == 0, "rc");
  return v;
}

static void conversions(void) {
  int before = t_fail;
  static const enum oc_format fs[] = {OC_FP64, OC_FP32, OC_BF16, OC_FP16, OC_E4M3FN, OC_E5M2};
  static double x[N], o[N];
  for (size_t a = 0; a < sizeof fs / sizeof fs[0]; a++)
    for (size_t b = 0; b < sizeof fs / sizeof fs[0]; b++) {
      enum oc_format fi = fs[a], fo = fs[b];
      uint64_t st = 1 + a * 7 + b;
      double top = fmin(oc_format_info(fi)->max_finite, 2 * oc_format_info(fo)->max_finite);
      for (int i = 0; i < N; i++) {
        double m = ldexp(1 + oc_rand_unit(&st), (int)(oc_rand_unit(&st) * 30) - 15);
        x[i] = t_rnd(fi, (i % 2 ? -m : m));
      }
      x[0] = 0.0, x[1] = -0.0, x[2] = NAN, x[3] = INFINITY, x[4] = -INFINITY;
      if (oc_format_info(fi)->has_inf == 0) x[3] = x[4] = 1;
      x[5] = t_rnd(fi, top);
      for (int i = 0; i < N; i++)
        o[i] = oc_round(fo, x[i], OC_OVF_IEEE);
      struct oc_verdict v = conv(fi, fo, x, o);
      EXPECT(v.kind == OC_BITWISE, "%s -> %s correct: %s", oc_format_info(fi)->name,
             oc_format_info(fo)->name, oc_verdict_name(v.kind));
      if (oc_format_info(fo)->p >= oc_format_info(fi)->p) continue; /* exact: nothing to round */
      int differ = 0;
      for (int i = 0; i < N; i++) {
        double t = isfinite(x[i]) && fabs(x[i]) <= oc_format_info(fo)->max_finite
                       ? oc_round(fo, x[i], OC_OVF_IEEE)
                       : o[i];
        if (t != x[i] && isfinite(t) && fabs(t) > fabs(x[i])) /* rounded up: truncate */
          t = oc_decode(fo, oc_encode(fo, t, OC_OVF_IEEE) - 1);
        differ += !(t == o[i] || (t != t && o[i] != o[i]));
        o[i] = t;
      }
      v = conv(fi, fo, x, o);
      EXPECT(differ > 0 && oc_verdict_is_fail(v.kind), "%s -> %s truncating (%d differ): %s",
             oc_format_info(fi)->name, oc_format_info(fo)->name, differ, oc_verdict_name(v.kind));
    }
  t_line("copy: correctly rounded conversions between fp64/fp32/bf16/fp16/fp8 are bitwise, "
         "truncating ones fail",
         before);
}

/* fp64 -> bf16 through fp32 (c10::BFloat16 has a float constructor): a
 * double rounding a correct PyTorch conversion gives; accepted. A -0 that
 * became +0, or a NaN that became 0, fails as a special value. */
static void double_rounding_and_specials(void) {
  int before = t_fail;
  static double x[N], o[N];
  uint64_t st = 5;
  int twice = 0;
  for (int i = 0; i < N; i++) {
    /* just above a bf16 midpoint by less than fp32's spacing */
    double m = 1 + (2 * (double)(i % 128) + 1) / 256 + 0x1p-30 * (1 + oc_rand_unit(&st));
    x[i] = i % 2 ? -m : m;
    o[i] = oc_round(OC_BF16, oc_round(OC_FP32, x[i], OC_OVF_IEEE), OC_OVF_IEEE);
    twice += o[i] != oc_round(OC_BF16, x[i], OC_OVF_IEEE);
  }
  struct oc_verdict v = conv(OC_FP64, OC_BF16, x, o);
  EXPECT(twice > 0 && !oc_verdict_is_fail(v.kind), "fp64->fp32->bf16 (%d double-rounded): %s",
         twice, oc_verdict_name(v.kind));
  x[7] = -0.0, o[7] = 0.0;
  v = conv(OC_FP64, OC_BF16, x, o);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "-0 copied as +0: %s", oc_verdict_name(v.kind));
  x[7] = NAN, o[7] = 0.0;
  v = conv(OC_FP64, OC_BF16, x, o);
  EXPECT(v.kind == OC_FAIL_SPECIAL, "NaN copied as 0: %s", oc_verdict_name(v.kind));
  t_line("copy: fp64 -> bf16 through fp32 accepted; a lost -0 or NaN fails", before);
}

/* index_select / embedding rows: the selected rows bit for bit (-0 and
 * NaN kept) are bitwise; one row read from its neighbour fails; an index
 * out of range leaves the verdict inconclusive. */
static void index_select(void) {
  int before = t_fail;
  enum { V = 50, D = 24, M = 37 };
  static float w[V * D], o[M * D];
  static double ix[M];
  uint64_t st = 9;
  for (int i = 0; i < V * D; i++)
    w[i] = (float)(2 * oc_rand_unit(&st) - 1);
  w[3] = -0.0f, w[4] = NAN;
  for (int i = 0; i < M; i++)
    ix[i] = i == 0 ? 0 : i == 1 ? -1 : (double)(int)(oc_rand_unit(&st) * V);
  for (int i = 0; i < M; i++)
    for (int j = 0; j < D; j++)
      o[i * D + j] = w[(((int)ix[i] + V) % V) * D + j];
  struct oc_tensor W, I, O;
  t_tensor2(&W, w, OC_FP32, V, D);
  t_tensor2(&O, o, OC_FP32, M, D);
  int64_t m = M;
  oc_tensor_make(&I, ix, OC_FP64, 1, &m, NULL);
  struct oc_profile p;
  oc_profile_parse("fp32", &p);
  struct oc_verdict v;
  EXPECT(oc_check_index_select(&W, 0, &I, &O, &p, NULL, &v) == 0, "rc");
  EXPECT(v.kind == OC_BITWISE && v.checked == M * D, "correct rows: %s", oc_verdict_name(v.kind));
  for (int j = 0; j < D; j++)
    o[5 * D + j] = w[((((int)ix[5] + 1) % V)) * D + j]; /* the neighbouring row */
  EXPECT(oc_check_index_select(&W, 0, &I, &O, &p, NULL, &v) == 0 && oc_verdict_is_fail(v.kind) &&
             v.index[0] == 5,
         "wrong row: %s at %lld", oc_verdict_name(v.kind), (long long)v.index[0]);
  for (int j = 0; j < D; j++)
    o[5 * D + j] = w[(int)ix[5] * D + j];
  o[3] = 0.0f; /* -0 copied as +0 */
  EXPECT(oc_check_index_select(&W, 0, &I, &O, &p, NULL, &v) == 0 && v.kind == OC_FAIL_SPECIAL,
         "-0 lost: %s", oc_verdict_name(v.kind));
  o[3] = -0.0f;
  ix[9] = V; /* out of range */
  EXPECT(oc_check_index_select(&W, 0, &I, &O, &p, NULL, &v) == 0 && v.kind == OC_INCONCLUSIVE,
         "index out of range: %s", oc_verdict_name(v.kind));
  t_line("index_select: selected rows bitwise; a neighbouring row or a lost -0 fails; an index "
         "out of range is inconclusive",
         before);
}

/* embedding's gradient: row sums in any order (fp32 sequential, reversed,
 * batches of 32 added in bf16 as ATen's feature kernel does for bf16
 * weights) pass; a kernel that drops repeated indices (keeps the last row
 * only) or sums into padding_idx fails. */
static void embedding_backward(void) {
  int before = t_fail;
  enum { M = 400, D = 24, NW = 50, PAD = 7 };
  static float g[M * D], o[NW * D];
  static double ix[M];
  uint64_t st = 21;
  for (int i = 0; i < M * D; i++)
    g[i] = (float)(2 * oc_rand_unit(&st) - 1);
  for (int i = 0; i < M; i++)
    ix[i] = (double)((i * 13 + i / 9) % NW);
  struct oc_tensor G, I, O;
  t_tensor2(&G, g, OC_FP32, M, D);
  int64_t sm[1] = {M};
  oc_tensor_make(&I, ix, OC_FP64, 1, sm, NULL);
  struct oc_verdict v;
  for (int form = 0; form < 5; form++) {
    enum oc_format f = form == 2 ? OC_BF16 : OC_FP32;
    static float acc[NW * D];
    memset(acc, 0, sizeof acc);
    static unsigned char ob[NW * D * 4];
    for (int b = 0; b < M; b += 32) { /* batches of 32 indices */
      static float part[NW * D];
      memset(part, 0, sizeof part);
      for (int ii = b; ii < b + 32 && ii < M; ii++) {
        int i = form == 1 ? M - 1 - ii : ii, r = (int)ix[i];
        if (r == PAD && form != 4) continue;
        for (int k = 0; k < D; k++) {
          if (form == 3)
            part[r * D + k] = g[i * D + k]; /* the bug: the last row wins */
          else
            part[r * D + k] += g[i * D + k];
        }
      }
      for (int j = 0; j < NW * D; j++)
        acc[j] = (float)t_rnd(f, acc[j] + part[j]); /* into the weight's type */
    }
    for (int j = 0; j < NW * D; j++) {
      o[j] = acc[j];
      t_put(ob, f, j, acc[j]);
    }
    t_tensor2(&O, ob, f, NW, D);
    char spec[48];
    snprintf(spec, sizeof spec, "fp32:in=%s:out=%s", oc_format_info(f)->name,
             oc_format_info(f)->name);
    struct oc_profile p;
    oc_profile_parse(spec, &p);
    static unsigned char gb[M * D * 4];
    for (int i = 0; i < M * D; i++)
      t_put(gb, f, i, t_rnd(f, g[i]));
    struct oc_tensor GF;
    t_tensor2(&GF, gb, f, M, D);
    EXPECT(oc_check_embedding_backward(f == OC_FP32 ? &G : &GF, &I, PAD, &O, &p, NULL, &v) == 0,
           "rc");
    if (form < 3)
      EXPECT(!oc_verdict_is_fail(v.kind), "form %d: %s", form, oc_verdict_name(v.kind));
    else
      EXPECT(oc_verdict_is_fail(v.kind), "planted form %d: %s", form, oc_verdict_name(v.kind));
    (void)o;
  }
  t_line("embedding_backward: row sums in any order, bf16 partial sums, pass; repeated indices "
         "dropped or padding_idx summed fail",
         before);
}

int main(void) {
  embedding_backward();
  index_select();
  conversions();
  double_rounding_and_specials();
  return t_done("test_b_copy");
}
