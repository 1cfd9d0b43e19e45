/* oracle/batch_norm.c — oc_check_batch_norm: batch norm over the channel
 * axis of x [N, C, *], forward (training and eval), its saved statistics,
 * the running-statistics update and the backward (cnn.h lists the ops),
 * every output element against its exact value.
 *
 * Exact values: per channel, the mean from an exact sum (Kulisch), the
 * biased variance S / M (S = sum (x - mu)^2) and invstd = 1 / sqrt(var +
 * eps) in MPFR at WPREC bits, each MPFR value within 2^-200 relative of the
 * exact one (a handful of roundings of 2^-256), which widens the
 * enclosures; the statistics a backward reads (its saved mean and invstd)
 * are inputs, taken as given.
 *
 * Bounds (u, eta: the compute format's unit roundoff and underflow floor,
 * ATen's acc_type: fp32 for fp16/bf16/fp32, fp64; cuDNN's order and
 * algorithm are not documented, so each bound covers every evaluation
 * below in any order):
 *  mean   Welford updates and merges in any tree, or a sum in any order
 *         and a division: dmu = max(s_max, gamma_(M+1) mean|x|) + (M + 2)
 *         eta (s_max: moments.h, variance.c's derivation).
 *  var    M2 within E of S (moments.h: Welford in any tree, two passes),
 *         var = M2 / M: dv = (E (1 + 4u) + gamma_2 (S + E)) / M; profile
 *         norm=one_pass adds E[x^2] - mean^2 (gamma_(M+1) E[x^2] + 2 |mu|
 *         dmu + dmu^2 + gamma_2 (E[x^2] + (|mu| + dmu)^2)) and takes the
 *         larger; plus 64 (M + 8) eta, and u eps (eps held in acc_type).
 *  invstd rho, its relative error: sqrt(ve / (ve - dv)) sqrt(1 + u) (1 +
 *         rs) - 1, ve = var + eps, rs the larger of rsqrt's budget and
 *         sqrt-then-divide's (ORACLE.md §3).
 *  y      ((x - mean) invstd) w + b, or ATen's CPU form x alpha + (b -
 *         mean alpha) with alpha = invstd w: the statistics' errors carry
 *         |w| (dmu R + |x - mu| invstd rho), R = invstd (1 + rho), and at
 *         most 4 roundings on each term of (|x| + |mu| + dmu) R |w| + |b|
 *         (gamma_5 taken), then the output rounding.
 *  running_mean  m mean + (1 - m) old: |m| dmu + gamma_5 (|m| (|mu| +
 *         dmu) + |1 - m| |old|); running_var the same with the unbiased
 *         var M / (M - 1) (error dv M / (M - 1) + gamma_3 of it).
 *  dx     w invstd (g - A / M - (x - mean) invstd^2 B / M), A = sum g, B =
 *         sum (x - mean) g, from the given statistics: as the norms' dx
 *         (grad.c), every monomial carries at most M + 10 roundings:
 *         gamma_(M+10) |invstd| (|w g_i| + Q / M + (|x_i| + |mean|)
 *         |invstd| P / M), Q = sum |w g|, P = sum |w g| (|x| + |mean|)
 *         |invstd| — ATen's (g - mean_g - (x - mean) proj) grad_scale, and
 *         forms from sum g x alike.
 *  dweight sum g (x - mean) invstd: gamma_(M+3) |invstd| sum |g| (|x| +
 *         |mean|) (the difference first, or sum g x - mean sum g).
 *  dbias  sum g in any order: gamma_M sum |g| (oc_elem_sum).
 *  eval   dx = g w invstd with invstd from running_var (within rho):
 *         |g w| invstd rho + gamma_3 |g w| R; dweight adds rho invstd sum
 *         |g| (|x| + |mean|) to its bound.
 * Special values: a NaN in a channel makes its mean, y and running mean
 * NaN on every path; an Inf makes them NaN or Inf. Its variance is NaN on
 * ATen's paths, but a kernel may clamp a NaN variance at 0: invstd and
 * the running variance there are not judged (inconclusive). With a non-finite
 * weight or bias, or an eval input, y must equal ATen's formula in IEEE
 * double in one of its two forms where they agree. A backward over a
 * channel holding Inf or NaN: NaN where the kernel gives NaN, else
 * inconclusive. */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "cnn.h"
#include "exact.h"
#include "moments.h"
#include "oracle.h"
#include "verdict.h"

#define WPREC 256
#define REL 0x1p-200 /* an MPFR value's relative error */

/* ------------------------------------------------------- channel layout */

/* The element offsets of channel 0 of t ([N, C, *]): every index with dim
 * 1 at 0, row-major over the others; channel c adds c stride[1]. */
static int64_t *chan_offsets(const struct oc_tensor *t, int64_t *m) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    if (d != 1) n *= t->shape[d];
  int64_t *off = malloc((size_t)(n ? n : 1) * sizeof *off);
  if (!off) return NULL;
  int64_t idx[OC_MAX_RANK] = {0};
  for (int64_t j = 0; j < n; j++) {
    int64_t o = 0;
    for (int d = 0; d < t->rank; d++)
      o += idx[d] * t->stride[d];
    off[j] = o;
    for (int d = t->rank - 1; d >= 0; d--) {
      if (d == 1) continue;
      if (++idx[d] < t->shape[d]) break;
      idx[d] = 0;
    }
  }
  *m = n;
  return off;
}

