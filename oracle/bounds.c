/* oracle/bounds.c — the rigorous error-bound formulas of ORACLE.md §2-3.
 * All arithmetic on bound quantities is rounded upward by pushing each
 * double result one ulp toward +inf (round-to-nearest is within half an
 * ulp), which keeps the code free of fesetround and thread-safe. */
#include "bounds.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "elementwise.h"
#include "formats.h"
#include "oracle.h"

/* The next double up / down (nextafter without the library call: every
 * bound takes dozens). NaN and the infinity in the direction stay. */
double oc_up(double x) {
  if (x != x || x == INFINITY) return x;
  if (x == 0) return 0x1p-1074;
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  b += x > 0 ? 1 : (uint64_t)-1; /* -min subnormal becomes -0, as nextafter */
  memcpy(&x, &b, sizeof b);
  return x;
}
double oc_down(double x) { return -oc_up(-x); }
double oc_add_up(double a, double b) { return oc_up(a + b); }
double oc_mul_up(double a, double b) {
  if (a == 0 || b == 0) return 0; /* keeps 0 * inf from turning into NaN */
  return oc_up(a * b);
}
double oc_div_up(double a, double b) { return a == 0 ? 0 : oc_up(a / b); }

double oc_gamma(double n, double u) {
  if (n <= 0) return 0;
  double nu = oc_mul_up(n, u);
  if (!(nu < 1)) return INFINITY;
  return oc_div_up(nu, oc_down(1 - nu));
}

static double acc_unit(const struct oc_profile *p) { return oc_profile_u_acc(p); }

/* Precision of the kernel's scalar math (exp, div, rsqrt): fp32 unless the
 * profile accumulates in fp64; narrower accumulators still call fp32 math. */
static double math_u(const struct oc_profile *p) {
  return p->acc == OC_FP64 ? ldexp(1, -53) : ldexp(1, -24);
}

static int in_bits(const struct oc_profile *p) {
  int b = oc_format_info(p->in)->p;
  if (p->tf32 && b > 11) b = 11;
  return b;
}

double oc_dot_roundings(const struct oc_profile *p, int64_t n, int extra, int products) {
  int exact = !products || 2 * in_bits(p) <= oc_profile_acc_bits(p);
  if (n <= 0) return extra;
  if (p->block > 0 && products) return (double)n + (double)((n + p->block - 1) / p->block) + extra;
  return (double)(n - 1) + (exact ? 0 : 1) + extra;
}

double oc_dot_theta(const struct oc_profile *p, int64_t n, int extra) {
  double u = acc_unit(p), th;
  if (p->promote > 0 && n > p->promote) {
    /* Chunks of `promote` terms in the narrow accumulator, each chunk added
     * into an fp32 (nearest) accumulator: every term sees theta1 inside its
     * chunk, then theta2 on the way through the outer sum. */
    double t1 = oc_gamma(oc_dot_roundings(p, p->promote, 0, 1), u);
    double n2 = (double)((n + p->promote - 1) / p->promote) - 1 + extra;
    double t2 = oc_gamma(n2, ldexp(1, -24));
    th = oc_add_up(t1, oc_mul_up(t2, oc_add_up(1, t1)));
  } else {
    th = oc_gamma(oc_dot_roundings(p, n, extra, 1), u);
  }
  if (p->tf32 && (p->in == OC_FP32 || p->in == OC_FP64)) {
    /* Operands rounded (or truncated) to tf32: u_t = 2^-10 covers both. */
    double ut = ldexp(1, -10), f = oc_mul_up(oc_add_up(1, ut), oc_add_up(1, ut));
    th = oc_add_up(oc_add_up(2 * ut, ut * ut), oc_mul_up(th, f));
  }
  return th;
}

