/* oracle/grad.c — oc_check_grad: the gradients of the activations and of
 * the softmax family (ops.def class GRAD), each output element against its
 * exact value with a rigorous bound for the formula PyTorch's kernels
 * evaluate (ATen's opmath: float for fp16/bf16/fp32, double for fp64).
 *
 * Exact values: MPFR at WPREC bits from the inputs as given (the forward
 * value y or input x, and the incoming gradient g); the MPFR evaluation's
 * own error (a few roundings of 2^-WPREC relative, each bounded by the
 * magnitudes M below) is added to the bound, so the enclosure is rigorous
 * without a Ziv loop. The bitwise count compares with the rounding of the
 * enclosure, which is decided for every element whose value is not within
 * 2^-(WPREC-8) of a rounding boundary.
 *
 * Bounds (u: the compute unit roundoff, 2^-24 or 2^-53; first order, each
 * product of (1 + delta) factors bounded by gamma, then one output
 * rounding |out - y| <= u_out |y| + (1 + u_out) B + eta_out):
 *  sigmoid_backward  g (1 - y) y (ATen: a * (1 - b) * b): gamma_3 |g y (1 - y)|.
 *  tanh_backward     g (1 - y^2) (ATen: a * (1 - b * b)): gamma_3 |g| (y^2 + |1 - y^2|).
 *  threshold_backward x <= t ? 0 : g: exact (bound 0).
 *  silu_backward     g s (1 + x (1 - s)), s = 1 / (1 + e^-x): s carries exp's
 *                    budget (CUDA guide, ORACLE.md §3) and the division's, then
 *                    every step propagates first order (silu_err below).
 *  gelu_backward     erf: g (Phi(x) + x phi(x)); tanh: g (0.5 (1 + t) + 0.5 x
 *                    (1 - t^2) k (1 + 3 c x^2)), t = tanh(k (x + c x^3)),
 *                    k = sqrt(2/pi), c = 0.044715 (exact decimal), in ATen's
 *                    order of steps (GeluKernel.cu), erf/tanh/exp budgets.
 *  softmax_backward  y_i (g_i - S), S = sum_j g_j y_j. ATen computes
 *                    g_i y_i - y_i S (PersistentSoftmax.cuh and SoftMax.cu
 *                    multiply the gradient by the output first), so the bound
 *                    takes the expanded form: S within theta_n sum|g_j y_j|
 *                    (oc_dot_theta: any order), then u |g_i y_i| + |y_i| E_S +
 *                    u |y_i| (|S| + E_S) + u (both terms).
 *  log_softmax_backward g_i - e^(y_i) S, S = sum_j g_j: S within theta_n sum|g_j|,
 *                    e^y with exp's budget, then the product and the difference.
 * Non-finite inputs: the value is ATen's formula evaluated in IEEE
 * arithmetic (NaN for inf * 0), in double; where the same formula in
 * float (fp32 compute) gives another special value, that is accepted too
 * (an intermediate that overflows in one and not the other), and so is
 * the other order of softmax_backward's steps, (g - S) y, which ATen's CPU
 * kernel takes (inf - inf there is -inf * inf here). */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "elementwise.h"
#include "norm_params.h"
#include "ops.h"
#include "oracle.h"
#include "verdict.h"

#define WPREC 256
/* relative error of the MPFR evaluation, per unit of the magnitudes M */
#define REF_REL 0x1p-240

static const char GT_C[] = "0.044715";

struct gctx {
  enum oc_grad_op id;
  const struct oc_profile *p;
  double u, eta;        /* compute unit roundoff and underflow floor per rounding */
  int dbl;              /* compute in double (fp64 profiles) */
  double thr;           /* threshold_backward */
  double s;             /* row ops' IEEE sum, for ieee_form */
  mpfr_t a, b, c, r, k; /* scratch at WPREC */
};

static double prim_abs(const struct gctx *g, enum oc_op op, double arg, double y, double v) {
  struct oc_prim_budget b = oc_primitive_budget(op, g->dbl, g->p->math, arg, y);
  enum oc_format c = g->dbl ? OC_FP64 : OC_FP32;
  /* the spacing at the far end of the budget (it doubles past a power of
   * two: tanh's 2 ulps from 0.99999 reach beyond 1) */
  double q = oc_format_quantum(c, fabs(v) + (b.ulps + 1) * oc_format_quantum(c, v));
  /* a budget in ulps is against the correctly rounded value: plus its rounding */
  return oc_add_up(oc_add_up(oc_mul_up(b.ulps + 0.5, q), b.abs), oc_mul_up(b.rel, fabs(v)));
}

/* ---------------------------------------------------------------- IEEE forms */

/* ATen's formula evaluated in double (fl = 0) or float (fl = 1) for
 * non-finite inputs: the special value a kernel gives there. */
