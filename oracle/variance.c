/* oracle/variance.c — oc_check_var: var and std along one axis with a
 * correction (torch.var / torch.std: sum (x - mean)^2 / (n - correction),
 * std its square root), every output element against its exact value with
 * a rigorous bound that holds for any evaluation ATen may choose: Welford
 * updates and merges in any tree (ATen's WelfordOps, CUDA and CPU), or two
 * passes (mean, then the sum of squared deviations), in the profile's
 * accumulator precision or a wider one.
 *
 * The bound (u: the accumulator's unit roundoff; X = max |x_i|;
 * mu the exact mean; S = sum (x_i - mu)^2; T = sum |x_i - mu|):
 * every Welford step is an exact merge of two (count, mean, M2) triples
 * (the update with one point x is the merge with (1, x, 0)), so a
 * computed triple is the exact statistics of virtual points: the inputs,
 * each shifted by the sum s_i of the local mean errors r_A of the nodes A
 * it passed through (a mean error shifts all of A's points and leaves its
 * M2 alone), and the computed M2 is S(x + s) plus the sum of the local M2
 * errors rho_A. There are n - 1 merges (the first update of an empty
 * state is exact), and a point passes through at most n - 1 of them.
 *  - local mean errors: an update m + fl(fl(x - m) / k') (k' >= 2) rounds
 *    three times, |r| <= gamma_2 |x - m| / k' + u |m'|; a merge m_a +
 *    fl(m_b - m_a) fl(n_b / n) four times, |r| <= gamma_3 |m_b - m_a| +
 *    u |m|. The virtual points and means lie within Z = D + s_max of mu
 *    (D = max |x_i - mu|) and within Y = X + s_max of 0, so r_max =
 *    1.0001 u Y + 6.01 u Z (|x - m|, |m_b - m_a| <= 2 Z), and s_max <=
 *    (n - 1) r_max, solved for s_max: (n - 1) u (1.0001 X + 6.01 D) /
 *    (1 - 7.02 u (n - 1)). Only the last rounding is relative to the
 *    magnitude; a large mean costs u |mu| per step, not its square.
 *  - S(x + s) - S(x) = 2 sum_A r_A sum_{i in A} (x_i - mu) + sum (s_i -
 *    mean s)^2, and any partial sum of the x_i - mu lies within T / 2 (the
 *    positive and negative deviations each total T / 2): at most
 *    (n - 1) r_max T + n s_max^2.
 *  - local M2 errors: a merge's delta^2 n_a (n_b / n) carries gamma_6 and
 *    its two additions u each, rho <= (gamma_6 + 2 u (1 + gamma_7)) M_A
 *    with M_A the node's M2 (nonnegative, at most the final one: S of a
 *    subset never exceeds S of the whole); an update's fl(x - m) fl(x - m')
 *    is (x - m)^2 k / k' (1 + theta_3) - (x - m) r, so it adds 2 Z r_max
 *    on top. Summed over the n - 1 nodes with a = 8.0001 u (n - 1):
 *    sum rho <= (a S(x + s) + 2.0001 Z r_max (n - 1)) / (1 - a).
 *  - two passes: the mean's error e <= (gamma_n + u) X <= s_max and the
 *    sum of squares' gamma_(n+2) (S + n e^2) + n e^2 are inside the above.
 * Then var = fl(M2 / fl(n - c)): |var - S / (n - c)| <= (E (1 + gamma_2)
 * + gamma_2 S) / (n - c); std = sqrt(var) (1 + u_sqrt), whose error is at
 * most min(sqrt(E_v), E_v / sqrt(v)) plus the sqrt's; plus the output
 * rounding (oc_out_bound). Underflow: every rounding may also lose half a
 * subnormal (64 n eta per path, times the magnitudes, is added; eta a
 * whole subnormal, as fp64's half is 0 in double).
 * Special values: a row with Inf or NaN gives NaN on every path (x - m is
 * Inf - Inf or NaN); n <= correction divides by zero (ATen: M2 / 0, or
 * NaN): NaN where every x_i is equal, Inf or NaN otherwise. Where the
 * squared deviations may overflow the accumulator a kernel Inf or NaN is
 * inconclusive (ovf_ok). The exact values come from MPFR at WPREC bits
 * from an exact sum (the Kulisch accumulator), with their own error
 * added to the bound. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"
#include "moments.h"
#include "verdict.h"

#define WPREC 256

struct var_row {
  double s, sabs, t, x; /* S (nearest), its MPFR error, T, X */
  double e_s;           /* the kernel's error bound on M2 (before the division) */
};

