/* oracle/pointwise.c — oc_check_pointwise: the elementwise ops of three
 * operand tensors (ops.def class POINTWISE), every output element against
 * its exact value.
 *
 *  where    c ? a : b (torch.where, masked_fill as where(mask, value, x)):
 *           a selection, exact: the selected value rounded once to the
 *           output's format (bitwise; -0 kept). A wider value rounded to a
 *           16- or 8-bit output through fp32, as c10's conversions from
 *           double do, is accepted too (the double rounding of `copy`).
 *  addcmul  x + value t1 t2, addcdiv x + value t1 / t2 (ATen's
 *           PointwiseOpsKernel.cu: a + alpha * (b * c) and a + alpha *
 *           (b / c) in acc_type, alpha = value.to<acc_type>; its CPU
 *           kernel takes (value * b) * c and (value * b) / c): the product
 *           or quotient of three in any order rounds twice, so it is
 *           within gamma_2 |value t1 t2| (|value t1 / t2|) of its exact
 *           value, and the addition is the output's rounding (or, for a
 *           narrower output, one more rounding u (|v| + B) in acc_type
 *           before it). A fused multiply-add rounds less and is inside.
 *  lerp     x + w (e - x) (ATen's Lerp.h, CPU and CUDA alike: for |w| <
 *           0.5 x + w * (e - x), rounding e - x and the product: gamma_2
 *           |w (e - x)|; else e - (e - x) * (1 - w), rounding 1 - w, e - x
 *           and the product: gamma_3 |(1 - w) (e - x)|; the last step as
 *           above). Contracted forms (fma) round less.
 * u is the compute unit (the profile's accumulator: fp32 for fp16, bf16
 * and fp32 tensors, fp64 for fp64); every rounding may also underflow:
 * at most a subnormal eta each (half of one, kept whole so that fp64's is
 * not 0 in double), four of them, and an underflowed factor of
 * the product or quotient carries its eta times the other operands
 * (eta (|value| + |t1| + |t2|) for addcmul, eta (|value| + 1 / |t2|) for
 * addcdiv's (value t1) / t2 and value (t1 / t2)). The exact values are enclosed
 * by MPFR with directed roundings (no rounding error left to bound).
 * Non-finite inputs, and addcdiv's division by zero: the value is ATen's
 * formula in IEEE arithmetic; each of the evaluation orders above, in the
 * compute format, is accepted. Finite inputs whose intermediate products
 * may overflow the compute format leave a kernel Inf or NaN
 * inconclusive (ovf_ok). */
#include <math.h>
#include <mpfr.h>
#include <string.h>

#include "bounds.h"
#include "ops.h"
#include "oracle.h"
#include "verdict.h"

#define WPREC 256

static int same_value(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b && signbit(a) == signbit(b);
}

/* ATen's formula for (x, y, z) in IEEE arithmetic: double (fl 0) or
 * float (fl 1), in evaluation order `form` (n_forms of them). */
static double ieee_form(enum oc_pw_op op, double x, double y, double z, double al, int fl,
                        int form) {
#define F(v) (fl ? (double)(float)(v) : (v))
  switch (op) {
  case OC_PW_ADDCMUL:
    switch (form) {
    case 0: return F(x + F(al * F(y * z)));
    case 1: return F(x + F(F(al * y) * z));
    case 2: return F(x + F(al * y) * z); /* fma */
    case 3: return F(x + al * F(y * z)); /* fma */
    default: return NAN;
    }
  case OC_PW_ADDCDIV:
    switch (form) {
    case 0: return F(x + F(al * F(y / z)));
    case 1: return F(x + F(F(al * y) / z));
    case 2: return F(x + al * F(y / z)); /* fma */
    default: return NAN;
    }
  case OC_PW_LERP:
    switch (form) {
    case 0: return F(x + F(z * F(y - x)));
    case 1: return F(y - F(F(y - x) * F(1 - z)));
    case 2: return F(x + z * F(y - x));        /* fma */
    case 3: return F(y - F(y - x) * F(1 - z)); /* fma */
    default: return NAN;
    }
  case OC_PW_WHERE:
  case OC_PW_COUNT: break;
  }
  return NAN;
#undef F
}

static int n_forms(enum oc_pw_op op) { return op == OC_PW_ADDCDIV ? 3 : op == OC_PW_WHERE ? 0 : 4; }