double oc_sum_theta(const struct oc_profile *p, int64_t n, int extra) {
  if (p->promote > 0 && n > p->promote) { /* narrow chunks, then an fp32 outer sum */
    double t1 = oc_gamma((double)(p->promote - 1), acc_unit(p));
    double t2 = oc_gamma((double)((n + p->promote - 1) / p->promote) - 1 + extra, 0x1p-24);
    return oc_add_up(t1, oc_mul_up(t2, oc_add_up(1, t1)));
  }
  double r = (n > 1 ? (double)(n - 1) : 0) + extra;
  return oc_gamma(r, acc_unit(p));
}

static double fmt_min_normal(enum oc_format f) {
  return ldexp(1, oc_format_info(f)->emin_normal - 1);
}

double oc_acc_eta(const struct oc_profile *p) {
  return p->ftz ? fmt_min_normal(p->acc) : oc_format_info(p->acc)->min_subnormal / 2;
}

double oc_out_u(const struct oc_profile *p) { return oc_unit_roundoff(p->out); }
double oc_out_eta(const struct oc_profile *p) {
  return p->ftz ? fmt_min_normal(p->out) : oc_format_info(p->out)->min_subnormal / 2;
}

double oc_out_bound(const struct oc_profile *p, double y_abs, double b) {
  double u = oc_out_u(p);
  return oc_add_up(oc_add_up(oc_mul_up(u, y_abs), oc_mul_up(oc_add_up(1, u), b)), oc_out_eta(p));
}

/* Statistical coefficient of a path of n_a roundings at unit u_a and n_b
 * at u_b (Higham & Mary, SIAM J. Sci. Comput. 41(5), 2019, Thm 2.4 and
 * Lemma 2.3, for unequal units): with independent mean-zero delta_j,
 * |delta_j| <= u_j, phi_j = log(1 + delta_j) lies in an interval of width
 * r_j = log((1 + u_j)/(1 - u_j)) and |E phi_j| <= u_j^2/(1 - u_j), so by
 * Hoeffding |prod(1 + delta_j) - 1| <= exp(lambda/2 sqrt(sum r_j^2) +
 * sum u_j^2/(1 - u_j)) - 1 except with probability 2 exp(-lambda^2/2). */
static double stat_gamma(double lambda, double n_a, double u_a, double n_b, double u_b) {
  double ra = log1p(2 * u_a / (1 - u_a)), rb = log1p(2 * u_b / (1 - u_b));
  double s2 = oc_add_up(oc_mul_up(n_a, oc_mul_up(ra, ra)), oc_mul_up(n_b, oc_mul_up(rb, rb)));
  double mu = oc_add_up(oc_mul_up(n_a, oc_div_up(oc_mul_up(u_a, u_a), oc_down(1 - u_a))),
                        oc_mul_up(n_b, oc_div_up(oc_mul_up(u_b, u_b), oc_down(1 - u_b))));
  double h = oc_add_up(oc_mul_up(lambda / 2 * (1 + 1e-15), oc_up(sqrt(s2))), mu);
  return oc_mul_up(oc_up(expm1(h)), 1 + 1e-14); /* libm's expm1 is within an ulp or two */
}

double oc_stat_lambda(double alpha, double paths, double elems) {
  if (!(alpha > 0 && alpha < 1)) return INFINITY;
  double q = 2 * fmax(paths, 1) * fmax(elems, 1) / alpha;
  return oc_up(sqrt(2 * oc_up(log(q)))) * (1 + 1e-15);
}

double oc_dot_stat(const struct oc_profile *p, int64_t n, int extra, double lambda, int products) {
  if (p->acc_round == OC_ACC_ZERO || !(lambda < INFINITY)) return INFINITY; /* biased errors */
  double u = acc_unit(p), th;
  if (p->promote > 0 && n > p->promote) {
    double r1 = products ? oc_dot_roundings(p, p->promote, 0, 1) : (double)(p->promote - 1);
    double r2 = (double)((n + p->promote - 1) / p->promote) - 1 + extra;
    th = stat_gamma(lambda, r1, u, r2, 0x1p-24);
  } else {
    double r = products ? oc_dot_roundings(p, n, extra, 1) : (n > 1 ? (double)(n - 1) : 0) + extra;
    th = stat_gamma(lambda, r, u, 0, 0x1p-24);
  }
  if (products && p->tf32 && (p->in == OC_FP32 || p->in == OC_FP64)) {
    /* tf32 operands may be truncated (biased): their error stays worst-case */
    double ut = ldexp(1, -10), f = oc_mul_up(oc_add_up(1, ut), oc_add_up(1, ut));
    th = oc_add_up(oc_add_up(2 * ut, ut * ut), oc_mul_up(th, f));
  }
  return th;
}

