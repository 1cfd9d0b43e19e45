/* test/oracle/test_formats.c — formats.c against independent references:
 * a nearest-value search over every finite value (8/16-bit formats), MPFR
 * with a restricted exponent range plus mpfr_subnormalize (all formats),
 * the hardware double->float conversion (fp32), and hand-picked boundaries. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "formats.h"

static const enum oc_format all[] = {OC_FP64, OC_FP32,   OC_TF32, OC_FP16,
                                     OC_BF16, OC_E4M3FN, OC_E5M2};
static const enum oc_format narrow[] = {OC_FP16, OC_BF16, OC_E4M3FN, OC_E5M2};

static uint64_t ncodes(enum oc_format f) { return UINT64_C(1) << oc_format_info(f)->bits; }

/* ---- reference 1: MPFR in the format's exponent range (test-only: it
 * changes MPFR's global range, which the library never does) */
static double ref_mpfr(enum oc_format f, double x, enum oc_overflow ovf) {
  const struct oc_format_info *fi = oc_format_info(f);
  if (isnan(x)) return NAN;
  if (isinf(x)) return ovf == OC_OVF_SATURATE ? copysign(fi->max_finite, x) : fi->has_inf ? x : NAN;
  mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
  mpfr_set_emin(fi->emin_normal - fi->p + 1);
  mpfr_set_emax(fi->emax);
  mpfr_t r;
  mpfr_init2(r, fi->p);
  int t = mpfr_set_d(r, x, MPFR_RNDN);
  t = mpfr_subnormalize(r, t, MPFR_RNDN);
  double v = mpfr_get_d(r, MPFR_RNDN);
  mpfr_clear(r);
  mpfr_set_emin(emin);
  mpfr_set_emax(emax);
  (void)t;
  if (fabs(v) > fi->max_finite) /* MPFR overflowed to Inf, or e4m3fn's 480 */
    v = ovf == OC_OVF_SATURATE ? copysign(fi->max_finite, x) : fi->has_inf ? v : NAN;
  return v;
}

/* ---- reference 2: nearest search over the sorted nonnegative values */
struct sorted {
  double *v;
  uint64_t *code;
  size_t n;
};
static struct sorted sorted_tab[OC_FORMAT_COUNT];

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void build_sorted(enum oc_format f) {
  struct sorted *s = &sorted_tab[f];
  uint64_t n = ncodes(f) / 2; /* nonnegative codes */
  double *tmp = malloc(n * 2 * sizeof(double));
  s->v = malloc(n * sizeof(double));
  s->code = malloc(n * sizeof(uint64_t));
  s->n = 0;
  for (uint64_t c = 0; c < n; c++) {
    double v = oc_decode(f, c);
    if (isfinite(v)) {
      tmp[2 * s->n] = v;
      memcpy(&tmp[2 * s->n + 1], &c, sizeof c);
      s->n++;
    }
  }
  qsort(tmp, s->n, 2 * sizeof(double), cmp_d);
  for (size_t i = 0; i < s->n; i++) {
    s->v[i] = tmp[2 * i];
    memcpy(&s->code[i], &tmp[2 * i + 1], sizeof(uint64_t));
  }
  free(tmp);
}

static double ref_search(enum oc_format f, double x, enum oc_overflow ovf) {
  const struct oc_format_info *fi = oc_format_info(f);
  const struct sorted *s = &sorted_tab[f];
  if (isnan(x)) return NAN;
  double a = fabs(x), r;
  double maxv = s->v[s->n - 1];
  /* the value one step above max if the exponent range went on */
  double next = f == OC_E4M3FN ? 480.0 : ldexp(1.0, fi->emax);
  if (a >= maxv) {
    double mid = (maxv + next) / 2;
    /* max's significand is odd (all ones, or 110 for e4m3fn: even!) */
    int to_max = a < mid || (a == mid && f == OC_E4M3FN);
    if (to_max)
      r = maxv;
    else
      return ovf == OC_OVF_SATURATE ? copysign(maxv, x) : fi->has_inf ? copysign(INFINITY, x) : NAN;
  } else {
    size_t lo = 0, hi = s->n - 1; /* v[lo] <= a < v[hi] */
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (s->v[mid] <= a)
        lo = mid;
      else
        hi = mid;
    }
    double dl = a - s->v[lo], dh = s->v[hi] - a;
    if (dl < dh)
      r = s->v[lo];
    else if (dh < dl)
      r = s->v[hi];
    else
      r = (s->code[lo] & 1) == 0 ? s->v[lo] : s->v[hi];
  }
  return copysign(r, x);
}

