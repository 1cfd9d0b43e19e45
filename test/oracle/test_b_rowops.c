/* test/oracle/test_b_rowops.c — reductions, softmax family and norms:
 * correct simulated kernels pass, imprecise or unsafe ones (fp16
 * accumulation, no max subtraction, one-pass variance, NaN swallowed by
 * max) are caught by their generators. */
#include "test_b_util.h"

enum { R = 12 };

static void make(enum oc_gen g, enum oc_format f, int64_t rows, int64_t n, uint64_t seed,
                 void **buf, double **vals, struct oc_tensor *t) {
  *buf = malloc((size_t)(rows * n) * oc_format_size(f));
  *vals = malloc((size_t)(rows * n) * sizeof(double));
  oc_generate(g, f, OC_ROLE_X, rows, n, seed, NULL, *buf);
  t_tensor2(t, *buf, f, rows, n);
  oc_tensor_gather(t, 0, 1, rows * n, *vals);
}

static double sim_sum(int how, const double *x, int64_t n) {
  if (how == 0) {
    float s = 0;
    for (int64_t k = 0; k < n; k++)
      s += (float)x[k];
    return s;
  }
  if (how == 1) {
    float s = 0;
    for (int64_t k = n - 1; k >= 0; k--)
      s += (float)x[k];
    return s;
  }
  if (how == 2) { /* pairwise via the dot helper with ones */
    double *one = malloc((size_t)n * sizeof *one);
    for (int64_t k = 0; k < n; k++)
      one[k] = 1;
    double s = t_sim_dot(SIM_FP32_PAIRWISE, x, one, n);
    free(one);
    return s;
  }
  double s = 0; /* fp16 accumulator */
  for (int64_t k = 0; k < n; k++)
    s = t_rnd(OC_FP16, s + x[k]);
  return s;
}

static void reductions(void) {
  int before = t_fail;
  static const int64_t ns[] = {16, 1000, 4096};
  struct oc_profile p;
  oc_profile_parse("bf16_fp32acc:out=fp32", &p);
  for (int ni = 0; ni < 3; ni++)
    for (int g = 0; g < OC_GEN_COUNT; g++) {
      if (g == OC_GEN_DUPLICATES) continue; /* +-max bf16 sums overflow fp32: separate case */
      void *buf;
      double *x;
      struct oc_tensor X, O;
      int64_t n = ns[ni];
      make((enum oc_gen)g, OC_BF16, R, n, 5, &buf, &x, &X);
      float o[R];
      t_tensor2(&O, o, OC_FP32, R, 1);
      O.rank = 1;
      for (int how = 0; how < 3; how++) {
        for (int r = 0; r < R; r++)
          o[r] = (float)sim_sum(how, x + r * n, n);
        struct oc_verdict v;
        oc_check_reduce(OC_RED_SUM, &X, 1, &O, &p, NULL, &v);
        EXPECT(!oc_verdict_is_fail(v.kind), "sum how=%d n=%lld gen=%s: %s", how, (long long)n,
               oc_gen_name((enum oc_gen)g), oc_verdict_name(v.kind));
        if (oc_verdict_is_fail(v.kind)) t_print_verdict(&v);
      }
      /* fp16 overflow needs partial sums past 65520: rows of 1000 and more */
      if (g == OC_GEN_STAGNATION || (g == OC_GEN_FP16_OVERFLOW && n >= 1000)) {
        for (int r = 0; r < R; r++)
          o[r] = (float)sim_sum(3, x + r * n, n);
        struct oc_verdict v;
        oc_check_reduce(OC_RED_SUM, &X, 1, &O, &p, NULL, &v);
        enum oc_verdict_kind want = g == OC_GEN_STAGNATION ? OC_FAIL_PRECISION : OC_FAIL_SPECIAL;
        if (g == OC_GEN_STAGNATION && n > 1000)
          want = OC_FAIL_VALUE; /* gamma_n(2^-11) >= 1: no rung */
        EXPECT(v.kind == want || (g == OC_GEN_STAGNATION && oc_verdict_is_fail(v.kind)),
               "fp16 sum n=%lld gen=%s: %s", (long long)n, oc_gen_name((enum oc_gen)g),
               oc_verdict_name(v.kind));
        if (ni == 0) t_print_verdict(&v);
      }
      /* mean and norm2 computed correctly in fp32 */
      for (int r = 0; r < R; r++)
        o[r] = (float)(sim_sum(0, x + r * n, n) / (double)n);
      struct oc_verdict v;
      oc_check_reduce(OC_RED_MEAN, &X, 1, &O, &p, NULL, &v);
      EXPECT(!oc_verdict_is_fail(v.kind), "mean gen=%s: %s", oc_gen_name((enum oc_gen)g),
             oc_verdict_name(v.kind));
      for (int r = 0; r < R; r++) {
        float s = 0;
        for (int64_t k = 0; k < n; k++)
          s = fmaf((float)x[r * n + k], (float)x[r * n + k], s);
        o[r] = sqrtf(s);
      }
      oc_check_reduce(OC_RED_NORM2, &X, 1, &O, &p, NULL, &v);
      EXPECT(!oc_verdict_is_fail(v.kind), "norm2 gen=%s: %s", oc_gen_name((enum oc_gen)g),
             oc_verdict_name(v.kind));
      if (oc_verdict_is_fail(v.kind)) t_print_verdict(&v);
      free(buf), free(x);
    }
  t_line("sum/mean/norm2: fp32 orders pass on every generator; fp16 accumulation caught", before);
}

