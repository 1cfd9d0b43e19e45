/* oracle/loss.c — oc_check_nll_loss: the negative log-likelihood loss
 * over log-probabilities x [N, C] (or [C], or [N, C, S]) and class indices
 * t (ATen's nll_loss_forward and nll_loss_backward, nll_loss2d_forward and
 * nll_loss2d_backward; cross_entropy is _log_softmax then these), every
 * output element against its exact value.
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
 * nll_loss2d: x [N, C, S] (the [N, C, H, W] input with H W flattened,
 * strided) and target [N, S]; rows r = n S + s. none: out [N, S], bitwise
 * as above (ATen computes -x * w in scalar_t: one rounding). sum and mean:
 * both of ATen's kernels keep the partial sums in the input's type T
 * (u_T; a 16-bit T's + and / go through fp32: u2 = u_T (1 + 2^-24) +
 * 2^-24 per operation, u2 = u_T for fp32 and fp64), and the oracle takes
 * the larger of their bounds:
 *  CUDA (NLLLoss2d.cu, nll_loss2d_forward_kernel): 1024 threads a block,
 *    bps = max(1, floor(ceil(S / 1024) / 128)) blocks a sample, B = N bps
 *    blocks; a thread sums its ceil(S / (1024 bps)) terms in acc_type
 *    (fp32; fp64 for fp64: u_a), BlockReduceSum adds two warp-shuffle
 *    trees (5 levels each), then each block's partial is rounded to T and
 *    atomically added into the T output in any order:
 *    theta_cuda = (1 + gamma_(ceil(S / (1024 bps)) + 10)(u_a))
 *                 (1 + gamma_(B+1)(u2)) - 1;
 *    the weights alike into total_weight (T), whatever their values (an
 *    fp16 count beyond 2048 is inexact: covered by the same gamma).
 *  CPU (LossNLL2d.cpp): an 8-level cascade in T, 2^max(4, ceil(log2(N S))
 *    / 8) terms a level, then std::accumulate of the 8 partials; a row
 *    ignored skips its flush, so the oracle replays the cascade over the
 *    targets for d, the most roundings on a term's path: theta_cpu =
 *    gamma_d(u2); the count without a weight is int64 rounded to T
 *    (u2), with one the weights share the cascade (theta_cpu).
 *  |S~ - S| <= max(theta_cpu, theta_cuda) sum|w x|' + floor, sum|w x|'
 *  with (1 + u_T) for the products w x rounded to T, floor = (CPU
 *  additions) T's smallest subnormal + 2 B its smallest normal (fp32's
 *  atomic add flushes a subnormal); the products' own u_T sum|w x| on
 *  top. W the same with theta_w. mean as above with the division in fp32
 *  (16-bit, fp32) or fp64. Where W's enclosure reaches T's overflow
 *  threshold (an fp16 sum of weights beyond 65504: ATen's total_weight is
 *  Inf and its mean 0 or NaN) or a gamma is undefined (n u >= 1: a long
 *  bf16 cascade) the verdict is inconclusive with that reason; a kernel
 *  Inf or NaN where sum|w x| may reach T's overflow is inconclusive.
 *  Backward, grad_input [N, C, S]: as the 2-D one at (n, t, s) (both
 *  kernels: grad = -(g / total_weight) in T, then weight[t] * grad in T;
 *  none: -w times g_(n,s), one rounding).
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

/* Rows: r = i S + s over x [N, C] (S = 1), [C] (one row) or [N, C, S]
 * (nll_loss2d: S spatial positions). Offset of row r in a tensor t whose
 * rows are dim 0 ([N]) or dims 0 and 1 ([N, S]); rank 0: one element. */
static int64_t row_off(const struct oc_tensor *t, int64_t r, int64_t s) {
  if (t->rank == 0) return 0;
  if (t->rank == 1) return r * t->stride[0];
  return (r / s) * t->stride[0] + (r % s) * t->stride[1];
}

