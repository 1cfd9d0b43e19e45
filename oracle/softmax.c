/* oracle/softmax.c — softmax, log_softmax and logsumexp along one axis,
 * checked in full. Reference in double with its error folded into the
 * enclosure, or in MPFR (80 bits, likewise) for a row whose double
 * enclosure is not negligible against its bounds; bound per ORACLE.md §2
 * for the two-pass class, plus the rescaling terms of the online
 * (flash-style) class. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "elementwise.h"
#include "verdict.h"

#define PREC 80
/* The C library's exp and log, trusted as elementwise.c trusts them. */
#define LIBM_ULPS OC_LIBM_ULPS
/* A row's double enclosure is used when every radius is below this
 * fraction of the element's bound (else the row is redone in MPFR). */
#define NEGLIGIBLE 0x1p-20

static _Atomic int double_off;

void oc_softmax_set_double(int on) { atomic_store(&double_off, !on); }

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

static _Atomic unsigned long rows_double, rows_redone;

void oc_softmax_double_counts(unsigned long *in_double, unsigned long *redone) {
  *in_double = atomic_load(&rows_double);
  *redone = atomic_load(&rows_redone);
}

/* sum_j y_j eps_j of the bound, with the y_j's relative error rel. */
static double row_meps(const struct oc_profile *p, const double *xs, const double *ys, int64_t n,
                       double m, double rel) {
  double meps = 0;
  for (int64_t k = 0; k < n; k++)
    if (xs[k] > -INFINITY)
      meps = oc_add_up(meps, oc_mul_up(oc_mul_up(ys[k], 1 + rel), oc_softmax_eps(p, xs[k] - m)));
  return meps;
}

/* A row in double: ys the softmax values, yv/rv each output's value and
 * enclosure radius, *logS. Errors (u = 2^-53, first order, then 1% more):
 * t_k = x_k - m rounds once (|t_k| u); exp(t_k) within LIBM_ULPS ulps
 * (2 LIBM_ULPS u relative), so every term carries e_t = (T + 2 LIBM_ULPS)
 * u, T = max |t_k|; recursive summation of n non-negative terms adds
 * (n - 1) u: S carries e_S = e_t + n u; y_k = e_k / S carries e_t + e_S +
 * u. log S: log(S(1 + r)) = log S + log(1 + r), |log(1 + r)| <= 1.01 |r|,
 * and the library's LIBM_ULPS ulps; then one rounding of t_k - log S or
 * m + log S. A term below 2^-1000 (relative errors stop holding there) is
 * counted absolutely. Returns 0 where the double form does not apply. */