static void max_nan(void) {
  int before = t_fail;
  void *buf;
  double *x;
  struct oc_tensor X, O;
  int64_t n = 64;
  make(OC_GEN_SPECIALS, OC_BF16, R, n, 9, &buf, &x, &X);
  uint16_t o[R];
  t_tensor2(&O, o, OC_BF16, R, 1);
  O.rank = 1;
  struct oc_profile p;
  oc_profile_preset("bf16", &p);
  for (int swallow = 0; swallow < 2; swallow++) {
    for (int r = 0; r < R; r++) {
      double m = -INFINITY;
      int nan = 0;
      for (int64_t k = 0; k < n; k++) {
        double xv = x[r * n + k];
        nan |= xv != xv;
        m = fmax(m, xv); /* fmax drops NaN */
        if (xv == 0 && m == 0 && !signbit(xv)) m = xv;
      }
      t_put(o, OC_BF16, r, nan && !swallow ? NAN : m);
    }
    struct oc_verdict v;
    oc_check_reduce(OC_RED_MAX, &X, 1, &O, &p, NULL, &v);
    if (swallow) {
      EXPECT(v.kind == OC_FAIL_SPECIAL, "max swallowing NaN: %s", oc_verdict_name(v.kind));
      t_print_verdict(&v);
    } else {
      EXPECT(v.kind == OC_BITWISE, "max propagating NaN: %s", oc_verdict_name(v.kind));
    }
  }
  free(buf), free(x);
  t_line("max: NaN must propagate; a kernel that swallows it is fail_special", before);
}

/* Softmax sims in fp32: 0 two-pass, 1 without max subtraction, 2 online. */
static void sim_softmax(int how, enum oc_softmax_kind kind, const double *x, int64_t n, float *y) {
  float m = -INFINITY, s = 0;
  if (how == 2) {
    for (int64_t k = 0; k < n; k++) {
      float xv = (float)x[k], nm = xv > m ? xv : m;
      s = s * expf(m - nm) + expf(xv - nm);
      if (m == -INFINITY) s = expf(xv - nm);
      m = nm;
    }
  } else {
    if (how == 0)
      for (int64_t k = 0; k < n; k++)
        m = (float)x[k] > m ? (float)x[k] : m;
    else
      m = 0;
    for (int64_t k = 0; k < n; k++)
      s += expf((float)x[k] - m);
  }
  for (int64_t k = 0; k < n; k++) {
    if (kind == OC_SOFTMAX)
      y[k] = expf((float)x[k] - m) / s;
    else if (kind == OC_LOG_SOFTMAX)
      y[k] = ((float)x[k] - m) - logf(s);
  }
  if (kind == OC_LOGSUMEXP) y[0] = m == INFINITY ? m : m + logf(s); /* PyTorch: +Inf row -> +Inf */
}

/* The softmax tests' input generators. */
static const enum oc_gen smx_gens[] = {OC_GEN_UNIFORM, OC_GEN_CANCEL, OC_GEN_LARGE_LOGITS,
                                       OC_GEN_SPECIALS};

/* A softmax-family case: R rows of n generated fp32 inputs X (buf, x as
 * make() gives them) and its output O over y (one value a row for
 * logsumexp); returns y's length. */
