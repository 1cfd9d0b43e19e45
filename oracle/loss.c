/* oracle/loss.c — oc_check_nll_loss: the negative log-likelihood loss
 * over log-probabilities x [N, C] (or [C]) and class indices t (ATen's
 * nll_loss_forward and nll_loss_backward; cross_entropy is _log_softmax
 * then these), every output element against its exact value.
 *
 * Forward, l_i = -w_{t_i} x[i, t_i] (w = 1 without a weight; 0 where t_i
 * is ignore_index):
 *  none  l_i: one product rounded in the output's type (exact without a
 *        weight: a negation), so bitwise.
 *  sum   -S, S = sum_i w_{t_i} x[i, t_i] accumulated in acc_type in any
 *        order (CUDA: per-thread sums, then a block reduction; CPU: a
 *        cascade of partial sums): |S~ - S| <= gamma_n' sum |w x| + n' eta
 *        (n' the rows not ignored), and with a weight u_in sum |w x| more:
 *        CUDA's kernel rounds each product to the input's type
 *        (input * cur_weight in scalar_t) before adding it.
 *  mean  -S / W, W = sum of the weights (the count without a weight,
 *        exact in fp32 below 2^24): W~ within gamma_(n'-1) sum |w|, so
 *        |S~/W~ - S/W| <= (E_S + |S/W| E_W) / (W - E_W), then the division's
 *        rounding u and the output's. W = 0 (every row ignored) is 0/0:
 *        NaN; for one row x [C] ATen's CUDA kernel returns 0 there, also
 *        accepted.
 * Backward, grad_input [N, C]: zero except at (i, t_i), not ignored,
 *  where it is -(g / W) w_{t_i} (mean; sum and none: -g w, g the
 *  incoming gradient, g_i for none) in the output's type, step by step
 *  (ATen: grad = -(g / total_weight), then weight * grad): without a
 *  weight one division, correctly rounded (through fp32 for 16-bit
 *  types: that double rounding is accepted too); with one, the quotient's
 *  rounding times |w| on top.
 * A class index outside [0, C) that is not ignore_index is an error in
 * ATen (no result): inconclusive. Non-finite selected values follow IEEE
 * (an Inf selected gives Inf, Inf - Inf or a NaN gives NaN); where the
 * sum of |w x| may overflow the accumulator a kernel Inf or NaN is
 * inconclusive. The exact sums come from the Kulisch accumulator (weighted
 * fp64 terms rounded to double first, that rounding added to the
 * enclosure). */
#include <math.h>
#include <mpfr.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"
#include "ops.h"
#include "oracle.h"
#include "verdict.h"

static int same_value(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b && signbit(a) == signbit(b);
}

/* The class index of row i, or -1 when ignored, -2 when out of range. */
static int64_t class_of(const struct oc_nll_args *a, int64_t i, int64_t c) {
  double t = oc_tensor_at(a->target, a->target->rank ? i * a->target->stride[0] : 0);
  if (t == (double)a->ignore_index) return -1;
  if (!(t == floor(t) && t >= 0 && t < (double)c)) return -2;
  return (int64_t)t;
}

static double weight_of(const struct oc_nll_args *a, int64_t k) {
  return a->weight ? oc_tensor_at(a->weight, k * a->weight->stride[0]) : 1.0;
}

/* x[i, k] (x 1-D: one row) */
static double x_at(const struct oc_tensor *x, int64_t i, int64_t k) {
  return x->rank == 2 ? oc_tensor_at(x, i * x->stride[0] + k * x->stride[1])
                      : oc_tensor_at(x, k * x->stride[0]);
}

/* N and C from x (forward) or the output (backward: x's shape; x itself
 * is not read) */
