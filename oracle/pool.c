/* oracle/pool.c — oc_check_pool: 2-D max, average and adaptive pooling
 * over the last two dims, forward and backward (cnn.h lists the ops),
 * every output element against its exact value.
 *
 * Windows are ATen's (Pool.h, AdaptivePooling.h): max pool taps h = o s -
 * pad + i dilation inside the input; avg pool [o s - pad, + kernel)
 * clipped to [-pad, H + pad) for the divisor counted with padding, to the
 * input for the sum; adaptive [floor(o H / OH), ceil((o + 1) H / OH)).
 *
 * Bounds (u, eta: acc_type's unit roundoff and underflow floor; u_s,
 * eta_s: the larger of acc_type's and the output type's, for sums a kernel
 * may accumulate in the output itself, as ATen's scatters with atomics):
 *  max, adaptive max   the window's max, exact (bound 0), NaN propagating
 *                      (ATen: val > max || isnan(val)); a zero's sign open.
 *  *_indices           exact: the position of an element of the window
 *                      holding the max (ties: any of them — ATen's CPU and
 *                      CUDA loops take the first, or the last NaN).
 *  max_pool2d_backward each input's sum of the g whose index names it, in
 *                      any order: gamma_2k(u_s) sum |g| + 2k eta_s (k of
 *                      them; scatter.c's bound), 0 where none does.
 *  avg, adaptive avg   S / d, S the window's sum in any order, then one or
 *                      two divisions (adaptive: / kh / kw):
 *                      gamma_(k+2)(u) sum |x| / d + (k + 2) eta.
 *  avg backward        sum over the windows holding the input of g / d:
 *                      each term a division (two for adaptive) and an
 *                      addition: gamma_(3k+1)(u_s) sum |g / d| + (3k + 1)
 *                      eta_s.
 * The exact sums come from the Kulisch accumulator (max backward, forward
 * sums) or MPFR at WPREC bits (sums of quotients: their error is added to
 * the enclosure). Non-finite sums follow IEEE (Inf, or NaN) on every
 * order; where sum |terms| may overflow the summing type a kernel Inf or
 * NaN is inconclusive (ovf_ok). An index outside the plane is ATen's
 * error: inconclusive. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cnn.h"
#include "exact.h"
#include "oracle.h"
#include "verdict.h"

#define WPREC 256

enum geo { GEO_MAX, GEO_AVG, GEO_ADAPTIVE };

struct pctx {
  const struct oc_pool_args *a;
  const struct oc_profile *p;
  enum oc_opid op;
  enum geo geo;
  int64_t h, w, oh, ow; /* input and output plane sizes */
  double u, eta, us, etas, top;
};

/* The window of output o along dim d (0: H, 1: W): taps lo, lo + step, ...
 * below hi; *span: avg pool's count with padding. */
static void window(const struct pctx *c, int d, int64_t o, int64_t *lo, int64_t *hi, int64_t *step,
                   int64_t *span) {
  int64_t in = d ? c->w : c->h, on = d ? c->ow : c->oh;
  const struct oc_pool_args *a = c->a;
  *step = 1;
  if (c->geo == GEO_ADAPTIVE) {
    *lo = o * in / on;
    *hi = ((o + 1) * in + on - 1) / on;
    *span = *hi - *lo;
    return;
  }
  int64_t s = o * a->stride[d] - a->pad[d];
  if (c->geo == GEO_MAX) {
    int64_t dil = a->dilation[d];
    int64_t e = s + (int64_t)(a->kernel[d] - 1) * dil + 1;
    while (s < 0)
      s += dil;
    *lo = s;
    *hi = e < in ? e : in;
    *step = dil;
    *span = 0;
    return;
  }
  int64_t e = s + a->kernel[d];
  if (e > in + a->pad[d]) e = in + a->pad[d];
  *span = e - s;
  *lo = s > 0 ? s : 0;
  *hi = e < in ? e : in;
}