static void test_info(void) {
  int before = failures;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    enum oc_format f = all[i];
    const struct oc_format_info *fi = oc_format_info(f);
    CHECK(oc_format_parse(fi->name) == (int)f, "parse %s", fi->name);
    CHECK(oc_unit_roundoff(f) == ldexp(1, -fi->p), "u %s", fi->name);
    /* smallest subnormal is 2^(emin_normal - p) (MPFR emin = that + 1) */
    CHECK(fi->min_subnormal == ldexp(1, fi->emin_normal - fi->p), "minsub %s", fi->name);
    CHECK(oc_round(f, fi->max_finite, OC_OVF_IEEE) == fi->max_finite, "max %s", fi->name);
    CHECK(oc_round(f, fi->min_subnormal, OC_OVF_IEEE) == fi->min_subnormal, "minsub2 %s", fi->name);
    uint64_t one = oc_encode(f, 1.0, OC_OVF_IEEE);
    CHECK(oc_decode(f, one) == 1.0, "one %s", fi->name);
  }
  CHECK(oc_format_parse("float16") == OC_FP16 && oc_format_parse("BFLOAT16") == OC_BF16 &&
            oc_format_parse("torch.float8_e4m3fn") == OC_E4M3FN && oc_format_parse("fp8") == -1 &&
            oc_format_parse(NULL) == -1,
        "parse aliases");
  CHECK(oc_encode(OC_FP16, 1.0, OC_OVF_IEEE) == 0x3C00 &&
            oc_encode(OC_BF16, -2.0, OC_OVF_IEEE) == 0xC000 &&
            oc_encode(OC_E4M3FN, 448, OC_OVF_IEEE) == 0x7E &&
            oc_encode(OC_E5M2, 57344, OC_OVF_IEEE) == 0x7B &&
            oc_encode(OC_TF32, 1.0 + 0x1p-10, OC_OVF_IEEE) == 0x3F802000 &&
            oc_encode(OC_FP32, 1.0, OC_OVF_IEEE) == 0x3F800000,
        "known codes");
  printf("%s info: table, parse, known codes\n", STATUS(before));
}

/* every 8/16-bit pattern: decode then encode gives the pattern back */
static void test_roundtrip(void) {
  int before = failures;
  long n = 0;
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
    enum oc_format f = narrow[i];
    for (uint64_t c = 0; c < ncodes(f); c++, n++) {
      double v = oc_decode(f, c);
      uint64_t back = oc_encode(f, v, OC_OVF_IEEE);
      if (isnan(v))
        CHECK(isnan(oc_decode(f, back)) &&
                  (back >> (oc_format_info(f)->bits - 1)) == (c >> (oc_format_info(f)->bits - 1)),
              "%s nan %#llx -> %#llx", oc_format_info(f)->name, (unsigned long long)c,
              (unsigned long long)back);
      else
        CHECK(back == c, "%s %#llx -> %g -> %#llx", oc_format_info(f)->name, (unsigned long long)c,
              v, (unsigned long long)back);
      CHECK(same(oc_decode(f, oc_encode(f, v, OC_OVF_SATURATE)),
                 isinf(v) ? copysign(oc_format_info(f)->max_finite, v) : v),
            "%s sat roundtrip %#llx", oc_format_info(f)->name, (unsigned long long)c);
    }
  }
  /* fp32 and tf32: random patterns (and tf32 with the low 13 bits clear) */
  for (int i = 0; i < 2000000; i++, n++) {
    uint32_t c = (uint32_t)rnd64();
    double v = oc_decode(OC_FP32, c);
    uint64_t back = oc_encode(OC_FP32, v, OC_OVF_IEEE);
    CHECK(isnan(v) ? isnan(oc_decode(OC_FP32, back)) : back == c, "fp32 %#x", c);
    uint32_t t = c & 0xFFFFE000u;
    v = oc_decode(OC_TF32, c);
    CHECK(same(v, oc_decode(OC_FP32, t)), "tf32 ignores low bits %#x", c);
    back = oc_encode(OC_TF32, v, OC_OVF_IEEE);
    CHECK(isnan(v) ? isnan(oc_decode(OC_TF32, back)) : back == t, "tf32 %#x", c);
    uint64_t d = rnd64();
    double dv;
    memcpy(&dv, &d, sizeof dv);
    CHECK(isnan(dv) || oc_encode(OC_FP64, dv, OC_OVF_IEEE) == d, "fp64 identity");
  }
  printf("%s roundtrip: all fp16/bf16/e4m3fn/e5m2 patterns, 2e6 fp32/tf32/fp64 (%ld)\n",
         STATUS(before), n);
}

