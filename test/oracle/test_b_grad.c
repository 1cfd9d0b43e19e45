/* test/oracle/test_b_grad.c — oc_check_grad: the activation and softmax
 * family gradients. Kernels simulated on the CPU in ATen's order of steps
 * (float arithmetic for fp32/fp16/bf16, double for fp64) pass or are
 * bitwise; planted bugs (a dropped term, the wrong formula, fp16
 * intermediates, a strict comparison for <=, a sum without the
 * subtraction) fail; non-finite inputs follow ATen's IEEE formula. */
#include "test_b_util.h"

enum { R = 16, C = 64, N = R * C };

enum bug { OK, DROP, HALF }; /* correct; a term dropped / wrong formula; fp16 intermediates */

/* exp, erf and tanh correctly rounded to float (double libm, rounded),
 * then, for a kernel at the edge of the CUDA budget (2 ulps, ORACLE.md
 * §3), moved that far in one direction: edge > 0 up, < 0 down. */
static int edge;
static double T(double v) {
  float f = (float)v;
  for (int i = 0; i < (edge < 0 ? -edge : edge); i++)
    f = nextafterf(f, edge < 0 ? -INFINITY : INFINITY);
  return f;
}

static double rnd_c(int dbl, int half, double v) {
  if (half) return t_rnd(OC_FP16, v);
  return dbl ? v : (double)(float)v;
}

/* One activation gradient in ATen's order (GeluKernel.cu, ActivationSiluKernel.cu,
 * BinaryMiscBackwardOpsKernels.cu), rounded after every step like the
 * compute type. */
static double sim_ew(enum oc_grad_op op, enum bug bug, int dbl, double g, double x) {
  int h = bug == HALF;
#define F(v) rnd_c(dbl, h, (v))
  switch (op) {
  case OC_GRAD_SIGMOID_BACKWARD: return bug == DROP ? F(g * x) : F(F(g * F(1 - x)) * x);
  case OC_GRAD_TANH_BACKWARD: return bug == DROP ? F(g * F(1 - x)) : F(g * F(1 - F(x * x)));
  case OC_GRAD_THRESHOLD_BACKWARD: return (bug == DROP ? x < 0 : x <= 0) ? 0.0 : g;
  case OC_GRAD_SILU_BACKWARD: {
    double e = dbl ? exp(-x) : T(exp((double)(float)-x));
    double s = F(1 / F(1 + e));
    if (bug == DROP) return F(g * s);
    return F(F(g * s) * F(1 + F(x * F(1 - s))));
  }
  case OC_GRAD_GELU_ERF_BACKWARD: {
    double er = dbl ? erf(x * M_SQRT1_2) : T(erf(F(x * (float)M_SQRT1_2)));
    double cdf = F(0.5 * F(1 + er));
    double a = F(F(-0.5 * x) * x);
    double ex = dbl ? exp(a) : T(exp(a));
    double pdf = F(ex * F(M_2_SQRTPI * M_SQRT1_2 * 0.5));
    if (bug == DROP) return F(g * cdf);
    return F(g * F(cdf + F(x * pdf)));
  }
  case OC_GRAD_GELU_TANH_BACKWARD: {
    if (bug == DROP) return sim_ew(OC_GRAD_GELU_ERF_BACKWARD, OK, dbl, g, x); /* wrong formula */
    double kb = F(M_SQRT2 * M_2_SQRTPI * 0.5), kk = F(0.044715);
    double xs = F(x * x), xc = F(xs * x);
    double in = F(kb * F(x + F(kk * xc)));
    double t = dbl ? tanh(in) : T(tanh(in));
    double left = F(0.5 * x), right = F(1 + t), ld = F(0.5 * right);
    double td = F(1 - F(t * t)), id = F(kb * F(1 + F(F(3 * kk) * xs)));
    return F(g * F(ld + F(F(left * td) * id)));
  }
  case OC_GRAD_SOFTMAX_BACKWARD:
  case OC_GRAD_LOG_SOFTMAX_BACKWARD:
  case OC_GRAD_LAYER_NORM_BACKWARD:
  case OC_GRAD_RMS_NORM_BACKWARD:
  case OC_GRAD_LAYER_NORM_DWEIGHT:
  case OC_GRAD_LAYER_NORM_DBIAS:
  case OC_GRAD_RMS_NORM_DWEIGHT:
  case OC_GRAD_COUNT: break;
  }
#undef F
  return NAN;
}