/* The divisor of output (oi, oj) of an average pool; 0 for an empty window. */
static double divisor(const struct pctx *c, int64_t oi, int64_t oj) {
  int64_t l0, h0, s0, p0, l1, h1, s1, p1;
  window(c, 0, oi, &l0, &h0, &s0, &p0);
  window(c, 1, oj, &l1, &h1, &s1, &p1);
  if (c->geo == GEO_ADAPTIVE) return (double)(p0 * p1);
  if (c->a->divisor) return (double)c->a->divisor;
  if (c->a->count_include_pad) return (double)(p0 * p1);
  return (double)((h0 > l0 ? h0 - l0 : 0) * (h1 > l1 ? h1 - l1 : 0));
}

/* Offset of plane `plane` (leading dims flattened) in t. */
static int64_t plane_off(const struct oc_tensor *t, int64_t plane, int64_t *lead) {
  int64_t off = 0;
  for (int d = t->rank - 3; d >= 0; d--) {
    int64_t i = plane % t->shape[d];
    plane /= t->shape[d];
    off += i * t->stride[d];
    if (lead) lead[d] = i;
  }
  return off;
}

static double at2(const struct oc_tensor *t, int64_t base, int64_t i, int64_t j) {
  return oc_tensor_at(t, base + i * t->stride[t->rank - 2] + j * t->stride[t->rank - 1]);
}

static int same_value(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b;
}

/* ------------------------------------------------------- forward */

/* Output (oi, oj) of a forward op over the plane at xb. Returns 1 when it
 * cannot be judged (an empty max window's index). */
static int forward_elem(const struct pctx *c, const struct oc_tensor *x, int64_t xb, int64_t oi,
                        int64_t oj, struct oc_acc *acc, mpfr_ptr t, struct oc_elem *e) {
  int64_t l0, h0, s0, p0, l1, h1, s1, p1;
  window(c, 0, oi, &l0, &h0, &s0, &p0);
  window(c, 1, oj, &l1, &h1, &s1, &p1);
  int maxop = c->op == OC_ID_MAX_POOL2D || c->op == OC_ID_ADAPTIVE_MAX_POOL2D;
  int idxop = c->op == OC_ID_MAX_POOL2D_INDICES || c->op == OC_ID_ADAPTIVE_MAX_POOL2D_INDICES;
  if (maxop || idxop) {
    double mx = -INFINITY;
    int64_t first = -1;
    for (int64_t i = l0; i < h0; i += s0)
      for (int64_t j = l1; j < h1; j += s1) {
        double v = at2(x, xb, i, j);
        if (first < 0 || v > mx || (v != v && mx == mx)) mx = v, first = i * c->w + j;
      }
    e->exact_only = 1;
    if (maxop) {
      e->lo = e->hi = mx;
      return 0;
    }
    if (first < 0) return 1;
    double k = e->k;
    int in = k == floor(k) && k >= 0 && k < (double)(c->h * c->w);
    int64_t ki = in ? (int64_t)k : 0, ri = ki / c->w, rj = ki % c->w;
    in = in && ri >= l0 && ri < h0 && (ri - l0) % s0 == 0 && rj >= l1 && rj < h1 &&
         (rj - l1) % s1 == 0;
    e->lo = e->hi = in && same_value(at2(x, xb, ri, rj), mx) ? k : (double)first;
    return 0;
  }
  /* an average: S / d */
  oc_acc_clear(acc);
  double sabs = 0, sd = 0;
  int64_t k = 0;
  for (int64_t i = l0; i < h0; i++)
    for (int64_t j = l1; j < h1; j++, k++) {
      double v = at2(x, xb, i, j);
      oc_acc_add(acc, v);
      sd += v;
      sabs = oc_add_up(sabs, fabs(v));
    }
  double d = divisor(c, oi, oj);
  if (k == 0) { /* an empty window: ATen writes 0 */
    e->exact_only = 1;
    return 0;
  }
  if (!isfinite(sd) || oc_acc_is_nan(acc) || d == 0) { /* IEEE on every order */
    e->lo = e->hi = sd / d;
    e->exact_only = 1;
    e->ovf_ok = isfinite(sabs) && !(oc_mul_up(sabs, 1.01) < c->top);
    return 0;
  }
  oc_acc_get_mpfr(acc, t);
  mpfr_div_d(t, t, d, MPFR_RNDD);
  e->lo = mpfr_get_d(t, MPFR_RNDD);
  oc_acc_get_mpfr(acc, t);
  mpfr_div_d(t, t, d, MPFR_RNDU);
  e->hi = mpfr_get_d(t, MPFR_RNDU);
  double kd = (double)k;
  e->pre = oc_add_up(oc_div_up(oc_mul_up(oc_gamma(kd + 2, c->u), sabs), fabs(d)),
                     oc_mul_up(kd + 2, c->eta));
  e->pre_set = 1;
  e->bound = oc_out_bound(c->p, fmax(fabs(e->lo), fabs(e->hi)), e->pre);
  e->ovf_ok = !(oc_mul_up(sabs, 1.01) < c->top);
  return 0;
}

