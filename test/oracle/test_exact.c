/* test/oracle/test_exact.c — the exact accumulator against MPFR: exact
 * products (106 bits) summed by mpfr_sum at 2400 bits, then rounded by
 * mpfr_get_d in each direction. Random, cancelling, whole-range, subnormal,
 * near-overflow and special-value inputs. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_RNG_SEED 0x2545F4914F6CDD1Du
#include "check.h"
#include "exact.h"

static const mpfr_rnd_t dirs[4] = {MPFR_RNDN, MPFR_RNDZ, MPFR_RNDU, MPFR_RNDD};
static const char *dname[4] = {"N", "Z", "U", "D"};

/* A random fp32 value (as a double): exponent uniform over the whole fp32
 * range, subnormals included. */
static double rand_fp32(int emin, int emax) {
  int e = emin + (int)(rnd64() % (uint64_t)(emax - emin + 1));
  double v = ldexp((double)(rnd64() >> 40) * 0x1p-25 + 0.5, e); /* 24-bit significand in [0.5,1) */
  v = (double)(float)v;                                         /* fp32 subnormals lose bits */
  return rnd64() & 1 ? -v : v;
}

/* Exact reference: sum of exact products x_i*y_i (y NULL: the x_i). */
static void ref_sum(mpfr_ptr out, const double *x, const double *y, size_t n) {
  mpfr_t *t = malloc(n * sizeof *t);
  mpfr_ptr *p = malloc(n * sizeof *p);
  for (size_t i = 0; i < n; i++) {
    mpfr_init2(t[i], 106);
    mpfr_set_d(t[i], x[i], MPFR_RNDN);
    if (y) CHECK(mpfr_mul_d(t[i], t[i], y[i], MPFR_RNDN) == 0, "reference product inexact");
    p[i] = t[i];
  }
  mpfr_set_prec(out, 2400);
  mpfr_sum(out, p, (unsigned long)n, MPFR_RNDN); /* exact at 2400 bits */
  for (size_t i = 0; i < n; i++)
    mpfr_clear(t[i]);
  free(t);
  free(p);
}

/* Compares an accumulator holding the terms against the reference in every
 * direction, the exact MPFR export and the sign. */
static void compare(const char *what, const struct oc_acc *a, mpfr_srcptr ref) {
  mpfr_t got;
  mpfr_init2(got, 64);
  oc_acc_get_mpfr(a, got);
  CHECK(mpfr_equal_p(got, ref), "%s: exact export differs", what);
  for (int d = 0; d < 4; d++) {
    double want = mpfr_get_d(ref, dirs[d]);
    double r = oc_acc_round(a, dirs[d]);
    if (mpfr_zero_p(ref))
      CHECK(r == 0, "%s: rnd%s zero %a", what, dname[d], r);
    else
      CHECK(same(r, want), "%s: rnd%s %a want %a", what, dname[d], r, want);
  }
  CHECK(oc_acc_sign(a) == mpfr_sgn(ref), "%s: sign", what);
  mpfr_clear(got);
}

