/* oracle/elementwise.c — correctly rounded elementwise references (special
 * values in C, exact arithmetic or a Ziv loop in MPFR for the rest), the
 * documented ULP budgets per math mode, and lazily built 8/16-bit tables. */
#include "elementwise.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "mpfr_util.h"

static const char *const names[OC_OP_COUNT] = {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_EW(cls, [OC_OP_##id] = name, )
#include "ops.def"
};
static const int arities[OC_OP_COUNT] = {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_EW(cls, [OC_OP_##id] = arity, )
#include "ops.def"
};

static int valid_op(enum oc_op op) { return (unsigned)op < OC_OP_COUNT; }

const char *oc_op_name(enum oc_op op) { return valid_op(op) ? names[op] : "?"; }

int oc_op_parse(const char *name) {
  const struct oc_op_info *r = oc_op_find(name);
  return r && r->cls == OC_CLASS_ELEMENTWISE ? r->kind : -1;
}

int oc_op_arity(enum oc_op op) { return valid_op(op) ? arities[op] : 0; }

/* ------------------------------------------------------------ evaluation */

struct ctx {
  enum oc_op op;
  double x, y;
};

/* Evaluators for oc_ziv_encode. Error bounds (returned k, in ulps of the
 * result at precision w; every MPFR step rounds to nearest, relative error
 * delta <= 2^-w, so a relative bound K*delta is at most K ulps):
 *  sigmoid 1/(1+e^-x), silu x/(1+e^-x): 1+e^-x adds positive terms, so the
 *    three roundings give (1+d)^3/(1-d)^... < 4 delta.
 *  gelu_erf (x/2) erfc(-x/sqrt2): the argument carries 2.01 delta; erfc's
 *    condition number |v erfc'(v)/erfc(v)| is < 2v^2 + 2 <= 1604 for
 *    |v| <= 40/sqrt2 (and < 1 for v < 0); plus two roundings: < 4096 delta.
 *  gelu_tanh x/(1+exp(-z2)), z2 = 2 sqrt(2/pi) x (1 + 0.044715 x^2): z2
 *    carries < 9 delta (no cancellation: every term has x's sign), which
 *    exp turns into 9|z2| delta; plus three roundings. */
static long eval(mpfr_ptr r, const void *vc) {
  const struct ctx *c = vc;
  mpfr_prec_t w = mpfr_get_prec(r);
  mpfr_t x, a, b;
  mpfr_init2(x, 53);
  mpfr_init2(a, w);
  mpfr_init2(b, w);
  mpfr_set_d(x, c->x, MPFR_RNDN);
  long k = -1;
  switch (c->op) {
  case OC_OP_DIV:
    mpfr_set_d(b, c->y, MPFR_RNDN); /* w >= 64: exact */
    k = mpfr_div(r, x, b, MPFR_RNDN) != 0;
    break;
  case OC_OP_EXP: k = mpfr_exp(r, x, MPFR_RNDN) != 0; break;
  case OC_OP_LOG: k = mpfr_log(r, x, MPFR_RNDN) != 0; break;
  case OC_OP_SQRT: k = mpfr_sqrt(r, x, MPFR_RNDN) != 0; break;
  case OC_OP_RSQRT: k = mpfr_rec_sqrt(r, x, MPFR_RNDN) != 0; break;
  case OC_OP_TANH: k = mpfr_tanh(r, x, MPFR_RNDN) != 0; break;
  case OC_OP_SIGMOID:
  case OC_OP_SILU:
    mpfr_neg(a, x, MPFR_RNDN);
    mpfr_exp(a, a, MPFR_RNDN);
    mpfr_add_ui(a, a, 1, MPFR_RNDN);
    if (c->op == OC_OP_SIGMOID)
      mpfr_ui_div(r, 1, a, MPFR_RNDN);
    else
      mpfr_div(r, x, a, MPFR_RNDN);
    k = 4;
    break;
  case OC_OP_GELU_ERF:
    mpfr_sqrt_ui(a, 2, MPFR_RNDN);
    mpfr_div(a, x, a, MPFR_RNDN);
    mpfr_neg(a, a, MPFR_RNDN);
    mpfr_erfc(a, a, MPFR_RNDN);
    mpfr_mul(r, a, x, MPFR_RNDN);
    mpfr_div_2ui(r, r, 1, MPFR_RNDN);
    k = 4096;
    break;
  case OC_OP_GELU_TANH: {
    mpfr_set_str(b, "0.044715", 10, MPFR_RNDN);
    mpfr_sqr(a, x, MPFR_RNDN);
    mpfr_mul(a, a, b, MPFR_RNDN);
    mpfr_add_ui(a, a, 1, MPFR_RNDN);
    mpfr_mul(a, a, x, MPFR_RNDN);
    mpfr_const_pi(b, MPFR_RNDN);
    mpfr_ui_div(b, 2, b, MPFR_RNDN);
    mpfr_sqrt(b, b, MPFR_RNDN);
    mpfr_mul(a, a, b, MPFR_RNDN);
    mpfr_mul_2ui(a, a, 1, MPFR_RNDN); /* z2 */
    double z2 = fabs(mpfr_get_d(a, MPFR_RNDN));
    mpfr_neg(a, a, MPFR_RNDN);
    mpfr_exp(a, a, MPFR_RNDN);
    mpfr_add_ui(a, a, 1, MPFR_RNDN);
    mpfr_div(r, x, a, MPFR_RNDN);
    k = (long)ceil(9 * z2) + 8;
    break;
  }
  /* no Ziv evaluation: exact (add, sub, mul), sign ops, clamp */
  case OC_OP_ADD:
  case OC_OP_SUB:
  case OC_OP_MUL:
  case OC_OP_NEG:
  case OC_OP_ABS:
  case OC_OP_RELU:
  case OC_OP_RELU_FMAX:
  case OC_OP_CLAMP:
  case OC_OP_COPY:
  case OC_OP_COUNT: break;
  }
  mpfr_clear(x);
  mpfr_clear(a);
  mpfr_clear(b);
  return k;
}

/* ---- a double first: the same formulas as eval in double arithmetic and
 * the C library's exp, log, tanh and erfc, with an error bound; where the
 * whole interval value +- bound rounds to one code of the format, that is
 * the correctly rounded result (rounding is monotonic), else the Ziv loop
 * in MPFR settles it. Bounds: eval's k (first-order, in units of the
 * working precision's rounding) holds with every correctly rounded step
 * replaced by a double operation (+ - * / sqrt round to nearest: the same
 * 2^-53), and a library function within LIBM_ULPS ulps counts 2 LIBM_ULPS
 * times that; so 2 LIBM_ULPS k ulps of the double result. glibc documents
 * at most 1 (exp, log), 2 (tanh) and 5 (erfc) ulps on x86-64 (libm-test-ulps);
 * LIBM_ULPS is 16. The library's error is also measured once per function
 * against MPFR (libm_trusted): one more than LIBM_ULPS / 2 off anywhere in
 * the sample turns the double path off for the ops that use it. */
#define LIBM_ULPS OC_LIBM_ULPS
#define CALIBRATION_POINTS 512

enum libm_fn { LIBM_EXP, LIBM_LOG, LIBM_TANH, LIBM_ERFC, LIBM_NONE, LIBM_COUNT };
static _Atomic int libm_state[LIBM_COUNT]; /* 0 unknown, 1 trusted, -1 not */

static double libm_call(enum libm_fn fn, double v) {
  switch (fn) {
  case LIBM_EXP: return exp(v);
  case LIBM_LOG: return log(v);
  case LIBM_TANH: return tanh(v);
  case LIBM_ERFC: return erfc(v);
  case LIBM_NONE:
  case LIBM_COUNT: break;
  }
  return NAN;
}

static int libm_mpfr(enum libm_fn fn, mpfr_ptr r, mpfr_srcptr v) {
  switch (fn) {
  case LIBM_EXP: return mpfr_exp(r, v, MPFR_RNDN);
  case LIBM_LOG: return mpfr_log(r, v, MPFR_RNDN);
  case LIBM_TANH: return mpfr_tanh(r, v, MPFR_RNDN);
  case LIBM_ERFC: return mpfr_erfc(r, v, MPFR_RNDN);
  case LIBM_NONE:
  case LIBM_COUNT: break;
  }
  return 0;
}

/* Arguments over the ranges the ops reach (results normal doubles). */
static double calibration_point(enum libm_fn fn, unsigned i) {
  double u = (double)((i * 2654435761u) % 1000003u) / 1000003.0; /* in [0, 1) */
  switch (fn) {
  case LIBM_EXP: return -700 + 1400 * u;
  case LIBM_LOG: return ldexp(0.5 + 0.5 * u, (int)(i % 2000) - 1000);
  case LIBM_TANH: return -20 + 40 * u;
  case LIBM_ERFC: return -6 + 32 * u; /* erfc(26) ~ 1e-296 */
  case LIBM_NONE:
  case LIBM_COUNT: break;
  }
  return 0;
}

static int libm_trusted(enum libm_fn fn) {
  if (fn == LIBM_NONE) return 1;
  int st = atomic_load_explicit(&libm_state[fn], memory_order_acquire);
  if (st) return st > 0;
  int ok = 1;
  mpfr_t v, r, d;
  mpfr_inits2(160, v, r, d, (mpfr_ptr)0);
  for (unsigned i = 0; ok && i < CALIBRATION_POINTS; i++) {
    double arg = calibration_point(fn, i), got = libm_call(fn, arg);
    mpfr_set_d(v, arg, MPFR_RNDN);
    libm_mpfr(fn, r, v);
    double want = mpfr_get_d(r, MPFR_RNDN);
    if (!isfinite(got) || !isnormal(want)) {
      ok = isfinite(got) || !isfinite(want);
      continue;
    }
    /* |got - exact| in ulps of the exact value's binade */
    mpfr_sub_d(d, r, got, MPFR_RNDN);
    double ulps = fabs(mpfr_get_d(d, MPFR_RNDN)) / ldexp(1.0, ilogb(want) - 52);
    ok = ulps <= LIBM_ULPS / 2;
  }
  mpfr_clears(v, r, d, (mpfr_ptr)0);
  atomic_store_explicit(&libm_state[fn], ok ? 1 : -1, memory_order_release);
  return ok;
}

int oc_libm_exp_log_trusted(void) { return libm_trusted(LIBM_EXP) && libm_trusted(LIBM_LOG); }

/* The op in double: *v and its bound in ulps of *v; 0 when there is none
 * (the op has no double form, the library is not trusted, or the value is
 * not a normal double). */
static int double_form(enum oc_op op, double x, double y, double *v, double *kulps) {
  enum libm_fn fn = LIBM_NONE;
  double r = 0, k = 0;
  switch (op) {
  case OC_OP_DIV: r = x / y, k = 1; break;
  case OC_OP_SQRT: r = sqrt(x), k = 1; break;
  case OC_OP_RSQRT: r = 1.0 / sqrt(x), k = 2; break; /* two roundings */
  case OC_OP_EXP: fn = LIBM_EXP, r = exp(x), k = 2 * LIBM_ULPS; break;
  case OC_OP_LOG: fn = LIBM_LOG, r = log(x), k = 2 * LIBM_ULPS; break;
  case OC_OP_TANH: fn = LIBM_TANH, r = tanh(x), k = 2 * LIBM_ULPS; break;
  case OC_OP_SIGMOID: fn = LIBM_EXP, r = 1.0 / (1.0 + exp(-x)), k = 2 * LIBM_ULPS * 4; break;
  case OC_OP_SILU: fn = LIBM_EXP, r = x / (1.0 + exp(-x)), k = 2 * LIBM_ULPS * 4; break;
  case OC_OP_GELU_ERF:
    fn = LIBM_ERFC, r = 0.5 * (x * erfc(-x / sqrt(2.0))), k = 2 * LIBM_ULPS * 4096;
    break;
  case OC_OP_GELU_TANH: {
    double z2 = 2 * sqrt(2 / M_PI) * (x * (1 + 0.044715 * (x * x)));
    fn = LIBM_EXP, r = x / (1 + exp(-z2)), k = 2 * LIBM_ULPS * (ceil(9 * fabs(z2)) + 8);
    break;
  }
  /* exact or sign-only ops: never reach the Ziv loop */
  case OC_OP_ADD:
  case OC_OP_SUB:
  case OC_OP_MUL:
  case OC_OP_NEG:
  case OC_OP_ABS:
  case OC_OP_RELU:
  case OC_OP_RELU_FMAX:
  case OC_OP_CLAMP:
  case OC_OP_COPY:
  case OC_OP_COUNT: return 0;
  }
  if (!isnormal(r) || !libm_trusted(fn)) return 0;
  *v = r;
  *kulps = k;
  return 1;
}

/* The format's code of the op where the double form decides it; 0 with
 * *done = 0 where it does not. */
static uint64_t double_first(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x,
                             double y, int *done) {
  double v, k;
  *done = 0;
  if (!double_form(op, x, y, &v, &k)) return 0;
  /* v +- (k + 2) ulps, computed so that the interval only widens: below v
   * the spacing can only halve (v - n ulp is exact), above it can double
   * (one more ulp covers the rounding) */
  double ulp = ldexp(1.0, ilogb(v) - 52);
  double mag = fabs(v), lo = mag - (k + 1) * ulp, hi = mag + (k + 2) * ulp;
  if (!(lo > 0) || !isfinite(hi)) return 0;
  if (v < 0) {
    double t = lo;
    lo = -hi, hi = -t;
  }
  uint64_t a = oc_encode(f, lo, ovf), b = oc_encode(f, hi, ovf);
  if (a != b) return 0;
  *done = 1;
  return a;
}

static _Atomic int double_first_off; /* tests: the Ziv loop for every element */
static _Atomic unsigned long double_first_hits;

void oc_ew_set_double_first(int on) { atomic_store(&double_first_off, !on); }

unsigned long oc_ew_double_first_hits(void) { return atomic_load(&double_first_hits); }

static uint64_t ziv(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x, double y) {
  if (!atomic_load_explicit(&double_first_off, memory_order_relaxed)) {
    int done;
    uint64_t code = double_first(op, f, ovf, x, y, &done);
    if (done) {
      atomic_fetch_add_explicit(&double_first_hits, 1, memory_order_relaxed);
      return code;
    }
  }
  struct ctx c = {op, x, y};
  return oc_ziv_encode(f, ovf, eval, &c, NULL);
}

/* Rounding of x minus a positive infinitesimal (x > 0 finite): for tails
 * like silu(x) = x - x e^-x with x e^-x < 2^-57 x. No rounding boundary of
 * any format (multiples of 2^(E-55) near x in [2^(E-1), 2^E)) lies strictly
 * between x - 2^(E-60) and the true value, so both round alike. */
static uint64_t enc_just_below(enum oc_format f, enum oc_overflow ovf, double x) {
  mpfr_t t;
  mpfr_init2(t, 128);
  mpfr_set_d(t, x, MPFR_RNDN);
  mpfr_t d;
  mpfr_init2(d, 8);
  mpfr_set_ui_2exp(d, 1, mpfr_get_exp(t) - 60, MPFR_RNDN);
  mpfr_sub(t, t, d, MPFR_RNDN); /* exact at 128 bits */
  uint64_t code = oc_encode_mpfr(f, t, ovf);
  mpfr_clear(t);
  mpfr_clear(d);
  return code;
}

/* Exact a op b for + - * (an MPFR value wide enough), then one rounding. */
static uint64_t exact_arith(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x,
                            double y) {
  mpfr_t a, r;
  mpfr_init2(a, 53);
  /* sums of doubles span at most 2^-1074 .. 2^1025: 2100 bits; products 106 */
  mpfr_init2(r, op == OC_OP_MUL ? 106 : 2112);
  mpfr_set_d(a, x, MPFR_RNDN);
  if (op == OC_OP_ADD)
    mpfr_add_d(r, a, y, MPFR_RNDN);
  else if (op == OC_OP_SUB)
    mpfr_sub_d(r, a, y, MPFR_RNDN);
  else
    mpfr_mul_d(r, a, y, MPFR_RNDN);
  uint64_t code = oc_encode_mpfr(f, r, ovf);
  mpfr_clear(a);
  mpfr_clear(r);
  return code;
}

static uint64_t encode_op(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x,
                          double y) {
  const double nan = NAN, inf = INFINITY;
  switch (op) {
  case OC_OP_ADD:
  case OC_OP_SUB:
  case OC_OP_MUL: return exact_arith(op, f, ovf, x, y); /* MPFR follows IEEE for specials */
  case OC_OP_DIV: return ziv(op, f, ovf, x, y);         /* exact quotients end at once */
  case OC_OP_NEG: return oc_encode(f, -x, ovf);
  case OC_OP_ABS: return oc_encode(f, fabs(x), ovf);
  case OC_OP_RELU: return oc_encode(f, isnan(x) ? x : x > 0 ? x : 0.0, ovf);
  case OC_OP_RELU_FMAX: return oc_encode(f, x > 0 ? x : 0.0, ovf); /* NaN -> +0 */
  case OC_OP_COPY:
    return oc_encode(f, x, ovf); /* one rounding */
  /* the others: NaN first, then their special values below */
  case OC_OP_GELU_ERF:
  case OC_OP_GELU_TANH:
  case OC_OP_SILU:
  case OC_OP_SIGMOID:
  case OC_OP_TANH:
  case OC_OP_EXP:
  case OC_OP_LOG:
  case OC_OP_SQRT:
  case OC_OP_RSQRT:
  case OC_OP_CLAMP:
  case OC_OP_COUNT: break;
  }
  if (isnan(x)) return oc_encode(f, nan, ovf);
  switch (op) {
  case OC_OP_EXP:
    if (x == 0) return oc_encode(f, 1.0, ovf);
    if (x > 1000) return oc_encode(f, inf, ovf);  /* e^1000 > 2^1442: overflow everywhere */
    if (x < -1000) return oc_encode(f, 0.0, ovf); /* < 2^-1442: +0 everywhere */
    break;
  case OC_OP_LOG:
    if (x < 0) return oc_encode(f, nan, ovf);
    if (x == 0) return oc_encode(f, -inf, ovf);
    if (x == 1) return oc_encode(f, 0.0, ovf);
    if (isinf(x)) return oc_encode(f, inf, ovf);
    break;
  case OC_OP_SQRT:
    if (x == 0) return oc_encode(f, x, ovf);
    if (x < 0) return oc_encode(f, nan, ovf);
    if (isinf(x)) return oc_encode(f, inf, ovf);
    break;
  case OC_OP_RSQRT:
    if (x == 0) return oc_encode(f, signbit(x) ? -inf : inf, ovf);
    if (x < 0) return oc_encode(f, nan, ovf);
    if (isinf(x)) return oc_encode(f, 0.0, ovf);
    break;
  case OC_OP_TANH:
    if (x == 0) return oc_encode(f, x, ovf);
    if (isinf(x)) return oc_encode(f, x > 0 ? 1.0 : -1.0, ovf);
    break;
  case OC_OP_SIGMOID:
    if (x == 0) return oc_encode(f, 0.5, ovf);
    /* 1 - e^-x with e^-x < 2^-57 rounds to 1 in every format */
    if (x > 40) return oc_encode(f, 1.0, ovf);
    if (x < -750) return oc_encode(f, 0.0, ovf); /* e^x < 2^-1082 */
    break;
  case OC_OP_SILU:
  case OC_OP_GELU_ERF:
  case OC_OP_GELU_TANH:
    if (x == 0) return oc_encode(f, x, ovf);
    if (x == inf) return oc_encode(f, inf, ovf);
    if (x == -inf) return oc_encode(f, -0.0, ovf);
    /* x - x*tail(x): tail < 2^-57 beyond these points (e^-40; Phi(-10) ~
     * 2^-76; 1/(1+e^z2), z2 > 87) */
    if (x > (op == OC_OP_SILU ? 40 : 10)) return enc_just_below(f, ovf, x);
    /* |x| * tail(x) < 2^-1076: -0 everywhere (|x| e^x at -800; |x| Phi(x)
     * ~ 2^-1153 at -40; |x| e^-|z2| with |z2| > 1155 at -25) */
    if (x < (op == OC_OP_SILU ? -800 : op == OC_OP_GELU_ERF ? -40 : -25))
      return oc_encode(f, -0.0, ovf);
    break;
  /* handled above (arithmetic, sign ops), or not a value op (clamp's
   * bounds come from outside: oc_check_clamp) */
  case OC_OP_ADD:
  case OC_OP_SUB:
  case OC_OP_MUL:
  case OC_OP_DIV:
  case OC_OP_NEG:
  case OC_OP_ABS:
  case OC_OP_RELU:
  case OC_OP_RELU_FMAX:
  case OC_OP_CLAMP:
  case OC_OP_COPY:
  case OC_OP_COUNT: return oc_encode(f, nan, ovf);
  }
  return ziv(op, f, ovf, x, y);
}

uint64_t oc_op_encode(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x, double y) {
  if (!valid_op(op) || !oc_format_info(f)) return 0;
  uint64_t code = encode_op(op, f, ovf, x, y);
  /* one NaN per format: MPFR's NaN sign means nothing */
  if (op != OC_OP_NEG && op != OC_OP_ABS && isnan(oc_decode(f, code)))
    code = oc_encode(f, NAN, ovf);
  return code;
}

double oc_op_round(enum oc_op op, enum oc_format f, enum oc_overflow ovf, double x, double y) {
  return oc_decode(f, oc_op_encode(op, f, ovf, x, y));
}

/* ------------------------------------------------------------ tables */

static const enum oc_format table_inputs[] = {OC_FP16, OC_BF16, OC_E4M3FN, OC_E5M2};
#define NIN (sizeof table_inputs / sizeof table_inputs[0])
static _Atomic(uint64_t *) tables[OC_OP_COUNT][NIN][OC_FORMAT_COUNT][2];
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

const uint64_t *oc_op_table(enum oc_op op, enum oc_format in, enum oc_format out,
                            enum oc_overflow ovf) {
  if (oc_op_arity(op) != 1 || !oc_format_info(out) || (unsigned)ovf > 1) return NULL;
  size_t ii = 0;
  while (ii < NIN && table_inputs[ii] != in)
    ii++;
  if (ii == NIN) return NULL;
  _Atomic(uint64_t *) *slot = &tables[op][ii][out][ovf];
  uint64_t *t = atomic_load_explicit(slot, memory_order_acquire);
  if (t) return t;
  /* One builder at a time; a thread that waited finds the table built. */
  pthread_mutex_lock(&tables_lock);
  t = atomic_load_explicit(slot, memory_order_relaxed);
  if (!t) {
    size_t n = (size_t)1 << oc_format_info(in)->bits;
    t = malloc(n * sizeof *t);
    if (t) {
      for (size_t i = 0; i < n; i++)
        t[i] = oc_op_encode(op, out, ovf, oc_decode(in, i), 0);
      atomic_store_explicit(slot, t, memory_order_release);
    }
  }
  pthread_mutex_unlock(&tables_lock);
  return t;
}

/* ------------------------------------------------------------ budgets */

/* A documented bound for one primitive in the compute format: ulps of the
 * result, plus absolute and relative parts (any may be zero). */
struct prim {
  double ulps, abs, rel;
};

static struct prim primitive(enum oc_op op, int dbl, enum oc_math_mode mode, double arg, double y) {
  struct prim p = {0, 0, 0};
  if (dbl) { /* CUDA double: mode-independent */
    switch (op) {
    case OC_OP_RSQRT:
    case OC_OP_EXP:
    case OC_OP_LOG:
    case OC_OP_TANH: p.ulps = 1; break;
    case OC_OP_GELU_ERF:
      p.ulps = 2;
      break; /* stands for erf */
    /* correctly rounded (+ - * / sqrt in double) or not a primitive */
    case OC_OP_ADD:
    case OC_OP_SUB:
    case OC_OP_MUL:
    case OC_OP_DIV:
    case OC_OP_NEG:
    case OC_OP_ABS:
    case OC_OP_RELU:
    case OC_OP_GELU_TANH:
    case OC_OP_SILU:
    case OC_OP_SIGMOID:
    case OC_OP_SQRT:
    case OC_OP_RELU_FMAX:
    case OC_OP_CLAMP:
    case OC_OP_COPY:
    case OC_OP_COUNT: break;
    }
    return p;
  }
  switch (op) {
  case OC_OP_DIV:
    if (mode == OC_MATH_FAST) { /* __fdividef */
      double ay = fabs(y);
      p.ulps = ay >= 0x1p-126 && ay <= 0x1p126 ? 2 : INFINITY;
    } else if (mode == OC_MATH_TRITON) {
      p.ulps = 2; /* div.full.f32 */
    }
    break;
  case OC_OP_SQRT: p.ulps = mode == OC_MATH_PRECISE ? 0 : 1; break; /* sqrt.approx */
  case OC_OP_RSQRT: p.ulps = 2; break;
  case OC_OP_EXP: p.ulps = mode == OC_MATH_PRECISE ? 2 : 2 + floor(fabs(1.173 * arg)); break;
  case OC_OP_LOG:
    if (mode == OC_MATH_PRECISE)
      p.ulps = 1;
    else if (arg >= 0.5 && arg <= 2)
      p.abs = exp2(-21.41); /* __logf, lg2.approx */
    else
      p.ulps = 3;
    break;
  case OC_OP_TANH:
    if (mode == OC_MATH_FAST)
      p.rel = 0x1p-11; /* tanh.approx.f32, cc >= 7.5 */
    else
      p.ulps = 2;
    break;
  case OC_OP_GELU_ERF:
    p.ulps = 2;
    break; /* erff in every mode */
  /* correctly rounded in every mode, or not a primitive */
  case OC_OP_ADD:
  case OC_OP_SUB:
  case OC_OP_MUL:
  case OC_OP_NEG:
  case OC_OP_ABS:
  case OC_OP_RELU:
  case OC_OP_GELU_TANH:
  case OC_OP_SILU:
  case OC_OP_SIGMOID:
  case OC_OP_RELU_FMAX:
  case OC_OP_CLAMP:
  case OC_OP_COPY:
  case OC_OP_COUNT: break;
  }
  return p;
}

struct oc_prim_budget oc_primitive_budget(enum oc_op op, int dbl, enum oc_math_mode mode, double x,
                                          double y) {
  struct prim p = valid_op(op) ? primitive(op, dbl, mode, x, y) : (struct prim){0, 0, 0};
  return (struct oc_prim_budget){p.ulps, p.abs, p.rel};
}

/* Absolute error of a primitive result v under budget p in format c. */
static double prim_abs(struct prim p, enum oc_format c, double v) {
  return p.ulps * oc_format_quantum(c, v) + p.abs + p.rel * fabs(v);
}

/* Smallest spacing of fmt over [|v| - e, |v| + e]; e converted to ulps,
 * plus one for the rounding of the reference itself. */
static double to_ulps(enum oc_format fmt, double v, double e) {
  if (e == 0) return 0;
  if (!(e < INFINITY)) return INFINITY;
  double lo = fabs(v) - e;
  return floor(e / oc_format_quantum(fmt, lo > 0 ? lo : 0)) + 1;
}

static double gelu_tanh_d(double x) {
  double z = sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1 + tanh(z));
}

/* Reference value in double (libm), only to size the budget. */
static double approx(enum oc_op op, double x, double y) {
  switch (op) {
  case OC_OP_ADD: return x + y;
  case OC_OP_SUB: return x - y;
  case OC_OP_MUL: return x * y;
  case OC_OP_DIV: return x / y;
  case OC_OP_NEG: return -x;
  case OC_OP_ABS: return fabs(x);
  case OC_OP_RELU: return x > 0 ? x : 0;
  case OC_OP_RELU_FMAX: return x > 0 ? x : 0;
  case OC_OP_COPY: return x;
  case OC_OP_GELU_ERF: return 0.5 * x * erfc(-x * M_SQRT1_2);
  case OC_OP_GELU_TANH: return gelu_tanh_d(x);
  case OC_OP_SILU: return x / (1 + exp(-x));
  case OC_OP_SIGMOID: return 1 / (1 + exp(-x));
  case OC_OP_TANH: return tanh(x);
  case OC_OP_EXP: return exp(x);
  case OC_OP_LOG: return log(x);
  case OC_OP_SQRT: return sqrt(x);
  case OC_OP_RSQRT: return 1 / sqrt(x);
  case OC_OP_CLAMP: /* bounds from outside the op */
  case OC_OP_COUNT: break;
  }
  return NAN;
}

/* Absolute error bound of op computed in format c (fp32 or fp64) with the
 * mode's primitives, first order; 0 for a single correctly rounded step. */
static double compute_error(enum oc_op op, enum oc_format c, enum oc_math_mode mode, double x,
                            double y, double ref) {
  int dbl = c == OC_FP64;
  double u = oc_unit_roundoff(c);
  switch (op) {
  case OC_OP_ADD:
  case OC_OP_SUB:
  case OC_OP_MUL:
  case OC_OP_NEG:
  case OC_OP_ABS:
  case OC_OP_RELU:
  case OC_OP_RELU_FMAX:
  case OC_OP_COPY: return 0;
  case OC_OP_DIV:
  case OC_OP_SQRT:
  case OC_OP_RSQRT:
  case OC_OP_EXP:
  case OC_OP_LOG:
  case OC_OP_TANH: return prim_abs(primitive(op, dbl, mode, x, y), c, ref);
  case OC_OP_SIGMOID:
  case OC_OP_SILU: {
    double e = exp(-x);
    struct prim pe = primitive(OC_OP_EXP, dbl, mode, -x, 0);
    double rel_e = e > 0 && isfinite(e) ? prim_abs(pe, c, e) / e : 2 * pe.ulps * u;
    /* Below about -87 (fp32) the kernel's e^-x overflows, or under fast
     * math the divisor leaves __fdividef's documented range (beyond 2^126,
     * where the CUDA guide says it returns 0): 1/(1+Inf) = 0, x*0 = -0. The
     * correct result is then a subnormal and 0 is a correct kernel's answer,
     * so the error may be all of |ref|. */
    double top = dbl ? DBL_MAX : mode == OC_MATH_FAST ? 0x1p126 : 0x1.fffffep127;
    int zero_ok = !(1 + e * (1 + rel_e) < top);
    double dv = zero_ok && mode == OC_MATH_FAST ? fmin(1 + e, 0x1p126) : 1 + e;
    struct prim pd = primitive(OC_OP_DIV, dbl, mode, 0, dv);
    double rel = rel_e * (isfinite(e) ? e / (1 + e) : 1) + u + (pd.ulps > 0 ? 2 * pd.ulps * u : u);
    if (op == OC_OP_SILU) rel += u; /* x * sigmoid */
    /* a subnormal quotient is rounded absolutely (half the smallest
     * subnormal of c, eta), then multiplied by x for silu */
    double eta = dbl ? 0x1p-1074 : 0x1p-150;
    double err = rel * fabs(ref) + eta * (op == OC_OP_SILU ? fabs(x) + 2 : 2);
    return zero_ok ? err + fabs(ref) : err;
  }
  case OC_OP_GELU_ERF: {
    double a = x * M_SQRT1_2, er = erf(a);
    double e_arg = M_2_SQRTPI * exp(-a * a) * fabs(a) * 2 * u;
    double e_erf = prim_abs(primitive(OC_OP_GELU_ERF, dbl, mode, a, 0), c, er);
    return 0.5 * fabs(x) * (e_arg + e_erf + u * fabs(1 + er)) + 2 * u * fabs(ref);
  }
  case OC_OP_GELU_TANH: {
    double z = sqrt(2 / M_PI) * (x + 0.044715 * x * x * x), t = tanh(z);
    double e_arg = (1 - t * t) * 7 * u * fabs(z);
    double e_tanh = prim_abs(primitive(OC_OP_TANH, dbl, mode, z, 0), c, t);
    return 0.5 * fabs(x) * (e_arg + e_tanh + u * fabs(1 + t)) + 2 * u * fabs(ref);
  }
  case OC_OP_CLAMP: /* bounds from outside the op: oc_check_clamp */
  case OC_OP_COUNT: break;
  }
  return INFINITY;
}

double oc_ulp_budget(enum oc_op op, enum oc_format fmt, enum oc_math_mode mode, double x,
                     double y) {
  if (!valid_op(op) || !oc_format_info(fmt)) return INFINITY;
  enum oc_format c = fmt == OC_FP64 ? OC_FP64 : OC_FP32;
  double ref = approx(op, x, y);
  if (!isfinite(ref)) return 0; /* special values must match exactly */
  double e = compute_error(op, c, mode, x, y, ref);
  if (fmt == c) {
    /* a primitive's documented ulps are the budget as such */
    switch (op) {
    case OC_OP_DIV:
    case OC_OP_SQRT:
    case OC_OP_RSQRT:
    case OC_OP_EXP:
    case OC_OP_LOG:
    case OC_OP_TANH: {
      struct prim p = primitive(op, c == OC_FP64, mode, x, y);
      if (p.abs == 0 && p.rel == 0) return p.ulps;
      break;
    }
    /* composites and exact ops: from compute_error */
    case OC_OP_ADD:
    case OC_OP_SUB:
    case OC_OP_MUL:
    case OC_OP_NEG:
    case OC_OP_ABS:
    case OC_OP_RELU:
    case OC_OP_GELU_ERF:
    case OC_OP_GELU_TANH:
    case OC_OP_SILU:
    case OC_OP_SIGMOID:
    case OC_OP_RELU_FMAX:
    case OC_OP_CLAMP:
    case OC_OP_COPY:
    case OC_OP_COUNT: break;
    }
  }
  return to_ulps(fmt, ref, e);
}

int oc_op_within_budget(enum oc_op op, enum oc_format fmt, enum oc_math_mode mode, double x,
                        double y, double got) {
  double ref = oc_op_round(op, fmt, OC_OVF_IEEE, x, y);
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
  if (isinf(ref) && isinf(got)) return ref == got;
  uint64_t d = oc_ulp_distance(fmt, got, ref);
  return d != UINT64_MAX && (double)d <= oc_ulp_budget(op, fmt, mode, x, y);
}