static double ieee_form(const struct gctx *c, double g, double x, int fl, int alt) {
#define F(v) (fl ? (double)(float)(v) : (v))
  switch (c->id) {
  case OC_GRAD_SIGMOID_BACKWARD: return F(F(g * F(1 - x)) * x);
  case OC_GRAD_TANH_BACKWARD: return F(g * F(1 - F(x * x)));
  case OC_GRAD_THRESHOLD_BACKWARD: return x <= c->thr ? 0.0 : g;
  case OC_GRAD_SILU_BACKWARD: {
    double s = F(1 / F(1 + (fl ? (double)expf((float)-x) : exp(-x))));
    return F(F(g * s) * F(1 + F(x * F(1 - s))));
  }
  case OC_GRAD_GELU_ERF_BACKWARD: {
    double cdf = F(0.5 * F(1 + (fl ? (double)erff((float)(x * M_SQRT1_2)) : erf(x * M_SQRT1_2))));
    double e = F(-0.5 * x * x);
    double pdf = F((fl ? (double)expf((float)e) : exp(e)) * (M_2_SQRTPI * M_SQRT1_2 * 0.5));
    return F(g * F(cdf + F(x * pdf)));
  }
  case OC_GRAD_GELU_TANH_BACKWARD: {
    const double kb = M_SQRT2 * M_2_SQRTPI * 0.5, kk = 0.044715;
    double xs = F(x * x), xc = F(xs * x);
    double in = F(kb * F(x + F(kk * xc)));
    double t = fl ? (double)tanhf((float)in) : tanh(in);
    double left = F(0.5 * x), right = F(1 + t), ld = F(0.5 * right);
    double td = F(1 - F(t * t)), id = F(kb * F(1 + F(F(3 * kk) * xs)));
    return F(g * F(ld + F(F(left * td) * id)));
  }
  case OC_GRAD_SOFTMAX_BACKWARD: /* CUDA: g y - y S; ATen's CPU kernel: (g - S) y */
    return alt ? F(F(g - c->s) * x) : F(F(g * x) - F(x * c->s));
  case OC_GRAD_LOG_SOFTMAX_BACKWARD: return F(g - F((fl ? (double)expf((float)x) : exp(x)) * c->s));
  case OC_GRAD_LAYER_NORM_BACKWARD:
  case OC_GRAD_RMS_NORM_BACKWARD:  /* check_norm */
  case OC_GRAD_LAYER_NORM_DWEIGHT: /* norm_params.c */
  case OC_GRAD_LAYER_NORM_DBIAS:
  case OC_GRAD_RMS_NORM_DWEIGHT:
  case OC_GRAD_COUNT: break;
  }
  return NAN;
#undef F
}

/* ------------------------------------------------------- elementwise grads */

/* Exact value of the op at (g, x) into c->r (MPFR, WPREC); *mag: the
 * magnitude M its MPFR error is relative to. */
static void exact_ew(struct gctx *c, double g, double x, double *mag) {
  mpfr_set_d(c->a, x, MPFR_RNDN);
  switch (c->id) {
  case OC_GRAD_SIGMOID_BACKWARD:
    mpfr_ui_sub(c->b, 1, c->a, MPFR_RNDN);
    mpfr_mul(c->r, c->b, c->a, MPFR_RNDN);
    mpfr_mul_d(c->r, c->r, g, MPFR_RNDN);
    *mag = fabs(g * x) * (1 + fabs(x));
    break;
  case OC_GRAD_TANH_BACKWARD:
    mpfr_sqr(c->b, c->a, MPFR_RNDN);
    mpfr_ui_sub(c->b, 1, c->b, MPFR_RNDN);
    mpfr_mul_d(c->r, c->b, g, MPFR_RNDN);
    *mag = fabs(g) * (1 + x * x);
    break;
  case OC_GRAD_THRESHOLD_BACKWARD:
    mpfr_set_d(c->r, x <= c->thr ? 0.0 : g, MPFR_RNDN);
    *mag = 0;
    break;
  case OC_GRAD_SILU_BACKWARD: /* s (1 + x (1 - s)) g */
    mpfr_neg(c->b, c->a, MPFR_RNDN);
    mpfr_exp(c->b, c->b, MPFR_RNDN);
    mpfr_add_ui(c->b, c->b, 1, MPFR_RNDN);
    mpfr_ui_div(c->b, 1, c->b, MPFR_RNDN); /* s */
    mpfr_ui_sub(c->c, 1, c->b, MPFR_RNDN);
    mpfr_mul(c->c, c->c, c->a, MPFR_RNDN);
    mpfr_add_ui(c->c, c->c, 1, MPFR_RNDN);
    mpfr_mul(c->r, c->c, c->b, MPFR_RNDN);
    mpfr_mul_d(c->r, c->r, g, MPFR_RNDN);
    /* exp's argument carries no error (x exact); its condition |x| */
    *mag = fabs(g) * (2 + fabs(x)) * (8 + fabs(x));
    break;
  case OC_GRAD_GELU_ERF_BACKWARD: /* Phi(x) + x phi(x) = erfc(-x/sqrt2)/2 + x e^(-x^2/2)/sqrt(2 pi)
                                   */
    mpfr_sqrt_ui(c->k, 2, MPFR_RNDN);
    mpfr_div(c->b, c->a, c->k, MPFR_RNDN);
    mpfr_neg(c->b, c->b, MPFR_RNDN);
    mpfr_erfc(c->b, c->b, MPFR_RNDN);
    mpfr_div_2ui(c->b, c->b, 1, MPFR_RNDN);
    mpfr_sqr(c->c, c->a, MPFR_RNDN);
    mpfr_div_2ui(c->c, c->c, 1, MPFR_RNDN);
    mpfr_neg(c->c, c->c, MPFR_RNDN);
    mpfr_exp(c->c, c->c, MPFR_RNDN);
    mpfr_mul(c->c, c->c, c->a, MPFR_RNDN);
    mpfr_const_pi(c->k, MPFR_RNDN);
    mpfr_mul_2ui(c->k, c->k, 1, MPFR_RNDN);
    mpfr_sqrt(c->k, c->k, MPFR_RNDN);
    mpfr_div(c->c, c->c, c->k, MPFR_RNDN);
    mpfr_add(c->r, c->b, c->c, MPFR_RNDN);
    mpfr_mul_d(c->r, c->r, g, MPFR_RNDN);
    /* erfc's condition number is below 2 v^2 + 2 (elementwise.c), exp's x^2 */
    *mag = fabs(g) * (2 + fabs(x)) * (8 + 2 * x * x);
    break;
  case OC_GRAD_GELU_TANH_BACKWARD: { /* 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
    mpfr_const_pi(c->k, MPFR_RNDN);
    mpfr_ui_div(c->k, 2, c->k, MPFR_RNDN);
    mpfr_sqrt(c->k, c->k, MPFR_RNDN); /* k */
    mpfr_set_str(c->c, GT_C, 10, MPFR_RNDN);
    mpfr_sqr(c->b, c->a, MPFR_RNDN);
    mpfr_mul(c->b, c->b, c->c, MPFR_RNDN); /* c x^2 */
    mpfr_add_ui(c->r, c->b, 1, MPFR_RNDN);
    mpfr_mul(c->r, c->r, c->a, MPFR_RNDN);
    mpfr_mul(c->r, c->r, c->k, MPFR_RNDN); /* z */
    mpfr_tanh(c->r, c->r, MPFR_RNDN);      /* t */
    mpfr_mul_ui(c->b, c->b, 3, MPFR_RNDN);
    mpfr_add_ui(c->b, c->b, 1, MPFR_RNDN);
    mpfr_mul(c->b, c->b, c->k, MPFR_RNDN); /* k (1 + 3 c x^2) */
    mpfr_sqr(c->c, c->r, MPFR_RNDN);
    mpfr_ui_sub(c->c, 1, c->c, MPFR_RNDN); /* 1 - t^2 */
    mpfr_mul(c->c, c->c, c->b, MPFR_RNDN);
    mpfr_mul(c->c, c->c, c->a, MPFR_RNDN);
    mpfr_add_ui(c->r, c->r, 1, MPFR_RNDN);
    mpfr_add(c->r, c->r, c->c, MPFR_RNDN);
    mpfr_div_2ui(c->r, c->r, 1, MPFR_RNDN);
    mpfr_mul_d(c->r, c->r, g, MPFR_RNDN);
    *mag = fabs(g) * (2 + fabs(x)) * (8 + 8 * x * x) * (1 + x * x);
    break;
  }
  case OC_GRAD_SOFTMAX_BACKWARD:
  case OC_GRAD_LOG_SOFTMAX_BACKWARD:
  case OC_GRAD_LAYER_NORM_BACKWARD:
  case OC_GRAD_RMS_NORM_BACKWARD:
  case OC_GRAD_LAYER_NORM_DWEIGHT: /* norm_params.c */
  case OC_GRAD_LAYER_NORM_DBIAS:
  case OC_GRAD_RMS_NORM_DWEIGHT:
  case OC_GRAD_COUNT: /* row ops: check_rows, check_norm */
    mpfr_set_nan(c->r);
    *mag = 0;
    break;
  }
}