double oc_m2_bound(double u, double eta, int64_t n, double s, double t, double x, double dd,
                   double *mean_err) {
  if (mean_err) *mean_err = 0;
  if (n <= 1) return 0; /* one point: M2 = 0 exactly, by every path */
  double nm = (double)(n - 1);
  double cy = oc_mul_up(1.0001, u), cz = oc_mul_up(6.01, u);
  double den = oc_down(1 - oc_mul_up(nm, oc_add_up(cy, cz)));
  double a = oc_mul_up(8.0001 * u, nm);
  if (!(den > 0.5) || !(a < 0.5)) {
    if (mean_err) *mean_err = INFINITY;
    return INFINITY;
  }
  /* s_max = (n - 1) r_max, r_max = cy Y + cz Z + 4 eta, Y = X + s_max,
   * Z = D + s_max, solved for s_max */
  double smax = oc_div_up(
      oc_mul_up(nm, oc_add_up(oc_add_up(oc_mul_up(cy, x), oc_mul_up(cz, dd)), 4 * eta)), den);
  if (mean_err) *mean_err = smax;
  double y = oc_add_up(x, smax), z = oc_add_up(dd, smax);
  double rmax = oc_add_up(oc_add_up(oc_mul_up(cy, y), oc_mul_up(cz, z)), 4 * eta);
  double d1 = oc_add_up(oc_mul_up(oc_mul_up(nm, rmax), t), oc_mul_up((double)n, smax * smax));
  double sy = oc_add_up(s, d1);
  /* the updates' cross terms (x - m) r: |x - m| <= 2 Z */
  double cross = oc_mul_up(oc_mul_up(2.0001 * z, rmax), nm);
  double rho = oc_add_up(oc_mul_up(a, sy), cross);
  rho = oc_div_up(oc_add_up(rho, oc_mul_up(oc_mul_up(64 * eta, (double)n), 1 + 4 * y * y)),
                  oc_down(1 - a));
  return oc_add_up(d1, rho);
}

