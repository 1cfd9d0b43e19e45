/* oracle/ew_check.c — oc_check_elementwise: every element of an elementwise
 * op's output against the correctly rounded result (elementwise.h) with the
 * documented ULP budget of the profile's math mode (ORACLE.md §3), judged by
 * the shared verdict engine (special values, evidence, bitwise count). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "elementwise.h"
#include "verdict.h"

/* The value `k` steps of format f away from r (a value of f) toward `toward`,
 * clamped to the largest finite value: steps are taken on the integer order
 * of the encodings, so binade changes and subnormals are exact. */
static double step_toward(enum oc_format f, double r, double toward, double k) {
  if (!(k < INFINITY) || r != r) return INFINITY;
  const struct oc_format_info *fi = oc_format_info(f);
  int bits = (int)oc_format_size(f) * 8;
  uint64_t sign = (uint64_t)1 << (bits - 1);
  /* tf32 lives in an fp32 container whose low 13 bits are ignored */
  int64_t unit = f == OC_TF32 ? (int64_t)1 << 13 : 1;
  uint64_t mx = oc_encode(f, fi->max_finite, OC_OVF_IEEE);
  uint64_t b = oc_encode(f, r, OC_OVF_IEEE);
  int64_t key = (int64_t)(b & ~sign) * ((b & sign) ? -1 : 1);
  int64_t kmax = (int64_t)mx;
  int64_t kk = k > 1e15 ? (int64_t)1e15 : (int64_t)k;
  key += (toward > r ? 1 : -1) * kk * unit;
  if (key > kmax) key = kmax;
  if (key < -kmax) key = -kmax;
  uint64_t nb = key < 0 ? ((uint64_t)(-key) | sign) : (uint64_t)key;
  return oc_decode(f, nb);
}

/* Flush-to-zero of an fp32 arithmetic input or result: a subnormal of the
 * compute format becomes a zero of its sign. */
static double flush(double x, double min_normal) {
  return x != 0 && fabs(x) < min_normal ? copysign(0.0, x) : x;
}

static int same_value(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b && signbit(a) == signbit(b);
}

/* 1 when k is within the budget of op(x, y) in fo (k == the reference, or
 * fewer than kb steps of fo away). */
static int within(enum oc_op op, enum oc_format fo, const struct oc_profile *p, double x, double y,
                  double k, double *ref_out) {
  double ref = oc_op_round(op, fo, p->out_ovf, x, y);
  if (ref_out) *ref_out = ref;
  if (same_value(k, ref)) return 1;
  if (k != k || ref != ref || isinf(k) || isinf(ref)) return 0;
  double kb = oc_ulp_budget(op, fo, p->math, x, y);
  return kb > 0 && fabs(k - ref) <= fabs(step_toward(fo, ref, k, kb) - ref);
}

/* The sign of a zero result is prescribed (IEEE 754 and elementwise.h's
 * table) wherever the op is correctly rounded (budget 0: add, sub, mul,
 * div, sqrt, neg, abs, relu of a nonzero x) or its exact value is a zero
 * (a unary op at x = +-0, 0/y). relu(+-0) may return either zero: fmax and
 * x > 0 ? x : 0 disagree there and both are relu. */
static int zero_sign_fixed(enum oc_op op, double x, double y, double kb, int bin) {
  if ((op == OC_OP_RELU || op == OC_OP_RELU_FMAX) && x == 0) return 0;
  return kb == 0 || (!bin && x == 0) || (op == OC_OP_DIV && x == 0 && y != 0);
}