static int64_t smx_case(int kind, int gi, int64_t n, uint64_t seed, void **buf, double **x,
                        struct oc_tensor *X, float **y, struct oc_tensor *O) {
  make(smx_gens[gi], OC_FP32, R, n, seed, buf, x, X);
  int same = kind != OC_LOGSUMEXP;
  int64_t no = R * (same ? n : 1);
  *y = malloc((size_t)no * sizeof **y);
  t_tensor2(O, *y, OC_FP32, R, same ? n : 1);
  if (!same) O->rank = 1;
  return no;
}

static void softmaxes(void) {
  int before = t_fail;
  for (int kind = 0; kind < 3; kind++)
    for (int gi = 0; gi < 4; gi++)
      for (int64_t n = 8; n <= 4096; n *= 8) {
        void *buf;
        double *x;
        float *y;
        struct oc_tensor X, O;
        smx_case(kind, gi, n, 3, &buf, &x, &X, &y, &O);
        int same = kind != OC_LOGSUMEXP;
        for (int how = 0; how < 3; how++) {
          struct oc_profile p;
          oc_profile_parse(how == 2 ? "fp32:softmax=online" : "fp32", &p);
          for (int r = 0; r < R; r++)
            sim_softmax(how, (enum oc_softmax_kind)kind, x + r * n, n, y + r * (same ? n : 1));
          struct oc_verdict v;
          oc_check_softmax((enum oc_softmax_kind)kind, &X, 1, &O, &p, NULL, &v);
          if (how == 1 && smx_gens[gi] == OC_GEN_LARGE_LOGITS) {
            EXPECT(v.kind == OC_FAIL_SPECIAL || v.kind == OC_FAIL_VALUE ||
                       v.kind == OC_FAIL_PRECISION,
                   "no max subtraction kind=%d n=%lld: %s", kind, (long long)n,
                   oc_verdict_name(v.kind));
            if (n == 512 && kind == 0) t_print_verdict(&v);
          } else if (how != 1) {
            EXPECT(!oc_verdict_is_fail(v.kind) && v.kind != OC_INCONCLUSIVE,
                   "how=%d kind=%d gen=%s n=%lld: %s", how, kind, oc_gen_name(smx_gens[gi]),
                   (long long)n, oc_verdict_name(v.kind));
            if (oc_verdict_is_fail(v.kind) || v.kind == OC_INCONCLUSIVE) t_print_verdict(&v);
          }
        }
        free(buf), free(x), free(y);
      }
  t_line("softmax/log_softmax/logsumexp: two-pass and online pass; no max subtraction caught by "
         "large logits",
         before);
}

/* Softmax rows in double against the same rows in MPFR: references within
 * 2^-20 of the bound of each other (the double path's enclosure is that
 * narrow where it is used), identical verdicts for a correct and a broken
 * kernel, most fp32 rows decided in double, no fp64 row. */