/* The class index of row r, or -1 when ignored, -2 when out of range. */
static int64_t class_of(const struct oc_nll_args *a, int64_t r, int64_t c, int64_t s) {
  double t = oc_tensor_at(a->target, row_off(a->target, r, s));
  if (t == (double)a->ignore_index) return -1;
  if (!(t == floor(t) && t >= 0 && t < (double)c)) return -2;
  return (int64_t)t;
}

static double weight_of(const struct oc_nll_args *a, int64_t k) {
  return a->weight ? oc_tensor_at(a->weight, k * a->weight->stride[0]) : 1.0;
}

/* Offset of (row r, class k) in x [N, C], [C] or [N, C, S] */
static int64_t x_off(const struct oc_tensor *x, int64_t r, int64_t k, int64_t s) {
  if (x->rank == 3) return (r / s) * x->stride[0] + k * x->stride[1] + (r % s) * x->stride[2];
  return x->rank == 2 ? r * x->stride[0] + k * x->stride[1] : k * x->stride[0];
}

static double x_at(const struct oc_tensor *x, int64_t r, int64_t k, int64_t s) {
  return oc_tensor_at(x, x_off(x, r, k, s));
}

/* The rows (N, or N S), C and S from x (forward) or the output (backward:
 * x's shape; x itself is not read) */
static int shapes(const struct oc_nll_args *a, const struct oc_tensor *x, int64_t *n, int64_t *c,
                  int64_t *s) {
  const struct oc_tensor *t = a->target;
  if (!x || !t || x->rank < 1 || x->rank > 3) return -1;
  *s = x->rank == 3 ? x->shape[2] : 1;
  *n = x->rank == 1 ? 1 : x->shape[0] * *s;
  *c = x->shape[1 - (x->rank == 1)];
  if (x->rank == 3   ? (t->rank != 2 || t->shape[0] != x->shape[0] || t->shape[1] != *s)
      : x->rank == 2 ? (t->rank != 1 || t->shape[0] != *n)
                     : oc_tensor_numel(t) != 1)
    return -1;
  if (a->weight && (a->weight->rank != 1 || a->weight->shape[0] != *c)) return -1;
  if ((unsigned)a->reduction > OC_NLL_SUM) return -1;
  return 0;
}

/* ATen's CPU cascade (LossNLL2d.cpp), simulated over the rows in order:
 * the most roundings on any term's path (an addition rounds every term in
 * both operands once more), and the additions made. An ignored row skips
 * its flush, so the depth follows the ignore pattern. */
static int64_t cpu_cascade(const struct oc_nll_args *a, int64_t n, int64_t c, int64_t s,
                           int64_t *adds) {
  int64_t lp = 0, dep[8] = {0}, nadd = 8, d = 0;
  while (lp < 62 && ((int64_t)1 << lp) < n)
    lp++; /* CeilLog2(numiter) */
  lp = lp / 8 > 4 ? lp / 8 : 4;
  int64_t mask = ((int64_t)1 << lp) - 1;
  for (int64_t r = 0; r < n; r++) {
    if (class_of(a, r, c, s) == -1) continue;
    dep[0]++, nadd++;
    for (int j = 0; j + 1 < 8 && !(r & (mask << (j * lp))); j++) {
      dep[j + 1] = (dep[j + 1] > dep[j] ? dep[j + 1] : dep[j]) + 1;
      dep[j] = 0, nadd++;
    }
  }
  for (int j = 0; j < 8; j++) /* std::accumulate of the 8 partials */
    d = (d > dep[j] ? d : dep[j]) + 1;
  *adds = nadd;
  return d;
}

/* (1 + a)(1 + b) - 1, upward */
static double compose(double a, double b) { return oc_add_up(oc_add_up(a, b), oc_mul_up(a, b)); }

/* nll_loss2d's sum and mean (x [N, C, S], nb = N): the relative bounds ts
 * on the loss sum (of sum |w x|) and tw on the weight sum (of sum |w|), and
 * the absolute floor, each the larger of ATen's CPU and CUDA forms. */