/* ------------------------------------------------------- backward */

/* The outputs along dim d whose window holds input position i: [*lo, *hi). */
static void holders(const struct pctx *c, int d, int64_t i, int64_t *lo, int64_t *hi) {
  int64_t on = d ? c->ow : c->oh;
  if (c->geo == GEO_ADAPTIVE) { /* windows grow monotonically: scan */
    *lo = 0;
    while (*lo < on) {
      int64_t l, h, s, p;
      window(c, d, *lo, &l, &h, &s, &p);
      if (h > i) break;
      ++*lo;
    }
    *hi = *lo;
    while (*hi < on) {
      int64_t l, h, s, p;
      window(c, d, *hi, &l, &h, &s, &p);
      if (l > i) break;
      ++*hi;
    }
    return;
  }
  int64_t s = c->a->stride[d], k = c->a->kernel[d], pad = c->a->pad[d];
  int64_t l = (i + pad - k + 1 + s - 1);
  l = l > 0 ? l / s : 0;
  int64_t h = (i + pad) / s + 1;
  *lo = l;
  *hi = h < on ? h : on;
}

/* Input (i, j)'s gradient of an average pool: sum of g / d over the
 * windows holding it (g's plane at gb). */
static void avg_back_elem(const struct pctx *c, const struct oc_tensor *g, int64_t gb, int64_t i,
                          int64_t j, mpfr_ptr s, mpfr_ptr t, struct oc_elem *e) {
  int64_t a0, b0, a1, b1;
  holders(c, 0, i, &a0, &b0);
  holders(c, 1, j, &a1, &b1);
  mpfr_set_zero(s, 1);
  double qabs = 0, sd = 0;
  int64_t k = 0;
  for (int64_t oi = a0; oi < b0; oi++)
    for (int64_t oj = a1; oj < b1; oj++) {
      int64_t l0, h0, s0, p0, l1, h1, s1, p1;
      window(c, 0, oi, &l0, &h0, &s0, &p0);
      window(c, 1, oj, &l1, &h1, &s1, &p1);
      if (i < l0 || i >= h0 || j < l1 || j >= h1) continue;
      double gv = at2(g, gb, oi, oj), d = divisor(c, oi, oj);
      sd += gv / d;
      mpfr_set_d(t, gv, MPFR_RNDN);
      mpfr_div_d(t, t, d, MPFR_RNDN);
      mpfr_add(s, s, t, MPFR_RNDN);
      qabs = oc_add_up(qabs, oc_div_up(fabs(gv), fabs(d)));
      k++;
    }
  if (!isfinite(sd)) { /* IEEE on every order */
    e->lo = e->hi = sd;
    e->exact_only = 1;
    e->ovf_ok = isfinite(qabs) && !(oc_mul_up(qabs, 1.01) < c->top);
    return;
  }
  double v = mpfr_get_d(s, MPFR_RNDN), rad = oc_mul_up(qabs, 0x1p-240 * (double)(k + 2));
  e->lo = oc_down(v - rad);
  e->hi = oc_up(v + rad);
  double kk = 3 * (double)k + 1;
  e->pre = oc_add_up(oc_mul_up(oc_gamma(kk, c->us), qabs), oc_mul_up(kk, c->etas));
  e->pre_set = 1;
  e->bound = oc_out_bound(c->p, fmax(fabs(e->lo), fabs(e->hi)), e->pre);
  e->ovf_ok = !(oc_mul_up(qabs, 1.01) < c->top);
}