/* [lo, hi] enclosing the exact value of op at finite (x, y, z) (addcdiv:
 * z != 0), and B, the kernel's error before its last rounding. */
static void exact_pw(enum oc_pw_op op, double x, double y, double z, double al, double u, mpfr_t a,
                     mpfr_t b, struct oc_elem *e, double *pre) {
  mpfr_rnd_t dir[2] = {MPFR_RNDD, MPFR_RNDU};
  double out[2];
  for (int k = 0; k < 2; k++) {
    mpfr_rnd_t r = dir[k];
    switch (op) {
    case OC_PW_ADDCMUL: /* y z al: exact in WPREC bits (3 x 53) */
      mpfr_set_d(a, y, r);
      mpfr_mul_d(a, a, z, r);
      mpfr_mul_d(a, a, al, r);
      break;
    case OC_PW_ADDCDIV: /* al y / z: monotone in the quotient's rounding */
      mpfr_set_d(a, y, r);
      mpfr_mul_d(a, a, al, r);
      mpfr_div_d(a, a, z, r);
      break;
    case OC_PW_LERP: { /* z (y - x): the difference rounded to match z's sign */
      mpfr_rnd_t rd = z >= 0 ? r : dir[1 - k];
      mpfr_set_d(a, y, rd);
      mpfr_sub_d(a, a, x, rd);
      mpfr_mul_d(a, a, z, r);
      break;
    }
    case OC_PW_WHERE:
    case OC_PW_COUNT: mpfr_set_ui(a, 0, r); break;
    }
    mpfr_add_d(b, a, x, r);
    out[k] = mpfr_get_d(b, r);
  }
  e->lo = out[0], e->hi = out[1];
  double d = y - x;
  switch (op) {
  case OC_PW_ADDCMUL: *pre = oc_mul_up(oc_gamma(2, u), fabs(al * y * z)); break;
  case OC_PW_ADDCDIV: *pre = oc_mul_up(oc_gamma(2, u), fabs(al * y / z)); break;
  case OC_PW_LERP:
    *pre = fabs(z) < 0.5 ? oc_mul_up(oc_gamma(2, u), fabs(z * d))
                         : oc_mul_up(oc_gamma(3, u), fabs((1 - z) * d));
    break;
  case OC_PW_WHERE:
  case OC_PW_COUNT: *pre = 0; break;
  }
  *pre = oc_mul_up(*pre, 1 + 0x1p-40); /* the double products above */
}

/* 1 when an intermediate of the finite inputs may overflow the compute
 * format (top: its overflow threshold). */
static int may_overflow(enum oc_pw_op op, double x, double y, double z, double al, double top) {
  double m = fabs(x);
  switch (op) {
  case OC_PW_ADDCMUL:
    m = fmax(m, fmax(fabs(y * z), fmax(fabs(al * y), fabs(al * y * z) + fabs(x))));
    break;
  case OC_PW_ADDCDIV:
    m = fmax(m, fmax(fabs(y / z), fmax(fabs(al * y), fabs(al * y / z) + fabs(x))));
    break;
  case OC_PW_LERP: m = fmax(m, fabs(y - x) * (1 + fabs(z)) + fabs(x) + fabs(y)); break;
  case OC_PW_WHERE:
  case OC_PW_COUNT: break;
  }
  return !(m * 1.01 < top);
}

static int shapes_ok(const struct oc_tensor *t, const struct oc_tensor *out) {
  if (!t || t->rank != out->rank) return 0;
  for (int d = 0; d < out->rank; d++)
    if (t->shape[d] != out->shape[d] && t->shape[d] != 1) return 0;
  return 1;
}

static int64_t offset(const struct oc_tensor *t, const int64_t *idx) {
  int64_t o = 0;
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] != 1) o += idx[d] * t->stride[d];
  return o;
}