int oc_stat_correlated(const struct oc_profile *p, double tmin, double tmax, int64_t n) {
  double mag = fmax(fabs(tmin), fabs(tmax));
  if (!(mag > 0) || !isfinite(mag)) return mag == 0; /* all zero: exact anyway */
  return tmax - tmin <= 64 * (double)n * acc_unit(p) * mag;
}

/* ---------------------------------------------------------- math budgets
 * The numbers come from A's table (elementwise.h oc_primitive_budget, the
 * CUDA guide rows of ORACLE.md §3), so elementwise checks and the bounds of
 * composite ops share one source. A budget of k ulps against the correctly
 * rounded result is at most (2k + 1) u relative to the exact value, since
 * ulp(y) <= 2u|y| and the correct rounding itself is within u|y|. */

static int math_dbl(const struct oc_profile *p) { return p->acc == OC_FP64; }

static double prim_rel(const struct oc_profile *p, enum oc_op op, double x, double y) {
  struct oc_prim_budget b = oc_primitive_budget(op, math_dbl(p), p->math, x, y);
  double u = math_u(p);
  return oc_add_up(oc_mul_up(oc_add_up(oc_mul_up(2, b.ulps), 1), u), b.rel);
}

/* exp's budget grows with |arg| in fast/Triton modes (2 + floor(1.173|x|)):
 * callers pass the largest |arg| they need covered. */
double oc_exp_rel(const struct oc_profile *p, double arg) {
  return prim_rel(p, OC_OP_EXP, fabs(arg), 0);
}

/* Divisors in the bounds here are sums of exponentials or 1 + e^-z, within
 * __fdividef's documented range unless the caller says otherwise. */
double oc_div_rel(const struct oc_profile *p) { return prim_rel(p, OC_OP_DIV, 1, 1); }
double oc_rsqrt_rel(const struct oc_profile *p) { return prim_rel(p, OC_OP_RSQRT, 1, 0); }
double oc_sqrt_rel(const struct oc_profile *p) { return prim_rel(p, OC_OP_SQRT, 1, 0); }

void oc_log_err(const struct oc_profile *p, double y, double *rel, double *abs) {
  /* __logf switches from an absolute bound on [0.5, 2] to ulps outside: take
   * the larger of both sides near the switch points (y is itself computed). */
  double r = 0, a = 0;
  for (int s = -1; s <= 1; s++) {
    double ys = y * (1 + s * 1e-6);
    struct oc_prim_budget b = oc_primitive_budget(OC_OP_LOG, math_dbl(p), p->math, ys, 0);
    r = fmax(r, prim_rel(p, OC_OP_LOG, ys, 0));
    a = fmax(a, oc_up(b.abs));
  }
  *rel = r;
  *abs = a;
}

/* ---------------------------------------------------------- activations */

static double sigm(double x) { return 1 / (1 + exp(-x)); }
static double phi_pdf(double x) { return exp(-x * x / 2) * 0.3989422804014327; }
static double Phi(double x) { return 0.5 * (1 + erf(x * 0.7071067811865476)); }
static const double GT_C = 0.7978845608028654, GT_A = 0.044715;

double oc_act_value(int act, double x) {
  switch (act) {
  case OC_ACT_RELU: return x > 0 || x != x ? x : 0.0; /* relu(-Inf) = 0, not 0 * -Inf */
  case OC_ACT_GELU_ERF: return x == -INFINITY ? -0.0 : x * Phi(x); /* the limits at -Inf */
  case OC_ACT_GELU_TANH:
    return x == -INFINITY ? -0.0 : 0.5 * x * (1 + tanh(GT_C * (x + GT_A * x * x * x)));
  case OC_ACT_SILU: return x == -INFINITY ? -0.0 : x * sigm(x);
  case OC_ACT_SIGMOID: return sigm(x);
  case OC_ACT_TANH: return tanh(x);
  default: return x;
  }
}

