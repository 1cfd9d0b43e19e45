/* oracle/exact.h — exact sums and dot products for inputs up to fp32
 * (a Kulisch-style fixed-point accumulator), with correctly rounded or
 * directed-rounded results. No MPFR global state; thread-safe. */
#ifndef OC_EXACT_H
#define OC_EXACT_H

#include <mpfr.h>
#include <stddef.h>

/* An accumulator that holds any finite sum of doubles exactly (products of
 * two fp32 values are exact doubles). Opaque size; allocate with _new. */
struct oc_acc;

struct oc_acc *oc_acc_new(void);
void oc_acc_free(struct oc_acc *a);
void oc_acc_clear(struct oc_acc *a);
void oc_acc_add(struct oc_acc *a, double x); /* exact; Inf/NaN tracked separately */
void oc_acc_add_product(struct oc_acc *a, double x,
                        double y); /* x*y must be exact in double (inputs <= fp32) */
void oc_acc_add_acc(struct oc_acc *a, const struct oc_acc *b);
/* Result rounded to double: rnd is MPFR_RNDN, MPFR_RNDU, MPFR_RNDD or MPFR_RNDZ. */
double oc_acc_round(const struct oc_acc *a, mpfr_rnd_t rnd);
/* Exact result into an MPFR variable (its precision is raised as needed). */
void oc_acc_get_mpfr(const struct oc_acc *a, mpfr_ptr out);
/* Sign of the exact sum: -1, 0, 1; NaN state reported by oc_acc_is_nan. */
int oc_acc_sign(const struct oc_acc *a);
int oc_acc_is_nan(const struct oc_acc *a);
/* 0 when a product passed to the accumulator was not exact in double
 * (bits below 2^-1074, or beyond 2^1024: the latter is counted as ±Inf). */
int oc_acc_is_exact(const struct oc_acc *a);
/* a += x.y exactly (same contract as oc_acc_add_product, faster loop). */
void oc_acc_add_dot(struct oc_acc *a, const double *x, ptrdiff_t incx, const double *y,
                    ptrdiff_t incy, size_t n);

/* Convenience: exact dot product of strided double vectors (values exact
 * in fp32 or narrower), rounded with rnd. */
double oc_dot_exact(const double *x, ptrdiff_t incx, const double *y, ptrdiff_t incy, size_t n,
                    mpfr_rnd_t rnd);
/* Σ|x_i y_i| rounded upward (for bounds). */
double oc_dot_abs_up(const double *x, ptrdiff_t incx, const double *y, ptrdiff_t incy, size_t n);
/* Exact sum of a strided double vector, rounded with rnd. */
double oc_sum_exact(const double *x, ptrdiff_t incx, size_t n, mpfr_rnd_t rnd);

#endif