static const char *partial_key; /* a profile suffix (":partial=bf16"), or NULL */

static struct oc_verdict judge(enum oc_grad_op op, enum oc_format f, const double *g,
                               const double *x, const double *o, double thr) {
  static unsigned char gb[N * 8], xb[N * 8], ob[N * 8];
  for (int i = 0; i < N; i++) {
    t_put(gb, f, i, g[i]);
    t_put(xb, f, i, x[i]);
    t_put(ob, f, i, o[i]);
  }
  struct oc_tensor G, X, O;
  t_tensor2(&G, gb, f, R, C);
  t_tensor2(&X, xb, f, R, C);
  t_tensor2(&O, ob, f, R, C);
  char spec[96];
  int n = snprintf(spec, sizeof spec, f == OC_FP64 ? "fp64" : "fp32:in=%s:acc=fp32:out=%s",
                   oc_format_info(f)->name, oc_format_info(f)->name);
  if (partial_key) snprintf(spec + n, sizeof spec - (size_t)n, "%s", partial_key);
  struct oc_profile p;
  EXPECT(oc_profile_parse(spec, &p) == 0, "profile %s", spec);
  struct oc_grad_args a = {&G, &X, 1, thr, NULL, NULL, NULL};
  struct oc_verdict v;
  int rc = oc_check_grad(op, &a, &O, &p, NULL, &v);
  EXPECT(rc == 0 && v.checked == N, "rc %d checked %lld", rc, (long long)v.checked);
  return v;
}

static const char *gname(enum oc_grad_op op) {
  static const char *n[] = {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_GRAD(cls, name, )
#include "ops.def"
  };
  return n[op];
}

/* The forward values an op's gradient sees: sigmoid outputs in (0, 1),
 * tanh outputs in (-1, 1), inputs in [-10, 10] with zeros for threshold. */
static void inputs(enum oc_grad_op op, enum oc_format f, uint64_t *st, double *g, double *x) {
  for (int i = 0; i < N; i++) {
    g[i] = t_rnd(f, 4 * oc_rand_unit(st) - 2);
    double z = 20 * oc_rand_unit(st) - 10;
    if (op == OC_GRAD_SIGMOID_BACKWARD) z = 1 / (1 + exp(-z / 2));
    if (op == OC_GRAD_TANH_BACKWARD) z = tanh(z / 4);
    if (op == OC_GRAD_THRESHOLD_BACKWARD && i % 7 == 0) z = i % 14 ? 0.0 : -0.0;
    x[i] = t_rnd(f, z);
  }
}

static void activations(void) {
  int before = t_fail;
  static const enum oc_format fmts[] = {OC_FP32, OC_FP16, OC_BF16, OC_FP64};
  static double g[N], x[N], o[N];
  for (int op = 0; op <= OC_GRAD_GELU_TANH_BACKWARD; op++)
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
      enum oc_format f = fmts[fi];
      uint64_t st = 7 + (uint64_t)op * 31 + fi;
      inputs((enum oc_grad_op)op, f, &st, g, x);
      for (int b = OK; b <= HALF; b++) {
        if (b == HALF && (f != OC_FP32 || op == OC_GRAD_THRESHOLD_BACKWARD)) continue;
        for (int i = 0; i < N; i++)
          o[i] = t_rnd(f, sim_ew((enum oc_grad_op)op, (enum bug)b, f == OC_FP64, g[i], x[i]));
        struct oc_verdict v = judge((enum oc_grad_op)op, f, g, x, o, 0);
        if (getenv("GRAD_VERBOSE")) {
          printf("  op %d fmt %d bug %d: ", (int)op, (int)f, b);
          t_print_verdict(&v);
        }
        if (b == OK)
          EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "%s %s correct: %s (ratio %g)",
                 gname((enum oc_grad_op)op), oc_format_info(f)->name, oc_verdict_name(v.kind),
                 v.ratio);
        else
          EXPECT(oc_verdict_is_fail(v.kind), "%s %s bug %d: %s (ratio %g)",
                 gname((enum oc_grad_op)op), oc_format_info(f)->name, b, oc_verdict_name(v.kind),
                 v.ratio);
        if (b == OK && op == OC_GRAD_THRESHOLD_BACKWARD)
          EXPECT(v.kind == OC_BITWISE, "threshold_backward is exact: %s", oc_verdict_name(v.kind));
      }
    }
  t_line("activation gradients: ATen's steps pass in fp32/fp16/bf16/fp64; dropped terms, the "
         "wrong gelu, fp16 intermediates and x < t for x <= t fail",
         before);
}