int oc_check_var(const struct oc_tensor *x, int axis, double correction, int take_sqrt,
                 const struct oc_tensor *out, const struct oc_profile *p,
                 const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  if (!x || !out || !p || !v || correction != correction) return -1;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  struct oc_rows rw;
  if (axis < 0) axis += x->rank;
  if (oc_rows_init(&rw, x, axis, out, 0)) return -1;
  int64_t n = rw.n;
  /* eta: per rounding, the flush floor or a whole subnormal (half of
   * fp64's is 0 in double: its squares of subnormal data underflow) */
  double u = oc_profile_u_acc(p), top = oc_overflow_threshold(p->acc);
  double eta = fmax(oc_acc_eta(p), oc_format_info(p->acc)->min_subnormal);
  double dv = (double)n - correction; /* the divisor, exact */
  /* the divisor as the kernel holds it: n and c in the accumulator (ATen's
   * nf - correction), one rounding unless exact */
  int dv_exact = oc_round(p->acc, dv, OC_OVF_IEEE) == dv;
  double *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
  struct oc_acc *acc = oc_acc_new();
  mpfr_t mu, d, sm;
  mpfr_inits2(WPREC, mu, d, sm, (mpfr_ptr)0);
  if (!buf || !acc) {
    free(buf);
    oc_acc_free(acc);
    mpfr_clears(mu, d, sm, (mpfr_ptr)0);
    return -1;
  }
  struct oc_check c;
  oc_check_init(&c, take_sqrt ? "std" : "var", p, o, v, rw.nrows, out->rank, NULL, NULL);
  int64_t xidx[OC_MAX_RANK], oidx[OC_MAX_RANK];
  for (int64_t row = 0; row < rw.nrows; row++) {
    int64_t xo, oo;
    oc_rows_at(&rw, row, &xo, &oo, xidx);
    oc_tensor_gather(x, xo, x->stride[rw.axis], n, buf);
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    e.k = oc_tensor_at(out, oo);
    e.prob = INFINITY;
    oc_rows_out_index(&rw, xidx, 0, oidx);
    int finite = 1, alike = 1;
    double xmax = 0;
    for (int64_t i = 0; i < n; i++) {
      finite &= isfinite(buf[i]) != 0;
      alike &= buf[i] == buf[0];
      xmax = fmax(xmax, fabs(buf[i]));
    }
    if (!finite || n == 0 || !(dv > 0)) {
      /* NaN on every path; a zero divisor gives M2 / 0: Inf, or NaN where
       * M2 is 0 (always so for equal points, possibly so otherwise) */
      e.exact_only = 1;
      e.lo = e.hi = finite && n && !alike ? INFINITY : NAN;
      if (e.lo == INFINITY && e.k != e.k) e.alt_ok = 1;
      oc_check_elem(&c, &e, oidx);
      continue;
    }
    if (n > 1 && !(oc_mul_up(8.0001 * u, (double)(n - 1)) < 0.5)) {
      /* no finite bound in this precision (m2_bound): skip the exact sums */
      v->checked++;
      oc_check_inconclusive(&c, "a row too long for a finite bound in the accumulator's precision");
      continue;
    }
    /* the exact mean to WPREC bits from the exact sum */
    oc_acc_clear(acc);
    for (int64_t i = 0; i < n; i++)
      oc_acc_add(acc, buf[i]);
    oc_acc_get_mpfr(acc, d);
    mpfr_div_si(mu, d, (long)n, MPFR_RNDN);
    double mud = mpfr_get_d(mu, MPFR_RNDN);
    mpfr_set_ui(sm, 0, MPFR_RNDN);
    double t = 0, mag = 0, dmax = 0;
    for (int64_t i = 0; i < n; i++) {
      mpfr_set_d(d, buf[i], MPFR_RNDN);
      mpfr_sub(d, d, mu, MPFR_RNDN);
      double ad = fabs(mpfr_get_d(d, MPFR_RNDA));
      t = oc_add_up(t, ad);
      dmax = fmax(dmax, ad);
      mpfr_sqr(d, d, MPFR_RNDN);
      mpfr_add(sm, sm, d, MPFR_RNDN);
      double ai = fabs(buf[i]) + fabs(mud);
      mag = oc_add_up(mag, ai * ai);
    }
    t = oc_mul_up(t, 1 + 0x1p-50);
    /* MPFR's error: the mean's rounding moves S by n (mu - mu~)^2 only (S
     * is stationary in the mean), each term and addition one rounding of
     * 2^-WPREC relative to at most mag */
    double eref = oc_mul_up(oc_mul_up((double)n + 4, 0x1p-250), oc_mul_up(mag, 1 + 0x1p-40));
    double s = mpfr_get_d(sm, MPFR_RNDN), sa = fabs(s) + eref;
    double em = oc_m2_bound(u, eta, n, sa, t, xmax, oc_mul_up(dmax, 1 + 0x1p-50), NULL);
    /* the kernel's division: M2 (within em of S) over the divisor */
    double ediv = oc_mul_up(oc_gamma(dv_exact ? 1 : 2, u), oc_div_up(oc_add_up(sa, em), dv));
    double ev = oc_add_up(oc_div_up(oc_mul_up(em, 1 + 4 * u), dv), ediv);
    mpfr_div_d(sm, sm, dv, MPFR_RNDN);
    /* the WPREC value's error: S's over the divisor, the division's */
    double vd = fabs(mpfr_get_d(sm, MPFR_RNDA));
    double er = oc_add_up(oc_mul_up(oc_div_up(eref, dv), 1 + 0x1p-50), oc_mul_up(vd, 0x1p-250));
    double pre;
    if (take_sqrt) {
      mpfr_sqrt(sm, sm, MPFR_RNDN);
      double sd = fabs(mpfr_get_d(sm, MPFR_RNDA)), var = oc_down(oc_down(s - eref) / dv);
      /* |sqrt(a) - sqrt(b)| <= min(sqrt|a - b|, |a - b| / sqrt(b)) */
      double es = oc_up(sqrt(ev)), ers = oc_up(sqrt(er));
      if (var > 0) {
        double rt = oc_down(sqrt(var));
        es = fmin(es, oc_div_up(ev, rt));
        ers = fmin(ers, oc_div_up(er, rt));
      }
      pre = oc_add_up(es, oc_mul_up(oc_sqrt_rel(p), oc_add_up(sd, es)));
      er = oc_add_up(ers, oc_mul_up(sd, 0x1p-250));
    } else {
      pre = ev;
    }
    /* the WPREC value's own error widens the enclosure, so the kernel's
     * bound needs no share of it */
    e.lo = oc_down(mpfr_get_d(sm, MPFR_RNDD) - er);
    e.hi = oc_up(mpfr_get_d(sm, MPFR_RNDU) + er);
    if (e.lo < 0) e.lo = 0;
    if (alike) e.lo = e.hi = 0; /* equal points: exactly 0 on every path */
    /* every rounding may also underflow: an absolute floor */
    pre = oc_add_up(pre, oc_mul_up(64 * eta, (double)n + 8));
    e.pre = pre;
    e.pre_set = 1;
    e.bound = oc_out_bound(p, fmax(fabs(e.lo), fabs(e.hi)), pre);
    if (e.bound != e.bound) e.bound = INFINITY;
    /* the squared deviations (2 Y)^2 n may overflow the accumulator */
    double y2 = 2 * xmax * 1.01;
    e.ovf_ok = !(oc_mul_up(oc_mul_up(y2, y2), 2 * (double)n) < top);
    oc_check_elem(&c, &e, oidx);
  }
  oc_check_finish(&c, 0);
  free(buf);
  oc_acc_free(acc);
  mpfr_clears(mu, d, sm, (mpfr_ptr)0);
  return 0;
}
