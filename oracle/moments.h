/* oracle/moments.h — the error bound of a computed mean and second moment
 * (variance.c's derivation), shared by var/std and batch norm's
 * statistics. */
#ifndef OC_MOMENTS_H
#define OC_MOMENTS_H

#include <stdint.h>

/* E, a bound on |M2 - S| for a second moment M2 of n points computed by
 * Welford updates and merges in any tree, or by two passes, in a
 * precision of unit roundoff u with underflow floor eta per rounding (S
 * the exact sum of squared deviations, up to s; t = sum |x_i - mu|; x =
 * max |x_i|; dd = max |x_i - mu|); +inf when no finite bound exists.
 * *mean_err (may be NULL): a bound on the computed mean's error on the
 * same paths (Welford's virtual-point shift s_max; it covers the two-pass
 * mean's (gamma_n + u) X too). variance.c gives the derivation. */
double oc_m2_bound(double u, double eta, int64_t n, double s, double t, double x, double dd,
                   double *mean_err);

#endif
