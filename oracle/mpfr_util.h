/* oracle/mpfr_util.h — settle a correctly rounded result in a target format
 * (subnormals and overflow included) from MPFR approximations of rising
 * precision (a Ziv loop). Thread-safe: no MPFR global state is changed. */
#ifndef OC_MPFR_UTIL_H
#define OC_MPFR_UTIL_H

#include <mpfr.h>
#include <stdint.h>

#include "formats.h"

/* An evaluator sets y (whose precision the loop chooses) to an
 * approximation of the true value t and returns:
 *    0  when y == t, or when y is rounding-equivalent to t: no rounding
 *       boundary of any format in formats.h lies between them and t is not
 *       itself on one (used for the far tails of functions, e.g. silu(x)
 *       for large x is x minus a positive infinitesimal);
 *    k  > 0 when |y - t| <= k ulp(y) at y's precision; a y of 0 or Inf
 *       with k > 0 means MPFR's own exponent range under/overflowed, i.e.
 *       t is beyond every format's range on that side;
 *   -1  when it cannot evaluate (the loop gives up and reports it). */
typedef long (*oc_ziv_eval)(mpfr_ptr y, const void *ctx);

/* 1 and *code when every value of [y - k ulp(y), y + k ulp(y)] has the same
 * correctly rounded encoding in f, i.e. rounding y is provably correct even
 * where f's grid is that of its subnormals or the interval touches the
 * overflow threshold; 0 otherwise. k == 0: y is exact, always 1. */
int oc_round_settled(enum oc_format f, enum oc_overflow ovf, mpfr_srcptr y, unsigned long k,
                     uint64_t *code);

/* Runs fn at precisions 64, 128, ... (up to 2^16 bits) until the result
 * settles in f; returns the code. If out is not NULL it receives the last
 * approximation (its precision is set). Should the cap be reached, the code
 * of the last approximation is returned and oc_ziv_failures() counts it. */
uint64_t oc_ziv_encode(enum oc_format f, enum oc_overflow ovf, oc_ziv_eval fn, const void *ctx,
                       mpfr_ptr out);

/* Correctly rounded fn(x) in f for a one-argument correctly rounded MPFR
 * function (mpfr_exp, mpfr_tanh, mpfr_erf, ...). The caller handles NaN,
 * Inf and zero inputs when fn's MPFR semantics are not the wanted ones. */
typedef int (*oc_mpfr_fn1)(mpfr_ptr rop, mpfr_srcptr op, mpfr_rnd_t rnd);
uint64_t oc_mpfr_fn1_encode(enum oc_format f, enum oc_overflow ovf, oc_mpfr_fn1 fn, double x);

/* Number of Ziv loops, process-wide, that hit the precision cap. */
unsigned long oc_ziv_failures(void);

#endif
