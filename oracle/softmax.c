/* oracle/softmax.c — softmax, log_softmax and logsumexp along one axis,
 * checked in full. Reference in MPFR (80 bits, its own error folded into
 * the enclosure); bound per ORACLE.md §2 for the two-pass class, plus the
 * rescaling terms of the online (flash-style) class. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "verdict.h"

#define PREC 80

struct smx {
  enum oc_softmax_kind kind;
};

/* Relative error added to the running sum by the online algorithm's
 * rescales: each costs one exp and one multiply; the exp arguments
 * telescope to at most the row's range. */
static double rescale_rel(const struct oc_profile *p, int64_t n, double range) {
  if (p->softmax != OC_SOFTMAX_ONLINE) return 0;
  int64_t blk = p->online_block > 0 ? p->online_block : 1;
  double r = (double)((n + blk - 1) / blk - 1);
  if (r <= 0) return 0;
  double u = oc_profile_u_acc(p) > 0x1p-24 ? oc_profile_u_acc(p) : 0x1p-24;
  double per = oc_add_up(oc_exp_rel(p, 0), u);
  double fast = p->math == OC_MATH_PRECISE ? 0 : oc_mul_up(2 * 1.173 * 0x1p-24, range);
  return oc_mul_up(oc_add_up(oc_add_up(oc_mul_up(r, per), fast), oc_mul_up(u, range)), 1.01);
}

/* in[0]: eps of this element, in[1]: sum_j y_j eps_j, in[2]: n, in[3]:
 * range max-min, in[4]: |x_i - m|, in[5]: |log S|. The ladder reuses
 * these with the rung's accumulation. */
static double smx_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  const struct smx *s = ctx;
  int64_t n = (int64_t)e->in[2];
  double yabs = fmax(fabs(e->lo), fabs(e->hi));
  double resc = rescale_rel(p, n, e->in[3]);
  double eta = oc_mul_up(oc_acc_eta(p), 2.0 * (double)(n + 1));
  double u = oc_profile_u_acc(p);
  if (s->kind == OC_SOFTMAX) {
    double rel = oc_softmax_rel(p, e->in[0], e->in[1], n, resc);
    return oc_out_bound(p, yabs, oc_add_up(oc_mul_up(rel, yabs), eta));
  }
  /* log S from S computed with relative error rho */
  double g = oc_sum_theta(p, n, 0);
  double rho =
      oc_up(oc_mul_up(oc_mul_up(oc_add_up(1, e->in[1]), oc_add_up(1, g)), oc_add_up(1, resc)) - 1);
  rho = oc_add_up(rho, eta);
  if (!(rho < 0.5)) return INFINITY;
  double dlog = oc_mul_up(rho, 2); /* |log(1+r)| <= 2r for |r| < 1/2 */
  double lrel, labs;
  oc_log_err(p, e->in[5], &lrel, &labs);
  double b = oc_add_up(dlog, oc_add_up(oc_mul_up(lrel, e->in[5]), labs));
  if (s->kind == OC_LOG_SOFTMAX) b = oc_add_up(b, oc_mul_up(u, e->in[4])); /* x_i - m */
  b = oc_add_up(b, oc_mul_up(u, oc_add_up(yabs, b)));                      /* final add */
  return oc_out_bound(p, yabs, b);
}

static const char *const smx_names[] = {"softmax", "log_softmax", "logsumexp"};