static void test_random_dots(void) {
  int before = failures;
  mpfr_t ref;
  mpfr_init2(ref, 2400);
  double *x = malloc(4096 * sizeof *x), *y = malloc(4096 * sizeof *y);
  double *ax = malloc(4096 * sizeof *x), *ay = malloc(4096 * sizeof *y);
  struct oc_acc *a = oc_acc_new();
  int trials = 3000;
  for (int t = 0; t < trials; t++) {
    size_t n = 1 + rnd64() % (t % 10 == 0 ? 4096 : 300);
    int kind = t % 4;
    for (size_t i = 0; i < n; i++) {
      if (kind == 0) { /* whole fp32 range, subnormals included */
        x[i] = rand_fp32(-149, 128);
        y[i] = rand_fp32(-149, 128);
      } else if (kind == 1) { /* moderate range */
        x[i] = rand_fp32(-20, 20);
        y[i] = rand_fp32(-20, 20);
      } else if (kind == 2) { /* bf16-like values, all positive products */
        x[i] = fabs((double)(float)ldexp(floor(unif() * 256) / 256 + 1, (int)(rnd64() % 16) - 8));
        y[i] = fabs(rand_fp32(-4, 4));
      } else { /* huge cancellation: pairs that cancel exactly plus a small rest */
        x[i] = rand_fp32(-60, 100);
        y[i] = rand_fp32(-60, 100);
        if (i % 2 == 1) {
          x[i] = -x[i - 1];
          y[i] = y[i - 1];
        }
        if (i == n - 1) {
          x[i] = rand_fp32(-149, -120);
          y[i] = rand_fp32(-30, 0);
        }
      }
    }
    if (kind == 3) { /* shuffle so the cancelling partners are apart */
      for (size_t i = n - 1; i > 0; i--) {
        size_t j = rnd64() % (i + 1);
        double tx = x[i], ty = y[i];
        x[i] = x[j], y[i] = y[j], x[j] = tx, y[j] = ty;
      }
    }
    ref_sum(ref, x, y, n);
    oc_acc_clear(a);
    for (size_t i = 0; i < n; i++)
      oc_acc_add_product(a, x[i], y[i]);
    CHECK(oc_acc_is_exact(a), "fp32 products are exact");
    compare("add_product", a, ref);
    for (int d = 0; d < 4; d++) {
      double want = mpfr_get_d(ref, dirs[d]);
      double r = oc_dot_exact(x, 1, y, 1, n, dirs[d]);
      CHECK(mpfr_zero_p(ref) ? r == 0 : same(r, want), "dot_exact rnd%s n=%zu %a want %a", dname[d],
            n, r, want);
    }
    /* reversed strides see the same terms */
    double r = oc_dot_exact(x + n - 1, -1, y + n - 1, -1, n, MPFR_RNDN);
    CHECK(mpfr_zero_p(ref) ? r == 0 : r == mpfr_get_d(ref, MPFR_RNDN), "negative stride");
    /* two accumulators merged */
    struct oc_acc *b = oc_acc_new();
    oc_acc_clear(a);
    oc_acc_add_dot(a, x, 1, y, 1, n / 2);
    oc_acc_add_dot(b, x + n / 2, 1, y + n / 2, 1, n - n / 2);
    oc_acc_add_acc(a, b);
    compare("add_acc", a, ref);
    oc_acc_free(b);
    /* sum of |x y| rounded up, from the signed vectors */
    for (size_t i = 0; i < n; i++)
      ax[i] = fabs(x[i]), ay[i] = fabs(y[i]);
    ref_sum(ref, ax, ay, n);
    CHECK(oc_dot_abs_up(x, 1, y, 1, n) == mpfr_get_d(ref, MPFR_RNDU), "dot_abs_up");
  }
  oc_acc_free(a);
  free(x);
  free(y);
  free(ax);
  free(ay);
  mpfr_clear(ref);
  printf("%s random dots: %d vectors (fp32 whole range, cancellation, strides, merge, abs)\n",
         STATUS(before), trials);
}

static double rand_double_any(void) {
  for (;;) {
    uint64_t b = rnd64();
    double v;
    memcpy(&v, &b, sizeof v);
    if (isfinite(v)) return v;
  }
}