/* The multi-index of element j of channel c (chan_offsets' order). */
static void chan_index(const struct oc_tensor *t, int64_t c, int64_t j, int64_t *idx) {
  for (int d = t->rank - 1; d >= 0; d--) {
    if (d == 1) continue;
    idx[d] = j % t->shape[d];
    j /= t->shape[d];
  }
  idx[1] = c;
}

static int same_shape(const struct oc_tensor *a, const struct oc_tensor *b) {
  if (a->rank != b->rank) return 0;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}

/* A [C] tensor's value at c (NULL: dflt). */
static double per_chan(const struct oc_tensor *t, int64_t c, double dflt) {
  return t ? oc_tensor_at(t, c * t->stride[0]) : dflt;
}

static int chan_vector_ok(const struct oc_tensor *t, int64_t nc) {
  return !t || (t->rank == 1 && t->shape[0] == nc);
}

static int same_value(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b;
}

/* ------------------------------------------------------- statistics */

struct bn_ctx {
  const struct oc_profile *p;
  double u, eta, eps, rs; /* rs: invstd's own budget (relative) */
  double top;             /* acc_type's overflow threshold, over 4 (intermediates) */
  double us, etas;        /* the statistics' format, when narrower: unit roundoff, floor */
  /* profile partial=: the backward's sums rounded to that format along
   * their reduction tree: relative error part (PARTIAL_LEVELS roundings
   * and the product's), absolute part_eta per rounded value */
  double part, part_eta;
  int one_pass;
  /* the channel's mean, unbiased variance and invstd; scratch */
  mpfr_t mu, vu, r, t, y;
};

struct bn_stat {
  int nan, inf;
  int ovf; /* the kernel's sums (of |x|, of squares) may overflow acc_type */
  int64_t m;
  double mu, vb;       /* mean, biased var (nearest) */
  double r;            /* invstd, upward */
  double mabs;         /* mean |x| */
  double dmu, dv, rho; /* the kernel's errors (mean, biased var, invstd relative) */
};

/* invstd's relative error from the variance's absolute error dv. */
static double rho_of(const struct bn_ctx *c, double ve, double dv) {
  double lo = oc_down(oc_down(ve) - dv);
  if (!(lo > 0)) return INFINITY;
  return oc_up(oc_mul_up(oc_mul_up(oc_up(sqrt(oc_div_up(oc_up(ve), lo))), oc_up(sqrt(1 + c->u))),
                         oc_add_up(1, c->rs)) -
               1);
}

/* The mean, invstd and variance held in a narrower format (c->us) before
 * the transform and the running update: one more rounding of each. */
static void stat_rounding(const struct bn_ctx *c, struct bn_stat *s) {
  if (c->us == 0) return;
  s->dmu = oc_add_up(oc_add_up(s->dmu, oc_mul_up(c->us, oc_add_up(fabs(s->mu), s->dmu))), c->etas);
  s->rho = oc_up(oc_mul_up(oc_add_up(1, s->rho), 1 + c->us) - 1);
  /* the variance the running update reads (after invstd's rho is set) */
  s->dv = oc_add_up(oc_add_up(s->dv, oc_mul_up(c->us, oc_add_up(fabs(s->vb), s->dv))), c->etas);
}