static void softmax_double_path(void) {
  int before = t_fail;
  unsigned long d0, r0, d1, r1;
  oc_softmax_double_counts(&d0, &r0);
  long rows = 0;
  for (int kind = 0; kind < 3; kind++)
    for (int gi = 0; gi < 4; gi++)
      for (int64_t n = 8; n <= 4096; n *= 8) {
        void *buf;
        double *x;
        float *y;
        struct oc_tensor X, O;
        int64_t no = smx_case(kind, gi, n, 11 + (uint64_t)gi, &buf, &x, &X, &y, &O);
        int same = kind != OC_LOGSUMEXP;
        double *ra = malloc((size_t)no * sizeof *ra), *rb = malloc((size_t)no * sizeof *rb);
        double *ba = malloc((size_t)no * sizeof *ba), *bb = malloc((size_t)no * sizeof *bb);
        struct oc_profile p;
        oc_profile_parse("fp32", &p);
        oc_softmax_set_double(1);
        oc_reference_softmax((enum oc_softmax_kind)kind, &X, 1, &p, ra, ba);
        oc_softmax_set_double(0);
        oc_reference_softmax((enum oc_softmax_kind)kind, &X, 1, &p, rb, bb);
        int far = 0;
        for (int64_t i = 0; i < no; i++) {
          int both_nan = ra[i] != ra[i] && rb[i] != rb[i];
          if (!both_nan && !(ra[i] == rb[i] || fabs(ra[i] - rb[i]) <= 0x1p-19 * bb[i])) far++;
          if (!both_nan && ba[i] != bb[i] && !(fabs(ba[i] - bb[i]) <= 1e-9 * bb[i])) far++;
        }
        EXPECT(far == 0, "kind=%d gen=%s n=%lld: %d references or bounds apart", kind,
               oc_gen_name(smx_gens[gi]), (long long)n, far);
        for (int broken = 0; broken < 2; broken++) {
          for (int r = 0; r < R; r++)
            sim_softmax(0, (enum oc_softmax_kind)kind, x + r * n, n, y + r * (same ? n : 1));
          if (broken) y[no / 2] = nextafterf(nextafterf(y[no / 2], INFINITY), INFINITY) * 1.001f;
          struct oc_verdict va, vb;
          oc_softmax_set_double(1);
          oc_check_softmax((enum oc_softmax_kind)kind, &X, 1, &O, &p, NULL, &va);
          oc_softmax_set_double(0);
          oc_check_softmax((enum oc_softmax_kind)kind, &X, 1, &O, &p, NULL, &vb);
          EXPECT(va.kind == vb.kind && va.n_fail == vb.n_fail,
                 "kind=%d gen=%s n=%lld broken=%d: double %s (%lld), MPFR %s (%lld)", kind,
                 oc_gen_name(smx_gens[gi]), (long long)n, broken, oc_verdict_name(va.kind),
                 (long long)va.n_fail, oc_verdict_name(vb.kind), (long long)vb.n_fail);
        }
        rows += 3 * R;
        free(buf), free(x), free(y), free(ra), free(rb), free(ba), free(bb);
      }
  oc_softmax_set_double(1);
  oc_softmax_double_counts(&d1, &r1);
  EXPECT(d1 - d0 - (r1 - r0) >= (unsigned long)rows / 2,
         "%lu of %ld fp32 rows decided in double (%lu redone in MPFR)", d1 - d0 - (r1 - r0), rows,
         r1 - r0);
  /* fp64 outputs: MPFR only */
  {
    void *buf;
    double *x;
    struct oc_tensor X;
    make(OC_GEN_UNIFORM, OC_FP32, R, 64, 5, &buf, &x, &X);
    double *ra = malloc((size_t)(R * 64) * sizeof *ra);
    struct oc_profile p;
    oc_profile_parse("fp64", &p);
    oc_softmax_double_counts(&d0, &r0);
    oc_reference_softmax(OC_SOFTMAX, &X, 1, &p, ra, NULL);
    oc_softmax_double_counts(&d1, &r1);
    EXPECT(d1 == d0, "fp64 rows computed in double: %lu", d1 - d0);
    free(buf), free(x), free(ra);
  }
  t_line("softmax family: rows in double agree with MPFR (references, bounds, verdicts)", before);
}

/* LayerNorm sims in fp32: 0 two-pass, 1 Welford, 2 one-pass E[x^2]-mu^2. */
static void sim_ln(int how, const double *x, int64_t n, double eps, float *y) {
  float mu = 0, var = 0;
  if (how == 1) {
    float m = 0, m2 = 0;
    for (int64_t k = 0; k < n; k++) {
      float d = (float)x[k] - m;
      m += d / (float)(k + 1);
      m2 += d * ((float)x[k] - m);
    }
    mu = m;
    var = m2 / (float)n;
  } else {
    float s = 0, s2 = 0;
    for (int64_t k = 0; k < n; k++) {
      s += (float)x[k];
      s2 += (float)x[k] * (float)x[k];
    }
    mu = s / (float)n;
    if (how == 0) {
      for (int64_t k = 0; k < n; k++)
        var += ((float)x[k] - mu) * ((float)x[k] - mu);
      var /= (float)n;
    } else {
      var = s2 / (float)n - mu * mu;
    }
  }
  float r = 1.0f / sqrtf(var + (float)eps);
  for (int64_t k = 0; k < n; k++)
    y[k] = ((float)x[k] - mu) * r;
}

