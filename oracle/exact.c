/* oracle/exact.c — Kulisch-style exact accumulator: a fixed-point number
 * covering every double (2^-1074 .. 2^1024 plus carry room) in radix-2^32
 * digits held in int64 words, so additions are two plain adds and carries
 * are propagated only every CARRY_BUDGET additions. */
#include "exact.h"

#include <gmp.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Digit i has weight 2^(32i - 1074). A double's lowest bit sits at position
 * biased_exponent - 1 >= 0 and its highest below 2046 + 53 = 2099, so digits
 * 0..65 receive additions; digit 66 only collects carries (and the sign). */
#define NDIG 67
/* One fast addition adds < 2^32 + 2^52 to a digit; digits are < 2^32 after
 * a carry pass, so 1024 additions stay below 2^63. */
#define CARRY_BUDGET 1024

enum {
  F_PINF = 1u,
  F_NINF = 2u,
  F_NAN = 4u,
  F_POS = 8u,      /* a term with sign bit 0 was added (+0 included) */
  F_NEG = 16u,     /* a term with sign bit 1 was added (-0 included) */
  F_INEXACT = 32u, /* a product had bits below 2^-1074 or overflowed double */
};

struct oc_acc {
  int64_t d[NDIG];
  int left; /* fast additions left before a carry pass is due */
  unsigned flags;
};

#define FRAC_MASK ((UINT64_C(1) << 52) - 1)
#define HIDDEN (UINT64_C(1) << 52)
/* Doubles whose low 29 significand bits are zero have at most 24
 * significant bits: their product has at most 48 and is exact when it is a
 * normal double. */
#define LOW29 ((UINT64_C(1) << 29) - 1)

#if defined(__GNUC__)
#define LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define LIKELY(x) (x)
#endif

static inline uint64_t dbits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

static void init(struct oc_acc *a) {
  memset(a->d, 0, sizeof a->d);
  a->left = CARRY_BUDGET;
  a->flags = 0;
}

/* Adds the finite nonzero double with bits b whose biased exponent field is
 * e (1..2046). Branch-free in the sign so random signs cost nothing. */
static inline void put_normal(int64_t *d, uint64_t b) {
  unsigned e = (unsigned)(b >> 52) & 0x7FF;
  uint64_t m = (b & FRAC_MASK) | HIDDEN;
  unsigned pos = e - 1, i = pos >> 5, sh = pos & 31;
  int64_t s = -(int64_t)(b >> 63);
  int64_t lo = (int64_t)((m << sh) & 0xFFFFFFFFu), hi = (int64_t)(m >> (32 - sh));
  d[i] += (lo ^ s) - s;
  d[i + 1] += (hi ^ s) - s;
}

/* After this every digit but the top one is in [0, 2^32). */
static void carry(int64_t *d) {
  for (int i = 0; i < NDIG - 1; i++) {
    int64_t c = d[i] >> 32; /* arithmetic shift: floor division by 2^32 */
    d[i] = (int64_t)((uint64_t)d[i] & 0xFFFFFFFFu);
    d[i + 1] += c;
  }
}

static inline void count(struct oc_acc *a) {
  if (--a->left == 0) {
    carry(a->d);
    a->left = CARRY_BUDGET;
  }
}

/* Adds a nonnegative integer mag (< 2^128) times 2^(pos - 1074), pos >= 0,
 * with sign neg; each touched digit grows by < 2^33, within one fast add. */
static void put_wide(struct oc_acc *a, unsigned __int128 mag, unsigned pos, int neg) {
  unsigned i = pos >> 5, sh = pos & 31;
  for (int k = 0; mag != 0; k++, mag >>= 32) {
    uint64_t piece = (uint64_t)(mag & 0xFFFFFFFFu) << sh;
    int64_t lo = (int64_t)(piece & 0xFFFFFFFFu), hi = (int64_t)(piece >> 32);
    if (neg) {
      lo = -lo;
      hi = -hi;
    }
    a->d[i + k] += lo;
    if (i + k + 1 < NDIG) a->d[i + k + 1] += hi;
  }
  count(a);
}