/* The batch statistics of one channel's values xs[0..m). */
static void batch_stats(struct bn_ctx *c, const double *xs, int64_t m, struct oc_acc *acc,
                        struct bn_stat *s) {
  memset(s, 0, sizeof *s);
  s->m = m;
  double mabs = 0, xmax = 0, ss = 0;
  oc_acc_clear(acc);
  for (int64_t i = 0; i < m; i++) {
    s->nan |= isnan(xs[i]);
    s->inf |= isinf(xs[i]);
    if (!isfinite(xs[i])) continue;
    oc_acc_add(acc, xs[i]);
    mabs = oc_add_up(mabs, fabs(xs[i]));
    ss = oc_add_up(ss, oc_mul_up(xs[i], xs[i]));
    xmax = fmax(xmax, fabs(xs[i]));
  }
  if (s->nan || s->inf || m == 0) {
    s->rho = INFINITY;
    return;
  }
  oc_acc_get_mpfr(acc, c->t);
  mpfr_div_si(c->mu, c->t, (long)m, MPFR_RNDN);
  s->mu = mpfr_get_d(c->mu, MPFR_RNDN);
  double t = 0, dmax = 0;
  mpfr_set_zero(c->y, 1);
  for (int64_t i = 0; i < m; i++) {
    mpfr_set_d(c->t, xs[i], MPFR_RNDN);
    mpfr_sub(c->t, c->t, c->mu, MPFR_RNDN);
    double ad = fabs(mpfr_get_d(c->t, MPFR_RNDA));
    t = oc_add_up(t, ad);
    dmax = fmax(dmax, ad);
    mpfr_sqr(c->t, c->t, MPFR_RNDN);
    mpfr_add(c->y, c->y, c->t, MPFR_RNDN);
  }
  double sd = oc_mul_up(mpfr_get_d(c->y, MPFR_RNDU), 1 + REL);
  if (m > 1)
    mpfr_div_si(c->vu, c->y, (long)(m - 1), MPFR_RNDN);
  else
    mpfr_set_nan(c->vu);
  mpfr_div_si(c->y, c->y, (long)m, MPFR_RNDN); /* biased var */
  s->vb = mpfr_get_d(c->y, MPFR_RNDN);
  mpfr_add_d(c->r, c->y, c->eps, MPFR_RNDN);
  mpfr_rec_sqrt(c->r, c->r, MPFR_RNDN);
  s->r = oc_mul_up(mpfr_get_d(c->r, MPFR_RNDU), 1 + REL);
  s->mabs = oc_mul_up(mabs / (double)m, 1 + 0x1p-50);
  /* sum x^2 and sum (x - m)^2 <= 2 sum x^2 + 2 M m^2 <= 4 sum x^2 (any
   * kernel mean m within the values' range) */
  s->ovf = !(oc_mul_up(4.01, ss) < c->top) || !(oc_mul_up(1.01, mabs) < c->top);
  double u = c->u, eta = c->eta, md = (double)m;
  double smax = 0;
  double e = oc_m2_bound(u, eta, m, sd, oc_mul_up(t, 1 + 0x1p-50), xmax,
                         oc_mul_up(dmax, 1 + 0x1p-50), &smax);
  s->dmu = oc_add_up(fmax(smax, oc_mul_up(oc_gamma(md + 1, u), s->mabs)), (md + 2) * eta);
  double dv = oc_div_up(oc_add_up(oc_mul_up(e, 1 + 4 * u), oc_mul_up(oc_gamma(2, u), sd + e)), md);
  if (c->one_pass) {
    double ex2 = oc_div_up(ss, md), amu = fabs(s->mu) * (1 + 0x1p-50);
    double mu2 = oc_mul_up(oc_add_up(amu, s->dmu), oc_add_up(amu, s->dmu));
    double d1 = oc_add_up(oc_mul_up(oc_gamma(md + 1, u), ex2),
                          oc_add_up(oc_mul_up(oc_mul_up(2, amu), s->dmu), s->dmu * s->dmu));
    dv = fmax(dv, oc_add_up(d1, oc_mul_up(oc_gamma(2, u), oc_add_up(ex2, mu2))));
  }
  dv = oc_add_up(dv, oc_mul_up(64 * eta, md + 8));
  s->dv = oc_add_up(dv, oc_mul_up(u, c->eps));
  s->rho = rho_of(c, oc_add_up(s->vb, c->eps), s->dv);
  stat_rounding(c, s);
}

/* The running statistics of eval as a channel's statistics: exact, the
 * kernel's errors only eps's rounding and the addition (in rho). */
static void eval_stats(struct bn_ctx *c, double rm, double rv, struct bn_stat *s) {
  memset(s, 0, sizeof *s);
  s->mu = rm;
  s->vb = rv;
  s->rho = INFINITY;
  if (!isfinite(rm) || !isfinite(rv)) return;
  mpfr_set_d(c->mu, rm, MPFR_RNDN);
  mpfr_set_d(c->r, rv, MPFR_RNDN);
  mpfr_add_d(c->r, c->r, c->eps, MPFR_RNDN);
  double ve = mpfr_get_d(c->r, MPFR_RNDD);
  if (!(ve > 0)) return;
  mpfr_rec_sqrt(c->r, c->r, MPFR_RNDN);
  s->r = oc_mul_up(mpfr_get_d(c->r, MPFR_RNDU), 1 + REL);
  s->dv = oc_mul_up(c->u, c->eps);
  s->rho = rho_of(c, ve, s->dv);
  stat_rounding(c, s);
}

/* ------------------------------------------------------- elements */

/* y = (x - mean) invstd w + b. Returns 1 where no verdict is derivable
 * (the kernel's value is left unjudged), else 0 with e filled. */