/* Interval arithmetic with outward inflation: libm is not correctly rounded,
 * so every evaluated endpoint is widened by 1e-12 relative plus 1e-300. */
static struct oc_ival iv(double a, double b) {
  struct oc_ival r = {a < b ? a : b, a < b ? b : a};
  r.lo -= fabs(r.lo) * 1e-12 + 1e-300;
  r.hi += fabs(r.hi) * 1e-12 + 1e-300;
  return r;
}
static struct oc_ival iv_add(struct oc_ival a, struct oc_ival b) {
  return iv(a.lo + b.lo, a.hi + b.hi);
}
static struct oc_ival iv_mul(struct oc_ival a, struct oc_ival b) {
  double c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  double lo = c[0], hi = c[0];
  for (int i = 1; i < 4; i++) {
    lo = c[i] < lo ? c[i] : lo;
    hi = c[i] > hi ? c[i] : hi;
  }
  return iv(lo, hi);
}
/* Range on [lo, hi] of an even function decreasing in |x|. */
static struct oc_ival iv_even(double (*g)(double), double lo, double hi) {
  double near = lo <= 0 && hi >= 0 ? 0 : fmin(fabs(lo), fabs(hi));
  double far = fmax(fabs(lo), fabs(hi));
  return iv(g(far), g(near));
}
static double sigm_d(double x) {
  double e = exp(-fabs(x));
  return e / ((1 + e) * (1 + e));
}
static double sech2(double x) {
  double e = exp(-2 * fabs(x));
  return 4 * e / ((1 + e) * (1 + e));
}
static double gt_w(double x) { return GT_C * (x + GT_A * x * x * x); }
static double gt_sech2(double x) { return sech2(gt_w(x)); }

double oc_act_lipschitz(int act, double lo, double hi) {
  double cap;
  struct oc_ival r;
  switch (act) {
  case OC_ACT_NONE: return 1;
  case OC_ACT_RELU: return hi > 0 ? 1 : 0;
  case OC_ACT_SIGMOID: cap = 0.25; break;
  case OC_ACT_TANH: cap = 1; break;
  case OC_ACT_SILU: cap = 1.1; break;
  default: cap = 1.13; break; /* both GELUs: max phi' = 1.1289 */
  }
  if (!(lo == lo && hi == hi) || isinf(lo) || isinf(hi)) return cap;
  struct oc_ival x = iv(lo, hi);
  switch (act) {
  case OC_ACT_SIGMOID: r = iv_even(sigm_d, lo, hi); break;
  case OC_ACT_TANH: r = iv_even(sech2, lo, hi); break;
  case OC_ACT_SILU: r = iv_add(iv(sigm(lo), sigm(hi)), iv_mul(x, iv_even(sigm_d, lo, hi))); break;
  case OC_ACT_GELU_ERF:
    r = iv_add(iv(Phi(lo), Phi(hi)), iv_mul(x, iv_even(phi_pdf, lo, hi)));
    break;
  default: { /* gelu_tanh: 0.5(1+T) + 0.5 x sech^2(w) c (1 + 3a x^2) */
    struct oc_ival t = iv(0.5 * (1 + tanh(gt_w(lo))), 0.5 * (1 + tanh(gt_w(hi))));
    double near = lo <= 0 && hi >= 0 ? 0 : fmin(fabs(lo), fabs(hi)), far = fmax(fabs(lo), fabs(hi));
    struct oc_ival q =
        iv(0.5 * GT_C * (1 + 3 * GT_A * near * near), 0.5 * GT_C * (1 + 3 * GT_A * far * far));
    r = iv_add(t, iv_mul(iv_mul(x, iv_even(gt_sech2, lo, hi)), q));
  }
  }
  double m = fmax(fabs(r.lo), fabs(r.hi));
  return m < cap ? m : cap;
}