/* midpoints between neighbours and the doubles just around them */
static void test_midpoints(void) {
  int before = failures;
  long n = 0;
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
    enum oc_format f = narrow[i];
    const struct sorted *s = &sorted_tab[f];
    for (size_t j = 0; j + 1 < s->n; j++) {
      double a = s->v[j], b = s->v[j + 1], m = (a + b) / 2; /* exact in double */
      double even = (s->code[j] & 1) == 0 ? a : b;
      for (int sg = 0; sg < 2; sg++, n += 3) {
        double k = sg ? -1.0 : 1.0;
        CHECK(same(oc_round(f, k * m, OC_OVF_IEEE), k * even), "%s tie %a", oc_format_info(f)->name,
              k * m);
        CHECK(same(oc_round(f, k * nextafter(m, 0), OC_OVF_IEEE), k * a), "%s below tie %a",
              oc_format_info(f)->name, k * m);
        CHECK(same(oc_round(f, k * nextafter(m, INFINITY), OC_OVF_IEEE), k * b), "%s above tie %a",
              oc_format_info(f)->name, k * m);
      }
    }
  }
  /* fp32/tf32/fp64: random neighbours; the reference is the significand
   * rounded by hand: odd significand at the tie rounds away */
  struct {
    enum oc_format f;
    int p;
  } wide[] = {{OC_FP32, 24}, {OC_TF32, 11}};
  for (int w = 0; w < 2; w++) {
    for (int i = 0; i < 300000; i++, n += 3) {
      int e = (int)(rnd64() % 280) - 150; /* through subnormals to overflow */
      uint64_t sig = rnd64() & ((UINT64_C(1) << wide[w].p) - 1);
      double a = oc_round(wide[w].f, ldexp((double)(sig | 1), e), OC_OVF_IEEE);
      if (!isfinite(a) || a == oc_format_info(wide[w].f)->max_finite) continue;
      double b = oc_decode(wide[w].f, oc_encode(wide[w].f, a, OC_OVF_IEEE) +
                                          (wide[w].f == OC_TF32 ? 0x2000 : 1));
      double m = (a + b) / 2;
      uint64_t ca = oc_encode(wide[w].f, a, OC_OVF_IEEE);
      double even = ((ca >> (wide[w].f == OC_TF32 ? 13 : 0)) & 1) == 0 ? a : b;
      CHECK(oc_round(wide[w].f, m, OC_OVF_IEEE) == even, "%s tie %a",
            oc_format_info(wide[w].f)->name, m);
      CHECK(oc_round(wide[w].f, nextafter(m, 0), OC_OVF_IEEE) == a, "%s below %a",
            oc_format_info(wide[w].f)->name, m);
      CHECK(oc_round(wide[w].f, nextafter(m, INFINITY), OC_OVF_IEEE) == b, "%s above %a",
            oc_format_info(wide[w].f)->name, m);
    }
  }
  printf("%s midpoints: every neighbour pair of 8/16-bit formats, 6e5 fp32/tf32 (%ld)\n",
         STATUS(before), n);
}

static double random_double_for(enum oc_format f) {
  const struct oc_format_info *fi = oc_format_info(f);
  uint64_t r = rnd64();
  if (r % 16 == 0) { /* any bit pattern */
    double v;
    uint64_t b = rnd64();
    memcpy(&v, &b, sizeof v);
    return v;
  }
  /* a random significand in the format's exponent range, with margins */
  int lo = fi->emin_normal - fi->p - 3, hi = fi->emax + 2;
  int e = lo + (int)(rnd64() % (uint64_t)(hi - lo));
  double m = ldexp((double)(rnd64() >> 11), -53);                 /* [0,1) */
  if (r % 16 == 1) m = ldexp((double)((rnd64() >> 11) | 1), -53); /* odd: no short significands */
  double v = ldexp(m, e);
  return (r >> 8) & 1 ? -v : v;
}

