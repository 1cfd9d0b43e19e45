/* oracle/mpfr_util.c — the Ziv loop behind every correctly rounded
 * transcendental of the oracle.
 *
 * Why not mpfr_can_round alone: it answers "can this be rounded to p bits",
 * but a narrow format's subnormals round to fewer bits, e4m3fn overflows at
 * a point that is not a power of two, and the RN idiom (prec+1 with RNDZ)
 * assumes the true value is not a (p+1)-bit number and never succeeds for a
 * value pinned next to a representable number (tanh(1e10) ~ 1). Encoding
 * both ends of the error interval with the format's own correctly rounded
 * encoder decides all of these exactly: the preimage of each code is an
 * interval, so equal codes at both ends mean one code for the whole. */
#include "mpfr_util.h"

#include <stdatomic.h>

#define PREC_START 64
#define PREC_CAP 65536

static atomic_ulong failures;

unsigned long oc_ziv_failures(void) { return atomic_load(&failures); }

int oc_round_settled(enum oc_format f, enum oc_overflow ovf, mpfr_srcptr y, unsigned long k,
                     uint64_t *code) {
  if (k == 0 || !mpfr_regular_p(y)) {
    /* exact, NaN, or MPFR's range exceeded (see mpfr_util.h) */
    *code = oc_encode_mpfr(f, y, ovf);
    return 1;
  }
  mpfr_prec_t w = mpfr_get_prec(y);
  mpfr_t d, lo, hi;
  /* k*ulp(y) is a 64-bit integer times 2^(EXP(y)-w); y -/+ it is a multiple
   * of that quantum below 2^(EXP(y)+65), so w + 66 bits hold it exactly. */
  mpfr_init2(d, 64);
  mpfr_init2(lo, w + 66);
  mpfr_init2(hi, w + 66);
  mpfr_set_ui_2exp(d, k, mpfr_get_exp(y) - w, MPFR_RNDN);
  mpfr_sub(lo, y, d, MPFR_RNDN);
  mpfr_add(hi, y, d, MPFR_RNDN);
  uint64_t a = oc_encode_mpfr(f, lo, ovf), b = oc_encode_mpfr(f, hi, ovf);
  mpfr_clear(d);
  mpfr_clear(lo);
  mpfr_clear(hi);
  if (a != b) return 0;
  *code = a;
  return 1;
}

uint64_t oc_ziv_encode(enum oc_format f, enum oc_overflow ovf, oc_ziv_eval fn, const void *ctx,
                       mpfr_ptr out) {
  mpfr_t y;
  mpfr_prec_t w = PREC_START;
  uint64_t code = 0;
  mpfr_init2(y, w);
  for (;;) {
    long k = fn(y, ctx);
    if (k >= 0 && oc_round_settled(f, ovf, y, (unsigned long)k, &code)) break;
    if (k < 0 || w >= PREC_CAP) {
      atomic_fetch_add(&failures, 1);
      code = oc_encode_mpfr(f, y, ovf);
      break;
    }
    w *= 2;
    mpfr_set_prec(y, w);
  }
  if (out) {
    mpfr_set_prec(out, mpfr_get_prec(y));
    mpfr_set(out, y, MPFR_RNDN);
  }
  mpfr_clear(y);
  return code;
}

struct fn1_ctx {
  oc_mpfr_fn1 fn;
  double x;
};

static long eval_fn1(mpfr_ptr y, const void *ctx) {
  const struct fn1_ctx *c = ctx;
  mpfr_t x;
  mpfr_init2(x, 53);
  mpfr_set_d(x, c->x, MPFR_RNDN);
  int t = c->fn(y, x, MPFR_RNDN);
  mpfr_clear(x);
  return t != 0; /* correctly rounded: within half an ulp, say one */
}

uint64_t oc_mpfr_fn1_encode(enum oc_format f, enum oc_overflow ovf, oc_mpfr_fn1 fn, double x) {
  struct fn1_ctx c = {fn, x};
  return oc_ziv_encode(f, ovf, eval_fn1, &c, NULL);
}
