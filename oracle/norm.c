/* oracle/norm.c — LayerNorm and RMSNorm over the last axis, checked in full.
 * Reference at 128 bits in MPFR; bounds per ORACLE.md §2 for the profile's
 * algorithm class: two-pass and Welford (|dmu| <= gamma_n mean|x|) versus
 * one-pass E[x^2] - mean^2, whose error grows with (mean/sigma)^2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "verdict.h"

#define PREC 128

struct nrm {
  int rms;
};

/* in[0]: |x_i - mu| (rms: |x_i|), in[1]: mean|x|, in[2]: v (rms: mean x^2),
 * in[3]: eps, in[4]: |w_i|, in[5]: |b_i|; n from in[] via ctx-free slot:
 * stored in the elem's prob-independent field below. */
struct nrm_ctx {
  struct nrm k;
  int64_t n;
  double mu_abs; /* |mu| */
};

static double nrm_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  const struct nrm_ctx *c = ctx;
  int64_t n = c->n;
  double u = oc_profile_u_acc(p);
  double d = e->in[0], mabs = e->in[1], v = e->in[2], eps = e->in[3], w = e->in[4], b = e->in[5];
  double yabs = fmax(fabs(e->lo), fabs(e->hi));
  double rs = oc_rsqrt_rel(p);
  if (c->k.rms) {
    /* ms = sum x^2 / n: products, sum, division: gamma_{n+1}; then +eps, rsqrt. */
    double th = oc_gamma((double)n + 2, u);
    if (!(th < 0.5)) return INFINITY;
    double rho =
        oc_up(oc_mul_up(oc_mul_up(oc_up(sqrt(oc_div_up(1, oc_down(1 - th)))), oc_up(sqrt(1 + u))),
                        oc_add_up(1, rs)) -
              1);
    double r = oc_up(1 / sqrt(v + eps)) * (1 + 1e-15);
    double R = oc_mul_up(r, oc_add_up(1, rho));
    double by = oc_add_up(oc_mul_up(oc_mul_up(oc_mul_up(d, w), r), rho),
                          oc_mul_up(oc_gamma(2, u), oc_mul_up(oc_mul_up(d, R), w)));
    return oc_out_bound(p, yabs, by);
  }
  /* Underflow: the division sum/n rounds on the accumulator's subnormal
   * grid (absolute error up to half its smallest subnormal, eta), and each
   * of the n squared deviations may underflow by up to eta. Negligible
   * unless the row itself is tiny. */
  double eta = oc_format_info(p->acc)->min_subnormal / 2;
  double dmu = oc_add_up(oc_mul_up(oc_gamma((double)n, u), mabs), eta);
  double dv;
  if (p->norm == OC_NORM_ONE_PASS) {
    /* E[x^2] with gamma_{n+1}, minus mu^2 (with its own error), one rounding. */
    double ex2 = oc_add_up(v, oc_mul_up(c->mu_abs, c->mu_abs));
    double mu2 = oc_mul_up(oc_add_up(c->mu_abs, dmu), oc_add_up(c->mu_abs, dmu));
    dv = oc_add_up(oc_mul_up(oc_gamma((double)n + 1, u), ex2),
                   oc_add_up(oc_mul_up(oc_mul_up(2, c->mu_abs), dmu), oc_mul_up(dmu, dmu)));
    dv = oc_add_up(dv, oc_mul_up(oc_gamma(2, u), oc_add_up(ex2, mu2)));
  } else {
    double dm2 = oc_mul_up(dmu, dmu);
    dv = oc_add_up(dm2, oc_mul_up(oc_gamma((double)n + 3, u), oc_add_up(v, dm2)));
  }
  dv = oc_add_up(dv, oc_mul_up((double)n + 2, eta));
  double ve = v + eps;
  double lo = oc_down(oc_down(ve) - dv);
  if (!(lo > 0)) return INFINITY;
  double rho = oc_up(oc_mul_up(oc_mul_up(oc_up(sqrt(oc_div_up(oc_up(ve), lo))), oc_up(sqrt(1 + u))),
                               oc_add_up(1, rs)) -
                     1);
  double r = oc_up(1 / sqrt(ve)) * (1 + 1e-15);
  double R = oc_mul_up(r, oc_add_up(1, rho));
  double dd = oc_add_up(dmu, oc_mul_up(u, oc_add_up(d, dmu))); /* |d^ - d| */
  double D = oc_add_up(d, dd);
  double by = oc_mul_up(w, oc_add_up(oc_mul_up(dd, R), oc_mul_up(oc_mul_up(d, r), rho)));
  by = oc_add_up(by, oc_mul_up(oc_gamma(3, u), oc_add_up(oc_mul_up(oc_mul_up(D, R), w), b)));
  return oc_out_bound(p, yabs, by);
}