static void norms(void) {
  int before = t_fail;
  int64_t n = 1024;
  for (uint64_t seed = 1; seed <= 4; seed++)
    for (int gi = 0; gi < 3; gi++) {
      enum oc_gen g = gi == 0 ? OC_GEN_LARGE_MEAN : gi == 1 ? OC_GEN_CANCEL : OC_GEN_UNIFORM;
      void *buf;
      double *x;
      struct oc_tensor X, O;
      make(g, OC_FP32, R, n, seed, &buf, &x, &X);
      float *y = malloc((size_t)(R * n) * sizeof *y);
      t_tensor2(&O, y, OC_FP32, R, n);
      struct oc_profile p;
      oc_profile_preset("fp32", &p);
      for (int how = 0; how < 3; how++) {
        for (int r = 0; r < R; r++)
          sim_ln(how, x + r * n, n, 1e-5, y + r * n);
        struct oc_verdict v;
        oc_check_layer_norm(&X, NULL, NULL, 1e-5, &O, &p, NULL, &v);
        if (how == 2 && g == OC_GEN_LARGE_MEAN) {
          EXPECT(oc_verdict_is_fail(v.kind), "one-pass on large mean: %s", oc_verdict_name(v.kind));
          if (seed == 1) t_print_verdict(&v);
          struct oc_profile q;
          oc_profile_parse("fp32:norm=one_pass", &q);
          oc_check_layer_norm(&X, NULL, NULL, 1e-5, &O, &q, NULL, &v);
          /* declared one-pass: no precision proof possible (bound may not exist),
           * but a NaN from finite rows is still a special-value failure */
          EXPECT(v.kind != OC_FAIL_PRECISION && v.kind != OC_FAIL_VALUE, "one-pass declared: %s",
                 oc_verdict_name(v.kind));
        } else {
          EXPECT(!oc_verdict_is_fail(v.kind), "ln how=%d gen=%s: %s", how, oc_gen_name(g),
                 oc_verdict_name(v.kind));
          if (oc_verdict_is_fail(v.kind)) t_print_verdict(&v);
        }
      }
      /* RMSNorm with a weight */
      float w[1024];
      for (int64_t k = 0; k < n; k++)
        w[k] = 0.5f + (float)k / 1024.0f;
      struct oc_tensor W;
      oc_tensor_make(&W, w, OC_FP32, 1, (int64_t[]){n}, NULL);
      for (int r = 0; r < R; r++) {
        float s = 0;
        for (int64_t k = 0; k < n; k++)
          s += (float)x[r * n + k] * (float)x[r * n + k];
        float rs = 1.0f / sqrtf(s / (float)n + 1e-6f);
        for (int64_t k = 0; k < n; k++)
          y[r * n + k] = (float)x[r * n + k] * rs * w[k];
      }
      struct oc_verdict v;
      oc_check_rms_norm(&X, &W, 1e-6, &O, &p, NULL, &v);
      EXPECT(!oc_verdict_is_fail(v.kind), "rms gen=%s: %s", oc_gen_name(g),
             oc_verdict_name(v.kind));
      if (oc_verdict_is_fail(v.kind)) t_print_verdict(&v);
      free(buf), free(x), free(y);
    }
  t_line("layer_norm two-pass/Welford and rms_norm pass; one-pass variance caught at kappa ~1e3",
         before);
}

/* Rows of fp32 subnormals: the mean's division rounds on the subnormal grid
 * (absolute error up to half the smallest subnormal, large relative to the
 * deviations), which a correct two-pass kernel cannot avoid. */
static void norms_subnormal(void) {
  int before = t_fail;
  enum { NS = 64 };
  double x[2 * NS];
  float xf[2 * NS], y[2 * NS];
  for (int i = 0; i < 2 * NS; i++) {
    x[i] = (double)(1 + (i * 7) % 5) * 0x1p-149 * (i % 3 ? 1 : -1);
    if (i >= NS) x[i] *= 1 << 20; /* second row: larger subnormals */
    xf[i] = (float)x[i];
  }
  struct oc_tensor X, O;
  t_tensor2(&X, xf, OC_FP32, 2, NS);
  t_tensor2(&O, y, OC_FP32, 2, NS);
  struct oc_profile p;
  oc_profile_preset("fp32", &p);
  for (int how = 0; how < 2; how++) {
    for (int r = 0; r < 2; r++)
      sim_ln(how, x + r * NS, NS, 1e-5, y + r * NS);
    struct oc_verdict v;
    oc_check_layer_norm(&X, NULL, NULL, 1e-5, &O, &p, NULL, &v);
    EXPECT(!oc_verdict_is_fail(v.kind), "ln subnormal rows how=%d: %s", how,
           oc_verdict_name(v.kind));
    if (oc_verdict_is_fail(v.kind)) t_print_verdict(&v);
  }
  t_line("layer_norm on rows of subnormals: two-pass and Welford pass (underflow in the bound)",
         before);
}

int main(void) {
  max_nan();
  reductions();
  softmaxes();
  softmax_double_path();
  norms();
  norms_subnormal();
  return t_done("test_b_rowops");
}