static int shapes(const struct oc_nll_args *a, const struct oc_tensor *x, int64_t *n, int64_t *c) {
  if (!x || !a->target || (x->rank != 1 && x->rank != 2)) return -1;
  *n = x->rank == 2 ? x->shape[0] : 1;
  *c = x->shape[x->rank - 1];
  if (x->rank == 2 ? (a->target->rank != 1 || a->target->shape[0] != *n)
                   : oc_tensor_numel(a->target) != 1)
    return -1;
  if (a->weight && (a->weight->rank != 1 || a->weight->shape[0] != *c)) return -1;
  if ((unsigned)a->reduction > OC_NLL_SUM) return -1;
  return 0;
}

static int forward(const struct oc_nll_args *a, int64_t n, int64_t c, const struct oc_tensor *out,
                   const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  struct oc_check chk;
  int none = a->reduction == OC_NLL_NONE;
  if (none ? oc_tensor_numel(out) != n : oc_tensor_numel(out) != 1) return -1;
  int64_t idx[OC_MAX_RANK] = {0};
  oc_check_init(&chk, "nll_loss", p, o, v, none ? n : 1, out->rank, NULL, NULL);
  if (none) {
    for (int64_t i = 0; i < n; i++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      idx[0] = i;
      e.k = oc_tensor_at(out, out->rank ? i * out->stride[0] : 0);
      e.prob = INFINITY;
      e.exact_only = 1;
      int64_t k = class_of(a, i, c);
      if (k == -2) {
        v->checked++;
        oc_check_inconclusive(&chk, "a class index outside [0, C) (ATen raises an error)");
        continue;
      }
      /* -w x rounded once to the output (0 for an ignored row) */
      double r = k < 0 ? 0 : -(weight_of(a, k) * x_at(a->x, i, k));
      if (k >= 0 && a->weight && p->out == OC_FP64 && isfinite(r)) {
        /* an fp64 product: its correct rounding from MPFR */
        mpfr_t m;
        mpfr_init2(m, 128);
        mpfr_set_d(m, weight_of(a, k), MPFR_RNDN);
        mpfr_mul_d(m, m, -x_at(a->x, i, k), MPFR_RNDN);
        r = mpfr_get_d(m, MPFR_RNDN);
        mpfr_clear(m);
      }
      e.lo = e.hi = oc_round(out->fmt, r, p->out_ovf);
      oc_check_elem(&chk, &e, idx);
    }
    oc_check_finish(&chk, 0);
    return 0;
  }
  /* sum or mean: one element */
  struct oc_acc *s = oc_acc_new(), *w = oc_acc_new();
  if (!s || !w) {
    oc_acc_free(s);
    oc_acc_free(w);
    return -1;
  }
  double sabs = 0, wabs = 0, sd = 0, perr = 0;
  int64_t used = 0, bad = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = class_of(a, i, c);
    if (k == -2) bad = 1;
    if (k < 0) continue;
    double wk = weight_of(a, k), xk = x_at(a->x, i, k), t = wk * xk;
    used++;
    sd += t;
    if (a->weight && a->x->fmt == OC_FP64 && isfinite(t)) /* t rounded: its error */
      perr = oc_add_up(perr, oc_add_up(oc_mul_up(0x1p-53, fabs(t)), 0x1p-1074));
    oc_acc_add(s, t);
    oc_acc_add(w, wk);
    sabs = oc_add_up(sabs, fabs(t));
    wabs = oc_add_up(wabs, fabs(wk));
  }
  struct oc_elem e;
  memset(&e, 0, sizeof e);
  e.k = oc_tensor_at(out, 0);
  e.prob = INFINITY;
  int mean = a->reduction == OC_NLL_MEAN;
  double wsum = oc_acc_round(w, MPFR_RNDN);
  if (bad) {
    v->checked++;
    oc_check_inconclusive(&chk, "a class index outside [0, C) (ATen raises an error)");
  } else if (!isfinite(sd) || (mean && wsum == 0) || oc_acc_is_nan(s)) {
    /* IEEE: Inf or NaN (0/0 when every row is ignored) */
    double r = mean ? -sd / wsum : -sd;
    e.lo = e.hi = oc_round(out->fmt, r, p->out_ovf);
    e.exact_only = 1;
    /* one row of [C] whose target is ignored: ATen's CUDA kernel returns
     * 0 there (pytorch/pytorch#64572), its 2-D kernels 0/0 */
    if (mean && used == 0 && a->x->rank == 1 && e.k == 0) e.alt_ok = 1;
    e.ovf_ok = isfinite(sabs) && !(oc_mul_up(sabs, 1.01) < oc_overflow_threshold(p->acc));
    oc_check_elem(&chk, &e, idx);
  } else {
    double u = oc_profile_u_acc(p),
           eta = fmax(oc_acc_eta(p), oc_format_info(p->acc)->min_subnormal);
    double es = oc_add_up(oc_mul_up(oc_gamma((double)used, u), sabs), oc_mul_up(eta, (double)used));
    if (a->weight) { /* CUDA rounds each product w x to the input's type first */
      enum oc_format fi = a->x->fmt;
      es = oc_add_up(es, oc_add_up(oc_mul_up(oc_unit_roundoff(fi) * (1 + 4 * u), sabs),
                                   oc_mul_up(oc_format_info(fi)->min_subnormal, (double)used)));
    }
    double lo = oc_down(oc_acc_round(s, MPFR_RNDD) - perr),
           hi = oc_up(oc_acc_round(s, MPFR_RNDU) + perr);
    double pre = es;
    if (mean) {
      double ew = a->weight ? oc_mul_up(oc_gamma((double)(used > 1 ? used - 1 : 0), u), wabs) : 0;
      /* the count without a weight is exact below 2^24 in fp32 */
      if (!a->weight && p->acc != OC_FP64 && used >= (1 << 24)) ew = oc_mul_up(u, wabs);
      double wlo = oc_acc_round(w, MPFR_RNDD), whi = oc_acc_round(w, MPFR_RNDU);
      double wmin = fmin(fabs(wlo), fabs(whi)), den = oc_down(wmin - ew);
      /* S / W enclosed: divide the enclosure by W's (one sign) */
      double q[4] = {lo / wlo, lo / whi, hi / wlo, hi / whi};
      lo = hi = q[0];
      for (int j = 1; j < 4; j++)
        lo = fmin(lo, q[j]), hi = fmax(hi, q[j]);
      lo = oc_down(oc_down(lo) * (1 + 0x1p-52)), hi = oc_up(oc_up(hi) * (1 + 0x1p-52));
      if (lo > hi) {
        double t = lo;
        lo = hi, hi = t;
      }
      double vabs = fmax(fabs(lo), fabs(hi));
      pre = den > 0 ? oc_div_up(oc_add_up(es, oc_mul_up(vabs, ew)), den) : INFINITY;
      pre = oc_add_up(pre, oc_mul_up(u, oc_add_up(vabs, pre))); /* the division */
    }
    e.lo = -hi, e.hi = -lo;
    e.pre = pre;
    e.pre_set = 1;
    e.bound = oc_out_bound(p, fmax(fabs(e.lo), fabs(e.hi)), pre);
    if (e.bound != e.bound) e.bound = INFINITY;
    e.ovf_ok = !(oc_mul_up(sabs, 1.01) < oc_overflow_threshold(p->acc));
    oc_check_elem(&chk, &e, idx);
  }
  oc_acc_free(s);
  oc_acc_free(w);
  oc_check_finish(&chk, 0);
  return 0;
}