/* An element whose value is special: a NaN row; an rms_norm row with an
 * Inf (finite x -> 0, Inf x -> NaN); a NaN weight or bias; an Inf weight
 * (y = (x - mu) r w: +-Inf, NaN where x - mu is 0) or Inf bias (+-Inf, NaN
 * against the other Inf). Fills el.lo/hi (NaN, +-Inf or 0, bound 0).
 * Returns 0 for an ordinary element, 1 for a special one, 2 when a kernel
 * may also give NaN (x - mu, or its product with r, may be 0 in the kernel
 * while it is not exactly). t is scratch. */
static int special_elem(int rms, int bad, int inf_row, double x, double w, double b, double dz,
                        mpfr_srcptr mu, mpfr_srcptr r, mpfr_ptr t, struct oc_elem *el) {
  if (bad || isnan(w) || isnan(b)) {
    el->lo = el->hi = NAN;
    return 1;
  }
  if (inf_row) { /* rms_norm: rsqrt(Inf) = 0 */
    el->lo = el->hi = isinf(x) || isinf(w) ? NAN : 0.0;
    return 1;
  }
  if (!isinf(w) && !isinf(b)) return 0;
  double a = 0; /* (x - mu) r w: 0, or the Inf of its sign */
  int maybe_nan = 0;
  if (isinf(w)) {
    mpfr_set_d(t, x, MPFR_RNDN);
    if (!rms) mpfr_sub(t, t, mu, MPFR_RNDN);
    if (mpfr_zero_p(t)) {
      el->lo = el->hi = NAN;
      return 1;
    }
    /* x - mu may be 0 in the kernel when it is within the error of its
     * mean (dz); (x - mu) r may underflow */
    maybe_nan = fabs(mpfr_get_d(t, MPFR_RNDA)) <= dz;
    mpfr_mul(t, t, r, MPFR_RNDN);
    maybe_nan |= fabs(mpfr_get_d(t, MPFR_RNDA)) < 0x1p-100;
    a = mpfr_sgn(t) > 0 ? w : -w;
  }
  double y = a + b; /* Inf + finite, Inf - Inf = NaN */
  el->lo = el->hi = y;
  return maybe_nan && y == y ? 2 : 1;
}

