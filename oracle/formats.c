/* oracle/formats.c — bit-exact decode/encode of the formats in formats.h.
 * Encoding is pure integer arithmetic on the double's bits (or one mpfr_rint
 * on a scaled copy for MPFR inputs), so it never depends on the FPU rounding
 * mode and never touches MPFR's global exponent range. */
#include "formats.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>

/* Storage layout; the value semantics (p, emin_normal, emax) live in the
 * public info table. */
struct layout {
  int ebits, mbits; /* exponent and stored mantissa widths */
  int mshift;       /* tf32 keeps its 10 mantissa bits above 13 zero bits */
  int bias;
  uint64_t qnan; /* canonical positive quiet NaN */
};

static const struct layout lay[OC_FORMAT_COUNT] = {
    [OC_FP64] = {11, 52, 0, 1023, UINT64_C(0x7FF8000000000000)},
    [OC_FP32] = {8, 23, 0, 127, 0x7FC00000},
    [OC_TF32] = {8, 10, 13, 127, 0x7FC00000},
    [OC_FP16] = {5, 10, 0, 15, 0x7E00},
    [OC_BF16] = {8, 7, 0, 127, 0x7FC0},
    [OC_E4M3FN] = {4, 3, 0, 7, 0x7F},
    [OC_E5M2] = {5, 2, 0, 15, 0x7E},
};

static const struct oc_format_info info[OC_FORMAT_COUNT] = {
    [OC_FP64] = {"fp64", 64, 53, -1021, 1024, 0x1.fffffffffffffp1023, 0x1p-1074, 1},
    [OC_FP32] = {"fp32", 32, 24, -125, 128, 0x1.fffffep127, 0x1p-149, 1},
    [OC_TF32] = {"tf32", 32, 11, -125, 128, 0x1.ffcp127, 0x1p-136, 1},
    [OC_FP16] = {"fp16", 16, 11, -13, 16, 65504.0, 0x1p-24, 1},
    [OC_BF16] = {"bf16", 16, 8, -125, 128, 0x1.fep127, 0x1p-133, 1},
    [OC_E4M3FN] = {"e4m3fn", 8, 4, -5, 9, 448.0, 0x1p-9, 0},
    [OC_E5M2] = {"e5m2", 8, 3, -13, 16, 57344.0, 0x1p-16, 1},
};

static int valid(enum oc_format f) { return (unsigned)f < OC_FORMAT_COUNT; }

const struct oc_format_info *oc_format_info(enum oc_format f) { return valid(f) ? &info[f] : NULL; }

int oc_format_parse(const char *name) {
  static const struct {
    const char *s;
    enum oc_format f;
  } names[] = {
      {"fp64", OC_FP64},
      {"float64", OC_FP64},
      {"double", OC_FP64},
      {"f64", OC_FP64},
      {"fp32", OC_FP32},
      {"float32", OC_FP32},
      {"float", OC_FP32},
      {"f32", OC_FP32},
      {"tf32", OC_TF32},
      {"tensorfloat32", OC_TF32},
      {"fp16", OC_FP16},
      {"float16", OC_FP16},
      {"half", OC_FP16},
      {"f16", OC_FP16},
      {"bf16", OC_BF16},
      {"bfloat16", OC_BF16},
      {"e4m3fn", OC_E4M3FN},
      {"e4m3", OC_E4M3FN},
      {"fp8e4m3", OC_E4M3FN},
      {"fp8_e4m3", OC_E4M3FN},
      {"fp8e4m3fn", OC_E4M3FN},
      {"fp8_e4m3fn", OC_E4M3FN},
      {"float8_e4m3fn", OC_E4M3FN},
      {"e5m2", OC_E5M2},
      {"fp8e5m2", OC_E5M2},
      {"fp8_e5m2", OC_E5M2},
      {"float8_e5m2", OC_E5M2},
  };
  if (!name) return -1;
  if (strncasecmp(name, "torch.", 6) == 0) name += 6;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcasecmp(name, names[i].s) == 0) return (int)names[i].f;
  return -1;
}

static uint64_t dbits(double x) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}

static double bitsd(uint64_t b) {
  double x;
  memcpy(&x, &b, sizeof x);
  return x;
}

static uint64_t sign_bit(enum oc_format f) { return UINT64_C(1) << (info[f].bits - 1); }

static uint64_t max_code(enum oc_format f) {
  const struct layout *l = &lay[f];
  uint64_t top = (UINT64_C(1) << l->ebits) - 1;
  /* e4m3fn uses the all-ones exponent for finite values; only S.1111.111 is NaN */
  uint64_t code = f == OC_E4M3FN ? (top << l->mbits) | ((UINT64_C(1) << l->mbits) - 2)
                                 : ((top - 1) << l->mbits) | ((UINT64_C(1) << l->mbits) - 1);
  return code << l->mshift;
}

static uint64_t nan_code(enum oc_format f, int neg) {
  return lay[f].qnan | (neg ? sign_bit(f) : 0);
}