static int smx_run(enum oc_softmax_kind kind, const struct oc_tensor *x, int axis,
                   const struct oc_tensor *out, const struct oc_profile *p,
                   const struct oc_options *o, struct oc_verdict *v, double *ref, double *bnd) {
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  int same = kind != OC_LOGSUMEXP;
  struct oc_tensor fake;
  if (!out) {
    fake = *x;
    if (!same) {
      int ax = axis < 0 ? axis + x->rank : axis;
      fake.rank = x->rank - 1;
      for (int d = ax; d < fake.rank; d++)
        fake.shape[d] = x->shape[d + 1];
    }
    out = &fake;
  }
  struct oc_rows rw;
  if ((unsigned)kind > OC_LOGSUMEXP || oc_rows_init(&rw, x, axis, out, same)) return -1;
  int64_t n = rw.n;
  struct smx sm = {kind};
  struct oc_check c;
  struct oc_verdict vd;
  oc_check_init(&c, smx_names[kind], p, o, v ? v : &vd, same ? rw.nrows * n : rw.nrows, out->rank,
                smx_bound, &sm);
  double *xs = malloc((size_t)(n ? n : 1) * sizeof *xs),
         *ys = malloc((size_t)(n ? n : 1) * sizeof *ys);
  mpfr_t *e = malloc((size_t)(n ? n : 1) * sizeof *e);
  mpfr_t S, t, lg;
  if (!xs || !ys || !e) {
    free(xs), free(ys), free(e);
    return -1;
  }
  for (int64_t k = 0; k < n; k++)
    mpfr_init2(e[k], PREC);
  mpfr_inits2(PREC, S, t, lg, (mpfr_ptr)0);
  /* MPFR's own error: n+4 roundings at 2^-PREC, with a wide margin. */
  double rr = 0x1p-70 * (double)(n + 8);
  int64_t xidx[OC_MAX_RANK], oidx[OC_MAX_RANK];
  for (int64_t row = 0; row < rw.nrows; row++) {
    int64_t xo, oo;
    oc_rows_at(&rw, row, &xo, &oo, xidx);
    oc_tensor_gather(x, xo, x->stride[rw.axis], n, xs);
    int nan = 0, pinf = 0, allninf = 1;
    double m = -INFINITY, mn = INFINITY;
    for (int64_t k = 0; k < n; k++) {
      nan |= xs[k] != xs[k];
      pinf |= xs[k] == INFINITY;
      allninf &= xs[k] == -INFINITY;
      if (xs[k] > m) m = xs[k];
      if (xs[k] < mn && xs[k] > -INFINITY) mn = xs[k];
    }
    /* PyTorch semantics: NaN or +Inf anywhere (or a row of -Inf) makes
     * softmax NaN; logsumexp gives +Inf / -Inf for those. */
    int special = nan || pinf || allninf || n == 0;
    double range = special ? 0 : m - mn, logS = 0;
    if (!special) {
      mpfr_set_zero(S, 1);
      for (int64_t k = 0; k < n; k++) {
        mpfr_set_d(t, xs[k], MPFR_RNDN);
        mpfr_sub_d(t, t, m, MPFR_RNDN);
        mpfr_exp(e[k], t, MPFR_RNDN);
        mpfr_add(S, S, e[k], MPFR_RNDN);
      }
      mpfr_log(lg, S, MPFR_RNDN);
      logS = mpfr_get_d(lg, MPFR_RNDN);
      double meps = 0;
      for (int64_t k = 0; k < n; k++) {
        mpfr_div(t, e[k], S, MPFR_RNDN);
        ys[k] = mpfr_get_d(t, MPFR_RNDN);
        if (xs[k] > -INFINITY)
          meps = oc_add_up(meps, oc_mul_up(oc_mul_up(ys[k], 1 + rr), oc_softmax_eps(p, xs[k] - m)));
      }
      for (int64_t k = 0; k < (same ? n : 1); k++) {
        struct oc_elem el;
        memset(&el, 0, sizeof el);
        double y, rad;
        double t_k = same ? xs[k] - m : 0;
        if (kind == OC_SOFTMAX) {
          y = ys[k];
          rad = oc_add_up(oc_mul_up(y, rr), 1e-300);
        } else if (kind == OC_LOG_SOFTMAX) {
          y = t_k - logS;
          rad = oc_mul_up(oc_add_up(fabs(t_k), fabs(logS)), rr);
        } else {
          y = m + logS;
          rad = oc_mul_up(oc_add_up(fabs(m), fabs(logS)), rr);
        }
        el.lo = oc_down(y - rad);
        el.hi = oc_up(y + rad);
        if (kind == OC_LOG_SOFTMAX && xs[k] == -INFINITY) el.lo = el.hi = -INFINITY;
        if (kind == OC_SOFTMAX && xs[k] == -INFINITY) el.lo = el.hi = 0;
        el.in[0] = xs[k] > -INFINITY ? oc_softmax_eps(p, t_k) : 0;
        el.in[1] = meps;
        el.in[2] = (double)n;
        el.in[3] = range;
        el.in[4] = fabs(t_k);
        el.in[5] = fabs(logS);
        el.bound = isinf(el.lo) ? 0 : smx_bound(p, &el, &sm);
        el.prob = INFINITY;
        int64_t at = row * (same ? n : 1) + k;
        if (ref) ref[at] = y;
        if (bnd) bnd[at] = el.bound;
        if (v) {
          el.k = oc_tensor_at(out, oo + (same ? k * out->stride[rw.axis] : 0));
          oc_rows_out_index(&rw, xidx, k, oidx);
          oc_check_elem(&c, &el, oidx);
        }
      }
    } else {
      for (int64_t k = 0; k < (same ? n : 1); k++) {
        struct oc_elem el;
        memset(&el, 0, sizeof el);
        double y = NAN;
        if (kind == OC_LOGSUMEXP && !nan) y = pinf ? INFINITY : -INFINITY;
        /* an all -Inf row under masked_row=zero (flash-attention kernels) */
        if (kind != OC_LOGSUMEXP && allninf && n > 0 && p->masked_row == OC_MASKED_ZERO)
          y = kind == OC_SOFTMAX ? 0 : -INFINITY;
        el.lo = el.hi = y;
        el.prob = INFINITY;
        int64_t at = row * (same ? n : 1) + k;
        if (ref) ref[at] = y;
        if (bnd) bnd[at] = 0;
        if (v) {
          el.k = oc_tensor_at(out, oo + (same ? k * out->stride[rw.axis] : 0));
          oc_rows_out_index(&rw, xidx, k, oidx);
          oc_check_elem(&c, &el, oidx);
        }
      }
    }
  }
  if (v)
    oc_check_finish(&c, 0);
  else
    free(c.fails);
  for (int64_t k = 0; k < n; k++)
    mpfr_clear(e[k]);
  mpfr_clears(S, t, lg, (mpfr_ptr)0);
  free(xs), free(ys), free(e);
  return 0;
}

int oc_check_softmax(enum oc_softmax_kind kind, const struct oc_tensor *x, int axis,
                     const struct oc_tensor *out, const struct oc_profile *p,
                     const struct oc_options *o, struct oc_verdict *v) {
  if (!out || !v) return -1;
  return smx_run(kind, x, axis, out, p, o, v, NULL, NULL);
}

int oc_reference_softmax(enum oc_softmax_kind kind, const struct oc_tensor *x, int axis,
                         const struct oc_profile *p, double *ref, double *bound) {
  return smx_run(kind, x, axis, NULL, p, NULL, NULL, ref, bound);
}