static int y_elem(struct bn_ctx *c, const struct bn_stat *s, double x, double w, double b,
                  struct oc_elem *e) {
  if (!isfinite(x) || !isfinite(w) || !isfinite(b) || !(s->rho < INFINITY)) {
    /* ATen's two forms in IEEE double: the kernel's value is one of them
     * (pass), or else their common value where the inputs are special; a
     * variance within its error of -eps (rho infinite) proves nothing */
    double r = 1 / sqrt(s->vb + c->eps);
    double fa = (x - s->mu) * r * w + b, al = r * w, fb = x * al + (b - s->mu * al);
    int fin = isfinite(x) && isfinite(w) && isfinite(b) && isfinite(s->mu) && isfinite(s->vb);
    e->exact_only = 1;
    if (same_value(e->k, fa) || same_value(e->k, fb)) {
      e->lo = e->hi = e->k;
      return 0;
    }
    if (fin || !same_value(fa, fb)) return 1;
    e->lo = e->hi = fa;
    return 0;
  }
  mpfr_set_d(c->t, x, MPFR_RNDN);
  mpfr_sub(c->t, c->t, c->mu, MPFR_RNDN);
  double d = oc_mul_up(fabs(mpfr_get_d(c->t, MPFR_RNDA)), 1 + REL);
  mpfr_mul(c->y, c->t, c->r, MPFR_RNDN);
  mpfr_mul_d(c->y, c->y, w, MPFR_RNDN);
  mpfr_add_d(c->y, c->y, b, MPFR_RNDN);
  double aw = fabs(w), ab = fabs(b), u = c->u;
  double rad =
      oc_add_up(oc_mul_up(8 * REL, oc_add_up(oc_mul_up(oc_mul_up(d, s->r), aw), ab)), 0x1p-1074);
  double yv = mpfr_get_d(c->y, MPFR_RNDN);
  e->lo = oc_down(yv - rad);
  e->hi = oc_up(yv + rad);
  double big_r = oc_mul_up(s->r, 1 + s->rho);
  double prop =
      oc_mul_up(aw, oc_add_up(oc_mul_up(s->dmu, big_r), oc_mul_up(oc_mul_up(d, s->r), s->rho)));
  double a = oc_add_up(oc_add_up(fabs(x), fabs(s->mu)), s->dmu);
  double rnd = oc_mul_up(oc_gamma(5, u), oc_add_up(oc_mul_up(oc_mul_up(a, big_r), aw), ab));
  double flo = oc_mul_up(8 * c->eta, oc_mul_up(1 + big_r, 1 + aw));
  e->pre = oc_add_up(oc_add_up(prop, rnd), flo);
  e->pre_set = 1;
  e->bound = oc_out_bound(c->p, fmax(fabs(e->lo), fabs(e->hi)), e->pre);
  /* the statistics' sums, or x alpha and mean alpha, may overflow: a
   * kernel's Inf, NaN or (invstd 0) b proves nothing */
  e->ovf_ok = e->ovf_any = s->ovf || !(oc_add_up(oc_mul_up(oc_mul_up(a, big_r), aw), ab) < c->top);
  return 0;
}

/* The exact value in c->y with the kernel's error pre. */
static void value_elem(const struct bn_ctx *c, double pre, struct oc_elem *e) {
  double yv = mpfr_get_d(c->y, MPFR_RNDN), rad = oc_mul_up(fabs(yv), 4 * REL);
  e->lo = oc_down(yv - rad);
  e->hi = oc_up(yv + rad);
  e->pre = oc_add_up(pre, 4 * c->eta);
  e->pre_set = 1;
  e->bound = oc_out_bound(c->p, fmax(fabs(e->lo), fabs(e->hi)), e->pre);
  if (e->bound != e->bound) e->bound = INFINITY;
  /* no bound (a variance within its error of -eps): the kernel's value,
   * NaN or Inf included, proves nothing */
  e->ovf_ok = e->ovf_ok || !(e->bound < INFINITY);
}

/* A per-channel output of the forward ([C]: the saved statistics, the
 * running updates) from the channel's statistics s; old: the running
 * statistic before the update. */
static void chan_elem(struct bn_ctx *c, enum oc_opid op, const struct bn_stat *s, double old,
                      double mom, struct oc_elem *e) {
  int var = op == OC_ID_BATCH_NORM_INVSTD || op == OC_ID_BATCH_NORM_RUNNING_VAR;
  if ((s->nan || s->inf) && var) {
    /* the variance is NaN on ATen's paths, but a kernel that clamps it at
     * 0 (fmax(NaN, 0)) gives a finite invstd: nothing is proven */
    e->lo = e->hi = 0;
    e->bound = INFINITY;
    e->ovf_ok = e->ovf_any = 1;
    return;
  }
  if (s->nan || s->inf || !isfinite(old)) {
    /* the mean is NaN on every path, or Inf, and so is the update */
    e->lo = e->hi = NAN;
    e->exact_only = 1;
    e->alt_ok = isinf(e->k);
    return;
  }
  if (s->ovf) { /* the kernel's sums may overflow: its value proves nothing */
    e->lo = e->hi = 0;
    e->bound = INFINITY;
    e->ovf_ok = e->ovf_any = 1;
    return;
  }
  double g5 = oc_gamma(5, c->u), am = fabs(mom), a1 = fabs(1 - mom), md = (double)s->m;
  if (op == OC_ID_BATCH_NORM_MEAN) {
    mpfr_set(c->y, c->mu, MPFR_RNDN);
    value_elem(c, s->dmu, e);
    return;
  }
  if (op == OC_ID_BATCH_NORM_INVSTD) {
    mpfr_set(c->y, c->r, MPFR_RNDN);
    value_elem(c, oc_mul_up(s->r, s->rho), e);
    return;
  }
  /* m stat + (1 - m) old, stat the mean or the unbiased variance */
  double st, dst;
  if (var) {
    if (s->m < 2) { /* ATen refuses one value per channel in training */
      e->lo = e->hi = 0;
      e->bound = INFINITY;
      e->ovf_ok = e->ovf_any = 1;
      return;
    }
    double f = md / (md - 1), dvu = oc_mul_up(s->dv, f);
    st = oc_mul_up(fabs(s->vb), f);
    dst = oc_add_up(dvu, oc_mul_up(oc_gamma(3, c->u), oc_add_up(st, dvu)));
    mpfr_mul_d(c->y, c->vu, mom, MPFR_RNDN);
  } else {
    st = fabs(s->mu);
    dst = s->dmu;
    mpfr_mul_d(c->y, c->mu, mom, MPFR_RNDN);
  }
  mpfr_set_d(c->t, 1, MPFR_RNDN);
  mpfr_sub_d(c->t, c->t, mom, MPFR_RNDN);
  mpfr_mul_d(c->t, c->t, old, MPFR_RNDN);
  mpfr_add(c->y, c->y, c->t, MPFR_RNDN);
  double pre = oc_add_up(
      oc_mul_up(am, dst),
      oc_mul_up(g5, oc_add_up(oc_mul_up(am, oc_add_up(st, dst)), oc_mul_up(a1, fabs(old)))));
  value_elem(c, pre, e);
}