/* ATen's CUDA sigmoid and tanh backward in a 16-bit type round every step
 * to that type (c10::BFloat16's operators, not opmath). tanh's 1 - b*b
 * then loses b*b's rounding to cancellation: without partial= correct
 * kernels fail (the GPU's OpInfo bf16 sample: ratio 5.6), with partial=
 * they pass, and a dropped term still fails. */
static void scalar_t_steps(void) {
  int before = t_fail;
  static double g[N], x[N], o[N];
  static const enum oc_format fmts[] = {OC_BF16, OC_FP16};
  for (int op = OC_GRAD_SIGMOID_BACKWARD; op <= OC_GRAD_TANH_BACKWARD; op++)
    for (size_t fi = 0; fi < 2; fi++) {
      enum oc_format f = fmts[fi];
      uint64_t st = 101 + (uint64_t)op * 7 + fi;
      inputs((enum oc_grad_op)op, f, &st, g, x);
      for (int b = OK; b <= DROP; b++) {
        for (int i = 0; i < N; i++) { /* every step rounded to f */
          double gi = g[i], xi = x[i];
#define H(v) t_rnd(f, (v))
          o[i] = op == OC_GRAD_TANH_BACKWARD
                     ? (b == DROP ? H(gi * H(1 - xi)) : H(gi * H(1 - H(xi * xi))))
                     : (b == DROP ? H(gi * xi) : H(H(gi * H(1 - xi)) * xi));
#undef H
        }
        char key[32];
        snprintf(key, sizeof key, ":partial=%s", oc_format_info(f)->name);
        partial_key = key;
        struct oc_verdict v = judge((enum oc_grad_op)op, f, g, x, o, 0);
        partial_key = NULL;
        if (b == OK)
          EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "%s %s in %s steps: %s (ratio %g)",
                 gname((enum oc_grad_op)op), oc_format_info(f)->name, key, oc_verdict_name(v.kind),
                 v.ratio);
        else
          EXPECT(oc_verdict_is_fail(v.kind), "%s %s dropped term with %s: %s",
                 gname((enum oc_grad_op)op), oc_format_info(f)->name, key, oc_verdict_name(v.kind));
        if (b == OK && op == OC_GRAD_TANH_BACKWARD && f == OC_BF16) {
          struct oc_verdict w = judge((enum oc_grad_op)op, f, g, x, o, 0);
          EXPECT(oc_verdict_is_fail(w.kind),
                 "tanh_backward bf16 in bf16 steps without partial=: %s", oc_verdict_name(w.kind));
        }
      }
    }
  t_line("CUDA's 16-bit sigmoid/tanh backward (every step in the 16-bit type) pass with "
         "partial=, fail without it; a dropped term fails with it",
         before);
}

/* Softmax family rows: y from exact softmax / log_softmax of random
 * logits, g random; the kernel sums in float (or fp16: the bug) and
 * evaluates g y - y S / g - e^y S (PersistentSoftmax.cuh). */