static void test_against_mpfr(void) {
  int before = failures;
  long n = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    enum oc_format f = all[i];
    int iters = f == OC_FP64 ? 20000 : 250000;
    mpfr_t x;
    mpfr_init2(x, 53);
    for (int k = 0; k < iters; k++, n++) {
      double v = random_double_for(f);
      enum oc_overflow ovf = (k & 1) ? OC_OVF_SATURATE : OC_OVF_IEEE;
      double got = oc_round(f, v, ovf), want = ref_mpfr(f, v, ovf);
      CHECK(same(got, want), "%s(%a) = %a, mpfr %a", oc_format_info(f)->name, v, got, want);
      /* encode_mpfr agrees with encode on a double input */
      mpfr_set_d(x, v, MPFR_RNDN);
      uint64_t c1 = oc_encode(f, v, ovf), c2 = oc_encode_mpfr(f, x, ovf);
      CHECK(c1 == c2 || (isnan(oc_decode(f, c1)) && isnan(oc_decode(f, c2))),
            "%s encode_mpfr(%a) %#llx vs %#llx", oc_format_info(f)->name, v, (unsigned long long)c2,
            (unsigned long long)c1);
      if (f != OC_FP64 && (f == OC_FP16 || f == OC_BF16 || f == OC_E4M3FN || f == OC_E5M2))
        CHECK(same(got, ref_search(f, v, ovf)), "%s search(%a)", oc_format_info(f)->name, v);
    }
    mpfr_clear(x);
  }
  /* fp32 against the hardware conversion (round to nearest even) */
  for (int k = 0; k < 1000000; k++, n++) {
    double v = random_double_for(OC_FP32);
    CHECK(same(oc_round(OC_FP32, v, OC_OVF_IEEE), (double)(float)v), "fp32 hw %a", v);
  }
  printf("%s random: 1.5e6 doubles vs MPFR+subnormalize (+ search, encode_mpfr), 1e6 vs (float) "
         "(%ld)\n",
         STATUS(before), n);
}

/* MPFR inputs wider than double: just above/below a tie must not tie */
static void test_encode_mpfr_wide(void) {
  int before = failures;
  long n = 0;
  mpfr_t x;
  mpfr_init2(x, 300);
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
    enum oc_format f = narrow[i];
    const struct sorted *s = &sorted_tab[f];
    for (size_t j = 0; j + 1 < s->n; j += 1 + (f == OC_FP16 || f == OC_BF16) * 7) {
      double a = s->v[j], b = s->v[j + 1];
      mpfr_set_d(x, a, MPFR_RNDN);
      mpfr_add_d(x, x, b, MPFR_RNDN);
      mpfr_div_2ui(x, x, 1, MPFR_RNDN); /* exact midpoint */
      mpfr_t y;
      mpfr_init2(y, 300);
      mpfr_set(y, x, MPFR_RNDN);
      mpfr_nextbelow(y);
      CHECK(oc_decode(f, oc_encode_mpfr(f, y, OC_OVF_IEEE)) == a, "%s mpfr below %a",
            oc_format_info(f)->name, a);
      mpfr_set(y, x, MPFR_RNDN);
      mpfr_nextabove(y);
      CHECK(oc_decode(f, oc_encode_mpfr(f, y, OC_OVF_IEEE)) == b, "%s mpfr above %a",
            oc_format_info(f)->name, a);
      mpfr_clear(y);
      n += 2;
    }
  }
  /* fp64 target from a 300-bit value: the tie between two doubles */
  for (int k = 0; k < 20000; k++, n += 3) {
    double a = random_double_for(OC_FP64);
    if (!isfinite(a) || a == 0 || fabs(a) == DBL_MAX) continue; /* the tie above -0 is +0 */
    double b = nextafter(a, INFINITY);
    mpfr_set_d(x, a, MPFR_RNDN);
    mpfr_add_d(x, x, b, MPFR_RNDN);
    mpfr_div_2ui(x, x, 1, MPFR_RNDN);
    uint64_t ca = oc_encode(OC_FP64, a, OC_OVF_IEEE);
    double even = (ca & 1) == 0 ? a : b;
    CHECK(same(oc_decode(OC_FP64, oc_encode_mpfr(OC_FP64, x, OC_OVF_IEEE)), even), "fp64 tie %a",
          a);
    mpfr_nextbelow(x);
    CHECK(same(oc_decode(OC_FP64, oc_encode_mpfr(OC_FP64, x, OC_OVF_IEEE)), a), "fp64 below %a", a);
    mpfr_nextabove(x);
    mpfr_nextabove(x);
    CHECK(same(oc_decode(OC_FP64, oc_encode_mpfr(OC_FP64, x, OC_OVF_IEEE)), b), "fp64 above %a", a);
  }
  mpfr_clear(x);
  printf("%s encode_mpfr: 300-bit neighbours of ties, 8/16-bit and fp64 (%ld)\n", STATUS(before),
         n);
}