static int norm_run(int rms, const struct oc_tensor *x, const struct oc_tensor *wt,
                    const struct oc_tensor *bs, double eps, const struct oc_tensor *out,
                    const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (!x || !out || !v || x->rank < 1) return -1;
  struct oc_rows rw;
  if (oc_rows_init(&rw, x, x->rank - 1, out, 1)) return -1;
  int64_t n = rw.n;
  if ((wt && wt->shape[wt->rank - 1] != n) || (bs && bs->shape[bs->rank - 1] != n)) return -1;
  struct nrm_ctx nc = {{rms}, n, 0};
  struct oc_check c;
  oc_check_init(&c, rms ? "rms_norm" : "layer_norm", p, o, v, rw.nrows * n, out->rank, nrm_bound,
                &nc);
  double *xs = malloc((size_t)(n ? n : 1) * sizeof *xs);
  mpfr_t mu, var, t, r, y;
  mpfr_inits2(PREC, mu, var, t, r, y, (mpfr_ptr)0);
  if (!xs) return -1;
  double rr = 0x1p-100 * (double)(n + 8);
  int64_t xidx[OC_MAX_RANK], oidx[OC_MAX_RANK];
  for (int64_t row = 0; row < rw.nrows; row++) {
    int64_t xo, oo;
    oc_rows_at(&rw, row, &xo, &oo, xidx);
    oc_tensor_gather(x, xo, x->stride[rw.axis], n, xs);
    /* A NaN makes the row NaN, and so does an Inf for layer_norm (its
     * mean is Inf, x - mu is Inf - Inf). rms_norm with an Inf (inf_row):
     * the sum of squares is Inf and rsqrt of it 0, so the finite elements
     * are +-0 (the mathematical limit too) and the Inf ones 0 * Inf = NaN,
     * as in IEEE kernels and PyTorch. */
    int bad = 0, inf_row = 0;
    double mabs = 0, ss = 0;
    mpfr_set_zero(mu, 1);
    for (int64_t k = 0; k < n; k++) {
      bad |= isnan(xs[k]) || (!rms && isinf(xs[k]));
      inf_row |= isinf(xs[k]);
      if (isfinite(xs[k])) mabs += fabs(xs[k]), ss += xs[k] * xs[k];
      mpfr_add_d(mu, mu, rms ? 0 : xs[k], MPFR_RNDN);
    }
    /* Sums of squares (or of magnitudes, for the mean) reaching the
     * accumulator's range: a correct kernel's Inf there turns the row into
     * zeros (or NaN). The overflow regime: a value off its bound is not
     * verifiable (inconclusive); one within it passes. */
    double amax = oc_format_info(p->acc)->max_finite;
    int ovf = !inf_row && (ss * (1 + 0x1p-20) >= amax || mabs * (1 + 0x1p-20) >= amax);
    /* |x - mu| at most this: the kernel's x - mu may be 0 (its mean's
     * error, ORACLE.md §2: gamma_n mean|x|, plus underflow) */
    double dz = rms ? 0
                    : oc_add_up(oc_mul_up(oc_gamma((double)n + 1, oc_profile_u_acc(p)),
                                          oc_mul_up(2, mabs / (double)n)),
                                oc_format_info(p->acc)->min_subnormal);
    mabs = oc_mul_up(mabs / (double)n, 1 + 0x1p-52 * (double)(n + 3));
    mpfr_div_si(mu, mu, (long)n, MPFR_RNDN);
    mpfr_set_zero(var, 1);
    for (int64_t k = 0; k < n && !bad && !inf_row; k++) {
      mpfr_set_d(t, xs[k], MPFR_RNDN);
      mpfr_sub(t, t, mu, MPFR_RNDN);
      mpfr_sqr(t, t, MPFR_RNDN);
      mpfr_add(var, var, t, MPFR_RNDN);
    }
    mpfr_div_si(var, var, (long)n, MPFR_RNDN);
    double vd = mpfr_get_d(var, MPFR_RNDU);
    nc.mu_abs = fabs(mpfr_get_d(mu, MPFR_RNDN)) * (1 + 1e-15);
    mpfr_add_d(r, var, eps, MPFR_RNDN);
    mpfr_rec_sqrt(r, r, MPFR_RNDN);
    for (int64_t k = 0; k < n; k++) {
      struct oc_elem el;
      memset(&el, 0, sizeof el);
      double w = wt ? oc_tensor_at(wt, k * wt->stride[wt->rank - 1]) : 1;
      double b = bs ? oc_tensor_at(bs, k * bs->stride[bs->rank - 1]) : 0;
      int spec = special_elem(rms, bad, inf_row, xs[k], w, b, dz, mu, r, t, &el);
      if (spec) {
        /* el holds the special value (and the other result a correct
         * kernel may give, in el.alt_ok's terms below) */
      } else {
        mpfr_set_d(t, xs[k], MPFR_RNDN);
        mpfr_sub(t, t, mu, MPFR_RNDN);
        el.in[0] = fabs(mpfr_get_d(t, MPFR_RNDU)) * (1 + 1e-15);
        mpfr_mul(y, t, r, MPFR_RNDN);
        mpfr_mul_d(y, y, w, MPFR_RNDN);
        mpfr_add_d(y, y, b, MPFR_RNDN);
        double yv = mpfr_get_d(y, MPFR_RNDN);
        double rad = oc_add_up(
            oc_mul_up(oc_add_up(oc_mul_up(oc_mul_up(el.in[0], mpfr_get_d(r, MPFR_RNDU)), fabs(w)),
                                fabs(b)),
                      rr),
            1e-300);
        el.lo = oc_down(yv - rad);
        el.hi = oc_up(yv + rad);
        el.in[1] = mabs;
        el.in[2] = vd;
        el.in[3] = eps;
        el.in[4] = fabs(w);
        el.in[5] = fabs(b);
        el.bound = nrm_bound(p, &el, &nc);
      }
      el.prob = INFINITY;
      el.ovf_any = ovf;
      el.k = oc_tensor_at(out, oo + k * out->stride[rw.axis]);
      if (spec == 2) el.alt_ok = isnan(el.k); /* 0 * Inf where the product may underflow */
      oc_rows_out_index(&rw, xidx, k, oidx);
      oc_check_elem(&c, &el, oidx);
    }
  }
  oc_check_finish(&c, 0);
  mpfr_clears(mu, var, t, r, y, (mpfr_ptr)0);
  free(xs);
  return 0;
}

int oc_check_layer_norm(const struct oc_tensor *x, const struct oc_tensor *weight,
                        const struct oc_tensor *bias, double eps, const struct oc_tensor *out,
                        const struct oc_profile *p, const struct oc_options *o,
                        struct oc_verdict *v) {
  return norm_run(0, x, weight, bias, eps, out, p, o, v);
}

int oc_check_rms_norm(const struct oc_tensor *x, const struct oc_tensor *weight, double eps,
                      const struct oc_tensor *out, const struct oc_profile *p,
                      const struct oc_options *o, struct oc_verdict *v) {
  return norm_run(1, x, weight, NULL, eps, out, p, o, v);
}