int oc_check_pointwise(enum oc_pw_op op, const struct oc_pointwise_args *a,
                       const struct oc_tensor *out, const struct oc_profile *p,
                       const struct oc_options *o, struct oc_verdict *v) {
  const struct oc_op_info *info = NULL;
  for (int i = 0; i < OC_ID_COUNT && !info; i++) {
    const struct oc_op_info *r = oc_op_by_id((enum oc_opid)i);
    if (r->cls == OC_CLASS_POINTWISE && r->kind == (int)op) info = r;
  }
  if (!info || !a || !out || !p || !v || !shapes_ok(a->x, out) || !shapes_ok(a->y, out) ||
      !shapes_ok(a->z, out))
    return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  int dbl = p->acc == OC_FP64;
  enum oc_format cf = dbl ? OC_FP64 : OC_FP32;
  /* eta: the smallest subnormal (half of it is 0 in double for fp64) */
  double u = oc_unit_roundoff(cf), eta = oc_format_info(cf)->min_subnormal;
  double top = oc_overflow_threshold(cf);
  /* the scalar as the kernel holds it (value.to<acc_type>) */
  double al = dbl ? a->value : oc_round(OC_FP32, a->value, OC_OVF_IEEE);
  int narrow = out->fmt != cf; /* one more rounding in acc_type before the output's */
  int narrow_sel = oc_format_size(out->fmt) < 4;
  struct oc_check c;
  int64_t total = oc_tensor_numel(out);
  oc_check_init(&c, info->name, p, o, v, total, out->rank, NULL, NULL);
  mpfr_t ma, mb;
  mpfr_inits2(WPREC, ma, mb, (mpfr_ptr)0);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t n = 0; n < total; n++) {
    double x = oc_tensor_at(a->x, offset(a->x, idx)), y = oc_tensor_at(a->y, offset(a->y, idx)),
           z = oc_tensor_at(a->z, offset(a->z, idx));
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    int64_t oo = 0;
    for (int d = 0; d < out->rank; d++)
      oo += idx[d] * out->stride[d];
    e.k = oc_tensor_at(out, oo);
    e.prob = INFINITY;
    if (op == OC_PW_WHERE) {
      double s = x != 0 ? y : z;
      e.lo = e.hi = oc_round(out->fmt, s, p->out_ovf);
      e.exact_only = 1;
      e.zero_sign = 1; /* a selection keeps -0 */
      if (narrow_sel && !same_value(e.k, e.lo) &&
          same_value(e.k, oc_round(out->fmt, oc_round(OC_FP32, s, OC_OVF_IEEE), p->out_ovf)))
        e.alt_ok = 1;
    } else if (!isfinite(x) || !isfinite(y) || !isfinite(z) ||
               (op == OC_PW_ADDCDIV && (z == 0 || !isfinite(al))) || !isfinite(al)) {
      double r = oc_round(out->fmt, ieee_form(op, x, y, z, al, !dbl, 0), p->out_ovf);
      e.lo = e.hi = r;
      e.exact_only = 1;
      for (int fl = 0; fl < 2 && !e.alt_ok && !same_value(e.k, r); fl++)
        for (int f = 0; f < n_forms(op); f++)
          if (same_value(e.k, oc_round(out->fmt, ieee_form(op, x, y, z, al, fl, f), p->out_ovf)))
            e.alt_ok = 1;
      /* a finite value from non-finite inputs: no bound derived here */
      if (isfinite(r) && !(isfinite(x) && isfinite(y) && isfinite(z))) e.bound = INFINITY;
    } else {
      double pre = 0;
      exact_pw(op, x, y, z, al, u, ma, mb, &e, &pre);
      double y0 = fmax(fabs(e.lo), fabs(e.hi));
      if (narrow) pre = oc_add_up(pre, oc_mul_up(u, oc_add_up(y0, pre)));
      /* underflow: half a subnormal per rounding, carried through the
       * next operand of the product or quotient (a subnormal al t1 over
       * a tiny t2) */
      double carry = op == OC_PW_ADDCMUL   ? fabs(al) + fabs(y) + fabs(z)
                     : op == OC_PW_ADDCDIV ? fabs(al) + 1 / fabs(z)
                                           : 0;
      pre = oc_add_up(pre, oc_mul_up(eta, oc_add_up(4, oc_mul_up(carry, 1 + 4 * u))));
      e.pre = pre;
      e.pre_set = 1;
      e.bound = oc_out_bound(p, y0, pre);
      if (e.bound != e.bound) e.bound = INFINITY;
      e.ovf_ok = may_overflow(op, x, y, z, al, top);
      /* a zero result's sign is left open: it depends on the order */
    }
    oc_check_elem(&c, &e, idx);
    for (int d = out->rank - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  mpfr_clears(ma, mb, (mpfr_ptr)0);
  oc_check_finish(&c, 0);
  return 0;
}