/* ------------------------------------------------------- backward */

/* Roundings a partial sum of the backward's reductions may take on its
 * way to the total when partials pass through a narrower type (profile
 * partial=): ATen's block reduction is two rounds of warp shuffles, each
 * log2(warp) levels — 2 x 5 with 32-lane warps, 2 x 6 with ROCm's 64. */
#define PARTIAL_LEVELS 12
/* Values rounded to the partial type in one reduction, at most: each term
 * (its product) and every shuffled partial of a block of <= 1024 threads. */
#define PARTIAL_VALUES(m) ((double)(m) + 2.0 * 1024)

/* The extra error of a backward sum over m terms of magnitude sum mag
 * (0 without partial=). */
static double partial_err(const struct bn_ctx *c, double mag, int64_t m) {
  if (c->part == 0) return 0;
  return oc_add_up(oc_mul_up(c->part, mag), oc_mul_up(c->part_eta, PARTIAL_VALUES(m)));
}

struct bn_back {
  double mu, r, w; /* the given statistics, the weight */
  int finite;
  double q, pm;    /* Q = sum |w g|, P = sum |w g| (|x| + |mu|) |r| */
  double gabs, gx; /* sum |g|, sum |g| (|x| + |mu|) */
  int ovf;         /* intermediates (invstd^3 sums) may overflow acc_type */
};

/* A = sum g into c->t, B = sum (x - mu) g into c->y, with their magnitudes. */
static void back_sums(struct bn_ctx *c, const double *xs, const double *gs, int64_t m,
                      struct bn_back *k) {
  k->finite = isfinite(k->mu) && isfinite(k->r) && isfinite(k->w);
  for (int64_t i = 0; i < m && k->finite; i++)
    k->finite = isfinite(xs[i]) && isfinite(gs[i]);
  k->q = k->pm = k->gabs = k->gx = 0;
  k->ovf = 0;
  if (!k->finite) return;
  mpfr_t d;
  mpfr_init2(d, WPREC);
  mpfr_set_zero(c->t, 1);
  mpfr_set_zero(c->y, 1);
  double aw = fabs(k->w), ar = fabs(k->r), amu = fabs(k->mu), xmax = 0;
  for (int64_t i = 0; i < m; i++) {
    mpfr_add_d(c->t, c->t, gs[i], MPFR_RNDN);
    mpfr_set_d(d, xs[i], MPFR_RNDN);
    mpfr_sub_d(d, d, k->mu, MPFR_RNDN);
    mpfr_mul_d(d, d, gs[i], MPFR_RNDN);
    mpfr_add(c->y, c->y, d, MPFR_RNDN);
    double ag = fabs(gs[i]), xm = oc_add_up(fabs(xs[i]), amu);
    k->gabs = oc_add_up(k->gabs, ag);
    k->gx = oc_add_up(k->gx, oc_mul_up(ag, xm));
    k->q = oc_add_up(k->q, oc_mul_up(aw, ag));
    k->pm = oc_add_up(k->pm, oc_mul_up(oc_mul_up(oc_mul_up(aw, ag), xm), ar));
    xmax = fmax(xmax, xm);
  }
  mpfr_clear(d);
  /* ATen's proj = dot invstd^2 / M, then (x - mean) proj, and forms from
   * invstd^3: overflow there makes a kernel's Inf or NaN inconclusive */
  double r3 = oc_mul_up(oc_mul_up(ar, ar), ar);
  k->ovf = !(fmax(r3, oc_mul_up(oc_mul_up(oc_mul_up(r3, k->gx), xmax), aw + 1)) < c->top) ||
           !(oc_mul_up(k->gx, ar + 1) < c->top);
}