/* The kernel's error before the output rounding at finite (g, x), ref the
 * exact value (double). */
static double kernel_err_ew(const struct gctx *c, double g, double x, double ref) {
  double u = c->u, ag = fabs(g), ax = fabs(x);
  switch (c->id) {
  case OC_GRAD_SIGMOID_BACKWARD: return oc_mul_up(oc_gamma(3, u), fabs(g * x * (1 - x)));
  case OC_GRAD_TANH_BACKWARD: return oc_mul_up(oc_gamma(3, u), ag * (x * x + fabs(1 - x * x)));
  case OC_GRAD_THRESHOLD_BACKWARD: return 0;
  case OC_GRAD_SILU_BACKWARD: {
    double e = exp(-x);
    double s = 1 / (1 + e);
    double ee = isfinite(e) ? prim_abs(c, OC_OP_EXP, -x, 0, e) : 0;
    /* s: exp's error through 1/(1+e) (derivative s^2), the sum's and the
     * division's rounding */
    double div = prim_abs(c, OC_OP_DIV, 0, 1 + e, s);
    double es = (isfinite(e) ? s * s * (ee + u * (1 + e)) : 0) + div + u * s;
    double oms = 1 - s, d = 1 + x * oms;
    double ed = ax * (es + u * oms) + u * fabs(x * oms) + u * fabs(d);
    double err = ag * (s * ed + fabs(d) * es) + 2 * u * fabs(ref) + 2 * u * ag * s * fabs(d);
    /* e^-x overflows the compute format (x below about -87 in fp32): s = 0
     * and the kernel's result is +-0, the exact one a tiny number */
    double top = c->dbl ? DBL_MAX : c->p->math == OC_MATH_FAST ? 0x1p126 : 0x1.fffffep127;
    if (!(1 + e * (1 + 4 * u) < top)) err += fabs(ref);
    return err;
  }
  case OC_GRAD_GELU_ERF_BACKWARD: {
    double a = x * M_SQRT1_2, er = erf(a);
    /* cdf = 0.5 (1 + erf(x kAlpha)): the argument carries 2u (constant,
     * product), erf's budget, the sum's rounding */
    double earg = M_2_SQRTPI * exp(-a * a) * fabs(a) * 2 * u;
    double ecdf = 0.5 * (earg + prim_abs(c, OC_OP_GELU_ERF, a, 0, er) + u * fabs(1 + er));
    /* pdf = exp(-0.5 x x) kBeta: argument 2u relative, exp's budget, the
     * constant and the product 2u */
    double ea = -0.5 * x * x, ex = exp(ea), kb = M_2_SQRTPI * M_SQRT1_2 * 0.5;
    double pdf = ex * kb;
    double epdf = kb * (ex * fabs(ea) * 2 * u + prim_abs(c, OC_OP_EXP, ea, 0, ex)) + 2 * u * pdf;
    double xp = ax * pdf, cdf = 0.5 * (1 + er);
    double es = ecdf + ax * epdf + u * xp + u * (cdf + xp);
    return ag * es + 2 * u * fabs(ref);
  }
  case OC_GRAD_GELU_TANH_BACKWARD: {
    const double kb = M_SQRT2 * M_2_SQRTPI * 0.5, kk = 0.044715;
    double z = kb * (x + kk * x * x * x), t = tanh(z);
    /* inner: x^3 2u, kk x^3 (constant, product) 4u, the sum (same signs)
     * 5u, kb (constant, product) 7u */
    double et = (1 - t * t) * 7 * u * fabs(z) + prim_abs(c, OC_OP_TANH, z, 0, t);
    double ld = 0.5 * (1 + t), eld = 0.5 * (et + u * (1 + t));
    double td = 1 - t * t, etd = 2 * fabs(t) * et + u * t * t + u * td;
    double id = kb * (1 + 3 * kk * x * x), eid = 8 * u * id;
    double left = 0.5 * ax, rd = left * td * id;
    double erd = left * (etd * id + td * eid) + 2 * u * rd;
    double es = eld + erd + u * (ld + rd);
    return ag * es + 2 * u * fabs(ref);
  }
  case OC_GRAD_SOFTMAX_BACKWARD:
  case OC_GRAD_LOG_SOFTMAX_BACKWARD:
  case OC_GRAD_LAYER_NORM_BACKWARD:
  case OC_GRAD_RMS_NORM_BACKWARD:
  case OC_GRAD_LAYER_NORM_DWEIGHT: /* norm_params.c */
  case OC_GRAD_LAYER_NORM_DBIAS:
  case OC_GRAD_RMS_NORM_DWEIGHT:
  case OC_GRAD_COUNT: break; /* row ops: check_rows, check_norm */
  }
  return INFINITY;
}