static void add_special(struct oc_acc *a, uint64_t b) {
  unsigned e = (unsigned)(b >> 52) & 0x7FF;
  uint64_t frac = b & FRAC_MASK;
  int neg = (int)(b >> 63);
  if (e == 0x7FF) {
    a->flags |= frac ? F_NAN : (neg ? F_NINF : F_PINF);
    return;
  }
  a->flags |= neg ? F_NEG : F_POS;
  if (frac) put_wide(a, frac, 0, neg); /* subnormal: lowest bit at 2^-1074 */
}

void oc_acc_add(struct oc_acc *a, double x) {
  uint64_t b = dbits(x);
  unsigned e = (unsigned)(b >> 52) & 0x7FF;
  if (LIKELY(e - 1u < 0x7FEu)) {
    put_normal(a->d, b);
    a->flags |= F_POS << (b >> 63);
    count(a);
  } else {
    add_special(a, b);
  }
}

/* Any product of doubles, exactly when its bits are >= 2^-1074 and it is
 * below 2^1024; otherwise the accumulator is marked inexact. */
static void product_slow(struct oc_acc *a, double x, double y) {
  uint64_t xb = dbits(x), yb = dbits(y);
  int neg = (int)((xb ^ yb) >> 63);
  if (isnan(x) || isnan(y)) {
    a->flags |= F_NAN;
    return;
  }
  if (isinf(x) || isinf(y)) {
    if (x == 0 || y == 0)
      a->flags |= F_NAN; /* 0 * Inf */
    else
      a->flags |= neg ? F_NINF : F_PINF;
    return;
  }
  a->flags |= neg ? F_NEG : F_POS;
  if (x == 0 || y == 0) return;
  unsigned ex = (unsigned)(xb >> 52) & 0x7FF, ey = (unsigned)(yb >> 52) & 0x7FF;
  uint64_t mx = (xb & FRAC_MASK) | (ex ? HIDDEN : 0), my = (yb & FRAC_MASK) | (ey ? HIDDEN : 0);
  /* x*y = mx*my * 2^(ex' + ey' - 2150) with ex' = max(ex, 1) */
  unsigned __int128 prod = (unsigned __int128)mx * my;
  long pos = (long)(ex ? ex : 1) + (long)(ey ? ey : 1) - 2150 + 1074;
  int top = 127 - (prod >> 64 ? __builtin_clzll((uint64_t)(prod >> 64))
                              : 64 + __builtin_clzll((uint64_t)prod));
  if (pos + top >= 2098) { /* >= 2^1024: beyond any double sum we hold */
    a->flags |= F_INEXACT | (neg ? F_NINF : F_PINF);
    return;
  }
  if (pos < 0) {
    long drop = -pos;
    unsigned __int128 lost = drop >= 128 ? prod : prod & (((unsigned __int128)1 << drop) - 1);
    if (lost) a->flags |= F_INEXACT;
    prod = drop >= 128 ? 0 : prod >> drop;
    pos = 0;
  }
  if (prod) put_wide(a, prod, (unsigned)pos, neg);
}

static inline int fast_product_ok(uint64_t xb, uint64_t yb, uint64_t pb) {
  unsigned pe = (unsigned)(pb >> 52) & 0x7FF;
  /* pe in [55, 2046]: |p| >= 2^-968, finite */
  return ((xb | yb) & LOW29) == 0 && pe - 55u < 2047u - 55u;
}

void oc_acc_add_product(struct oc_acc *a, double x, double y) {
  double p = x * y;
  uint64_t pb = dbits(p);
  if (LIKELY(fast_product_ok(dbits(x), dbits(y), pb))) {
    put_normal(a->d, pb);
    a->flags |= F_POS << (pb >> 63);
    count(a);
  } else {
    product_slow(a, x, y);
  }
}

/* The dot product loop with the accumulator state in registers. */
static void dot_run(struct oc_acc *a, const double *x, ptrdiff_t incx, const double *y,
                    ptrdiff_t incy, size_t n, int absval) {
  int64_t *d = a->d;
  int left = a->left;
  unsigned fl = 0;
  const uint64_t smask = absval ? ~(UINT64_C(1) << 63) : ~UINT64_C(0);
  for (size_t k = 0; k < n; k++, x += incx, y += incy) {
    double xv = *x, yv = *y;
    uint64_t pb = dbits(xv * yv) & smask;
    if (LIKELY(fast_product_ok(dbits(xv), dbits(yv), pb))) {
      put_normal(d, pb);
      fl |= F_POS << (pb >> 63);
      if (--left == 0) {
        carry(d);
        left = CARRY_BUDGET;
      }
    } else {
      a->left = left;
      product_slow(a, absval ? fabs(xv) : xv, absval ? fabs(yv) : yv);
      left = a->left;
    }
  }
  a->left = left;
  a->flags |= fl;
}