/* dx_i = w r (g_i - A / M - (x_i - mu) r^2 B / M) (c->t: A, c->y: B). */
static void dx_elem(struct bn_ctx *c, const struct bn_back *k, int64_t m, double x, double g,
                    mpfr_ptr res, struct oc_elem *e) {
  double md = (double)m;
  mpfr_set_d(res, x, MPFR_RNDN);
  mpfr_sub_d(res, res, k->mu, MPFR_RNDN);
  mpfr_mul_d(res, res, k->r, MPFR_RNDN);
  mpfr_mul_d(res, res, k->r, MPFR_RNDN);
  mpfr_mul(res, res, c->y, MPFR_RNDN);
  mpfr_add(res, res, c->t, MPFR_RNDN);
  mpfr_div_si(res, res, (long)m, MPFR_RNDN);
  mpfr_d_sub(res, g, res, MPFR_RNDN);
  mpfr_mul_d(res, res, k->r, MPFR_RNDN);
  mpfr_mul_d(res, res, k->w, MPFR_RNDN);
  double ar = fabs(k->r), xk = oc_mul_up(oc_add_up(fabs(x), fabs(k->mu)), ar);
  double mag = oc_mul_up(ar, oc_add_up(oc_add_up(fabs(k->w * g), oc_div_up(k->q, md)),
                                       oc_mul_up(xk, oc_div_up(k->pm, md))));
  double yv = mpfr_get_d(res, MPFR_RNDN), rad = oc_mul_up(oc_add_up(mag, fabs(yv)), 64 * REL);
  e->lo = oc_down(yv - rad);
  e->hi = oc_up(yv + rad);
  e->pre = oc_add_up(oc_mul_up(oc_gamma(md + 10, c->u), mag), oc_mul_up(32 * c->eta, 1 + mag));
  /* A and B through narrower partials: their errors, scaled as in mag */
  double pa = partial_err(c, k->q, m), pb = partial_err(c, k->pm, m);
  if (pa > 0 || pb > 0)
    e->pre = oc_add_up(e->pre, oc_mul_up(oc_mul_up(ar, oc_add_up(pa, oc_mul_up(xk, pb)) / md),
                                         1 + oc_gamma(md + 10, c->u)));
  e->pre_set = 1;
  e->bound = oc_out_bound(c->p, fmax(fabs(e->lo), fabs(e->hi)), e->pre);
  if (e->bound != e->bound) e->bound = INFINITY;
}

/* Eval mode's dx = g w invstd, invstd = 1 / sqrt(running_var + eps) (s:
 * eval_stats). Returns 1 where no verdict is derivable. */
static int eval_dx_elem(struct bn_ctx *c, const struct bn_stat *s, double g, double w,
                        struct oc_elem *e) {
  if (!isfinite(g) || !isfinite(w) || !(s->rho < INFINITY)) {
    /* in IEEE double, either association: the kernel's value one of
     * them, or their common value where an input is special */
    double r = 1 / sqrt(s->vb + c->eps), f1 = g * w * r, f2 = g * (w * r);
    e->exact_only = 1;
    if (same_value(e->k, f1) || same_value(e->k, f2)) {
      e->lo = e->hi = e->k;
      return 0;
    }
    if ((isfinite(g) && isfinite(w) && isfinite(s->vb)) || !same_value(f1, f2)) return 1;
    e->lo = e->hi = f1;
    return 0;
  }
  mpfr_mul_d(c->y, c->r, g, MPFR_RNDN);
  mpfr_mul_d(c->y, c->y, w, MPFR_RNDN);
  double agw = fabs(g * w), big_r = oc_mul_up(s->r, 1 + s->rho);
  double pre = oc_add_up(oc_mul_up(oc_mul_up(agw, s->r), s->rho),
                         oc_mul_up(oc_gamma(3, c->u), oc_mul_up(agw, big_r)));
  value_elem(c, oc_add_up(pre, oc_mul_up(4 * c->eta, 1 + big_r)), e);
  return 0;
}

/* ------------------------------------------------------- ops */

static int is_elementwise_out(enum oc_opid op) {
  return op == OC_ID_BATCH_NORM || op == OC_ID_BATCH_NORM_EVAL || op == OC_ID_BATCH_NORM_BACKWARD ||
         op == OC_ID_BATCH_NORM_EVAL_BACKWARD;
}

static int args_ok(enum oc_opid op, const struct oc_batch_norm_args *a,
                   const struct oc_tensor *out) {
  const struct oc_tensor *x = a->x;
  if (!x || x->rank < 2 || !out) return 0;
  int64_t nc = x->shape[1];
  if (!chan_vector_ok(a->weight, nc) || !chan_vector_ok(a->bias, nc) ||
      !chan_vector_ok(a->mean, nc) || !chan_vector_ok(a->invstd, nc) ||
      !chan_vector_ok(a->running_mean, nc) || !chan_vector_ok(a->running_var, nc))
    return 0;
  if (is_elementwise_out(op) ? !same_shape(out, x) : !(out->rank == 1 && out->shape[0] == nc))
    return 0;
  int back = op == OC_ID_BATCH_NORM_BACKWARD || op == OC_ID_BATCH_NORM_BACKWARD_WEIGHT ||
             op == OC_ID_BATCH_NORM_BACKWARD_BIAS || op == OC_ID_BATCH_NORM_EVAL_BACKWARD;
  if (back && (!a->g || !same_shape(a->g, x))) return 0;
  if (op == OC_ID_BATCH_NORM_BACKWARD && (!a->mean || !a->invstd)) return 0;
  if (op == OC_ID_BATCH_NORM_BACKWARD_WEIGHT && (!a->mean || (!a->invstd && !a->running_var)))
    return 0;
  if (op == OC_ID_BATCH_NORM_EVAL_BACKWARD && !a->running_var) return 0;
  if (op == OC_ID_BATCH_NORM_EVAL && (!a->running_mean || !a->running_var)) return 0;
  if (op == OC_ID_BATCH_NORM_RUNNING_MEAN && !a->running_mean) return 0;
  if (op == OC_ID_BATCH_NORM_RUNNING_VAR && !a->running_var) return 0;
  return 1;
}