static int row_double(enum oc_softmax_kind kind, const double *xs, int64_t n, double m, double *ys,
                      double *yv, double *rv, double *logS, double *rely) {
  const double u = 0x1p-53, L = LIBM_ULPS;
  double sum = 0, T = 0;
  for (int64_t k = 0; k < n; k++) {
    if (xs[k] == -INFINITY) {
      ys[k] = 0;
      continue;
    }
    double tk = xs[k] - m, ek = exp(tk);
    if (ek >= 0x1p-1000) T = fmax(T, fabs(tk)); /* else below 2^-999 either way */
    ys[k] = ek;
    sum += ek;
  }
  /* S >= 1 (the maximum's term): terms below 2^-1000 add n 2^-1000 to its
   * relative error, and each softmax output gets 2^-998 absolute */
  double et = 1.01 * (T + 2 * L) * u, eS = 1.01 * (et + (double)n * u + (double)n * 0x1p-1000);
  double ey = 1.01 * (et + eS + u);
  if (!(sum >= 1)) return 0; /* the maximum's term is exp(0) = 1 */
  double lS = log(sum), elog = 1.01 * (1.01 * eS + 2 * L * u * fabs(lS));
  for (int64_t k = 0; k < n; k++)
    ys[k] /= sum;
  int same = kind != OC_LOGSUMEXP;
  for (int64_t k = 0; k < (same ? n : 1); k++) {
    double tk = same ? xs[k] - m : 0;
    if (kind == OC_SOFTMAX) {
      yv[k] = ys[k];
      rv[k] = oc_add_up(oc_mul_up(ys[k], ey), 0x1p-998);
    } else if (kind == OC_LOG_SOFTMAX) {
      yv[k] = tk - lS;
      rv[k] = oc_mul_up(1.01, oc_add_up(oc_add_up(oc_mul_up(u, fabs(tk)), elog),
                                        oc_mul_up(u, oc_add_up(fabs(tk), fabs(lS)))));
    } else {
      yv[k] = m + lS;
      rv[k] = oc_mul_up(1.01, oc_add_up(elog, oc_mul_up(u, oc_add_up(fabs(m), fabs(lS)))));
    }
  }
  *logS = lS;
  *rely = ey;
  atomic_fetch_add(&rows_double, 1);
  return 1;
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
  size_t nn = (size_t)(n ? n : 1);
  double *xs = malloc(nn * sizeof *xs), *ys = malloc(nn * sizeof *ys),
         *yv = malloc(nn * sizeof *yv), *rv = malloc(nn * sizeof *rv);
  struct oc_elem *elbuf = malloc(nn * sizeof *elbuf);
  mpfr_t *e = malloc(nn * sizeof *e);
  mpfr_t S, t, lg;
  if (!xs || !ys || !yv || !rv || !elbuf || !e) {
    free(xs), free(ys), free(yv), free(rv), free(elbuf), free(e);
    return -1;
  }
  /* fp64 outputs need MPFR's enclosure: a double one is as wide as their bound */
  int dbl_on = !atomic_load(&double_off) && p->out != OC_FP64 && oc_libm_exp_log_trusted();
  int dbl = dbl_on;
  long dbl_missed = 0;
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
      /* yv/rv: each output's value and the radius of its enclosure */
      int done = 0;
      double meps = 0;
      if (dbl) {
        double rely = 0;
        done = row_double(kind, xs, n, m, ys, yv, rv, &logS, &rely);
        if (done) meps = row_meps(p, xs, ys, n, m, rely);
      }
      if (!done) {
        mpfr_set_zero(S, 1);
        for (int64_t k = 0; k < n; k++) {
          mpfr_set_d(t, xs[k], MPFR_RNDN);
          mpfr_sub_d(t, t, m, MPFR_RNDN);
          mpfr_exp(e[k], t, MPFR_RNDN);
          mpfr_add(S, S, e[k], MPFR_RNDN);
        }
        mpfr_log(lg, S, MPFR_RNDN);
        logS = mpfr_get_d(lg, MPFR_RNDN);
        for (int64_t k = 0; k < n; k++) {
          mpfr_div(t, e[k], S, MPFR_RNDN);
          ys[k] = mpfr_get_d(t, MPFR_RNDN);
        }
        meps = row_meps(p, xs, ys, n, m, rr);
        for (int64_t k = 0; k < (same ? n : 1); k++) {
          double t_k = same ? xs[k] - m : 0;
          if (kind == OC_SOFTMAX) {
            yv[k] = ys[k];
            rv[k] = oc_add_up(oc_mul_up(ys[k], rr), 1e-300);
          } else if (kind == OC_LOG_SOFTMAX) {
            yv[k] = t_k - logS;
            rv[k] = oc_mul_up(oc_add_up(fabs(t_k), fabs(logS)), rr);
          } else {
            yv[k] = m + logS;
            rv[k] = oc_mul_up(oc_add_up(fabs(m), fabs(logS)), rr);
          }
        }
      }
      struct oc_elem *els = elbuf;
      for (int64_t k = 0; k < (same ? n : 1); k++) {
        struct oc_elem *el = &els[k];
        memset(el, 0, sizeof *el);
        double t_k = same ? xs[k] - m : 0;
        el->lo = oc_down(yv[k] - rv[k]);
        el->hi = oc_up(yv[k] + rv[k]);
        if (kind == OC_LOG_SOFTMAX && xs[k] == -INFINITY) el->lo = el->hi = -INFINITY;
        if (kind == OC_SOFTMAX && xs[k] == -INFINITY) el->lo = el->hi = 0;
        el->in[0] = xs[k] > -INFINITY ? oc_softmax_eps(p, t_k) : 0;
        el->in[1] = meps;
        el->in[2] = (double)n;
        el->in[3] = range;
        el->in[4] = fabs(t_k);
        el->in[5] = fabs(logS);
        el->bound = isinf(el->lo) ? 0 : smx_bound(p, el, &sm);
        el->prob = INFINITY;
        /* the double enclosure must vanish against the bound, else MPFR */
        if (done && !isinf(el->lo) && !(rv[k] <= NEGLIGIBLE * el->bound)) {
          done = 0, dbl_missed++;
          break;
        }
      }
      if (dbl && !done) {
        row--; /* the same row again, in MPFR */
        dbl = 0;
        continue;
      }
      for (int64_t k = 0; k < (same ? n : 1); k++) {
        struct oc_elem *el = &els[k];
        int64_t at = row * (same ? n : 1) + k;
        if (ref) ref[at] = yv[k];
        if (bnd) bnd[at] = el->bound;
        if (v) {
          el->k = oc_tensor_at(out, oo + (same ? k * out->stride[rw.axis] : 0));
          oc_rows_out_index(&rw, xidx, k, oidx);
          oc_check_elem(&c, el, oidx);
        }
      }
      dbl = dbl_on;
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
  free(xs), free(ys), free(yv), free(rv), free(elbuf), free(e);
  atomic_fetch_add(&rows_redone, (unsigned long)dbl_missed);
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