static void spatial_theta(const struct oc_nll_args *a, int64_t n, int64_t c, int64_t s, int64_t nb,
                          double *ts, double *tw, double *floor_abs) {
  enum oc_format fi = a->x->fmt;
  const struct oc_format_info *inf = oc_format_info(fi);
  double us = oc_unit_roundoff(fi);
  int narrow = oc_format_size(fi) < 4;
  /* one operation of the input's type: through fp32 for a 16-bit type */
  double u2 = narrow ? oc_add_up(oc_mul_up(us, 1 + 0x1p-24), 0x1p-24) : us;
  double ua = fi == OC_FP64 ? 0x1p-53 : 0x1p-24; /* acc_type */
  int64_t adds, d = cpu_cascade(a, n, c, s, &adds);
  double cpu = oc_gamma((double)d, u2);
  /* CUDA: 1024 threads a block, blocks_per_sample = max(1, ceil(S /
   * 1024) / 128); a thread sums ceil(S / (1024 bps)) terms, two warp
   * shuffle trees (5 levels each) then; each block's partial rounded to
   * the input's type and atomically added there: 1 + B roundings */
  int64_t bps = ((s + 1023) / 1024) / 128;
  bps = bps < 1 ? 1 : bps;
  double blocks = (double)nb * (double)bps;
  double dacc = (double)((s + 1024 * bps - 1) / (1024 * bps)) + 10;
  double cuda = compose(oc_gamma(dacc, ua), oc_gamma(blocks + 1, u2));
  *ts = fmax(cpu, cuda);
  /* CPU: the count rounded to the input's type once (without a weight) */
  *tw = fmax(a->weight ? cpu : u2, cuda);
  /* underflow: half a subnormal per CPU addition; each atomic add (fp32's
   * flushes a subnormal) and each partial's conversion a normal */
  double mn = ldexp(1.0, inf->emin_normal - 1);
  *floor_abs = oc_add_up(oc_mul_up((double)adds, inf->min_subnormal), oc_mul_up(2 * blocks, mn));
}

