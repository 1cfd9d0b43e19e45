/* oracle/reduce.c — sum, mean, max, min and 2-norm along one axis, checked
 * in full: exact references from the Kulisch accumulator (max/min exact by
 * definition, NaN propagating), bounds gamma_{n-1} sum|x| and friends. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"
#include "verdict.h"

struct red {
  enum oc_reduce_op op;
};

/* in[0]: sum|x| (sum x^2 for norm2), in[1]: n. th: the sum's coefficient
 * (NAN: the rigorous one). Writes the bound before the output rounding to
 * *pre when given. */
static double red_bound_th(const struct oc_profile *p, const struct oc_elem *e,
                           enum oc_reduce_op op, double th, double *pre) {
  int64_t n = (int64_t)e->in[1];
  double yabs = fmax(fabs(e->lo), fabs(e->hi)), b;
  switch (op) {
  case OC_RED_SUM:
    if (th != th) th = oc_sum_theta(p, n, 0);
    b = oc_add_up(oc_mul_up(th, e->in[0]), oc_mul_up(oc_acc_eta(p), (double)n));
    break;
  case OC_RED_MEAN: /* sum, then a division by n (or a multiply by a rounded 1/n) */
    if (th != th) th = oc_sum_theta(p, n, 2);
    b = oc_add_up(oc_div_up(oc_mul_up(th, e->in[0]), (double)n),
                  oc_mul_up(oc_acc_eta(p), (double)n));
    break;
  case OC_RED_NORM2: { /* sqrt(S (1 + theta)) (1 + u_sqrt) */
    double t = oc_dot_theta(p, n, 0);
    double rel =
        oc_up(oc_mul_up(sqrt(oc_add_up(1, t)) * (1 + 1e-15), oc_add_up(1, oc_sqrt_rel(p))) - 1);
    b = oc_add_up(oc_mul_up(rel, yabs), oc_up(sqrt(oc_mul_up(oc_acc_eta(p), (double)n))));
    break;
  }
  default: b = 0; break;
  }
  if (pre) *pre = b;
  return oc_out_bound(p, yabs, b);
}

static double red_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  const struct red *r = ctx;
  return red_bound_th(p, e, r->op, NAN, NULL);
}

static void row_ref(enum oc_reduce_op op, const double *x, int64_t n, struct oc_acc *acc, mpfr_t t,
                    mpfr_t r, struct oc_elem *e) {
  int nan = 0;
  double sabs = 0;
  for (int64_t k = 0; k < n; k++)
    nan |= x[k] != x[k];
  if (op == OC_RED_MAX || op == OC_RED_MIN) {
    double m = n ? x[0] : (op == OC_RED_MAX ? -INFINITY : INFINITY);
    for (int64_t k = 1; k < n; k++) {
      if (op == OC_RED_MAX ? x[k] > m : x[k] < m) m = x[k];
      /* +0 and -0 compare equal: the larger (smaller) zero is +0 (-0) */
      if (x[k] == 0 && m == 0 && (op == OC_RED_MAX ? !signbit(x[k]) : signbit(x[k]))) m = x[k];
    }
    e->lo = e->hi = nan ? NAN : m;
    e->exact_only = 1;
    e->prob = INFINITY;
    return;
  }
  oc_acc_clear(acc);
  for (int64_t k = 0; k < n; k++) {
    if (op == OC_RED_NORM2) {
      oc_acc_add_product(acc, x[k], x[k]);
      sabs += x[k] * x[k];
    } else {
      oc_acc_add(acc, x[k]);
      sabs += fabs(x[k]);
    }
  }
  e->in[0] = oc_mul_up(sabs, 1 + 0x1p-52 * (double)(n + 2));
  e->in[1] = (double)n;
  if (op == OC_RED_SUM || oc_acc_is_nan(acc) || isinf(oc_acc_round(acc, MPFR_RNDN))) {
    e->lo = oc_acc_round(acc, MPFR_RNDD);
    e->hi = oc_acc_round(acc, MPFR_RNDU);
    if (op == OC_RED_MEAN) e->lo = e->hi = e->lo / (double)n;
    if (op == OC_RED_NORM2 && !(e->lo != e->lo)) e->lo = e->hi = INFINITY;
    return;
  }
  oc_acc_get_mpfr(acc, t);
  if (op == OC_RED_MEAN) {
    mpfr_div_si(r, t, (long)n, MPFR_RNDD);
    e->lo = mpfr_get_d(r, MPFR_RNDD);
    mpfr_div_si(r, t, (long)n, MPFR_RNDU);
    e->hi = mpfr_get_d(r, MPFR_RNDU);
  } else {
    mpfr_sqrt(r, t, MPFR_RNDD);
    e->lo = mpfr_get_d(r, MPFR_RNDD);
    mpfr_sqrt(r, t, MPFR_RNDU);
    e->hi = mpfr_get_d(r, MPFR_RNDU);
  }
}