int oc_check_elementwise(enum oc_op op, const struct oc_tensor *x, const struct oc_tensor *y,
                         const struct oc_tensor *out, const struct oc_profile *p,
                         const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  /* arity queried once: bin implies y != NULL for everything below */
  int arity = oc_op_arity(op), bin = arity == 2;
  if (!x || !out || !p || !v || arity == 0 || (bin && !y) || op == OC_OP_CLAMP) return -1;
  if (x->rank != out->rank || (bin && y->rank != out->rank)) return -1;
  for (int d = 0; d < out->rank; d++) {
    if (x->shape[d] != out->shape[d] && x->shape[d] != 1) return -1;
    if (bin && y->shape[d] != out->shape[d] && y->shape[d] != 1) return -1;
  }
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  enum oc_format fo = out->fmt;
  /* narrower outputs are computed in fp32 and rounded once more */
  int narrow = fo != OC_FP32 && fo != OC_FP64 && fo != OC_TF32;
  /* FTZ acts on fp32 arithmetic (CUDA's -ftz=true has no fp64 effect) */
  int ftz = p->ftz && fo != OC_FP64;
  const double fp32_min_normal = 0x1p-126;
  /* 8/16-bit unary inputs: the whole function is tabulated once */
  const uint64_t *tab =
      !bin && oc_format_size(x->fmt) <= 2 ? oc_op_table(op, x->fmt, fo, p->out_ovf) : NULL;
  struct oc_check c;
  int64_t total = oc_tensor_numel(out);
  char name[24];
  snprintf(name, sizeof name, "%s", oc_op_name(op));
  oc_check_init(&c, name, p, o, v, total, out->rank, NULL, NULL);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t n = 0; n < total; n++) {
    int64_t ox = 0, oy = 0, oo = 0;
    for (int d = 0; d < out->rank; d++) {
      oo += idx[d] * out->stride[d];
      if (x->shape[d] != 1) ox += idx[d] * x->stride[d];
      if (bin && y->shape[d] != 1) oy += idx[d] * y->stride[d];
    }
    double xv = oc_tensor_at(x, ox), yv = bin ? oc_tensor_at(y, oy) : 0;
    double ref =
        tab ? oc_decode(fo, tab[oc_tensor_bits(x, ox)]) : oc_op_round(op, fo, p->out_ovf, xv, yv);
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    e.k = oc_tensor_at(out, oo);
    e.lo = e.hi = ref; /* the correctly rounded result: CUDA's budgets are ulps from it */
    e.prob = INFINITY;
    e.exact_only = 1; /* no accumulation ladder for a single evaluation */
    double kb = oc_ulp_budget(op, fo, p->math, xv, yv);
    e.bound = e.k == ref || kb == 0 ? 0 : fabs(step_toward(fo, ref, e.k, kb) - ref);
    if (e.bound != e.bound) e.bound = INFINITY;
    e.zero_sign = ref == 0 && zero_sign_fixed(op, xv, yv, kb, bin);
    if (!same_value(e.k, ref)) {
      /* Other results a correct kernel of this profile returns: */
      double k = e.k;
      /* the usual formulas at -Inf (x * 0.5 * (1 + erf(..)), x * sigmoid(x),
       * x / (1 + exp(-x))) give -Inf * 0 = NaN where the limit is -0 */
      if (k != k && xv == -INFINITY &&
          (op == OC_OP_SILU || op == OC_OP_GELU_ERF || op == OC_OP_GELU_TANH))
        e.alt_ok = 1;
      /* fp32 arithmetic, then the narrow output: for fp32 (not narrow)
       * inputs the double rounding can land on the other neighbour; the
       * budgets above already carry the extra ulp except where they are 0 */
      if (narrow && kb == 0 && !tab &&
          same_value(k, oc_round(fo, oc_op_round(op, OC_FP32, OC_OVF_IEEE, xv, yv), p->out_ovf)))
        e.alt_ok = 1;
      if (ftz && !e.alt_ok) {
        /* inputs flushed to zero, results flushed to zero: every
         * combination a -ftz=true kernel may produce */
        double xf = flush(xv, fp32_min_normal), yf = bin ? flush(yv, fp32_min_normal) : 0;
        if ((xf != xv || (bin && yf != yv)) && within(op, fo, p, xf, yf, k, NULL)) e.alt_ok = 1;
        if (!e.alt_ok && (xf != xv || (bin && yf != yv)) && narrow && tab == NULL &&
            same_value(k, oc_round(fo, oc_op_round(op, OC_FP32, OC_OVF_IEEE, xf, yf), p->out_ovf)))
          e.alt_ok = 1;
        if (!e.alt_ok && k == 0) {
          /* a flushed result: the unflushed one (the correct value or one
           * within its budget toward zero) is an fp32 subnormal of k's sign */
          for (int f = 0; f < 2 && !e.alt_ok; f++) {
            double xa = f ? xf : xv, ya = f ? yf : yv;
            double r2 = oc_op_round(op, fo, p->out_ovf, xa, ya);
            if (r2 != r2 || isinf(r2)) continue;
            double kb2 = oc_ulp_budget(op, fo, p->math, xa, ya);
            if (r2 == 0) { /* a zero result: its sign rule as above */
              if (signbit(k) == signbit(r2) || !zero_sign_fixed(op, xa, ya, kb2, bin)) e.alt_ok = 1;
              continue;
            }
            double near = kb2 > 0 ? step_toward(fo, r2, 0, kb2) : r2;
            int crosses = kb2 > 0 && (near == 0 || signbit(near) != signbit(r2));
            if (fabs(crosses ? 0 : near) < fp32_min_normal &&
                (crosses || signbit(k) == signbit(r2)))
              e.alt_ok = 1;
          }
        }
      }
    }
    oc_check_elem(&c, &e, idx);
    for (int d = out->rank - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  oc_check_finish(&c, 0);
  return 0;
}

int oc_check_clamp(const struct oc_tensor *x, double lo, double hi, const struct oc_tensor *out,
                   const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  if (!x || !out || !p || !v || x->rank != out->rank) return -1;
  for (int d = 0; d < out->rank; d++)
    if (x->shape[d] != out->shape[d] && x->shape[d] != 1) return -1;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  struct oc_check c;
  int64_t total = oc_tensor_numel(out);
  oc_check_init(&c, "clamp", p, o, v, total, out->rank, NULL, NULL);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t n = 0; n < total; n++) {
    int64_t ox = 0, oo = 0;
    for (int d = 0; d < out->rank; d++) {
      oo += idx[d] * out->stride[d];
      if (x->shape[d] != 1) ox += idx[d] * x->stride[d];
    }
    double xv = oc_tensor_at(x, ox);
    /* exact: a bound or x itself; NaN anywhere propagates */
    double r = xv != xv || lo != lo || hi != hi ? NAN : xv < lo ? lo : xv > hi ? hi : xv;
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    e.k = oc_tensor_at(out, oo);
    e.lo = e.hi = oc_round(out->fmt, r, p->out_ovf);
    e.prob = INFINITY;
    e.exact_only = 1;
    e.zero_sign = e.lo == 0 && xv != 0; /* a zero from a bound: the bound's sign */
    oc_check_elem(&c, &e, idx);
    for (int d = out->rank - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  oc_check_finish(&c, 0);
  return 0;
}