static int same_value(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b && signbit(a) == signbit(b);
}

/* Fills e for an element whose exact value is v (double) with MPFR
 * enclosure from c->r, the kernel's error kerr (before the output
 * rounding) and MPFR magnitude mag. */
static void finish_elem(const struct gctx *c, struct oc_elem *e, double kerr, double mag) {
  e->lo = mpfr_get_d(c->r, MPFR_RNDD);
  e->hi = mpfr_get_d(c->r, MPFR_RNDU);
  double y = fmax(fabs(e->lo), fabs(e->hi));
  double b = oc_add_up(kerr, oc_mul_up(REF_REL, mag));
  /* every compute rounding may also underflow (an absolute floor) */
  b = oc_add_up(b, oc_mul_up(32 * c->eta, 1 + mag));
  e->pre_set = 1;
  e->pre = b;
  e->bound = oc_out_bound(c->p, y, b);
  if (e->bound != e->bound) e->bound = INFINITY;
}

/* A non-finite input: ATen's IEEE formula (double, or float for a
 * float-compute kernel). */
static void special_elem(const struct gctx *c, struct oc_elem *e, double g, double x) {
  double v = ieee_form(c, g, x, 0, 0);
  e->lo = e->hi = oc_round(c->p->out, v, c->p->out_ovf);
  e->bound = 0;
  e->exact_only = 1;
  /* the same formula in float, or the other order of its steps */
  for (int alt = 0; alt < 2 && !same_value(e->k, e->lo); alt++)
    for (int fl = 0; fl < 2 - c->dbl; fl++)
      if ((alt || fl) &&
          same_value(e->k, oc_round(c->p->out, ieee_form(c, g, x, fl, alt), c->p->out_ovf)))
        e->alt_ok = 1;
  /* a finite value from a non-finite input (g - 0 * S at y = -inf): no
   * bound derived here unless the op is exact */
  if (isfinite(v) && c->id != OC_GRAD_THRESHOLD_BACKWARD) e->bound = INFINITY;
}