static int backward(const struct oc_nll_args *a, int64_t n, int64_t c, const struct oc_tensor *out,
                    const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  const struct oc_tensor *g = a->g;
  int none = a->reduction == OC_NLL_NONE, mean = a->reduction == OC_NLL_MEAN;
  if (!g || oc_tensor_numel(out) != n * c) return -1;
  if (none ? oc_tensor_numel(g) != n : oc_tensor_numel(g) != 1) return -1;
  if (mean && (!a->total_weight || oc_tensor_numel(a->total_weight) != 1)) return -1;
  double tw = mean ? oc_tensor_at(a->total_weight, 0) : 1;
  enum oc_format f = out->fmt;
  double uo = oc_unit_roundoff(f), etao = oc_format_info(f)->min_subnormal;
  struct oc_check chk;
  oc_check_init(&chk, "nll_loss_backward", p, o, v, n * c, out->rank, NULL, NULL);
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t i = 0; i < n; i++) {
    int64_t t = class_of(a, i, c);
    double gi = oc_tensor_at(g, none && g->rank ? i * g->stride[0] : 0);
    for (int64_t k = 0; k < c; k++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      int64_t off = out->rank == 2 ? i * out->stride[0] + k * out->stride[1] : k * out->stride[0];
      if (out->rank == 2)
        idx[0] = i, idx[1] = k;
      else
        idx[0] = k;
      e.k = oc_tensor_at(out, off);
      e.prob = INFINITY;
      e.exact_only = 1;
      if (t == -2) {
        v->checked++;
        oc_check_inconclusive(&chk, "a class index outside [0, C) (ATen raises an error)");
        continue;
      }
      if (k != t) { /* not the target (or an ignored row): zero */
        e.lo = e.hi = 0;
        oc_check_elem(&chk, &e, idx);
        continue;
      }
      /* -(g / W) in the output's type, then times w */
      double q = mean ? gi / tw : gi;
      if (!a->weight) { /* the quotient's correct rounding to f, from MPFR */
        mpfr_t m;
        mpfr_init2(m, 128);
        mpfr_set_d(m, -gi, MPFR_RNDN);
        if (mean) mpfr_div_d(m, m, tw, MPFR_RNDN);
        double qe = mpfr_get_d(m, MPFR_RNDN);
        mpfr_clear(m);
        e.lo = e.hi = oc_round(f, qe, p->out_ovf);
        if (!same_value(e.k, e.lo) && oc_format_size(f) < 4 &&
            same_value(e.k, oc_round(f, oc_round(OC_FP32, qe, OC_OVF_IEEE), p->out_ovf)))
          e.alt_ok = 1;
      } else {
        double w = weight_of(a, t), ex = -q * w;
        if (!isfinite(ex) || !isfinite(q)) { /* IEEE, step by step */
          double qr = oc_round(f, -q, p->out_ovf);
          double q32 = oc_round(f, oc_round(OC_FP32, -q, OC_OVF_IEEE), p->out_ovf);
          e.lo = e.hi = oc_round(f, qr * w, p->out_ovf);
          if (!same_value(e.k, e.lo) && same_value(e.k, oc_round(f, q32 * w, p->out_ovf)))
            e.alt_ok = 1;
        } else {
          e.exact_only = 0;
          e.lo = e.hi = ex;
          /* the quotient's rounding (to f, possibly through fp32) times |w| */
          double pre = oc_mul_up(fabs(w), oc_add_up(oc_mul_up(uo + 0x1p-24, fabs(q)), etao));
          pre = oc_add_up(pre, oc_mul_up(0x1p-52, fabs(ex))); /* ex in double */
          e.pre = pre;
          e.pre_set = 1;
          e.bound = oc_out_bound(p, fabs(ex), pre);
        }
      }
      oc_check_elem(&chk, &e, idx);
    }
  }
  oc_check_finish(&chk, 0);
  return 0;
}

int oc_check_nll_loss(enum oc_loss_op op, const struct oc_nll_args *a, const struct oc_tensor *out,
                      const struct oc_profile *p, const struct oc_options *o,
                      struct oc_verdict *v) {
  int64_t n, c;
  if (!a || !out || !p || !v || shapes(a, op == OC_LOSS_NLL_LOSS_BACKWARD ? out : a->x, &n, &c))
    return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (op == OC_LOSS_NLL_LOSS) return forward(a, n, c, out, p, o, v);
  if (op == OC_LOSS_NLL_LOSS_BACKWARD) return backward(a, n, c, out, p, o, v);
  return -1;
}