static void rows(void) {
  int before = t_fail;
  static const enum oc_format fmts[] = {OC_FP32, OC_FP16, OC_BF16, OC_FP64};
  static double g[N], y[N], o[N];
  for (int lg = 0; lg < 2; lg++)
    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
      enum oc_format f = fmts[fi];
      int dbl = f == OC_FP64;
      uint64_t st = 99 + fi + 10 * (uint64_t)lg;
      for (int r = 0; r < R; r++) {
        double z[C], m = -INFINITY, s = 0;
        for (int j = 0; j < C; j++)
          z[j] = 12 * oc_rand_unit(&st) - 6, m = fmax(m, z[j]);
        for (int j = 0; j < C; j++)
          s += exp(z[j] - m);
        for (int j = 0; j < C; j++) {
          y[r * C + j] = t_rnd(f, lg ? z[j] - m - log(s) : exp(z[j] - m) / s);
          g[r * C + j] = t_rnd(f, 2 * oc_rand_unit(&st) - 0.5);
        }
      }
      enum oc_grad_op op = lg ? OC_GRAD_LOG_SOFTMAX_BACKWARD : OC_GRAD_SOFTMAX_BACKWARD;
      for (int b = OK; b <= HALF; b++) {
        if (b == HALF && f != OC_FP32) continue;
        for (int r = 0; r < R; r++) {
          double S = 0;
          for (int j = 0; j < C; j++) {
            double t = lg ? g[r * C + j] : rnd_c(dbl, 0, g[r * C + j] * y[r * C + j]);
            S = rnd_c(dbl, b == HALF, S + t);
          }
          for (int j = 0; j < C; j++) {
            double gi = g[r * C + j], yi = y[r * C + j], val;
            if (lg) {
              double e = dbl ? exp(yi) : (double)expf((float)yi);
              val = b == DROP ? rnd_c(dbl, 0, gi - e) : rnd_c(dbl, 0, gi - rnd_c(dbl, 0, e * S));
            } else {
              double gy = rnd_c(dbl, 0, gi * yi);
              val = b == DROP ? gy : rnd_c(dbl, 0, gy - rnd_c(dbl, 0, yi * S));
            }
            o[r * C + j] = t_rnd(f, val);
          }
        }
        struct oc_verdict v = judge(op, f, g, y, o, 0);
        if (getenv("GRAD_VERBOSE")) {
          printf("  op %d fmt %d bug %d: ", (int)op, (int)f, b);
          t_print_verdict(&v);
        }
        if (b == OK)
          EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "%s %s correct: %s (ratio %g)",
                 gname(op), oc_format_info(f)->name, oc_verdict_name(v.kind), v.ratio);
        else
          EXPECT(oc_verdict_is_fail(v.kind), "%s %s bug %d: %s (ratio %g)", gname(op),
                 oc_format_info(f)->name, b, oc_verdict_name(v.kind), v.ratio);
        if (b == HALF) /* the ladder names a cheaper profile that covers it (the first
                          rung that does: tf32 operands for the dot, fp16 for the sum) */
          EXPECT(v.kind == OC_FAIL_PRECISION && v.explained_by[0] &&
                     (op == OC_GRAD_SOFTMAX_BACKWARD || strstr(v.explained_by, "fp16")),
                 "%s fp16 sum: %s explained by '%s'", gname(op), oc_verdict_name(v.kind),
                 v.explained_by);
      }
    }
  t_line("softmax/log_softmax gradients: g y - y S passes; no subtraction, e^y S without S and an "
         "fp16 sum fail",
         before);
}

/* Non-finite inputs: ATen's IEEE formula (inf * 0 = NaN; threshold
 * passes g through at x = NaN); a kernel that returns 0 there fails. */
static void specials(void) {
  int before = t_fail;
  static double g[N], x[N], o[N];
  uint64_t st = 5;
  for (int op = 0; op <= OC_GRAD_GELU_TANH_BACKWARD; op++) {
    inputs((enum oc_grad_op)op, OC_FP32, &st, g, x);
    g[3] = INFINITY, x[5] = NAN, g[9] = NAN, x[11] = -INFINITY, x[12] = INFINITY;
    for (int i = 0; i < N; i++)
      o[i] = (double)(float)sim_ew((enum oc_grad_op)op, OK, 0, g[i], x[i]);
    struct oc_verdict v = judge((enum oc_grad_op)op, OC_FP32, g, x, o, 0);
    EXPECT(!oc_verdict_is_fail(v.kind), "%s specials: %s", gname((enum oc_grad_op)op),
           oc_verdict_name(v.kind));
    if (isnan(o[5]))
      o[5] = 0;
    else
      o[3] = 0;
    v = judge((enum oc_grad_op)op, OC_FP32, g, x, o, 0);
    EXPECT(v.kind == OC_FAIL_SPECIAL, "%s swallowed special: %s", gname((enum oc_grad_op)op),
           oc_verdict_name(v.kind));
  }
  t_line("gradients at non-finite inputs follow ATen's IEEE formula; a swallowed one fails",
         before);
}