static void test_double_sums(void) {
  int before = failures;
  mpfr_t ref;
  mpfr_init2(ref, 2400);
  double *x = malloc(5000 * sizeof *x);
  struct oc_acc *a = oc_acc_new();
  int trials = 1500;
  for (int t = 0; t < trials; t++) {
    size_t n = 1 + rnd64() % 2000;
    int kind = t % 5;
    for (size_t i = 0; i < n; i++) {
      if (kind == 0)
        x[i] = rand_double_any(); /* every exponent */
      else if (kind == 1)
        x[i] = ldexp(unif(), -1022 - (int)(rnd64() % 53)) * (rnd64() & 1 ? -1 : 1); /* subnormal */
      else if (kind == 2)
        x[i] = DBL_MAX * (0.5 + unif() / 2); /* overflows double, not us */
      else if (kind == 3)
        x[i] = (i & 1) ? -x[i - 1] : rand_double_any();
      else
        x[i] = ldexp(1.0, (int)(rnd64() % 2098) - 1074) * (rnd64() & 1 ? -1 : 1);
    }
    if (kind == 3 && n > 1) x[n - 1] = 0x1p-1074;
    ref_sum(ref, x, NULL, n);
    oc_acc_clear(a);
    for (size_t i = 0; i < n; i++)
      oc_acc_add(a, x[i]);
    compare("double sum", a, ref);
    CHECK(same(oc_sum_exact(x, 1, n, MPFR_RNDN), oc_acc_round(a, MPFR_RNDN)), "sum_exact");
  }
  /* many maximal terms of one sign: carries into the top digit */
  oc_acc_clear(a);
  for (int i = 0; i < 100000; i++)
    oc_acc_add(a, DBL_MAX);
  mpfr_set_d(ref, DBL_MAX, MPFR_RNDN);
  mpfr_mul_ui(ref, ref, 100000, MPFR_RNDN);
  compare("1e5 x DBL_MAX", a, ref);
  for (int i = 0; i < 100000; i++)
    oc_acc_add(a, -DBL_MAX);
  oc_acc_add(a, -0x1p-1074);
  CHECK(same(oc_acc_round(a, MPFR_RNDN), -0x1p-1074), "back down to -2^-1074");
  /* ties at the top of the range: DBL_MAX + half an ulp rounds to even (Inf) */
  oc_acc_clear(a);
  oc_acc_add(a, DBL_MAX);
  oc_acc_add(a, 0x1p970);
  CHECK(isinf(oc_acc_round(a, MPFR_RNDN)) && oc_acc_round(a, MPFR_RNDZ) == DBL_MAX &&
            isinf(oc_acc_round(a, MPFR_RNDU)) && oc_acc_round(a, MPFR_RNDD) == DBL_MAX,
        "DBL_MAX + half ulp");
  oc_acc_add(a, -0x1p-1074);
  CHECK(oc_acc_round(a, MPFR_RNDN) == DBL_MAX, "just below the overflow tie");
  /* ties in the middle: 1 + 2^-53 -> 1, 1 + 3*2^-53 -> 1 + 2^-51 */
  oc_acc_clear(a);
  oc_acc_add(a, 1);
  oc_acc_add(a, 0x1p-53);
  CHECK(oc_acc_round(a, MPFR_RNDN) == 1 && oc_acc_round(a, MPFR_RNDU) == 1 + 0x1p-52,
        "tie to even");
  oc_acc_add(a, 0x1p-52);
  CHECK(oc_acc_round(a, MPFR_RNDN) == 1 + 0x1p-51, "tie to even (up)");
  oc_acc_add(a, 0x1p-1074);
  CHECK(oc_acc_round(a, MPFR_RNDN) == 1 + 0x1p-51 && oc_acc_round(a, MPFR_RNDZ) == 1 + 0x1p-52,
        "sticky far below");
  oc_acc_free(a);
  free(x);
  mpfr_clear(ref);
  printf("%s double sums: %d vectors (all exponents, subnormals, beyond DBL_MAX), ties\n",
         STATUS(before), trials);
}