static void test_boundaries(void) {
  int before = failures;
  const double inf = INFINITY;
  struct {
    enum oc_format f;
    double x;
    double ieee, sat;
  } cases[] = {
      /* overflow thresholds */
      {OC_FP16, 65504, 65504, 65504},
      {OC_FP16, 65519.99, 65504, 65504},
      {OC_FP16, 65520, inf, 65504},
      {OC_FP16, -65520, -inf, -65504},
      {OC_FP16, 1e300, inf, 65504},
      {OC_E5M2, 57344, 57344, 57344},
      {OC_E5M2, 61439.99, 57344, 57344},
      {OC_E5M2, 61440, inf, 57344},
      {OC_E4M3FN, 448, 448, 448},
      {OC_E4M3FN, 464, 448, 448}, /* tie goes to 448 (even significand 1.110) */
      {OC_E4M3FN, 464.0001, NAN, 448},
      {OC_E4M3FN, 479.99, NAN, 448},
      {OC_E4M3FN, 480, NAN, 448},
      {OC_E4M3FN, -500, NAN, -448},
      {OC_E4M3FN, inf, NAN, 448},
      {OC_E4M3FN, -inf, NAN, -448},
      {OC_BF16, 0x1.fep127, 0x1.fep127, 0x1.fep127},
      {OC_BF16, 0x1.feffffffffffp127, 0x1.fep127, 0x1.fep127},
      {OC_BF16, 0x1.ffp127, inf, 0x1.fep127},
      {OC_FP32, 0x1.ffffffp127, inf, 0x1.fffffep127},
      {OC_FP32, 0x1.fffffefffffffp127, 0x1.fffffep127, 0x1.fffffep127},
      {OC_TF32, 0x1.ffep127, inf, 0x1.ffcp127},
      {OC_TF32, 0x1.ffdfffffffffp127, 0x1.ffcp127, 0x1.ffcp127},
      {OC_FP64, inf, inf, 0x1.fffffffffffffp1023},
      {OC_FP16, inf, inf, 65504},
      {OC_FP16, NAN, NAN, NAN},
      /* subnormal boundaries: half the smallest subnormal ties to 0 */
      {OC_FP16, 0x1p-25, 0, 0},
      {OC_FP16, 0x1.0000000000001p-25, 0x1p-24, 0x1p-24},
      {OC_FP16, -0x1p-26, -0.0, -0.0},
      {OC_FP16, 0x1.8p-24, 0x1p-23, 0x1p-23},           /* 1.5 ulp ties to even (2) */
      {OC_FP16, 0x1.ff8p-15, 0x1.ff8p-15, 0x1.ff8p-15}, /* largest subnormal */
      {OC_FP16, 0x1.ffcp-15, 0x1p-14, 0x1p-14},         /* + half a step: tie to min normal */
      {OC_FP16, 0x1.ffbffp-15, 0x1.ff8p-15, 0x1.ff8p-15},
      {OC_BF16, 0x1p-134, 0, 0},
      {OC_BF16, 0x1.00001p-134, 0x1p-133, 0x1p-133},
      {OC_E4M3FN, 0x1p-10, 0, 0},
      {OC_E4M3FN, 0x1.8p-9, 0x1p-8, 0x1p-8},
      {OC_E4M3FN, 0x1.ep-7, 0x1p-6, 0x1p-6}, /* largest subnormal + half a step */
      {OC_E4M3FN, 0x1.dfffp-7, 0x1.cp-7, 0x1.cp-7},
      {OC_E5M2, 0x1p-17, 0, 0},
      {OC_E5M2, 0x1.4p-16, 0x1p-16, 0x1p-16},
      {OC_E5M2, 0x1.cp-15, 0x1p-14, 0x1p-14},
      {OC_TF32, 0x1p-137, 0, 0},
      {OC_TF32, 0x1.000001p-137, 0x1p-136, 0x1p-136},
      {OC_FP32, 0x1p-150, 0, 0},
      {OC_FP32, 0x1.0000000000001p-150, 0x1p-149, 0x1p-149},
      {OC_FP32, 0x1.fffffep-127, 0x1p-126, 0x1p-126},
      {OC_FP64, 0x1p-1074, 0x1p-1074, 0x1p-1074},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double g1 = oc_round(cases[i].f, cases[i].x, OC_OVF_IEEE);
    double g2 = oc_round(cases[i].f, cases[i].x, OC_OVF_SATURATE);
    CHECK(same(g1, cases[i].ieee), "%s(%a) ieee = %a, want %a", oc_format_info(cases[i].f)->name,
          cases[i].x, g1, cases[i].ieee);
    CHECK(same(g2, cases[i].sat), "%s(%a) sat = %a, want %a", oc_format_info(cases[i].f)->name,
          cases[i].x, g2, cases[i].sat);
  }
  /* e4m3fn NaN keeps the sign like PyTorch: 0x7F / 0xFF */
  CHECK(oc_encode(OC_E4M3FN, 1000, OC_OVF_IEEE) == 0x7F &&
            oc_encode(OC_E4M3FN, -1000, OC_OVF_IEEE) == 0xFF,
        "e4m3fn overflow codes");
  printf("%s boundaries: %zu overflow/subnormal cases in both overflow modes\n", STATUS(before),
         sizeof cases / sizeof cases[0]);
}