static int check_ew(struct gctx *c, const struct oc_tensor *gt, const struct oc_tensor *xt,
                    const struct oc_tensor *out, const struct oc_options *o, struct oc_verdict *v,
                    const char *name) {
  if (gt->rank != out->rank || xt->rank != out->rank) return -1;
  for (int d = 0; d < out->rank; d++)
    if ((gt->shape[d] != out->shape[d] && gt->shape[d] != 1) ||
        (xt->shape[d] != out->shape[d] && xt->shape[d] != 1))
      return -1;
  struct oc_check chk;
  int64_t total = oc_tensor_numel(out);
  oc_check_init(&chk, name, c->p, o, v, total, out->rank, NULL, NULL);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t n = 0; n < total; n++) {
    int64_t og = 0, ox = 0, oo = 0;
    for (int d = 0; d < out->rank; d++) {
      oo += idx[d] * out->stride[d];
      if (gt->shape[d] != 1) og += idx[d] * gt->stride[d];
      if (xt->shape[d] != 1) ox += idx[d] * xt->stride[d];
    }
    double g = oc_tensor_at(gt, og), x = oc_tensor_at(xt, ox);
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    e.k = oc_tensor_at(out, oo);
    e.prob = INFINITY;
    e.exact_only = c->id == OC_GRAD_THRESHOLD_BACKWARD;
    if (!isfinite(g) || !isfinite(x)) {
      special_elem(c, &e, g, x);
    } else {
      double mag = 0;
      exact_ew(c, g, x, &mag);
      double ref = mpfr_get_d(c->r, MPFR_RNDN);
      /* first order above: 2^-10 more covers the products of small terms */
      finish_elem(c, &e, oc_mul_up(kernel_err_ew(c, g, x, ref), 1 + 0x1p-10), mag);
      if (c->id == OC_GRAD_THRESHOLD_BACKWARD) {
        e.lo = e.hi = oc_round(c->p->out, e.lo, c->p->out_ovf);
        e.bound = 0;
        e.zero_sign = e.lo == 0 && x <= c->thr; /* the +0 of `x <= t ? 0 : g` */
      }
      /* gelu_tanh: x^2 overflows the compute format (|x| beyond 2^64 in
       * fp32): ATen's inner derivative is Inf, times tanh' = 0: NaN */
      if (c->id == OC_GRAD_GELU_TANH_BACKWARD && e.k != e.k && !c->dbl && !(x * x < 0x1p128))
        e.alt_ok = 1;
    }
    oc_check_elem(&chk, &e, idx);
    for (int d = out->rank - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  oc_check_finish(&chk, 0);
  return 0;
}

/* ------------------------------------------------------- softmax family */

/* The row ops' kernel error from an element's ingredients (e->in: the
 * magnitude of S's terms, n, |g y| or |g|, |y| or e^y, |S|, exp's error)
 * and S's accumulation theta; shared by the check and the ladder. */
static double rows_kerr(int logsm, double theta, double u, const double *in) {
  double es = theta * in[0], ay = in[3], sabs = in[4];
  double p1 = in[2], p2 = ay * (sabs + es);
  double err2 = ay * es + (logsm ? (sabs + es) * in[5] : 0) + u * p2;
  double err1 = logsm ? 0 : u * p1;
  return oc_mul_up(err1 + err2 + u * (p1 + p2 + err1 + err2), 1 + 0x1p-10);
}

struct rows_ctx {
  int logsm;
  double u;
};

/* A ladder rung's bound (oc_bound_fn): the same steps with S accumulated
 * under the rung's profile (a precision failure then reads "consistent
 * with fp16 accumulation" where that explains it). */
static double rows_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  const struct rows_ctx *rc = ctx;
  int64_t n = (int64_t)e->in[1];
  double theta = rc->logsm ? oc_sum_theta(p, n, 0) : oc_dot_theta(p, n, 0);
  return oc_out_bound(p, fmax(fabs(e->lo), fabs(e->hi)), rows_kerr(rc->logsm, theta, rc->u, e->in));
}

