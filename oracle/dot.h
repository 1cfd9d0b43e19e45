/* oracle/dot.h — one dot product of gathered double vectors, enclosed:
 * the Dot2 (Ogita-Rump-Oishi) sum with its error radius at ~2 ns/term,
 * and the exact Kulisch sum for the elements the enclosure cannot settle.
 * Shared by the ops whose outputs are dot products (matmul, convolution). */
#ifndef OC_DOT_H
#define OC_DOT_H

#include <stdint.h>

#include "profile.h"

struct oc_acc;

/* s ~ sum a[k] b[k] with |s - exact| <= *rad; *sabs = sum |a b| upward;
 * *pmin, *pmax the smallest and largest product. exact_products: both
 * operands fp32 or narrower (every product exact in double). */
void oc_dot2(const double *a, const double *b, int64_t n, int exact_products, double *s,
             double *rad, double *sabs, double *pmin, double *pmax);
/* The exact dot product (any doubles; Inf and NaN as IEEE) rounded down
 * and up into *lo, *hi. */
void oc_dot_exact_enclose(struct oc_acc *acc, const double *a, const double *b, int64_t n,
                          double *lo, double *hi);

/* Terms with a subnormal operand (tf32 operands, ftz): their mass
 * sum |a b| (upward), and the coefficient on it that theta (a relative
 * model) does not cover. */
double oc_dot_sub_mass(const struct oc_profile *p, const double *a, const double *b, int64_t n);
double oc_dot_sub_coef(const struct oc_profile *p, double theta);
/* 1 when an operand rounds to Inf as tf32 (fp32 magnitude >= 0x1.ffep127). */
int oc_dot_tf32_overflows(const double *a, const double *b, int64_t n);

#endif
