/* oracle/formats.h — exact decode/encode of the floating-point formats
 * kernels use, and correctly rounded (ties-to-even) conversion into them.
 * Thread-safe: no MPFR global exponent state is touched. */
#ifndef OC_FORMATS_H
#define OC_FORMATS_H

#include <mpfr.h>
#include <stddef.h>
#include <stdint.h>

enum oc_format {
  OC_FP64,
  OC_FP32,
  OC_TF32, /* stored as an fp32 bit pattern with the low 13 bits zero */
  OC_FP16,
  OC_BF16,
  OC_E4M3FN,
  OC_E5M2,
  OC_FORMAT_COUNT
};

/* What happens to finite values beyond the largest finite number. */
enum oc_overflow {
  OC_OVF_IEEE,     /* the format's own rule: Inf where it has Inf, NaN for e4m3fn */
  OC_OVF_SATURATE, /* clamp to ±max finite (e.g. cvt.satfinite) */
};

struct oc_format_info {
  const char *name; /* "fp32", "bf16", "e4m3fn", ... */
  int bits;         /* storage width */
  int p;            /* precision in bits, hidden bit included */
  int emin_normal;  /* exponent E of the smallest normal, value = m * 2^(E-1), m in [0.5,1) (MPFR
                       style) */
  int emax;         /* MPFR-style emax */
  double max_finite;
  double min_subnormal;
  int has_inf;
};

const struct oc_format_info *oc_format_info(enum oc_format f);
/* Parses "fp32", "float32", "half", "bf16", "e4m3", ...; -1 when unknown. */
int oc_format_parse(const char *name);

/* Exact value of a bit pattern as a double (every format here fits). */
double oc_decode(enum oc_format f, uint64_t bits);
/* The same value as oc_decode, computed from the bits alone: for a few
 * codes (a finding's evidence), where oc_decode's first call of a narrow
 * format builds its tables of every code (~1.5 ms, once per process). */
double oc_decode_one(enum oc_format f, uint64_t bits);
/* Correctly rounded (ties-to-even) encoding of a double. */
uint64_t oc_encode(enum oc_format f, double x, enum oc_overflow ovf);
/* oc_encode over an array (for batch and ctypes callers). */
void oc_encode_array(enum oc_format f, const double *x, size_t n, uint64_t *out,
                     enum oc_overflow ovf);
/* Correctly rounded encoding of an MPFR value (any precision). */
uint64_t oc_encode_mpfr(enum oc_format f, mpfr_srcptr x, enum oc_overflow ovf);
/* Round a double to the nearest value of the format, returned as a double. */
double oc_round(enum oc_format f, double x, enum oc_overflow ovf);
/* Unit roundoff u = 2^-p of the format. */
double oc_unit_roundoff(enum oc_format f);
/* Distance in units in the last place between two values of format f
 * (counted in representable steps; NaN -> UINT64_MAX). */
uint64_t oc_ulp_distance(enum oc_format f, double a, double b);
/* Spacing of format f's values in |x|'s binade (the subnormal quantum below
 * the normal range; at ±Inf that of the largest binade). */
double oc_format_quantum(enum oc_format f, double x);

#endif
