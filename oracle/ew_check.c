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

int oc_check_elementwise(enum oc_op op, const struct oc_tensor *x, const struct oc_tensor *y,
                         const struct oc_tensor *out, const struct oc_profile *p,
                         const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  /* arity queried once: bin implies y != NULL for everything below */
  int arity = oc_op_arity(op), bin = arity == 2;
  if (!x || !out || !p || !v || arity == 0 || (bin && !y)) return -1;
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
    oc_check_elem(&c, &e, idx);
    for (int d = out->rank - 1; d >= 0; d--) {
      if (++idx[d] < out->shape[d]) break;
      idx[d] = 0;
    }
  }
  oc_check_finish(&c, 0);
  return 0;
}