/* max_pool2d_backward over one plane: the g of each index summed at the
 * position it names. Returns -1 on allocation failure. */
static int max_back_plane(const struct pctx *c, const struct oc_tensor *out, int64_t ob, int64_t gb,
                          int64_t ib, const int64_t *lead, struct oc_acc *acc, struct oc_check *chk,
                          struct oc_verdict *v) {
  const struct oc_tensor *g = c->a->g, *ix = c->a->indices;
  int64_t np = c->h * c->w, no = c->oh * c->ow;
  int64_t *start = calloc((size_t)np + 2, sizeof *start);
  int64_t *list = malloc((size_t)(no ? no : 1) * sizeof *list);
  if (!start || !list) {
    free(start);
    free(list);
    return -1;
  }
  int bad = 0;
  for (int64_t o = 0; o < no; o++) {
    double t = at2(ix, ib, o / c->ow, o % c->ow);
    if (!(t == floor(t) && t >= 0 && t < (double)np))
      bad = 1;
    else
      start[(int64_t)t + 2]++;
  }
  for (int64_t q = 0; q < np; q++)
    start[q + 2] += start[q + 1];
  for (int64_t o = 0; o < no && !bad; o++) {
    int64_t q = (int64_t)at2(ix, ib, o / c->ow, o % c->ow);
    list[start[q + 1]++] = o;
  }
  int64_t idx[OC_MAX_RANK] = {0};
  memcpy(idx, lead, sizeof idx);
  int rk = out->rank;
  for (int64_t q = 0; q < np; q++) {
    idx[rk - 2] = q / c->w;
    idx[rk - 1] = q % c->w;
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    e.prob = INFINITY;
    e.k = at2(out, ob, q / c->w, q % c->w);
    if (bad) {
      v->checked++;
      oc_check_inconclusive(chk, "an index outside the plane (ATen raises an error)");
      continue;
    }
    oc_acc_clear(acc);
    double sabs = 0, sd = 0;
    int64_t cnt = start[q + 1] - start[q];
    for (int64_t r = start[q]; r < start[q + 1]; r++) {
      double x = at2(g, gb, list[r] / c->ow, list[r] % c->ow);
      oc_acc_add(acc, x);
      sd += x;
      sabs = oc_add_up(sabs, fabs(x));
    }
    if (cnt == 0) {
      e.exact_only = 1; /* no index names it: zero */
    } else if (!isfinite(sd) || oc_acc_is_nan(acc)) {
      e.lo = e.hi = sd;
      e.exact_only = 1;
      e.ovf_ok = isfinite(sabs) && !(oc_mul_up(sabs, 1.01) < c->top);
    } else {
      oc_elem_sum(&e, acc, 2 * (double)cnt, sabs, c->us, c->etas, c->top, c->p);
    }
    oc_check_elem(chk, &e, idx);
  }
  free(start);
  free(list);
  return 0;
}

/* ------------------------------------------------------- ops */