static uint64_t inf_code(enum oc_format f, int neg, enum oc_overflow ovf) {
  uint64_t s = neg ? sign_bit(f) : 0;
  if (ovf == OC_OVF_SATURATE) return s | max_code(f);
  if (!info[f].has_inf) return nan_code(f, neg);
  const struct layout *l = &lay[f];
  return s | ((((UINT64_C(1) << l->ebits) - 1) << l->mbits) << l->mshift);
}

/* Encodes ±n·2^q, where n was already rounded to the format's quantum at
 * that magnitude (so n <= 2^p, and n < 2^(p-1) only in the subnormal range). */
static uint64_t pack(enum oc_format f, int neg, uint64_t n, int64_t q, enum oc_overflow ovf) {
  const struct layout *l = &lay[f];
  const int p = info[f].p;
  uint64_t s = neg ? sign_bit(f) : 0;
  if (n == 0) return s;
  if (n == UINT64_C(1) << p) {
    n >>= 1;
    q++;
  }
  uint64_t field;
  if (n < UINT64_C(1) << (p - 1)) {
    field = n; /* subnormal: biased exponent 0 */
  } else {
    int64_t biased = q + p - 1 + l->bias;
    int64_t top = (INT64_C(1) << l->ebits) - (f == OC_E4M3FN ? 1 : 2);
    uint64_t mant = n - (UINT64_C(1) << (p - 1));
    if (biased > top || (f == OC_E4M3FN && biased == top && mant == 7))
      return inf_code(f, neg, ovf);
    field = ((uint64_t)biased << l->mbits) | mant;
  }
  return s | (field << l->mshift);
}

uint64_t oc_encode(enum oc_format f, double x, enum oc_overflow ovf) {
  if (!valid(f)) return 0;
  uint64_t b = dbits(x);
  int neg = (int)(b >> 63);
  unsigned e = (unsigned)(b >> 52) & 0x7FF;
  uint64_t frac = b & ((UINT64_C(1) << 52) - 1);
  if (f == OC_FP64) {
    if (e == 0x7FF && frac) return nan_code(f, neg);
    if (e == 0x7FF && ovf == OC_OVF_SATURATE) return inf_code(f, neg, ovf);
    return b;
  }
  if (e == 0x7FF) return frac ? nan_code(f, neg) : inf_code(f, neg, ovf);
  if (e == 0 && frac == 0) return neg ? sign_bit(f) : 0;
  uint64_t m = e ? frac | (UINT64_C(1) << 52) : frac;
  int64_t ex = (int64_t)(e ? e : 1) - 1075; /* |x| = m * 2^ex */
  const int p = info[f].p;
  int64_t E = 64 - __builtin_clzll(m) + ex; /* |x| in [2^(E-1), 2^E) */
  int64_t q = (E > info[f].emin_normal ? E : info[f].emin_normal) - p;
  int64_t sh = q - ex;
  uint64_t n;
  if (sh <= 0) {
    n = m << -sh; /* already on the grid: only when m has few bits */
  } else if (sh > 63) {
    n = 0; /* below a quarter of the quantum */
  } else {
    n = m >> sh;
    uint64_t rem = m & ((UINT64_C(1) << sh) - 1), half = UINT64_C(1) << (sh - 1);
    if (rem > half || (rem == half && (n & 1))) n++;
  }
  return pack(f, neg, n, q, ovf);
}

void oc_encode_array(enum oc_format f, const double *x, size_t n, uint64_t *out,
                     enum oc_overflow ovf) {
  for (size_t i = 0; i < n; i++)
    out[i] = oc_encode(f, x[i], ovf);
}

uint64_t oc_encode_mpfr(enum oc_format f, mpfr_srcptr x, enum oc_overflow ovf) {
  if (!valid(f)) return 0;
  int neg = mpfr_signbit(x) != 0;
  if (mpfr_nan_p(x)) return nan_code(f, neg);
  if (mpfr_inf_p(x)) return inf_code(f, neg, ovf);
  if (mpfr_zero_p(x)) return neg ? sign_bit(f) : 0;
  const int p = info[f].p;
  const int64_t qs = info[f].emin_normal - p; /* quantum of the subnormal range */
  int64_t E = mpfr_get_exp(x);                /* |x| in [2^(E-1), 2^E) */
  if (E > info[f].emax + 1) return inf_code(f, neg, ovf);
  if (E < qs - 1) return neg ? sign_bit(f) : 0; /* |x| < 2^(qs-2) */
  int64_t q = (E > info[f].emin_normal ? E : info[f].emin_normal) - p;
  /* n = rint(x / 2^q): the scaling is exact at x's precision, and the
   * integer (at most 2^p) is exact in 64 bits, so this is one rounding. */
  mpfr_t t, r;
  mpfr_init2(t, mpfr_get_prec(x));
  mpfr_init2(r, 64);
  mpfr_mul_2si(t, x, -q, MPFR_RNDN);
  mpfr_rint(r, t, MPFR_RNDN);
  mpfr_abs(r, r, MPFR_RNDN);
  uint64_t n = (uint64_t)mpfr_get_ui(r, MPFR_RNDN); /* n <= 2^53 */
  mpfr_clear(t);
  mpfr_clear(r);
  return pack(f, neg, n, q, ovf);
}