/* One channel's outputs. */
static void run_channel(struct bn_ctx *c, enum oc_opid op, const struct oc_batch_norm_args *a,
                        int64_t ch, const double *xs, const double *gs, int64_t m,
                        const int64_t *ooff, const struct oc_tensor *out, struct oc_acc *acc,
                        struct oc_check *chk, struct oc_verdict *v) {
  int64_t idx[OC_MAX_RANK] = {0};
  double w = per_chan(a->weight, ch, 1), b = per_chan(a->bias, ch, 0);
  struct bn_stat s;
  struct oc_elem e;
  if (op == OC_ID_BATCH_NORM || op == OC_ID_BATCH_NORM_EVAL) {
    if (op == OC_ID_BATCH_NORM)
      batch_stats(c, xs, m, acc, &s);
    else
      eval_stats(c, per_chan(a->running_mean, ch, 0), per_chan(a->running_var, ch, 1), &s);
    for (int64_t j = 0; j < m; j++) {
      memset(&e, 0, sizeof e);
      e.prob = INFINITY;
      e.k = oc_tensor_at(out, ooff[j] + ch * out->stride[1]);
      if (op == OC_ID_BATCH_NORM && (s.nan || s.inf)) {
        /* a NaN: the mean is NaN on every path, and so is y; an Inf: the
         * mean is Inf or NaN, and y NaN or Inf (a kernel that clamps its
         * NaN variance at 0 keeps x - Inf) */
        e.lo = e.hi = NAN;
        e.exact_only = 1;
        e.alt_ok = !s.nan && isinf(e.k);
      } else if (y_elem(c, &s, xs[j], w, b, &e)) {
        v->checked++;
        oc_check_inconclusive(chk, "a variance within its error of -eps: no bound for y");
        continue;
      }
      chan_index(out, ch, j, idx);
      oc_check_elem(chk, &e, idx);
    }
    return;
  }
  idx[0] = ch;
  memset(&e, 0, sizeof e);
  e.prob = INFINITY;
  if (op == OC_ID_BATCH_NORM_EVAL_BACKWARD) {
    eval_stats(c, 0, per_chan(a->running_var, ch, 1), &s);
    for (int64_t j = 0; j < m; j++) {
      memset(&e, 0, sizeof e);
      e.prob = INFINITY;
      e.k = oc_tensor_at(out, ooff[j] + ch * out->stride[1]);
      chan_index(out, ch, j, idx);
      if (eval_dx_elem(c, &s, gs[j], w, &e)) {
        v->checked++;
        oc_check_inconclusive(chk, "a variance within its error of -eps: no bound for dx");
        continue;
      }
      oc_check_elem(chk, &e, idx);
    }
    return;
  }
  if (op == OC_ID_BATCH_NORM_BACKWARD || op == OC_ID_BATCH_NORM_BACKWARD_WEIGHT) {
    struct bn_back k;
    memset(&k, 0, sizeof k);
    k.mu = per_chan(a->mean, ch, 0);
    k.r = per_chan(a->invstd, ch, 1);
    k.w = op == OC_ID_BATCH_NORM_BACKWARD ? w : 1;
    /* eval mode (no saved invstd): 1 / sqrt(running_var + eps), exact in
     * c->r, the kernel's within rho of it */
    int eval = !a->invstd;
    if (eval) {
      eval_stats(c, 0, per_chan(a->running_var, ch, 1), &s);
      k.r = s.rho < INFINITY ? s.r : NAN;
    }
    back_sums(c, xs, gs, m, &k);
    mpfr_t res;
    mpfr_init2(res, WPREC);
    for (int64_t j = 0; j < (op == OC_ID_BATCH_NORM_BACKWARD ? m : 1); j++) {
      memset(&e, 0, sizeof e);
      e.prob = INFINITY;
      if (op == OC_ID_BATCH_NORM_BACKWARD) {
        e.k = oc_tensor_at(out, ooff[j] + ch * out->stride[1]);
        chan_index(out, ch, j, idx);
      } else {
        e.k = oc_tensor_at(out, ch * out->stride[0]);
      }
      if (!k.finite) { /* no bound: a NaN kernel value is consistent, nothing else proven */
        if (e.k != e.k) {
          e.lo = e.hi = NAN;
          e.exact_only = 1;
          oc_check_elem(chk, &e, idx);
        } else {
          v->checked++;
          oc_check_inconclusive(chk, "a channel holds Inf or NaN: no bound for its gradient");
        }
        continue;
      }
      e.ovf_ok = k.ovf;
      if (op == OC_ID_BATCH_NORM_BACKWARD) {
        dx_elem(c, &k, m, xs[j], gs[j], res, &e);
        e.ovf_ok |= k.ovf;
      } else { /* sum g (x - mu) r */
        double ar = fabs(k.r), rho = eval ? s.rho : 0;
        if (eval)
          mpfr_mul(c->y, c->y, c->r, MPFR_RNDN);
        else
          mpfr_mul_d(c->y, c->y, k.r, MPFR_RNDN);
        double big_r = oc_mul_up(ar, 1 + rho);
        double pre =
            oc_add_up(oc_add_up(oc_mul_up(oc_gamma((double)m + 3, c->u), oc_mul_up(big_r, k.gx)),
                                oc_mul_up(oc_mul_up(ar, rho), k.gx)),
                      oc_mul_up(c->eta, (double)m + 4));
        double pb = partial_err(c, k.gx, m);
        if (pb > 0)
          pre = oc_add_up(pre, oc_mul_up(oc_mul_up(big_r, pb), 1 + oc_gamma((double)m + 3, c->u)));
        value_elem(c, pre, &e);
      }
      oc_check_elem(chk, &e, idx);
    }
    mpfr_clear(res);
    return;
  }
  e.k = oc_tensor_at(out, ch * out->stride[0]);
  if (op == OC_ID_BATCH_NORM_BACKWARD_BIAS) {
    oc_acc_clear(acc);
    double gabs = 0, sd = 0;
    for (int64_t j = 0; j < m; j++) {
      oc_acc_add(acc, gs[j]);
      sd += gs[j];
      gabs = oc_add_up(gabs, fabs(gs[j]));
    }
    if (!isfinite(sd) || oc_acc_is_nan(acc)) { /* IEEE on every order */
      e.lo = e.hi = sd;
      e.exact_only = 1;
    } else {
      oc_elem_sum(&e, acc, (double)m, gabs, c->u, c->eta, oc_overflow_threshold(c->p->acc), c->p);
      double pa = partial_err(c, gabs, m);
      if (pa > 0) {
        e.pre = oc_add_up(e.pre, oc_mul_up(pa, 1 + oc_gamma((double)m, c->u)));
        e.bound = oc_out_bound(c->p, fmax(fabs(e.lo), fabs(e.hi)), e.pre);
      }
    }
    oc_check_elem(chk, &e, idx);
    return;
  }
  batch_stats(c, xs, m, acc, &s);
  double old = op == OC_ID_BATCH_NORM_RUNNING_MEAN  ? per_chan(a->running_mean, ch, 0)
               : op == OC_ID_BATCH_NORM_RUNNING_VAR ? per_chan(a->running_var, ch, 0)
                                                    : 0;
  chan_elem(c, op, &s, old, a->momentum, &e);
  oc_check_elem(chk, &e, idx);
}