static int check_rows(struct gctx *c, const struct oc_tensor *gt, const struct oc_tensor *yt,
                      int axis, const struct oc_tensor *out, const struct oc_options *o,
                      struct oc_verdict *v, const char *name) {
  int logsm = c->id == OC_GRAD_LOG_SOFTMAX_BACKWARD;
  struct oc_rows r;
  if (gt->rank != yt->rank || oc_rows_init(&r, yt, axis, out, 1)) return -1;
  for (int d = 0; d < yt->rank; d++)
    if (gt->shape[d] != yt->shape[d]) return -1;
  axis = r.axis;
  int64_t n = r.n;
  double *gv = malloc((size_t)(n ? n : 1) * sizeof *gv),
         *yv = malloc((size_t)(n ? n : 1) * sizeof *yv);
  if (!gv || !yv) {
    free(gv);
    free(yv);
    return -1;
  }
  struct oc_check chk;
  struct rows_ctx rc = {logsm, c->u};
  oc_check_init(&chk, name, c->p, o, v, oc_tensor_numel(out), out->rank, rows_bound, &rc);
  double theta = logsm ? oc_sum_theta(c->p, n, 0) : oc_dot_theta(c->p, n, 0);
  double u = c->u;
  mpfr_t s;
  mpfr_init2(s, WPREC);
  for (int64_t row = 0; row < r.nrows; row++) {
    int64_t yoff, ooff, idx[OC_MAX_RANK], oidx[OC_MAX_RANK];
    oc_rows_at(&r, row, &yoff, &ooff, idx);
    int64_t goff = 0;
    for (int d = 0; d < gt->rank; d++)
      goff += idx[d] * gt->stride[d];
    oc_tensor_gather(gt, goff, gt->stride[axis], n, gv);
    oc_tensor_gather(yt, yoff, yt->stride[axis], n, yv);
    /* S exactly enough, its magnitude, and whether it is special */
    int special = 0;
    double smag = 0, sd = 0;
    mpfr_set_ui(s, 0, MPFR_RNDN);
    for (int64_t j = 0; j < n; j++) {
      if (!isfinite(gv[j]) || (!logsm && !isfinite(yv[j]))) special = 1;
      if (special) continue;
      if (logsm) {
        mpfr_add_d(s, s, gv[j], MPFR_RNDN);
        smag = oc_add_up(smag, fabs(gv[j]));
      } else {
        mpfr_set_d(c->a, gv[j], MPFR_RNDN);
        mpfr_mul_d(c->a, c->a, yv[j], MPFR_RNDN); /* exact: 106 bits */
        mpfr_add(s, s, c->a, MPFR_RNDN);
        smag = oc_add_up(smag, fabs(gv[j] * yv[j]));
      }
    }
    if (special) { /* ATen's sum in IEEE double */
      for (int64_t j = 0; j < n; j++)
        sd += logsm ? gv[j] : gv[j] * yv[j];
    }
    double sabs = fabs(mpfr_get_d(s, MPFR_RNDA));
    double es = oc_mul_up(theta, smag);                                  /* the kernel's S */
    double eref_s = oc_mul_up((double)n + 2, oc_mul_up(0x1p-250, smag)); /* MPFR's S */
    for (int64_t k = 0; k < n; k++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      e.k = oc_tensor_at(out, ooff + k * out->stride[axis]);
      e.prob = INFINITY;
      double g = gv[k], y = yv[k];
      if (special || !isfinite(g) || !(isfinite(y) || (logsm && y == -INFINITY))) {
        c->s = special ? sd : mpfr_get_d(s, MPFR_RNDN);
        special_elem(c, &e, g, y);
      } else if (logsm) {
        mpfr_set_d(c->a, y, MPFR_RNDN);
        mpfr_exp(c->a, c->a, MPFR_RNDN);
        mpfr_mul(c->r, c->a, s, MPFR_RNDN);
        mpfr_d_sub(c->r, g, c->r, MPFR_RNDN);
        double ex = exp(y);
        /* exp(-inf) is +0 exactly in every math mode */
        double eex = y == -INFINITY ? 0 : prim_abs(c, OC_OP_EXP, y, 0, ex);
        double in[OC_ELEM_IN] = {smag, (double)n, fabs(g), ex, sabs, eex};
        double mag = ex * (sabs + eref_s) + fabs(g);
        finish_elem(c, &e, rows_kerr(1, theta, u, in), mag);
        memcpy(e.in, in, sizeof in);
        e.bound = oc_add_up(e.bound, oc_mul_up(ex * 2, eref_s));
      } else {
        mpfr_d_sub(c->r, g, s, MPFR_RNDN);
        mpfr_mul_d(c->r, c->r, y, MPFR_RNDN);
        double in[OC_ELEM_IN] = {smag, (double)n, fabs(g * y), fabs(y), sabs, 0};
        finish_elem(c, &e, rows_kerr(0, theta, u, in), fabs(g * y) + fabs(y) * (sabs + es));
        memcpy(e.in, in, sizeof in);
        e.bound = oc_add_up(e.bound, oc_mul_up(fabs(y) * 2, eref_s));
      }
      oc_rows_out_index(&r, idx, k, oidx);
      oc_check_elem(&chk, &e, oidx);
    }
  }
  mpfr_clear(s);
  free(gv);
  free(yv);
  oc_check_finish(&chk, 0);
  return 0;
}

/* ------------------------------------------------------- norm gradients */

/* The statistic of row `idx` (x's multi-index, last axis at 0) in t, x's
 * shape with the last dim 1 (or NULL: 0). */
static double row_stat(const struct oc_tensor *t, const int64_t *idx, int rank) {
  if (!t) return 0;
  int64_t off = 0;
  for (int d = 0; d < rank - 1; d++)
    off += idx[d] * t->stride[d];
  return oc_tensor_at(t, off);
}

/* Whether a norm gradient's row with Inf among its inputs has an IEEE
 * value that depends on how the kernel associates its products: some w g
 * of nonzero finite factors leaves the compute format's normal range
 * (underflows, or overflows), so rstd (w g) and ATen's CPU (rstd g) w may
 * differ in kind (0 · Inf = NaN against a signed Inf). A NaN among the
 * inputs propagates whatever the order (the caller keeps demanding it). */
static int norm_row_fragile(const struct gctx *c, const double *wv, const double *gv, int64_t n) {
  double tiny = c->dbl ? DBL_MIN : FLT_MIN, huge = c->dbl ? DBL_MAX : FLT_MAX;
  for (int64_t j = 0; j < n; j++) {
    if (!isfinite(wv[j]) || !isfinite(gv[j]) || wv[j] == 0 || gv[j] == 0) continue;
    double p = fabs(wv[j] * gv[j]);
    if (p < tiny || p > huge) return 1;
  }
  return 0;
}

static int norm_row_has_nan(double mu, double rs, const double *gv, const double *xv,
                            const double *wv, int64_t n) {
  int nan = isnan(mu) || isnan(rs);
  for (int64_t j = 0; j < n && !nan; j++)
    nan = isnan(gv[j]) || isnan(xv[j]) || isnan(wv[j]);
  return nan;
}

/* dx of layer_norm (mean != NULL) or rms_norm over the last axis:
 * rstd (w g - A - xh B), A = mean(w g) (layer_norm only), B = mean(w g xh),
 * xh = (x - mean) rstd. ATen evaluates it as that (x-hat form) or with
 * ds = sum w g x, db = sum w g and dx = rstd w g + c2 x + c3 (c2, c3 from
 * ds, db, mean, rstd: LayerNorm's CUDA kernels), in the compute format.
 * Bound for either: every monomial of the expanded formula carries at most
 * n + 10 roundings, so the error is within gamma_(n+10) of the sum of the
 * monomials' magnitudes, rstd (|w g_i| + Q/n + (|x_i| + |mean|) rstd P/n),
 * Q = sum |w g|, P = sum |w g| (|x| + |mean|) rstd. */