/* Large |x|: e^-x overflows float for silu (s = 0), x^3 grows for
 * gelu_tanh; the simulated kernels stay within the bounds. */
static void extremes(void) {
  int before = t_fail;
  static double g[N], x[N], o[N];
  uint64_t st = 77;
  for (int op = OC_GRAD_SILU_BACKWARD; op <= OC_GRAD_GELU_TANH_BACKWARD; op++) {
    for (int i = 0; i < N; i++) {
      g[i] = t_rnd(OC_FP32, 2 * oc_rand_unit(&st) - 1);
      double m = ldexp(1, (int)(oc_rand_unit(&st) * 40) - 8);
      x[i] = t_rnd(OC_FP32, (i % 2 ? -m : m) * (1 + oc_rand_unit(&st)));
    }
    for (int i = 0; i < N; i++)
      o[i] = (double)(float)sim_ew((enum oc_grad_op)op, OK, 0, g[i], x[i]);
    struct oc_verdict v = judge((enum oc_grad_op)op, OC_FP32, g, x, o, 0);
    EXPECT(!oc_verdict_is_fail(v.kind), "%s extremes: %s (ratio %g at x=%g)",
           gname((enum oc_grad_op)op), oc_verdict_name(v.kind), v.ratio, v.kernel);
  }
  t_line("silu/gelu gradients over |x| from 2^-8 to 2^32 stay within their bounds", before);
}

/* glibc's expf, erff and tanhf moved by the full 2-ulp budget: still
 * within the bounds of silu and gelu's gradients. */
static void budget_edges(void) {
  int before = t_fail;
  static double g[N], x[N], o[N];
  for (int op = OC_GRAD_SILU_BACKWARD; op <= OC_GRAD_GELU_TANH_BACKWARD; op++)
    for (edge = -2; edge <= 2; edge += 4) {
      uint64_t st = 3 + (uint64_t)op;
      inputs((enum oc_grad_op)op, OC_FP32, &st, g, x);
      for (int i = 0; i < N; i++)
        o[i] = t_rnd(OC_FP32, sim_ew((enum oc_grad_op)op, OK, 0, g[i], x[i]));
      struct oc_verdict v = judge((enum oc_grad_op)op, OC_FP32, g, x, o, 0);
      if (getenv("GRAD_VERBOSE")) t_print_verdict(&v);
      EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "%s edge %d: %s (ratio %g)",
             gname((enum oc_grad_op)op), edge, oc_verdict_name(v.kind), v.ratio);
    }
  edge = 0;
  t_line("silu/gelu gradients with exp, erf, tanh off by their whole 2-ulp budget pass", before);
}

/* layer_norm / rms_norm dx from the saved statistics: ATen's x-hat form
 * and its ds/db form (LayerNorm's CUDA kernels), in float, pass; a
 * backward without the mean term A, without the x-hat term B, or with
 * fp16 sums fails. form: 0 x-hat, 1 ds/db, 2 no A, 3 no B, 4 fp16 sums. */