/* ---- reference 3: a transcription of PyTorch's fp32 -> fp8 converters
 * (c10/util/Float8_e4m3fn.h, Float8_e5m2.h), compared on a stride of all
 * 2^32 float patterns plus every float in the fp8 ranges' critical binades */
static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint8_t torch_e4m3fn(float f) {
  const uint32_t fp8_max = UINT32_C(1087) << 20, denorm_mask = UINT32_C(141) << 23;
  uint32_t b = f2u(f);
  uint8_t r;
  const uint32_t sign = b & 0x80000000u;
  b ^= sign;
  if (b >= fp8_max) {
    r = 0x7f;
  } else if (b < (UINT32_C(121) << 23)) {
    b = f2u(u2f(b) + u2f(denorm_mask));
    r = (uint8_t)(b - denorm_mask);
  } else {
    uint8_t mant_odd = (b >> 20) & 1;
    b += ((uint32_t)(7 - 127) << 23) + 0x7FFFF;
    b += mant_odd;
    r = (uint8_t)(b >> 20);
  }
  return (uint8_t)(r | (sign >> 24));
}

static uint8_t torch_e5m2(float f) {
  const uint32_t fp32_inf = UINT32_C(255) << 23, fp8_max = UINT32_C(143) << 23,
                 denorm_mask = UINT32_C(134) << 23;
  uint32_t b = f2u(f);
  uint8_t r;
  const uint32_t sign = b & 0x80000000u;
  b ^= sign;
  if (b >= fp8_max) {
    r = b > fp32_inf ? 0x7F : 0x7C;
  } else if (b < (UINT32_C(113) << 23)) {
    b = f2u(u2f(b) + u2f(denorm_mask));
    r = (uint8_t)(b - denorm_mask);
  } else {
    uint32_t mant_odd = (b >> 21) & 1;
    b += ((uint32_t)(15 - 127) << 23) + 0xFFFFF;
    b += mant_odd;
    r = (uint8_t)(b >> 21);
  }
  return (uint8_t)(r | (sign >> 24));
}

static void compare_torch(uint32_t bits, long *n) {
  float f = u2f(bits);
  uint64_t a = oc_encode(OC_E4M3FN, f, OC_OVF_IEEE), b = torch_e4m3fn(f);
  CHECK(a == b || (isnan(oc_decode(OC_E4M3FN, a)) && isnan(oc_decode(OC_E4M3FN, b))),
        "e4m3fn(%a): %#llx, torch %#llx", (double)f, (unsigned long long)a, (unsigned long long)b);
  a = oc_encode(OC_E5M2, f, OC_OVF_IEEE);
  b = torch_e5m2(f);
  CHECK(a == b || (isnan(oc_decode(OC_E5M2, a)) && isnan(oc_decode(OC_E5M2, b))),
        "e5m2(%a): %#llx, torch %#llx", (double)f, (unsigned long long)a, (unsigned long long)b);
  *n += 2;
}