struct oc_acc *oc_acc_new(void) {
  struct oc_acc *a = malloc(sizeof *a);
  if (a) init(a);
  return a;
}

void oc_acc_free(struct oc_acc *a) { free(a); }
void oc_acc_clear(struct oc_acc *a) { init(a); }

void oc_acc_add_acc(struct oc_acc *a, const struct oc_acc *b) {
  struct oc_acc t = *b;
  carry(t.d);
  carry(a->d);
  for (int i = 0; i < NDIG; i++)
    a->d[i] += t.d[i];
  carry(a->d);
  a->left = CARRY_BUDGET;
  a->flags |= t.flags;
}

int oc_acc_is_nan(const struct oc_acc *a) {
  return (a->flags & F_NAN) || (a->flags & (F_PINF | F_NINF)) == (F_PINF | F_NINF);
}

int oc_acc_is_exact(const struct oc_acc *a) { return !(a->flags & F_INEXACT); }

/* Magnitude of the finite part: digits in [0, 2^32) (top one may be larger);
 * returns the sign (-1, 0, 1). */
static int magnitude(const struct oc_acc *a, int64_t *m) {
  memcpy(m, a->d, sizeof a->d);
  carry(m);
  int neg = m[NDIG - 1] < 0;
  if (neg) {
    for (int i = 0; i < NDIG; i++)
      m[i] = -m[i];
    carry(m);
  }
  for (int i = NDIG - 1; i >= 0; i--)
    if (m[i]) return neg ? -1 : 1;
  return 0;
}

/* IEEE sign of an exact zero sum: -0 when every term was -0, and for
 * rounding downward when terms of both signs cancelled. */
static int zero_is_negative(unsigned flags, mpfr_rnd_t rnd) {
  if ((flags & (F_POS | F_NEG)) == F_NEG) return 1;
  return rnd == MPFR_RNDD && (flags & (F_POS | F_NEG)) == (F_POS | F_NEG);
}

int oc_acc_sign(const struct oc_acc *a) {
  if (oc_acc_is_nan(a)) return 0;
  if (a->flags & F_PINF) return 1;
  if (a->flags & F_NINF) return -1;
  int64_t m[NDIG];
  return magnitude(a, m);
}

double oc_acc_round(const struct oc_acc *a, mpfr_rnd_t rnd) {
  if (oc_acc_is_nan(a)) return NAN;
  if (a->flags & F_PINF) return INFINITY;
  if (a->flags & F_NINF) return -INFINITY;
  int64_t m[NDIG];
  int sg = magnitude(a, m);
  if (sg == 0) return zero_is_negative(a->flags, rnd) ? -0.0 : 0.0;
  int neg = sg < 0;
  int up; /* does this direction round the magnitude up when inexact? */
  switch (rnd) {
  case MPFR_RNDU: up = !neg; break;
  case MPFR_RNDD: up = neg; break;
  case MPFR_RNDZ: up = 0; break;
  case MPFR_RNDA: up = 1; break;
  default: up = -1; break; /* nearest */
  }
  if (m[NDIG - 1] != 0) { /* >= 2^(32*66 - 1074) = 2^1038: overflow */
    double big = up == 0 ? 0x1.fffffffffffffp1023 : INFINITY;
    return neg ? -big : big;
  }
  int h = NDIG - 2;
  while (m[h] == 0)
    h--;
  int t = h * 32 + 31 - __builtin_clz((unsigned)m[h]); /* top bit position */
  if (t <= 52) { /* fits in 53 bits: exact, possibly subnormal */
    uint64_t v = (uint64_t)m[0] | (h >= 1 ? (uint64_t)m[1] << 32 : 0);
    double r = ldexp((double)v, -1074);
    return neg ? -r : r;
  }
  /* 96-bit window of the top three digits; the rest only matters as sticky */
  int base = h >= 2 ? h - 2 : 0;
  unsigned __int128 w = 0;
  for (int i = h; i >= base; i--)
    w = (w << 32) | (uint64_t)m[i];
  int sticky = 0;
  for (int i = 0; i < base; i++)
    sticky |= m[i] != 0;
  int tb = t - 32 * base; /* top bit inside w, 53..95 */
  uint64_t win;           /* bits t-63 .. t */
  if (tb >= 63) {
    unsigned sh = (unsigned)(tb - 63);
    sticky |= (w & (((unsigned __int128)1 << sh) - 1)) != 0;
    win = (uint64_t)(w >> sh);
  } else {
    win = (uint64_t)w << (63 - tb);
  }
  uint64_t mant = win >> 11, rest = win & 0x7FF;
  int half = (int)(rest >> 10);
  sticky |= (rest & 0x3FF) != 0;
  int inc;
  if (up < 0)
    inc = half && (sticky || (mant & 1));
  else
    inc = up && (half || sticky);
  mant += (uint64_t)inc;
  if (mant == UINT64_C(1) << 53) {
    mant >>= 1;
    t++;
  }
  if (t - 1074 > 1023) { /* the rounded value reaches 2^1024 */
    double big = up == 0 ? 0x1.fffffffffffffp1023 : INFINITY;
    return neg ? -big : big;
  }
  double r = ldexp((double)mant, t - 52 - 1074);
  return neg ? -r : r;
}

