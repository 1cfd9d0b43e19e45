/* oracle/bounds.h — rigorous worst-case error bounds (Higham, Accuracy and
 * Stability of Numerical Algorithms, ch. 3-4) as functions of a profile and
 * the data. Everything is evaluated in double and rounded upward (each
 * result is pushed one ulp up), so a bound never undershoots its formula. */
#ifndef OC_BOUNDS_H
#define OC_BOUNDS_H

#include <stdint.h>

#include "profile.h"

/* Upward-rounded arithmetic on nonnegative doubles. */
double oc_up(double x);
double oc_add_up(double a, double b);
double oc_mul_up(double a, double b);
double oc_div_up(double a, double b);
/* Downward counterparts (for lower bounds of observed errors). */
double oc_down(double x);

/* gamma_n(u) = n u / (1 - n u), upward; +inf when n u >= 1. */
double oc_gamma(double n, double u);

/* Number of roundings on any path of a length-n dot product (or n-term sum
 * when products is 0) under the profile's plain accumulation model, plus
 * `extra` further roundings (bias, C, alpha, beta). */
double oc_dot_roundings(const struct oc_profile *p, int64_t n, int extra, int products);
/* theta: |computed - exact| <= theta * (sum|a_i b_i| + sum|added terms|) for a
 * dot product of length n (alignment blocks, promotion and tf32 operands
 * included), `extra` further roundings. +inf when no bound exists. */
double oc_dot_theta(const struct oc_profile *p, int64_t n, int extra);
/* Same for a plain n-term sum of the inputs (no products). */
double oc_sum_theta(const struct oc_profile *p, int64_t n, int extra);
/* Absolute floor per rounding: underflow (half the smallest subnormal of the
 * accumulator) or flush-to-zero (its smallest normal). */
double oc_acc_eta(const struct oc_profile *p);

/* Output conversion: |out - y| <= u_out |y| + (1 + u_out) B + eta_out. */
double oc_out_bound(const struct oc_profile *p, double y_abs, double b);
double oc_out_u(const struct oc_profile *p);
double oc_out_eta(const struct oc_profile *p);

/* Statistical verdict (never "fail"): lambda such that `elems` checked
 * elements of `paths` rounding paths each all stay within their statistical
 * bounds except with probability alpha (union bound over Higham & Mary's
 * per-path tail 2 exp(-lambda^2/2)). */
double oc_stat_lambda(double alpha, double paths, double elems);
/* The statistical counterpart of oc_dot_theta (products 1) or
 * oc_sum_theta (products 0): |computed - exact| <= coefficient * (sum of
 * |terms|) with probability >= 1 - 2 paths exp(-lambda^2/2), under
 * independent mean-zero rounding errors. +inf for truncating accumulation
 * (biased errors: no such model). */
double oc_dot_stat(const struct oc_profile *p, int64_t n, int extra, double lambda, int products);

/* Whether terms between tmin and tmax (n of them, in order) are too alike
 * for the statistical verdict: when their spread is within 64 n u of their
 * magnitude (u the accumulator's unit), the bits each addition rounds away
 * follow one pattern (a constant row, padding, a constant operand), the
 * rounding errors are correlated and drift like n u, not sqrt(n) u, so
 * Higham & Mary's probability does not hold: the callers stay silent. */
int oc_stat_correlated(const struct oc_profile *p, double tmin, double tmax, int64_t n);

/* Relative error budgets of the kernel's own transcendental and division
 * steps, in the accumulator's precision, per math mode (ORACLE.md §3):
 * a budget of k ulps is 2 k u relative, since ulp(y) <= 2u|y|. */
double oc_exp_rel(const struct oc_profile *p, double arg);
double oc_div_rel(const struct oc_profile *p);
double oc_rsqrt_rel(const struct oc_profile *p);
double oc_sqrt_rel(const struct oc_profile *p);
/* log: |err| <= rel |log y| + abs. */
void oc_log_err(const struct oc_profile *p, double y, double *rel, double *abs);

/* Activations (epilogues, elementwise composites). */
struct oc_ival {
  double lo, hi;
};
/* Exact-enough value (double libm) used only inside bound arithmetic. */
double oc_act_value(int act, double x);
/* Upper bound of |phi'| on [lo, hi] by interval evaluation of phi'. */
double oc_act_lipschitz(int act, double lo, double hi);
/* Bound on |phi_kernel(z) - phi(z)| for the profile's math mode, |z| <= zabs,
 * |phi(z)| <= yabs. */
/* |z| <= zabs, z >= zmin. */
double oc_act_eval_err(const struct oc_profile *p, int act, double zmin, double zabs, double yabs);

/* Softmax: relative error of y_i given eps_i (this element's exp step), the
 * weighted mean sum_j y_j eps_j, the row length n (two-pass). */
double oc_softmax_rel(const struct oc_profile *p, double eps_i, double mean_eps, int64_t n,
                      double rescale_rel);
/* Per-element eps_j = (1+exp budget)(e^{u|x_j-m|}) - 1. */
double oc_softmax_eps(const struct oc_profile *p, double t);

#endif