double oc_act_eval_err(const struct oc_profile *p, int act, double zmin, double zabs, double yabs) {
  double u = math_u(p), tiny = 1e-44, e;
  /* half the smallest subnormal of the math format: a subnormal intermediate
   * (sigmoid below -87 in fp32) is rounded absolutely, not relatively */
  double eta = math_dbl(p) ? 0x1p-1074 : 0x1p-150; /* (2^-1075 is below double) */
  switch (act) {
  case OC_ACT_NONE:
  case OC_ACT_RELU: return 0;
  case OC_ACT_SIGMOID:
  case OC_ACT_SILU: { /* 1/(1+exp(-z)) [times z]: exp, add, divide, [multiply] */
    /* The divisor 1 + e^-z is largest at zmin. Where the kernel's exp may
     * overflow (fp32: beyond 2^128) or, under fast math, the divisor may
     * leave __fdividef's range (beyond 2^126, where the CUDA guide says it
     * returns 0), a correct kernel returns 0 (z*0 = -0 for silu): the error
     * can then be all of |y|. */
    double ez = oc_mul_up(oc_up(exp(-zmin)), oc_add_up(1, oc_exp_rel(p, zabs)));
    double top = math_dbl(p) ? DBL_MAX : p->math == OC_MATH_FAST ? 0x1p126 : 0x1.fffffep127;
    int zero_ok = !(oc_add_up(1, ez) < top);
    e = oc_mul_up(1.01,
                  oc_add_up(oc_add_up(oc_exp_rel(p, zabs), prim_rel(p, OC_OP_DIV, 1, 1)), 2 * u));
    double r =
        oc_add_up(oc_mul_up(e, yabs), oc_mul_up(eta, act == OC_ACT_SILU ? oc_add_up(zabs, 2) : 2));
    return zero_ok ? oc_add_up(r, yabs) : r;
  }
  case OC_ACT_TANH:
    e = prim_rel(p, OC_OP_TANH, zabs, 0);
    return oc_add_up(oc_mul_up(e, yabs), tiny);
  case OC_ACT_GELU_ERF: /* 0.5 z (1 + erf(z/sqrt2)): erf's budget, argument rounding 2u */
    e = oc_mul_up(0.5 * zabs,
                  oc_add_up(prim_rel(p, OC_OP_GELU_ERF, zabs, 0), 1.13 * 2 * u * 0.7072 * zabs));
    return oc_add_up(oc_add_up(e, oc_mul_up(3 * u, yabs)), tiny);
  default: { /* gelu_tanh: tanh's budget (|tanh| <= 1) plus the argument's 4u|w| */
    double w = GT_C * (zabs + GT_A * zabs * zabs * zabs);
    double dt = oc_add_up(prim_rel(p, OC_OP_TANH, w, 0), 4 * u * w);
    if (dt > 2) dt = 2;
    e = oc_mul_up(0.5 * zabs, dt);
    return oc_add_up(oc_add_up(e, oc_mul_up(3 * u, yabs)), tiny);
  }
  }
}

/* ---------------------------------------------------------- softmax */

double oc_softmax_eps(const struct oc_profile *p, double t) {
  double at = fabs(t);
  return oc_up(oc_mul_up(oc_add_up(1, oc_exp_rel(p, t)), oc_up(exp(oc_mul_up(math_u(p), at)))) - 1);
}

double oc_softmax_rel(const struct oc_profile *p, double eps_i, double mean_eps, int64_t n,
                      double rescale_rel) {
  double g = oc_sum_theta(p, n, 0);
  double num = oc_mul_up(oc_add_up(1, eps_i), oc_add_up(1, oc_div_rel(p)));
  double den = oc_down(oc_down(oc_down(1 - mean_eps) * oc_down(1 - g)) * oc_down(1 - rescale_rel));
  if (!(den > 0)) return INFINITY;
  return oc_up(oc_div_up(num, den) - 1);
}