void oc_acc_get_mpfr(const struct oc_acc *a, mpfr_ptr out) {
  if (oc_acc_is_nan(a)) {
    mpfr_set_nan(out);
    return;
  }
  if (a->flags & (F_PINF | F_NINF)) {
    mpfr_set_inf(out, (a->flags & F_PINF) ? 1 : -1);
    return;
  }
  int64_t m[NDIG];
  int sg = magnitude(a, m);
  if (sg == 0) {
    mpfr_set_zero(out, zero_is_negative(a->flags, MPFR_RNDN) ? -1 : 1);
    return;
  }
  uint32_t words[NDIG + 1];
  for (int i = 0; i < NDIG - 1; i++)
    words[i] = (uint32_t)m[i];
  words[NDIG - 1] = (uint32_t)((uint64_t)m[NDIG - 1] & 0xFFFFFFFFu);
  words[NDIG] = (uint32_t)((uint64_t)m[NDIG - 1] >> 32);
  int lo = 0, hi = NDIG;
  while (words[lo] == 0)
    lo++;
  while (words[hi] == 0)
    hi--;
  long bits = (long)(hi - lo + 1) * 32;
  mpz_t z;
  mpz_init(z);
  mpz_import(z, (size_t)(hi - lo + 1), -1, sizeof(uint32_t), 0, 0, words + lo);
  if (mpfr_get_prec(out) < bits) mpfr_set_prec(out, bits);
  mpfr_set_z_2exp(out, z, 32L * lo - 1074, MPFR_RNDN); /* exact: bits <= precision */
  if (sg < 0) mpfr_neg(out, out, MPFR_RNDN);
  mpz_clear(z);
}

double oc_dot_exact(const double *x, ptrdiff_t incx, const double *y, ptrdiff_t incy, size_t n,
                    mpfr_rnd_t rnd) {
  struct oc_acc a;
  init(&a);
  dot_run(&a, x, incx, y, incy, n, 0);
  return oc_acc_round(&a, rnd);
}

double oc_dot_abs_up(const double *x, ptrdiff_t incx, const double *y, ptrdiff_t incy, size_t n) {
  struct oc_acc a;
  init(&a);
  dot_run(&a, x, incx, y, incy, n, 1);
  return oc_acc_round(&a, MPFR_RNDU);
}

void oc_acc_add_dot(struct oc_acc *a, const double *x, ptrdiff_t incx, const double *y,
                    ptrdiff_t incy, size_t n) {
  dot_run(a, x, incx, y, incy, n, 0);
}

double oc_sum_exact(const double *x, ptrdiff_t incx, size_t n, mpfr_rnd_t rnd) {
  struct oc_acc a;
  init(&a);
  for (size_t k = 0; k < n; k++, x += incx)
    oc_acc_add(&a, *x);
  return oc_acc_round(&a, rnd);
}