static void sim_norm(int ln, int form, const double *g, const double *x, const double *w,
                     const double *mu, const double *rs, double *o) {
  for (int r = 0; r < R; r++) {
    const double *gr = g + r * C, *xr = x + r * C;
    double m = ln ? mu[r] : 0, s = rs[r];
    float sa = 0, sb = 0, sds = 0;
    for (int j = 0; j < C; j++) {
      float wg = (float)(w[j] * gr[j]);
      float xh = (float)((float)(xr[j] - m) * s);
      sa = (float)rnd_c(0, form == 4, sa + wg);
      sb = (float)rnd_c(0, form == 4, sb + (float)(wg * xh));
      sds = (float)rnd_c(0, form == 4, sds + (float)(wg * (float)xr[j]));
    }
    float c2 = (float)((float)((float)(sa * (float)m) - sds) * (float)(s * s * s)) / (float)C;
    float c3 = (float)(-c2 * (float)m) - (float)(sa * (float)s) / (float)C;
    for (int j = 0; j < C; j++) {
      float wg = (float)(w[j] * gr[j]);
      float xh = (float)((float)(xr[j] - m) * s);
      float a = ln && form != 2 ? sa / (float)C : 0, b = form == 3 ? 0 : sb / (float)C;
      float v = form == 1 ? (float)(s * wg) + (float)(c2 * (float)xr[j]) + (ln ? c3 : 0)
                          : (float)s * (float)((float)(wg - a) - (float)(xh * b));
      o[r * C + j] = v;
    }
  }
}

static void norms(void) {
  int before = t_fail;
  static double g[N], x[N], o[N], w[C], mu[R], rs[R];
  static float gb[N], xb[N], ob[N], wb[C], mb[R], rb[R];
  uint64_t st = 41;
  for (int ln = 0; ln < 2; ln++) {
    for (int j = 0; j < C; j++)
      w[j] = (float)(0.5 + oc_rand_unit(&st));
    for (int r = 0; r < R; r++) {
      double s1 = 0, s2 = 0;
      for (int j = 0; j < C; j++) {
        x[r * C + j] = (float)(3 + 2 * oc_rand_unit(&st) - 1 + r);
        g[r * C + j] = (float)(2 * oc_rand_unit(&st) - 0.7);
        s1 += x[r * C + j];
      }
      mu[r] = (float)(s1 / C);
      for (int j = 0; j < C; j++)
        s2 += ln ? (x[r * C + j] - mu[r]) * (x[r * C + j] - mu[r]) : x[r * C + j] * x[r * C + j];
      rs[r] = (float)(1 / sqrt(s2 / C + 1e-5));
    }
    for (int form = 0; form <= 4; form++) {
      if (!ln && form == 2) continue; /* rms has no mean term */
      sim_norm(ln, form, g, x, w, mu, rs, o);
      for (int i = 0; i < N; i++)
        gb[i] = (float)g[i], xb[i] = (float)x[i], ob[i] = (float)o[i];
      for (int i = 0; i < C; i++)
        wb[i] = (float)w[i];
      for (int i = 0; i < R; i++)
        mb[i] = (float)mu[i], rb[i] = (float)rs[i];
      struct oc_tensor G, X, O, M, S, W;
      t_tensor2(&G, gb, OC_FP32, R, C);
      t_tensor2(&X, xb, OC_FP32, R, C);
      t_tensor2(&O, ob, OC_FP32, R, C);
      t_tensor2(&M, mb, OC_FP32, R, 1);
      t_tensor2(&S, rb, OC_FP32, R, 1);
      int64_t wn = C;
      oc_tensor_make(&W, wb, OC_FP32, 1, &wn, NULL);
      struct oc_profile p;
      oc_profile_parse("fp32", &p);
      struct oc_grad_args a = {&G, &X, -1, 0, ln ? &M : NULL, &S, &W};
      struct oc_verdict v;
      enum oc_grad_op op = ln ? OC_GRAD_LAYER_NORM_BACKWARD : OC_GRAD_RMS_NORM_BACKWARD;
      EXPECT(oc_check_grad(op, &a, &O, &p, NULL, &v) == 0 && v.checked == N, "rc");
      if (getenv("GRAD_VERBOSE")) t_print_verdict(&v);
      if (form <= 1)
        EXPECT(v.kind == OC_BITWISE || v.kind == OC_PASS, "%s form %d: %s (ratio %g)", gname(op),
               form, oc_verdict_name(v.kind), v.ratio);
      else
        EXPECT(oc_verdict_is_fail(v.kind), "%s bug %d: %s (ratio %g)", gname(op), form,
               oc_verdict_name(v.kind), v.ratio);
    }
  }
  t_line("layer_norm/rms_norm dx: x-hat and ds/db forms pass; no mean term, no x-hat term, fp16 "
         "sums fail",
         before);
}