static void test_specials(void) {
  int before = failures;
  struct oc_acc *a = oc_acc_new();
  mpfr_t m;
  mpfr_init2(m, 64);
  oc_acc_add(a, 1);
  oc_acc_add(a, INFINITY);
  CHECK(oc_acc_round(a, MPFR_RNDN) == INFINITY && oc_acc_sign(a) == 1 && !oc_acc_is_nan(a), "+inf");
  oc_acc_add(a, -INFINITY);
  CHECK(isnan(oc_acc_round(a, MPFR_RNDN)) && oc_acc_is_nan(a) && oc_acc_sign(a) == 0, "inf - inf");
  oc_acc_get_mpfr(a, m);
  CHECK(mpfr_nan_p(m), "nan export");
  oc_acc_clear(a);
  oc_acc_add(a, -INFINITY);
  oc_acc_get_mpfr(a, m);
  CHECK(mpfr_inf_p(m) && mpfr_sgn(m) < 0 && oc_acc_sign(a) == -1, "-inf export");
  oc_acc_clear(a);
  oc_acc_add(a, NAN);
  CHECK(isnan(oc_acc_round(a, MPFR_RNDD)), "nan");
  oc_acc_clear(a);
  oc_acc_add_product(a, 0.0, INFINITY);
  CHECK(oc_acc_is_nan(a), "0 * inf");
  oc_acc_clear(a);
  oc_acc_add_product(a, -2.0, INFINITY);
  CHECK(oc_acc_round(a, MPFR_RNDN) == -INFINITY, "-2 * inf");
  /* signed zeros */
  oc_acc_clear(a);
  CHECK(same(oc_acc_round(a, MPFR_RNDN), 0.0) && oc_acc_sign(a) == 0, "empty is +0");
  oc_acc_add(a, -0.0);
  oc_acc_add_product(a, -1.0, 0.0);
  CHECK(same(oc_acc_round(a, MPFR_RNDN), -0.0), "all -0 gives -0");
  oc_acc_get_mpfr(a, m);
  CHECK(mpfr_zero_p(m) && mpfr_signbit(m), "-0 export");
  oc_acc_add(a, 3.0);
  oc_acc_add(a, -3.0);
  CHECK(same(oc_acc_round(a, MPFR_RNDN), 0.0) && same(oc_acc_round(a, MPFR_RNDD), -0.0),
        "cancellation: +0, -0 downward");
  double z[3] = {-0.0, -0.0, -0.0}, o[3] = {1, 2, 3};
  CHECK(same(oc_dot_exact(z, 1, o, 1, 3, MPFR_RNDN), -0.0), "dot of -0 terms");
  /* products that are not exact in double */
  oc_acc_clear(a);
  oc_acc_add_product(a, 1 + 0x1p-52,
                     1 + 0x1p-52); /* 1 + 2^-51 + 2^-104: exact in the accumulator */
  oc_acc_get_mpfr(a, m);
  mpfr_t w;
  mpfr_init2(w, 200);
  mpfr_set_d(w, 1 + 0x1p-52, MPFR_RNDN);
  mpfr_sqr(w, w, MPFR_RNDN);
  CHECK(mpfr_equal_p(m, w) && oc_acc_is_exact(a), "wide product kept exactly");
  oc_acc_add_product(a, 0x1.8p-600, 0x1.8p-600); /* 2.25 * 2^-1200: below 2^-1074 */
  CHECK(!oc_acc_is_exact(a), "product below 2^-1074 flagged");
  oc_acc_clear(a);
  oc_acc_add_product(a, 0x1p600, 0x1p600);
  CHECK(!oc_acc_is_exact(a) && oc_acc_round(a, MPFR_RNDN) == INFINITY, "product beyond 2^1024");
  /* random double x double products, compared with MPFR */
  mpfr_t ref, t;
  mpfr_init2(ref, 2400);
  mpfr_init2(t, 106);
  int inexact = 0;
  for (int k = 0; k < 20000; k++) {
    double x = ldexp(unif() + 0.5, (int)(rnd64() % 1000) - 500);
    double y = ldexp(unif() + 0.5, (int)(rnd64() % 1000) - 500) * (k & 1 ? -1 : 1);
    oc_acc_clear(a);
    oc_acc_add_product(a, x, y);
    mpfr_set_d(t, x, MPFR_RNDN);
    mpfr_mul_d(t, t, y, MPFR_RNDN);
    mpfr_set(ref, t, MPFR_RNDN);
    /* exact in the accumulator iff the product is a multiple of 2^-1074 */
    mpfr_mul_2si(t, t, 1074, MPFR_RNDN);
    int on_grid = mpfr_integer_p(t) != 0;
    CHECK(oc_acc_is_exact(a) == on_grid, "inexact flag for %a * %a", x, y);
    inexact += !on_grid;
    if (on_grid)
      compare("double product", a, ref);
    else
      CHECK(oc_acc_round(a, MPFR_RNDZ) == mpfr_get_d(ref, MPFR_RNDZ), "truncated product");
  }
  CHECK(inexact > 5 && inexact < 10000, "both kinds of product drawn (%d inexact)", inexact);
  mpfr_clear(ref);
  mpfr_clear(t);
  mpfr_clear(w);
  mpfr_clear(m);
  oc_acc_free(a);
  printf("%s specials: Inf/NaN, signed zeros, wide and out-of-range products\n", STATUS(before));
}

int main(void) {
  test_random_dots();
  test_double_sums();
  test_specials();
  mpfr_free_cache();
  printf("%s test_exact: %ld checks, %d failures\n", failures ? "FAIL" : "ok", checks, failures);
  return failures != 0;
}