static void test_torch_fp8(void) {
  int before = failures;
  long n = 0;
  for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += 251)
    compare_torch((uint32_t)b, &n);
  /* every float from 2^-18 to 2^17, both signs (fp8 subnormals, ties, overflow) */
  for (uint32_t b = f2u(0x1p-18f); b < f2u(0x1p17f); b += 3) {
    compare_torch(b, &n);
    compare_torch(b | 0x80000000u, &n);
  }
  printf("%s torch fp8: %ld float conversions vs a transcription of PyTorch's converters\n",
         STATUS(before), n);
}

static void test_ulp_distance(void) {
  int before = failures;
  CHECK(oc_ulp_distance(OC_FP16, 1.0, 1.0) == 0, "d0");
  CHECK(oc_ulp_distance(OC_FP16, 1.0, 1.0 + 0x1p-10) == 1, "d1");
  CHECK(oc_ulp_distance(OC_FP16, 1.0, 1.0 - 0x1p-11) == 1, "d1 below");
  CHECK(oc_ulp_distance(OC_FP16, 0x1p-24, -0x1p-24) == 2, "across zero");
  CHECK(oc_ulp_distance(OC_FP16, 0.0, -0.0) == 0, "zeros");
  CHECK(oc_ulp_distance(OC_FP16, 65504, INFINITY) == 1, "max to inf");
  CHECK(oc_ulp_distance(OC_FP16, NAN, 1) == UINT64_MAX, "nan");
  CHECK(oc_ulp_distance(OC_E4M3FN, 448, 1e9) == UINT64_MAX, "e4m3 overflow is nan");
  CHECK(oc_ulp_distance(OC_TF32, 1.0, 2.0) == 1024, "tf32 binade");
  CHECK(oc_ulp_distance(OC_FP64, -DBL_MAX, DBL_MAX) == 2 * (UINT64_C(0x7FEFFFFFFFFFFFFF)),
        "fp64 span");
  CHECK(oc_ulp_distance(OC_BF16, 1.0, 2.0) == 128, "bf16 binade");
  CHECK(oc_format_quantum(OC_FP16, 1.5) == 0x1p-10 && oc_format_quantum(OC_FP16, 0) == 0x1p-24 &&
            oc_format_quantum(OC_E4M3FN, 400) == 32,
        "quantum");
  printf("%s ulp distance and quantum\n", STATUS(before));
}

/* oc_decode_one (no tables: a finding's evidence) gives oc_decode's value
 * for every code of every narrow format, bit for bit (NaN for NaN), and
 * ignores bits above the format's width as oc_decode does. */
static void test_decode_one(void) {
  int before = failures;
  static const enum oc_format fs[] = {OC_FP16, OC_BF16, OC_E4M3FN, OC_E5M2};
  for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++) {
    uint64_t n = UINT64_C(1) << oc_format_info(fs[k])->bits;
    for (uint64_t c = 0; c < n; c++) {
      double a = oc_decode(fs[k], c), b = oc_decode_one(fs[k], c);
      CHECK((isnan(a) && isnan(b)) || same(a, b), "format %d code 0x%llx: %a vs %a", (int)fs[k],
            (unsigned long long)c, a, b);
    }
    CHECK(same(oc_decode_one(fs[k], n | 1), oc_decode(fs[k], 1)), "high bits ignored");
  }
  CHECK(same(oc_decode_one(OC_FP32, 0x3f800000), 1.0), "fp32 passes to oc_decode");
  printf("%s decode without tables\n", STATUS(before));
}

int main(void) {
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++)
    build_sorted(narrow[i]);
  test_info();
  test_roundtrip();
  test_midpoints();
  test_against_mpfr();
  test_encode_mpfr_wide();
  test_boundaries();
  test_torch_fp8();
  test_ulp_distance();
  test_decode_one();
  for (size_t i = 0; i < sizeof narrow / sizeof narrow[0]; i++) {
    free(sorted_tab[narrow[i]].v);
    free(sorted_tab[narrow[i]].code);
  }
  mpfr_free_cache();
  printf("%s test_formats: %ld checks, %d failures\n", failures ? "FAIL" : "ok", checks, failures);
  return failures != 0;
}