int oc_check_batch_norm(enum oc_opid op, const struct oc_batch_norm_args *a,
                        const struct oc_tensor *out, const struct oc_profile *p,
                        const struct oc_options *o, struct oc_verdict *v) {
  const struct oc_op_info *info = oc_op_by_id(op);
  if (!info || info->cls != OC_CLASS_BATCH_NORM || !a || !p || !v || !args_ok(op, a, out))
    return -1;
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  struct bn_ctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.u = oc_profile_u_acc(p);
  c.eta = fmax(oc_acc_eta(p), oc_format_info(p->acc)->min_subnormal);
  c.eps = a->eps;
  double sq = oc_sqrt_rel(p), dr = oc_div_rel(p);
  c.rs = fmax(oc_rsqrt_rel(p), oc_add_up(oc_add_up(sq, dr), oc_mul_up(sq, dr)));
  c.one_pass = p->norm == OC_NORM_ONE_PASS;
  if (p->partial && oc_unit_roundoff(p->partial_fmt) > c.u) {
    c.part = oc_gamma(PARTIAL_LEVELS + 1, oc_unit_roundoff(p->partial_fmt));
    c.part_eta = oc_format_info(p->partial_fmt)->min_subnormal / 2;
  }
  c.top = oc_overflow_threshold(p->acc) / 4;
  if (oc_unit_roundoff(a->stat_fmt) > c.u) {
    c.us = oc_unit_roundoff(a->stat_fmt);
    c.etas = oc_format_info(a->stat_fmt)->min_subnormal;
  }
  int64_t m = 0, mo = 0, mg = 0;
  const struct oc_tensor *g = a->g;
  int64_t *xoff = chan_offsets(a->x, &m);
  int64_t *ooff = is_elementwise_out(op) ? chan_offsets(out, &mo) : NULL;
  int64_t *goff = g ? chan_offsets(g, &mg) : NULL;
  double *xs = malloc((size_t)(m ? m : 1) * sizeof *xs);
  double *gs = malloc((size_t)(m ? m : 1) * sizeof *gs);
  struct oc_acc *acc = oc_acc_new();
  int ok = xoff && xs && gs && acc && (ooff || !is_elementwise_out(op)) && (goff || !g);
  if (ok) {
    mpfr_inits2(WPREC, c.mu, c.vu, c.r, c.t, c.y, (mpfr_ptr)0);
    struct oc_check chk;
    oc_check_init(&chk, info->name, p, o, v, oc_tensor_numel(out), out->rank, NULL, NULL);
    for (int64_t ch = 0; ch < a->x->shape[1]; ch++) {
      for (int64_t j = 0; j < m; j++)
        xs[j] = oc_tensor_at(a->x, xoff[j] + ch * a->x->stride[1]);
      for (int64_t j = 0; g && j < m; j++)
        gs[j] = oc_tensor_at(g, goff[j] + ch * g->stride[1]);
      run_channel(&c, op, a, ch, xs, gs, m, ooff, out, acc, &chk, v);
    }
    oc_check_finish(&chk, 0);
    mpfr_clears(c.mu, c.vu, c.r, c.t, c.y, (mpfr_ptr)0);
  }
  free(xoff);
  free(ooff);
  free(goff);
  free(xs);
  free(gs);
  oc_acc_free(acc);
  return ok ? 0 : -1;
}