static int lead_equal(const struct oc_tensor *a, const struct oc_tensor *b) {
  if (!a || !b || a->rank != b->rank || a->rank < 2) return 0;
  for (int d = 0; d < a->rank - 2; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

static int backward(enum oc_opid op) {
  return op == OC_ID_MAX_POOL2D_BACKWARD || op == OC_ID_AVG_POOL2D_BACKWARD ||
         op == OC_ID_ADAPTIVE_AVG_POOL2D_BACKWARD;
}

static enum geo geo_of(enum oc_opid op) {
  if (op == OC_ID_MAX_POOL2D || op == OC_ID_MAX_POOL2D_INDICES) return GEO_MAX;
  if (op == OC_ID_AVG_POOL2D || op == OC_ID_AVG_POOL2D_BACKWARD) return GEO_AVG;
  return GEO_ADAPTIVE;
}

static int geometry_ok(const struct pctx *c) {
  const struct oc_pool_args *a = c->a;
  if (c->geo == GEO_ADAPTIVE) return c->oh > 0 && c->ow > 0;
  for (int d = 0; d < 2; d++)
    if (a->kernel[d] < 1 || a->stride[d] < 1 || a->pad[d] < 0 ||
        (c->geo == GEO_MAX && a->dilation[d] < 1))
      return 0;
  return 1; /* any divisor_override but 0 (none): ATen takes a negative one too */
}

int oc_check_pool(enum oc_opid op, const struct oc_pool_args *a, const struct oc_tensor *out,
                  const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  const struct oc_op_info *info = oc_op_by_id(op);
  if (!info || info->cls != OC_CLASS_POOL || !a || !a->x || !out || !p || !v) return -1;
  int back = backward(op);
  /* the output grid: out's (forward) or g's (backward) last two dims */
  const struct oc_tensor *grid = back ? a->g : out;
  if (!lead_equal(a->x, out) || !lead_equal(a->x, grid)) return -1;
  if (back && (out->shape[out->rank - 2] != a->x->shape[a->x->rank - 2] ||
               out->shape[out->rank - 1] != a->x->shape[a->x->rank - 1]))
    return -1;
  if (op == OC_ID_MAX_POOL2D_BACKWARD &&
      (!a->indices || a->indices->rank != a->g->rank || !lead_equal(a->g, a->indices) ||
       a->indices->shape[a->g->rank - 2] != a->g->shape[a->g->rank - 2] ||
       a->indices->shape[a->g->rank - 1] != a->g->shape[a->g->rank - 1]))
    return -1;
  struct pctx c = {a,
                   p,
                   op,
                   geo_of(op),
                   a->x->shape[a->x->rank - 2],
                   a->x->shape[a->x->rank - 1],
                   grid->shape[grid->rank - 2],
                   grid->shape[grid->rank - 1],
                   0,
                   0,
                   0,
                   0,
                   0};
  if (!geometry_ok(&c)) return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  c.u = oc_profile_u_acc(p);
  c.eta = fmax(oc_acc_eta(p), oc_format_info(p->acc)->min_subnormal);
  enum oc_format sf = oc_unit_roundoff(p->out) > c.u ? p->out : p->acc;
  c.us = oc_unit_roundoff(sf);
  c.etas = fmax(c.eta, oc_format_info(sf)->min_subnormal);
  c.top = oc_overflow_threshold(sf);
  int64_t planes = 1;
  for (int d = 0; d < a->x->rank - 2; d++)
    planes *= a->x->shape[d];
  struct oc_acc *acc = oc_acc_new();
  if (!acc) return -1;
  mpfr_t s, t;
  mpfr_inits2(WPREC, s, t, (mpfr_ptr)0);
  struct oc_check chk;
  oc_check_init(&chk, info->name, p, o, v, oc_tensor_numel(out), out->rank, NULL, NULL);
  int rk = out->rank, rc = 0;
  int64_t oh = out->shape[rk - 2], ow = out->shape[rk - 1];
  for (int64_t pl = 0; pl < planes && !rc; pl++) {
    int64_t idx[OC_MAX_RANK] = {0};
    int64_t xb = plane_off(a->x, pl, idx), ob = plane_off(out, pl, NULL);
    if (op == OC_ID_MAX_POOL2D_BACKWARD) {
      rc = max_back_plane(&c, out, ob, plane_off(a->g, pl, NULL), plane_off(a->indices, pl, NULL),
                          idx, acc, &chk, v);
      continue;
    }
    int64_t gb = back ? plane_off(a->g, pl, NULL) : 0;
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        struct oc_elem e;
        memset(&e, 0, sizeof e);
        e.prob = INFINITY;
        e.k = at2(out, ob, i, j);
        idx[rk - 2] = i, idx[rk - 1] = j;
        if (back) {
          avg_back_elem(&c, a->g, gb, i, j, s, t, &e);
        } else if (forward_elem(&c, a->x, xb, i, j, acc, t, &e)) {
          v->checked++;
          oc_check_inconclusive(&chk, "an empty window: no index is defined");
          continue;
        }
        oc_check_elem(&chk, &e, idx);
      }
  }
  oc_check_finish(&chk, 0);
  mpfr_clears(s, t, (mpfr_ptr)0);
  oc_acc_free(acc);
  return rc;
}