static int check_norm(struct gctx *c, const struct oc_grad_args *a, const struct oc_tensor *out,
                      const struct oc_options *o, struct oc_verdict *v, const char *name) {
  const struct oc_tensor *gt = a->g, *xt = a->x, *mt = a->mean, *rt = a->rstd, *wt = a->weight;
  int ln = c->id == OC_GRAD_LAYER_NORM_BACKWARD, rank = xt->rank;
  if (!rt || (ln && !mt) || rank < 1 || gt->rank != rank) return -1;
  struct oc_rows r;
  if (oc_rows_init(&r, xt, rank - 1, out, 1)) return -1;
  int64_t n = r.n;
  for (int d = 0; d < rank; d++)
    if (gt->shape[d] != xt->shape[d]) return -1;
  const struct oc_tensor *st[2] = {mt, rt};
  for (int k = 0; k < 2; k++) {
    if (!st[k]) continue;
    if (st[k]->rank != rank || st[k]->shape[rank - 1] != 1) return -1;
    for (int d = 0; d < rank - 1; d++)
      if (st[k]->shape[d] != xt->shape[d]) return -1;
  }
  if (wt && (wt->rank != 1 || wt->shape[0] != n)) return -1;
  size_t sz = (size_t)(n ? n : 1) * sizeof(double);
  double *gv = malloc(sz), *xv = malloc(sz), *wv = malloc(sz);
  if (!gv || !xv || !wv) {
    free(gv);
    free(xv);
    free(wv);
    return -1;
  }
  if (wt)
    oc_tensor_gather(wt, 0, wt->stride[0], n, wv);
  else
    for (int64_t j = 0; j < n; j++)
      wv[j] = 1;
  struct oc_check chk;
  oc_check_init(&chk, name, c->p, o, v, oc_tensor_numel(out), out->rank, NULL, NULL);
  double gam = oc_gamma((double)n + 10, c->u);
  mpfr_t A, B, t;
  mpfr_inits2(WPREC, A, B, t, (mpfr_ptr)0);
  for (int64_t row = 0; row < r.nrows; row++) {
    int64_t xoff, ooff, idx[OC_MAX_RANK], oidx[OC_MAX_RANK];
    oc_rows_at(&r, row, &xoff, &ooff, idx);
    int64_t goff = 0;
    for (int d = 0; d < rank; d++)
      goff += idx[d] * gt->stride[d];
    oc_tensor_gather(gt, goff, gt->stride[rank - 1], n, gv);
    oc_tensor_gather(xt, xoff, xt->stride[rank - 1], n, xv);
    double mu = row_stat(mt, idx, rank), rs = row_stat(rt, idx, rank);
    int finite = isfinite(mu) && isfinite(rs);
    for (int64_t j = 0; j < n && finite; j++)
      finite = isfinite(gv[j]) && isfinite(xv[j]) && isfinite(wv[j]);
    if (!finite) {
      /* ATen's formula in IEEE arithmetic, both forms: where both are
       * NaN the kernel's must be (unless the row's NaN comes from Inf
       * meeting an underflowed product, which another association of the
       * same formula turns into an Inf: norm_row_fragile); elsewhere no
       * bound is derived */
      int demand = norm_row_has_nan(mu, rs, gv, xv, wv, n) || !norm_row_fragile(c, wv, gv, n);
      double sa = 0, sb = 0, sds = 0;
      for (int64_t j = 0; j < n; j++) {
        double wg = wv[j] * gv[j];
        sa += wg, sb += wg * (xv[j] - mu) * rs, sds += wg * xv[j];
      }
      double c2 = (sa * mu - sds) * rs * rs * rs / (double)n, c3 = -c2 * mu - sa * rs / (double)n;
      for (int64_t k = 0; k < n; k++) {
        double wg = wv[k] * gv[k], xh = (xv[k] - mu) * rs;
        double f1 = rs * (wg - (ln ? sa / (double)n : 0) - xh * sb / (double)n);
        double f2 = rs * wg + c2 * xv[k] + (ln ? c3 : 0.0);
        struct oc_elem e;
        memset(&e, 0, sizeof e);
        e.k = oc_tensor_at(out, ooff + k * out->stride[rank - 1]);
        e.prob = INFINITY;
        e.exact_only = 1;
        oc_rows_out_index(&r, idx, k, oidx);
        if (demand && f1 != f1 && f2 != f2) {
          e.lo = e.hi = NAN;
          oc_check_elem(&chk, &e, oidx);
        } else {
          v->checked++;
          oc_check_inconclusive(&chk, "a row holds Inf or NaN: no bound for the norm gradient");
        }
      }
      continue;
    }
    /* A, B exactly enough; Q, P for the bound */
    mpfr_set_ui(A, 0, MPFR_RNDN);
    mpfr_set_ui(B, 0, MPFR_RNDN);
    double q = 0, pm = 0;
    for (int64_t j = 0; j < n; j++) {
      mpfr_set_d(t, wv[j], MPFR_RNDN);
      mpfr_mul_d(t, t, gv[j], MPFR_RNDN); /* w g: exact */
      mpfr_add(A, A, t, MPFR_RNDN);
      mpfr_set_d(c->a, xv[j], MPFR_RNDN);
      mpfr_sub_d(c->a, c->a, mu, MPFR_RNDN);
      mpfr_mul_d(c->a, c->a, rs, MPFR_RNDN);
      mpfr_mul(c->a, c->a, t, MPFR_RNDN);
      mpfr_add(B, B, c->a, MPFR_RNDN);
      double awg = fabs(wv[j] * gv[j]);
      q = oc_add_up(q, awg);
      pm = oc_add_up(pm, oc_mul_up(awg, oc_mul_up(fabs(xv[j]) + fabs(mu), fabs(rs))));
    }
    mpfr_div_si(A, A, (long)n, MPFR_RNDN);
    mpfr_div_si(B, B, (long)n, MPFR_RNDN);
    double qn = q / (double)n, pn = pm / (double)n;
    /* The ds/db form's intermediates (rstd^3, c2 x) may overflow the
     * compute format where the result does not: Inf or NaN there is
     * consistent with a correct kernel and proves nothing. */
    double sx = 0, xmax = 0;
    for (int64_t j = 0; j < n; j++)
      sx += fabs(wv[j] * gv[j] * xv[j]), xmax = fmax(xmax, fabs(xv[j]));
    double r3 = fabs(rs * rs * rs), top = c->dbl ? DBL_MAX : 0x1.fffffep127;
    int ovf = !(fmax(r3, r3 * (sx + q * fabs(mu)) * (xmax + fabs(mu))) < top / 4);
    for (int64_t k = 0; k < n; k++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      e.k = oc_tensor_at(out, ooff + k * out->stride[rank - 1]);
      e.prob = INFINITY;
      mpfr_set_d(c->a, xv[k], MPFR_RNDN);
      mpfr_sub_d(c->a, c->a, mu, MPFR_RNDN);
      mpfr_mul_d(c->a, c->a, rs, MPFR_RNDN); /* xh */
      mpfr_mul(c->a, c->a, B, MPFR_RNDN);
      mpfr_set_d(c->r, wv[k], MPFR_RNDN);
      mpfr_mul_d(c->r, c->r, gv[k], MPFR_RNDN);
      if (ln) mpfr_sub(c->r, c->r, A, MPFR_RNDN);
      mpfr_sub(c->r, c->r, c->a, MPFR_RNDN);
      mpfr_mul_d(c->r, c->r, rs, MPFR_RNDN);
      double xk = oc_mul_up(fabs(xv[k]) + fabs(mu), fabs(rs)); /* rstd generated may be negative */
      double mag = oc_mul_up(
          fabs(rs), oc_add_up(oc_add_up(fabs(wv[k] * gv[k]), ln ? qn : 0), oc_mul_up(xk, pn)));
      finish_elem(c, &e, oc_mul_up(gam, mag), oc_mul_up(mag, (double)n + 8));
      e.ovf_ok = ovf;
      oc_rows_out_index(&r, idx, k, oidx);
      oc_check_elem(&chk, &e, oidx);
    }
  }
  mpfr_clears(A, B, t, (mpfr_ptr)0);
  free(gv);
  free(xv);
  free(wv);
  oc_check_finish(&chk, 0);
  return 0;
}

