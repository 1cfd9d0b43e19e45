/* oracle/dot.c — enclosures of one dot product (dot.h). */
#include "dot.h"

#include <math.h>

#include "bounds.h"
#include "exact.h"
#include "formats.h"

/* Dot2 over exact-or-FMA-split products. exact_products: both operands
 * fp32 or narrower, so every a[k] * b[k] is exact in double (at most 48
 * significant bits, exponents within double's normal range) and its FMA
 * remainder is +0 — added as the constant, the same sums as with fma(),
 * without a libm call per term (fma is not inlined without -mfma). */
void oc_dot2(const double *a, const double *b, int64_t n, int exact_products, double *s_out,
             double *rad, double *sabs, double *pmin, double *pmax) {
  double s = 0, c = 0, sa = 0, lo = INFINITY, hi = -INFINITY;
  for (int64_t k = 0; k < n; k++) {
    double pr = a[k] * b[k], pe = exact_products ? 0.0 : fma(a[k], b[k], -pr);
    lo = fmin(lo, pr), hi = fmax(hi, pr); /* the products' spread (oc_stat_correlated) */
    double t = s + pr, z = t - s;
    c += (s - (t - z)) + (pr - z) + pe;
    s = t;
    sa += fabs(pr);
  }
  double r = s + c;
  double g = oc_gamma((double)n + 2, 0x1p-53);
  *pmin = lo, *pmax = hi;
  *s_out = r;
  *sabs = oc_mul_up(sa, oc_add_up(1, g)); /* sum|ab| upward */
  /* |r - s| <= u|r|/(1-u)... + gamma_n^2 sum|ab| (Ogita, Rump, Oishi 2005, Prop. 5.5). */
  *rad = oc_add_up(oc_mul_up(0x1.0000000001p-52, fabs(r)), oc_mul_up(oc_mul_up(g, g), *sabs));
}

void oc_dot_exact_enclose(struct oc_acc *acc, const double *a, const double *b, int64_t n,
                          double *lo, double *hi) {
  oc_acc_clear(acc);
  /* fp64 operands: a.b = pr + pe exactly (FMA split), both doubles. */
  for (int64_t k = 0; k < n; k++) {
    double pr = a[k] * b[k], pe = fma(a[k], b[k], -pr);
    if (pe == 0 || !(pe == pe)) {
      oc_acc_add_product(acc, a[k], b[k]);
    } else {
      oc_acc_add(acc, pr);
      oc_acc_add(acc, pe);
    }
  }
  *lo = oc_acc_round(acc, MPFR_RNDD);
  *hi = oc_acc_round(acc, MPFR_RNDU);
}

/* tf32 operands: a fp32-subnormal operand may be flushed or rounded to the
 * coarser tf32 subnormal grid, |a~| <= 2|a|, so such a term's error is at
 * most |a~ b~| + |ab| <= 5|ab| (4|ab| when one operand is normal) plus the
 * accumulation's theta on |a~ b~| <= 4|ab|: (5 + 4 theta) times the mass of
 * those terms, which theta alone (a relative model) does not cover. Under
 * ftz a flushed product is 0: its error is the term itself. */
double oc_dot_sub_coef(const struct oc_profile *p, double th) {
  if (p->tf32 && (p->in == OC_FP32 || p->in == OC_FP64)) return oc_add_up(5, oc_mul_up(4, th));
  return p->ftz ? 1 : 0;
}

double oc_dot_sub_mass(const struct oc_profile *p, const double *a, const double *b, int64_t n) {
  double mn = ldexp(1, oc_format_info(p->in)->emin_normal - 1), s = 0;
  for (int64_t k = 0; k < n; k++)
    if ((a[k] != 0 && fabs(a[k]) < mn) || (b[k] != 0 && fabs(b[k]) < mn)) s += fabs(a[k] * b[k]);
  return oc_mul_up(s, 1 + 0x1p-40 * (double)(n + 2));
}

int oc_dot_tf32_overflows(const double *a, const double *b, int64_t n) {
  double mx = 0;
  for (int64_t k = 0; k < n; k++)
    mx = fmax(mx, fmax(fabs(a[k]), fabs(b[k])));
  return mx >= 0x1.ffep127;
}