static int forward(const struct oc_nll_args *a, int64_t n, int64_t c, int64_t sp,
                   const struct oc_tensor *out, const struct oc_profile *p,
                   const struct oc_options *o, struct oc_verdict *v) {
  struct oc_check chk;
  int none = a->reduction == OC_NLL_NONE;
  if (none ? oc_tensor_numel(out) != n : oc_tensor_numel(out) != 1) return -1;
  int64_t idx[OC_MAX_RANK] = {0};
  oc_check_init(&chk, "nll_loss", p, o, v, none ? n : 1, out->rank, NULL, NULL);
  if (none) {
    for (int64_t i = 0; i < n; i++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      idx[0] = out->rank == 2 ? i / sp : i, idx[1] = i % sp;
      e.k = oc_tensor_at(out, row_off(out, i, sp));
      e.prob = INFINITY;
      e.exact_only = 1;
      int64_t k = class_of(a, i, c, sp);
      if (k == -2) {
        v->checked++;
        oc_check_inconclusive(&chk, "a class index outside [0, C) (ATen raises an error)");
        continue;
      }
      /* -w x rounded once to the output (0 for an ignored row) */
      double r = k < 0 ? 0 : -(weight_of(a, k) * x_at(a->x, i, k, sp));
      if (k >= 0 && a->weight && p->out == OC_FP64 && isfinite(r)) {
        /* an fp64 product: its correct rounding from MPFR */
        mpfr_t m;
        mpfr_init2(m, 128);
        mpfr_set_d(m, weight_of(a, k), MPFR_RNDN);
        mpfr_mul_d(m, m, -x_at(a->x, i, k, sp), MPFR_RNDN);
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
    int64_t k = class_of(a, i, c, sp);
    if (k == -2) bad = 1;
    if (k < 0) continue;
    double wk = weight_of(a, k), xk = x_at(a->x, i, k, sp), t = wk * xk;
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
  /* nll_loss2d's partial sums live in the input's type (both kernels) */
  int spatial = a->x->rank == 3;
  double top = oc_overflow_threshold(spatial ? a->x->fmt : p->acc);
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
    e.ovf_ok = isfinite(sabs) && !(oc_mul_up(sabs, 1.01) < top);
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
    double ts = 0, tw = 0, fl = 0, udiv = u;
    int wovf = 0;
    if (spatial) { /* the larger of ATen's CPU and CUDA forms */
      enum oc_format fi = a->x->fmt;
      double us = oc_unit_roundoff(fi);
      spatial_theta(a, n, c, sp, a->x->shape[0], &ts, &tw, &fl);
      /* the products w x rounded to the input's type (both kernels) */
      double sw = a->weight ? oc_mul_up(sabs, 1 + us) : sabs;
      es = oc_add_up(oc_mul_up(ts, sw), fl);
      if (a->weight)
        es = oc_add_up(es, oc_add_up(oc_mul_up(us, sabs),
                                     oc_mul_up(oc_format_info(fi)->min_subnormal, (double)used)));
      udiv = fi == OC_FP64 ? 0x1p-53 : 0x1p-24; /* scalar_t's /: in fp32 for 16-bit types */
      if (!(es < INFINITY))
        oc_check_inconclusive(&chk, "no rounding bound for the sum in the input's type (gamma_n "
                                    "undefined: n u >= 1 on ATen's cascade or atomic adds)");
    }
    double lo = oc_down(oc_acc_round(s, MPFR_RNDD) - perr),
           hi = oc_up(oc_acc_round(s, MPFR_RNDU) + perr);
    double pre = es;
    if (mean) {
      double ew = a->weight ? oc_mul_up(oc_gamma((double)(used > 1 ? used - 1 : 0), u), wabs) : 0;
      /* the count without a weight is exact below 2^24 in fp32 */
      if (!a->weight && p->acc != OC_FP64 && used >= (1 << 24)) ew = oc_mul_up(u, wabs);
      if (spatial) {
        ew = oc_add_up(oc_mul_up(tw, wabs), fl);
        if (!(oc_add_up(wabs, ew) < oc_overflow_threshold(a->x->fmt))) {
          /* total_weight summed in the input's type may reach Inf: the
           * kernel's mean is then 0 or NaN, not an error of the op */
          ew = INFINITY, wovf = 1;
          oc_check_inconclusive(&chk, "total_weight may overflow the input's type (ATen sums it "
                                      "there): the mean is not verifiable");
        } else if (!(ew < INFINITY))
          oc_check_inconclusive(&chk, "no rounding bound for total_weight in the input's type "
                                      "(gamma_n undefined: n u >= 1)");
      }
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
      pre = oc_add_up(pre, oc_mul_up(udiv, oc_add_up(vabs, pre))); /* the division */
    }
    e.lo = -hi, e.hi = -lo;
    e.pre = pre;
    e.pre_set = 1;
    e.bound = oc_out_bound(p, fmax(fabs(e.lo), fabs(e.hi)), pre);
    if (e.bound != e.bound) e.bound = INFINITY;
    e.ovf_ok = wovf || !(oc_add_up(oc_mul_up(sabs, 1.01 + ts), fl) < top);
    oc_check_elem(&chk, &e, idx);
  }
  oc_acc_free(s);
  oc_acc_free(w);
  oc_check_finish(&chk, 0);
  return 0;
}

static int backward(const struct oc_nll_args *a, int64_t n, int64_t c, int64_t sp,
                    const struct oc_tensor *out, const struct oc_profile *p,
                    const struct oc_options *o, struct oc_verdict *v) {
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
    int64_t t = class_of(a, i, c, sp);
    double gi = oc_tensor_at(g, none ? row_off(g, i, sp) : 0);
    for (int64_t k = 0; k < c; k++) {
      struct oc_elem e;
      memset(&e, 0, sizeof e);
      int64_t off = x_off(out, i, k, sp);
      if (out->rank == 3)
        idx[0] = i / sp, idx[1] = k, idx[2] = i % sp;
      else if (out->rank == 2)
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
  int64_t n, c, sp;
  if (!a || !out || !p || !v ||
      shapes(a, op == OC_LOSS_NLL_LOSS_BACKWARD ? out : a->x, &n, &c, &sp))
    return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (op == OC_LOSS_NLL_LOSS) return forward(a, n, c, sp, out, p, o, v);
  if (op == OC_LOSS_NLL_LOSS_BACKWARD) return backward(a, n, c, sp, out, p, o, v);
  return -1;
}