static const char *const red_names[] = {"sum", "mean", "max", "min", "norm2"};

static int reduce_run(enum oc_reduce_op op, const struct oc_tensor *x, int axis,
                      const struct oc_tensor *out, const struct oc_profile *p,
                      const struct oc_options *o, struct oc_verdict *v, double *ref,
                      double *bound) {
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  struct oc_rows rw;
  struct oc_tensor fake;
  if (!out) { /* reference only: a shape without the axis */
    memset(&fake, 0, sizeof fake);
    fake.rank = x->rank - 1;
    for (int d = 0, q = 0; d < x->rank; d++)
      if (d != (axis < 0 ? axis + x->rank : axis)) fake.shape[q++] = x->shape[d];
    out = &fake;
  }
  if ((unsigned)op > OC_RED_NORM2 || oc_rows_init(&rw, x, axis, out, 0)) return -1;
  struct red rd = {op};
  double lambda = oc_stat_lambda(o->stat_alpha, (double)rw.n + 3, (double)rw.nrows);
  struct oc_check c;
  struct oc_verdict vd;
  oc_check_init(&c, red_names[op], p, o, v ? v : &vd, rw.nrows, out->rank, red_bound, &rd);
  double *buf = malloc((size_t)(rw.n ? rw.n : 1) * sizeof *buf);
  struct oc_acc *acc = oc_acc_new();
  mpfr_t t, r;
  mpfr_init2(t, 64);
  mpfr_init2(r, 53);
  if (!buf || !acc) {
    free(buf);
    oc_acc_free(acc);
    mpfr_clears(t, r, (mpfr_ptr)0);
    return -1;
  }
  int64_t xidx[OC_MAX_RANK], oidx[OC_MAX_RANK];
  for (int64_t row = 0; row < rw.nrows; row++) {
    int64_t xo, oo;
    oc_rows_at(&rw, row, &xo, &oo, xidx);
    oc_tensor_gather(x, xo, x->stride[rw.axis], rw.n, buf);
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    row_ref(op, buf, rw.n, acc, t, r, &e);
    if (!e.exact_only) {
      e.bound = red_bound_th(p, &e, op, NAN, &e.pre);
      e.pre_set = 1;
      double tmin = INFINITY, tmax = -INFINITY;
      for (int64_t k = 0; k < rw.n; k++)
        tmin = fmin(tmin, buf[k]), tmax = fmax(tmax, buf[k]);
      double st = op == OC_RED_NORM2 || oc_stat_correlated(p, tmin, tmax, rw.n)
                      ? INFINITY
                      : oc_dot_stat(p, rw.n, op == OC_RED_MEAN ? 2 : 0, lambda, 0);
      e.prob = st < INFINITY ? red_bound_th(p, &e, op, st, NULL) : INFINITY;
      e.ovf_ok = oc_mul_up(e.in[0], 1.01) >= oc_overflow_threshold(p->acc);
    } else {
      e.bound = oc_out_bound(p, fabs(e.lo), 0);
    }
    if (ref) ref[row] = e.lo == e.hi ? e.lo : e.lo + (e.hi - e.lo) / 2;
    if (bound) bound[row] = e.bound;
    if (v) {
      e.k = oc_tensor_at(out, oo);
      oc_rows_out_index(&rw, xidx, 0, oidx);
      oc_check_elem(&c, &e, oidx);
    }
  }
  if (v)
    oc_check_finish(&c, 0);
  else
    free(c.fails);
  free(buf);
  oc_acc_free(acc);
  mpfr_clears(t, r, (mpfr_ptr)0);
  return 0;
}

int oc_check_reduce(enum oc_reduce_op op, const struct oc_tensor *x, int axis,
                    const struct oc_tensor *out, const struct oc_profile *p,
                    const struct oc_options *o, struct oc_verdict *v) {
  if (!out || !v) return -1;
  if (op == OC_RED_CUMSUM) return oc_check_cumsum(x, axis, out, p, o, v);
  if (op == OC_RED_VAR || op == OC_RED_STD)
    return oc_check_var(x, axis, 1, op == OC_RED_STD, out, p, o, v);
  return reduce_run(op, x, axis, out, p, o, v, NULL, NULL);
}

int oc_reference_reduce(enum oc_reduce_op op, const struct oc_tensor *x, int axis,
                        const struct oc_profile *p, double *ref, double *bound) {
  return reduce_run(op, x, axis, NULL, p, NULL, NULL, ref, bound);
}