/* Decode tables: every value of an 8/16-bit format is exact in a double. */
static double tab_fp16[65536], tab_bf16[65536], tab_e4m3[256], tab_e5m2[256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

/* Direct decode from the layout; used to fill the tables and for 32-bit
 * formats (where a table would be too big). */
static double decode_slow(enum oc_format f, uint64_t bits) {
  const struct layout *l = &lay[f];
  const int p = info[f].p;
  int neg = (int)((bits >> (info[f].bits - 1)) & 1);
  uint64_t field = (bits >> l->mshift);
  uint64_t mant = field & ((UINT64_C(1) << l->mbits) - 1);
  uint64_t ex = (field >> l->mbits) & ((UINT64_C(1) << l->ebits) - 1);
  uint64_t top = (UINT64_C(1) << l->ebits) - 1;
  double v;
  if (f == OC_E4M3FN ? (ex == top && mant == 7) : (ex == top && mant)) {
    v = NAN;
  } else if (ex == top && f != OC_E4M3FN) {
    v = INFINITY;
  } else if (ex == 0) {
    v = ldexp((double)mant, info[f].emin_normal - p);
  } else {
    v = ldexp((double)(mant | (UINT64_C(1) << (p - 1))), (int)ex - l->bias - (p - 1));
  }
  return neg ? -v : v;
}

static void build_tables(void) {
  for (uint64_t i = 0; i < 65536; i++) {
    tab_fp16[i] = decode_slow(OC_FP16, i);
    tab_bf16[i] = decode_slow(OC_BF16, i);
  }
  for (uint64_t i = 0; i < 256; i++) {
    tab_e4m3[i] = decode_slow(OC_E4M3FN, i);
    tab_e5m2[i] = decode_slow(OC_E5M2, i);
  }
}

double oc_decode(enum oc_format f, uint64_t bits) {
  switch (f) {
  case OC_FP64: return bitsd(bits);
  case OC_FP32:
  case OC_TF32: {
    /* tf32 hardware ignores the low 13 bits of the fp32 container */
    uint32_t b = (uint32_t)bits & (f == OC_TF32 ? 0xFFFFE000u : 0xFFFFFFFFu);
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
  }
  case OC_FP16:
  case OC_BF16:
  case OC_E4M3FN:
  case OC_E5M2:
    pthread_once(&tab_once, build_tables);
    if (f == OC_FP16) return tab_fp16[bits & 0xFFFF];
    if (f == OC_BF16) return tab_bf16[bits & 0xFFFF];
    return f == OC_E4M3FN ? tab_e4m3[bits & 0xFF] : tab_e5m2[bits & 0xFF];
  default: return NAN;
  }
}

double oc_decode_one(enum oc_format f, uint64_t bits) {
  switch (f) {
  case OC_FP16:
  case OC_BF16:
  case OC_E4M3FN:
  case OC_E5M2: return decode_slow(f, bits & ((UINT64_C(1) << info[f].bits) - 1));
  default: return oc_decode(f, bits);
  }
}

double oc_round(enum oc_format f, double x, enum oc_overflow ovf) {
  return oc_decode(f, oc_encode(f, x, ovf));
}

double oc_unit_roundoff(enum oc_format f) { return valid(f) ? ldexp(1.0, -info[f].p) : NAN; }

/* Position of a code on the number line, counted in representable steps
 * (±0 share position 0; tf32 drops its 13 unused bits). */
static int64_t ordinal(enum oc_format f, uint64_t code) {
  uint64_t mag = (code & (sign_bit(f) - 1)) >> lay[f].mshift;
  return (code & sign_bit(f)) ? -(int64_t)mag : (int64_t)mag;
}

uint64_t oc_ulp_distance(enum oc_format f, double a, double b) {
  if (!valid(f) || isnan(a) || isnan(b)) return UINT64_MAX;
  /* Values that are not in the format are rounded to it first. */
  uint64_t ca = oc_encode(f, a, OC_OVF_IEEE), cb = oc_encode(f, b, OC_OVF_IEEE);
  if (isnan(oc_decode(f, ca)) || isnan(oc_decode(f, cb))) return UINT64_MAX;
  int64_t oa = ordinal(f, ca), ob = ordinal(f, cb);
  /* fp64 magnitudes reach 2^63 - 2^52: do the difference in unsigned */
  return oa >= ob ? (uint64_t)oa - (uint64_t)ob : (uint64_t)ob - (uint64_t)oa;
}

/* Smallest spacing between neighbours of format f around |x| (the quantum
 * of x's binade, or of the subnormal range). */
double oc_format_quantum(enum oc_format f, double x) {
  if (!valid(f)) return NAN;
  x = fabs(x);
  if (isnan(x)) return NAN;
  if (isinf(x)) x = info[f].max_finite;
  int E = x == 0 ? info[f].emin_normal : ilogb(x) + 1;
  if (E < info[f].emin_normal) E = info[f].emin_normal;
  return ldexp(1.0, E - info[f].p);
}