/* layer_norm dx in fp64 of one row whose saved mean and rstd are -Inf
 * and whose weight is subnormal (the nonfinite gate's specials on a
 * vector weight): ATen's CPU kernel computes (rstd g) w + c2 x + c3, an
 * Inf where rstd (w g) meets a w g that underflowed to 0 and gives NaN.
 * Both are the same formula: no NaN is demanded there. A NaN in g still
 * propagates in every order: dropping it fails. */
static int ln_row(const double *g, const double *x, const double *w, double mu, double rs,
                  double *o) {
  double sa = 0, sds = 0;
  for (int j = 0; j < C; j++)
    sa += g[j] * w[j], sds += g[j] * w[j] * x[j];
  double c2 = (sa * mu - sds) * rs * rs * rs / C, c3 = -c2 * mu - sa * rs / C;
  int n_nan = 0;
  for (int j = 0; j < C; j++) {
    o[j] = rs * g[j] * w[j] + c2 * x[j] + c3; /* left to right: (rstd g) w */
    n_nan += isnan(o[j]);
  }
  return n_nan;
}

static enum oc_verdict_kind ln_judge(const double *g, const double *x, const double *w, double mu,
                                     double rs, const double *o) {
  struct oc_tensor G, X, O, M, S, W;
  t_tensor2(&G, g, OC_FP64, 1, C);
  t_tensor2(&X, x, OC_FP64, 1, C);
  t_tensor2(&O, o, OC_FP64, 1, C);
  t_tensor2(&M, &mu, OC_FP64, 1, 1);
  t_tensor2(&S, &rs, OC_FP64, 1, 1);
  int64_t wn = C;
  oc_tensor_make(&W, w, OC_FP64, 1, &wn, NULL);
  struct oc_profile p;
  oc_profile_parse("fp64", &p);
  struct oc_grad_args a = {&G, &X, -1, 0, &M, &S, &W};
  struct oc_verdict v;
  if (oc_check_grad(OC_GRAD_LAYER_NORM_BACKWARD, &a, &O, &p, NULL, &v)) return OC_FAIL_VALUE;
  if (getenv("GRAD_VERBOSE")) t_print_verdict(&v);
  return v.kind;
}

static void norm_specials_underflow(void) {
  int before = t_fail;
  static double g[C], x[C], w[C], o[C];
  uint64_t st = 77;
  for (int j = 0; j < C; j++) {
    g[j] = 2 * oc_rand_unit(&st) - 1;
    x[j] = 2 * oc_rand_unit(&st) - 1;
    w[j] = (j % 2 ? -1 : 1) * 0x1p-1074 * (1 + j % 3); /* fp64's smallest subnormals */
  }
  int n_nan = ln_row(g, x, w, -INFINITY, -INFINITY, o);
  enum oc_verdict_kind k = ln_judge(g, x, w, -INFINITY, -INFINITY, o);
  EXPECT(n_nan < C && !oc_verdict_is_fail(k), "(rstd g) w at -Inf statistics: %s (%d NaN)",
         oc_verdict_name(k), n_nan);
  g[5] = NAN; /* a NaN input: NaN everywhere whatever the order */
  ln_row(g, x, w, -INFINITY, -INFINITY, o);
  o[7] = -INFINITY;
  k = ln_judge(g, x, w, -INFINITY, -INFINITY, o);
  EXPECT(k == OC_FAIL_SPECIAL, "a NaN in g dropped: %s", oc_verdict_name(k));
  t_line("layer_norm dx at Inf statistics and subnormal weights: ATen's association passes, a "
         "dropped NaN fails",
         before);
}

int main(void) {
  norm_specials_underflow();
  budget_edges();
  activations();
  scalar_t_steps();
  rows();
  specials();
  extremes();
  norms();
  return t_done("test_b_grad");
}