int oc_check_grad(enum oc_grad_op id, const struct oc_grad_args *a, const struct oc_tensor *out,
                  const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  const struct oc_op_info *op = NULL;
  for (int i = 0; i < OC_ID_COUNT && !op; i++) {
    const struct oc_op_info *r = oc_op_by_id((enum oc_opid)i);
    if (r->cls == OC_CLASS_GRAD && r->kind == (int)id) op = r;
  }
  if (!op || !a || !a->g || !out || !p || !v) return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (id == OC_GRAD_LAYER_NORM_DWEIGHT || id == OC_GRAD_LAYER_NORM_DBIAS ||
      id == OC_GRAD_RMS_NORM_DWEIGHT) /* column sums (x unused for the bias) */
    return oc_check_norm_params(id, a, out, p, o, v, op->name);
  if (!a->x) return -1;
  struct gctx c;
  memset(&c, 0, sizeof c);
  c.id = id;
  c.p = p;
  c.dbl = p->acc == OC_FP64;
  c.u = c.dbl ? 0x1p-53 : 0x1p-24;
  c.eta = c.dbl ? 0x1p-1074 : 0x1p-150;
  /* profile partial=: every step rounds to that narrower format (ATen's
   * CUDA tanh and sigmoid backward compute in the tensor's 16-bit type:
   * a * (1 - b * b) with c10::BFloat16's operators), so its unit roundoff
   * and underflow floor bound each step. */
  if (p->partial && oc_unit_roundoff(p->partial_fmt) > c.u) {
    c.u = oc_unit_roundoff(p->partial_fmt);
    c.eta = oc_format_info(p->partial_fmt)->min_subnormal / 2;
  }
  c.thr = a->threshold;
  mpfr_inits2(WPREC, c.a, c.b, c.c, c.r, c.k, (mpfr_ptr)0);
  int r = id == OC_GRAD_SOFTMAX_BACKWARD || id == OC_GRAD_LOG_SOFTMAX_BACKWARD
              ? check_rows(&c, a->g, a->x, a->axis, out, o, v, op->name)
          : id == OC_GRAD_LAYER_NORM_BACKWARD || id == OC_GRAD_RMS_NORM_BACKWARD
              ? check_norm(&c, a, out, o, v, op->name)
              : check_ew(&c, a->g, a->x, out, o, v, op->name);
  mpfr_clears(c.a, c.b, c.c, c.r, c.k, (mpfr_ptr)0);
  return r;
}
