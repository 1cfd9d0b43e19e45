/* oracle/attention_grad.c — oc_check_attention_backward: dq, dk or dv of
 * O = softmax(S) V, S = scale Q K^T (causal: key j > query i masked), from
 * q, k, v, the forward's output o and logsumexp lse, and dO = g:
 *   P_ij = softmax_j(S_i),  dP_ij = g_i . v_j,  D_i = sum_j P_ij dP_ij = g_i . O_i,
 *   dS_ij = P_ij (dP_ij - D_i),
 *   dq_i = scale sum_j dS_ij k_j,  dk_j = scale sum_i dS_ij q_i,  dv_j = sum_i P_ij g_i.
 *
 * Reference: the exact gradient of the exact forward at (q, k, v, g) (not
 * of the saved o and lse, which carry the forward's own rounding: the
 * bound below takes what they add). Computed in double with a rigorous
 * radius carried along (u = 2^-53, first order with 1% slack as
 * softmax.c's double rows; libm's exp and log trusted to OC_LIBM_ULPS,
 * else MPFR's): scores and dP by sequential sums (gamma_{D+2} sum|q k|),
 * the softmax row from its maximum (the shift cancels in P), D as sum_j P
 * dP, the final sums sequentially. The radius is ~1e-14 of the terms'
 * magnitudes, far below the kernel bound; it widens the enclosure, never
 * the bound.
 *
 * Bound: any evaluation order of the fused kernels (FlashAttention-2's
 * Algorithm 2, the memory-efficient and cuDNN kernels, ATen's CPU flash
 * kernel), with u the kernel's scalar unit (fp32), theta_n the profile's
 * dot bound (oc_dot_theta: tensor-core alignment, tf32 operands), u_p
 * the unit of p_fmt (P and dS cast to the input type before their
 * products; 0 without a cast):
 *  scores   |S~ - S| <= theta_D scale sum|q k| + 2u |S| (the scale's rounding
 *           to fp32 and the product's).
 *  P        recomputed as exp(S~ - lse~) from the saved lse: the argument
 *           is off by alpha = dS + |lse~ - lse| + gamma_6 (|S| + |lse~|)
 *           (exp2 with scale log2e and lse log2e: two constants, two
 *           products, the subtraction), where |lse~ - lse| is measured
 *           (the saved value against the exact one); exp's own budget
 *           e_exp (ORACLE.md §3): rho = (e^alpha - 1)(1 + e_exp) + e_exp
 *           relative; a weight near the accumulator's underflow also
 *           4 steps absolute (flush or subnormal).
 *  dP       theta_Dv sum|g v_j|.
 *  D        rowsum(g o) in fp32 from the saved o: theta_Dv sum|g o| +
 *           |g . o - D| (o's own rounding, measured); or sum_j P~ dP~:
 *           sum_j |P~ dP~ - P dP| + theta_n sum|P~ dP~|; the larger of the two.
 *  dS       P~ (dP~ - D~) rounded three times (the subtraction, the
 *           product, a scaling before the cast), then to p_fmt: E_ij =
 *           P |dP - D| f + |P~| (e_dP + e_D) g, g = (1 + u)^3 (1 + u_p),
 *           f = (1 + rho) g - 1; 2u |P~| (|dP| + |D|) g more for the
 *           expanded form P dP - P D; plus p_fmt's underflow step where
 *           |dS~| (or scale |dS~|, a kernel that scales first) may be
 *           below its smallest normal (step / scale then).
 *  dq, dk   |scale| (sum_j E_ij |k_j| + theta_n sum_j |dS~_ij| |k_j|), the
 *           sum over any order and split (atomics, blocks accumulated into
 *           fp32 with beta = 1): theta_n with 3 + n/16 further roundings
 *           (the scale, a product of fp32 dS, block partial sums).
 *  dv       sum_i (P ((1 + rho)(1 + u_p) - 1) + steps) |g_i| + theta_m sum_i
 *           |P~_ij| |g_i|.
 *  then the output rounding (oc_out_bound). The ladder keeps the first
 *  part and recomputes theta under a cheaper accumulation.
 * The saved lse more than LSE_OFF from the exact one (another convention,
 * a wrong forward): inconclusive for those rows. Special values: a head
 * with a NaN or Inf anywhere in q, k, v, o, g or lse (masked keys
 * included: ATen's CPU kernel computes 0 * (dP - D) there) is
 * inconclusive — PyTorch's fused backward kernels promise no particular
 * special value; with finite inputs a kernel NaN or Inf fails unless the
 * fp32 partial sums may overflow. ATen's CPU kernel accumulates dq, dk,
 * dv across blocks in the 16-bit output type: not covered by this
 * profile (the binding passes those calls through). */
#include <math.h>
#include <mpfr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "elementwise.h"
#include "verdict.h"

#define U 0x1p-53     /* the reference's arithmetic (double) */
#define TINY 0x1p-998 /* a softmax weight below 2^-1000: absolute slack */
#define LSE_OFF 0x1p-6
/* per output element: value, sum|terms|, radius, A, C, and for grouped
 * dk/dv the sum over the group's query heads of |that head's part| */
#define NSUM 6

struct agc {
  const struct oc_attention_grad_args *a;
  const struct oc_profile *p;
  int64_t Sq, Sk, D, Dv;
  double u, up;            /* kernel scalar unit; p_fmt's (0: no cast) */
  double ug, etag;         /* grouped dk/dv: each query head's part rounded to a
                              format of this unit and underflow step (0: not) */
  int64_t G;               /* query heads per key/value head */
  double nmin_acc, st_acc; /* accumulator: smallest normal, underflow step */
  double nmin_p, st_p;     /* p_fmt likewise */
  double th_d, th_dv;      /* score and dP / D dots */
  double L;                /* libm ulps trusted */
  int libm;
  mpfr_t mx, my;
};

/* One query row's quantities over its keys (arrays of Sk). */
struct arow {
  double *q, *g, *o;
  double *s, *sab, *P, *dp, *adp, *rdp, *rho;
  double *dS, *rdS, *E, *St, *EP, *Pt, *Pu;
  double ePx; /* relative radius of P (against P-hat) */
  int64_t n;
  double lse_off;
};

static double exp_d(struct agc *c, double x) {
  if (c->libm) return exp(x);
  mpfr_set_d(c->mx, x, MPFR_RNDN);
  mpfr_exp(c->my, c->mx, MPFR_RNDN);
  return mpfr_get_d(c->my, MPFR_RNDN);
}

static double log_d(struct agc *c, double x) {
  if (c->libm) return log(x);
  mpfr_set_d(c->mx, x, MPFR_RNDN);
  mpfr_log(c->my, c->mx, MPFR_RNDN);
  return mpfr_get_d(c->my, MPFR_RNDN);
}

/* |t| upward for a nonnegative sum known to double precision: the sum
 * times (1 + 2^-50 (n + 2)) covers its own rounding. */
static double sum_up(double s, int64_t n) { return oc_mul_up(s, 1 + 0x1p-50 * (double)(n + 2)); }

/* Query row i (r->q, g, o gathered, r->n keys) against the head's K and V
 * (rows of D and Dv). Returns 0, 1 when a score or dP overflows, 2 when
 * the saved lse is off (r->lse_off). */
static int row(struct agc *c, const double *K, const double *V, double lse_k, struct arow *r) {
  int64_t n = r->n, D = c->D, Dv = c->Dv;
  double scale = c->a->scale, as = fabs(scale);
  double m = -INFINITY, rsmax = 0;
  double gD = oc_gamma((double)D + 2, U), gDv = oc_gamma((double)Dv + 2, U);
  for (int64_t j = 0; j < n; j++) {
    double sum = 0, sa = 0, dsum = 0, da = 0;
    for (int64_t d = 0; d < D; d++) {
      double pr = r->q[d] * K[j * D + d];
      sum += pr;
      sa += fabs(pr);
    }
    for (int64_t d = 0; d < Dv; d++) {
      double pr = r->g[d] * V[j * Dv + d];
      dsum += pr;
      da += fabs(pr);
    }
    r->s[j] = scale * sum;
    r->sab[j] = oc_mul_up(as, sum_up(sa, D));
    r->dp[j] = dsum;
    r->adp[j] = sum_up(da, Dv);
    r->rdp[j] = oc_mul_up(gDv, r->adp[j]);
    if (!isfinite(r->s[j]) || !isfinite(r->sab[j]) || !isfinite(r->adp[j])) return 1;
    m = fmax(m, r->s[j]);
    rsmax = fmax(rsmax, oc_mul_up(gD, r->sab[j]));
  }
  if (n == 0) return 1;
  /* softmax from the row's maximum (softmax.c's row_double) */
  double S = 0, T = 0;
  for (int64_t j = 0; j < n; j++) {
    double t = r->s[j] - m, e = exp_d(c, t);
    if (e >= 0x1p-1000) T = fmax(T, fabs(t));
    r->P[j] = e;
    S += e;
  }
  double et = 1.01 * (oc_up(expm1(2 * rsmax + T * U)) + 2 * c->L * U);
  double eS = 1.01 * (et + (double)n * U + (double)n * 0x1p-1000);
  double eP = 1.01 * (et + eS + U);
  r->ePx = 1.01 * eP;
  double lS = log_d(c, S), lse_ref = m + lS;
  double rl = 1.01 * (2 * rsmax + 1.01 * eS + 2 * c->L * U * fabs(lS) + U * (fabs(m) + fabs(lS)));
  if (!isfinite(lse_k)) return 1;
  double dl = oc_add_up(oc_up(fabs(lse_k - lse_ref)), rl);
  if (!(dl <= LSE_OFF)) {
    r->lse_off = dl;
    return 2;
  }
  double Dh = 0, aD = 0, rD = 0;
  for (int64_t j = 0; j < n; j++) {
    r->P[j] /= S;
    r->Pu[j] = oc_add_up(oc_mul_up(r->P[j], 1 + r->ePx), TINY);
    Dh += r->P[j] * r->dp[j];
    aD += r->P[j] * fabs(r->dp[j]);
    rD = oc_add_up(rD, oc_add_up(oc_mul_up(oc_add_up(oc_mul_up(r->ePx, r->P[j]), TINY),
                                           oc_add_up(fabs(r->dp[j]), r->rdp[j])),
                                 oc_mul_up(r->P[j], r->rdp[j])));
  }
  rD = oc_add_up(rD, oc_mul_up(oc_gamma((double)n + 2, U), sum_up(aD, n)));
  double Do = 0, aDo = 0;
  for (int64_t d = 0; d < Dv; d++) {
    Do += r->g[d] * r->o[d];
    aDo += fabs(r->g[d] * r->o[d]);
  }
  aDo = sum_up(aDo, Dv);
  double rDo = oc_mul_up(gDv, aDo);
  /* the kernel's D: from the saved o, or as sum_j P~ dP~ */
  double e_o =
      oc_add_up(oc_add_up(oc_mul_up(c->th_dv, aDo), oc_up(fabs(Do - Dh))), oc_add_up(rDo, rD));
  double u = c->u, g6 = oc_gamma(6, u), lk = fabs(lse_k);
  double e_p = 0, a_p = 0;
  for (int64_t j = 0; j < n; j++) {
    double sabs = fabs(r->s[j]) + rsmax;
    double ds = oc_add_up(oc_mul_up(c->th_d, r->sab[j]), oc_mul_up(2 * u, sabs));
    double alpha = oc_add_up(oc_add_up(ds, dl), oc_mul_up(g6, oc_add_up(sabs, lk)));
    double ee = oc_exp_rel(c->p, r->s[j] - lse_k);
    r->rho[j] = oc_add_up(oc_mul_up(oc_up(expm1(alpha)), 1 + ee), ee);
    double pk = oc_mul_up(r->Pu[j], 1 + r->rho[j]);
    double stA = pk < c->nmin_acc * 0x1p30 ? 4 * c->st_acc : 0;
    double dpu = oc_add_up(oc_add_up(fabs(r->dp[j]), r->rdp[j]), oc_mul_up(c->th_dv, r->adp[j]));
    e_p = oc_add_up(e_p, oc_add_up(oc_mul_up(oc_add_up(oc_mul_up(r->rho[j], r->Pu[j]), stA), dpu),
                                   oc_mul_up(r->Pu[j], oc_mul_up(c->th_dv, r->adp[j]))));
    a_p = oc_add_up(a_p, oc_mul_up(oc_add_up(pk, stA), dpu));
  }
  e_p = oc_add_up(e_p, oc_mul_up(oc_dot_theta(c->p, n, 2), a_p));
  double eD = fmax(e_o, e_p);
  /* the subtraction, the product, a scaling before the cast; then the cast */
  double g2 = oc_mul_up(oc_mul_up(oc_mul_up(1 + u, 1 + u), 1 + u), 1 + c->up);
  for (int64_t j = 0; j < n; j++) {
    double rho = r->rho[j], Pu = r->Pu[j];
    double dd = oc_add_up(oc_add_up(oc_up(fabs(r->dp[j] - Dh)), r->rdp[j]), rD);
    double edP = oc_mul_up(c->th_dv, r->adp[j]);
    double pk = oc_mul_up(Pu, 1 + rho);
    double stA = pk < c->nmin_acc * 0x1p30 ? 4 * c->st_acc : 0;
    pk = oc_add_up(pk, stA);
    double f = oc_up(oc_mul_up(1 + rho, g2) - 1);
    double E = oc_add_up(oc_add_up(oc_mul_up(oc_mul_up(Pu, dd), f),
                                   oc_mul_up(oc_mul_up(pk, oc_add_up(edP, eD)), g2)),
                         oc_mul_up(oc_mul_up(stA, dd), g2));
    /* expanded P dP - P D: two roundings of the terms themselves */
    double big = oc_add_up(oc_add_up(fabs(r->dp[j]), fabs(Dh)),
                           oc_add_up(oc_add_up(r->rdp[j], rD), oc_add_up(edP, eD)));
    E = oc_add_up(E, oc_mul_up(oc_mul_up(oc_mul_up(2 * u, pk), big), g2));
    double pre =
        oc_mul_up(oc_mul_up(pk, oc_add_up(oc_add_up(dd, edP), eD)), oc_mul_up(1 + u, 1 + u));
    double fl = fmin(pre, oc_mul_up(pre, as)) < 2 * c->nmin_p ? c->st_p * fmax(1, 1 / as) : 0;
    r->E[j] = oc_add_up(E, fl);
    r->St[j] = oc_add_up(oc_mul_up(pre, 1 + c->up), fl);
    /* P~ cast to p_fmt (dV's operand) */
    double flp = pk < 2 * c->nmin_p ? c->st_p : 0;
    r->EP[j] = oc_add_up(oc_add_up(oc_mul_up(Pu, oc_up(oc_mul_up(1 + rho, 1 + c->up) - 1)),
                                   oc_mul_up(stA, 1 + c->up)),
                         flp);
    r->Pt[j] = oc_add_up(oc_mul_up(pk, 1 + c->up), flp);
    /* the reference dS and its radius */
    double dpd = r->dp[j] - Dh;
    r->dS[j] = r->P[j] * dpd;
    r->rdS[j] = oc_add_up(
        oc_add_up(oc_mul_up(oc_add_up(oc_mul_up(r->ePx, r->P[j]), TINY), dd),
                  oc_mul_up(r->P[j], oc_add_up(r->rdp[j], rD))),
        oc_mul_up(2.01 * U, oc_add_up(fabs(r->dS[j]), oc_mul_up(r->P[j], oc_up(fabs(dpd))))));
  }
  return 0;
}

/* in[0]: the part of the bound before the final sum (A), in[1]: the final
 * sum's magnitudes sum |terms~| (C), in[2]: its length, in[3]: further
 * roundings on each path. */
static double agrad_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  (void)ctx;
  double th = oc_dot_theta(p, (int64_t)e->in[2], (int)e->in[3]);
  double b = oc_add_up(e->in[0], oc_mul_up(th, e->in[1]));
  b = oc_add_up(b, oc_mul_up(oc_acc_eta(p), 2 * (e->in[2] + 1)));
  return oc_out_bound(p, fmax(fabs(e->lo), fabs(e->hi)), b);
}

/* Adds weight w's terms against the row x (cols) to the NSUM planes at t
 * (value, |terms|, radius, A, C: each a row of cols). Plain arithmetic:
 * the planes of nonnegative terms are inflated once, when judged
 * (sum_up), which covers every product's and addition's rounding. */
static void accumulate(double *restrict t, int64_t cols, const double *restrict x, double w,
                       double rw, double ew, double tw) {
  double aw = fabs(w);
  double *restrict t0 = t, *restrict t1 = t + cols, *restrict t2 = t + 2 * cols;
  double *restrict t3 = t + 3 * cols, *restrict t4 = t + 4 * cols;
  for (int64_t c = 0; c < cols; c++) {
    double ax = fabs(x[c]);
    t0[c] += w * x[c];
    t1[c] += aw * ax;
    t2[c] += rw * ax;
    t3[c] += ew * ax;
    t4[c] += tw * ax;
  }
}

/* Judges one element from its accumulated sums (t: NSUM doubles), n terms. */
static void judge(struct oc_check *chk, const struct agc *c, const double *t, int64_t n, double mul,
                  double k, const int64_t *idx) {
  struct oc_elem el;
  memset(&el, 0, sizeof el);
  double am = fabs(mul);
  double t1 = sum_up(t[1], n + 1), t2 = sum_up(t[2], n + 1), t3 = sum_up(t[3], n + 1);
  double t4 = sum_up(t[4], n + 1);
  double val = t[0] * mul;
  double rad = oc_mul_up(am, oc_add_up(t2, oc_mul_up(oc_gamma((double)n + 3, U), t1)));
  rad = oc_add_up(rad, oc_mul_up(U, fabs(val)));
  el.lo = oc_down(val - rad);
  el.hi = oc_up(val + rad);
  el.in[0] = oc_mul_up(am, t3);
  if (c->ug > 0) /* each head's part rounded (|part| from the value plane, plus its error) */
    el.in[0] = oc_add_up(
        el.in[0], oc_mul_up(am, oc_add_up(oc_mul_up(c->ug, oc_add_up(t[5], oc_mul_up(0x1p-40, t1))),
                                          oc_mul_up((double)c->G, c->etag))));
  el.in[1] = oc_mul_up(am, t4);
  el.in[2] = (double)n;
  el.in[3] = 3 + ceil((double)n / 16);
  el.bound = agrad_bound(c->p, &el, NULL);
  el.prob = INFINITY;
  /* fp32 partial sums of these magnitudes may overflow */
  el.ovf_ok = !(el.in[1] < oc_format_info(c->p->acc)->max_finite / 4);
  el.k = k;
  oc_check_elem(chk, &el, idx);
}

/* An element no bound is derived for (non-finite inputs, an off lse). */
static void unjudged(struct oc_check *chk, double k, const int64_t *idx) {
  struct oc_elem el;
  memset(&el, 0, sizeof el);
  el.bound = INFINITY;
  el.prob = INFINITY;
  el.ovf_ok = 1;
  el.k = k;
  oc_check_elem(chk, &el, idx);
}

static int all_finite(const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return 0;
  return 1;
}

/* t without its dim d, at index g there: a view (grouped-query heads). */
static void group_view(const struct oc_tensor *t, int d, int64_t g, struct oc_tensor *v) {
  *v = *t;
  v->data = (const char *)t->data + g * t->stride[d] * (int64_t)oc_format_size(t->fmt);
  for (int k = d; k < t->rank - 1; k++) {
    v->shape[k] = t->shape[k + 1];
    v->stride[k] = t->stride[k + 1];
  }
  v->rank--;
}

static int shapes_ok(const struct oc_attention_grad_args *a, const struct oc_tensor *out) {
  if (!a->q || !a->k || !a->v || !a->o || !a->g || !a->lse || !out) return 0;
  if (out->rank < 2 || a->q->rank < 2 || a->k->rank < 2 || a->v->rank < 2 || a->o->rank < 2 ||
      a->g->rank < 2 || a->lse->rank < 1)
    return 0;
  const struct oc_tensor *Q = a->q, *K = a->k, *V = a->v;
  int64_t Sq = Q->shape[Q->rank - 2], D = Q->shape[Q->rank - 1], Sk = K->shape[K->rank - 2];
  int64_t Dv = V->shape[V->rank - 1];
  if (K->shape[K->rank - 1] != D || V->shape[V->rank - 2] != Sk || Sk < 1) return 0;
  for (int t = 0; t < 2; t++) {
    const struct oc_tensor *x = t ? a->g : a->o;
    if (x->shape[x->rank - 2] != Sq || x->shape[x->rank - 1] != Dv) return 0;
  }
  if (a->lse->shape[a->lse->rank - 1] != Sq) return 0;
  int nl = out->rank - 2;
  /* every input's batch dims within out's (broadcast where 1): the
   * offsets stay inside each tensor */
  const struct oc_tensor *in5[5] = {a->q, a->k, a->v, a->o, a->g};
  for (int t = 0; t < 5; t++)
    if (!oc_batch_fits(in5[t], nl, out->shape)) return 0;
  const struct oc_tensor *L = a->lse;
  if (L->rank - 1 > nl) return 0;
  for (int d = 0; d < L->rank - 1; d++)
    if (L->shape[d] != 1 && L->shape[d] != out->shape[nl - (L->rank - 1) + d]) return 0;
  int64_t want_r = a->which == OC_ATTN_DQ ? Sq : Sk, want_c = a->which == OC_ATTN_DV ? Dv : D;
  if ((unsigned)a->which > OC_ATTN_DV || out->shape[nl] != want_r || out->shape[nl + 1] != want_c)
    return 0;
  return 1;
}

struct bufs {
  double *K, *V, *rowbuf, *acc;
  int64_t *slot, *marked;
  uint8_t *rowmark;
  struct oc_sample *plan;
  struct arow r;
};

static void bufs_free(struct bufs *b) {
  free(b->K), free(b->V), free(b->rowbuf), free(b->acc), free(b->slot), free(b->marked);
  free(b->rowmark), free(b->plan);
}

static int bufs_alloc(struct bufs *b, const struct agc *c, int64_t nrows_all, int64_t cols) {
  int64_t Sk = c->Sk, D = c->D, Dv = c->Dv, rows = c->a->which == OC_ATTN_DQ ? c->Sq : Sk;
  b->K = malloc((size_t)(Sk * D + 1) * 8);
  b->V = malloc((size_t)(Sk * Dv + 1) * 8);
  b->rowbuf = malloc((size_t)(D + 2 * Dv + 17 * Sk + 1) * 8);
  /* dq: one row's planes; dk, dv: every key row's (the marked ones) */
  b->acc = malloc((size_t)((c->a->which == OC_ATTN_DQ ? 1 : rows) * cols * NSUM + 1) * 8);
  b->slot = malloc((size_t)(rows + 1) * sizeof *b->slot);
  b->marked = malloc((size_t)(rows + 1) * sizeof *b->marked);
  b->rowmark = calloc((size_t)(nrows_all + 1), 1);
  if (!b->K || !b->V || !b->rowbuf || !b->acc || !b->slot || !b->marked || !b->rowmark) return -1;
  double *p = b->rowbuf;
  b->r.q = p, p += D;
  b->r.g = p, p += Dv;
  b->r.o = p, p += Dv;
  double **arr[] = {&b->r.s,  &b->r.sab, &b->r.P, &b->r.dp, &b->r.adp, &b->r.rdp, &b->r.rho,
                    &b->r.dS, &b->r.rdS, &b->r.E, &b->r.St, &b->r.EP,  &b->r.Pt,  &b->r.Pu};
  for (size_t i = 0; i < sizeof arr / sizeof *arr; i++)
    *arr[i] = p, p += Sk;
  return 0;
}

/* Gathers query row i of head b (q, g, o) into r; the row's lse value. */
static double gather_row(const struct agc *c, const int64_t *off, int64_t i, struct arow *r) {
  const struct oc_attention_grad_args *a = c->a;
  oc_tensor_gather(a->q, off[0] + i * a->q->stride[a->q->rank - 2], a->q->stride[a->q->rank - 1],
                   c->D, r->q);
  oc_tensor_gather(a->g, off[1] + i * a->g->stride[a->g->rank - 2], a->g->stride[a->g->rank - 1],
                   c->Dv, r->g);
  oc_tensor_gather(a->o, off[2] + i * a->o->stride[a->o->rank - 2], a->o->stride[a->o->rank - 1],
                   c->Dv, r->o);
  r->n = a->causal ? (i + 1 < c->Sk ? i + 1 : c->Sk) : c->Sk;
  return oc_tensor_at(a->lse, off[3] + i * a->lse->stride[a->lse->rank - 1]);
}

/* Whether every input value of head b is finite (K and V gathered). */
static int head_finite(const struct agc *c, struct bufs *bf, const int64_t *off) {
  if (!all_finite(bf->K, c->Sk * c->D) || !all_finite(bf->V, c->Sk * c->Dv)) return 0;
  for (int64_t i = 0; i < c->Sq; i++) {
    double l = gather_row(c, off, i, &bf->r);
    if (!isfinite(l) || !all_finite(bf->r.q, c->D) || !all_finite(bf->r.g, c->Dv) ||
        !all_finite(bf->r.o, c->Dv))
      return 0;
  }
  return 1;
}

static void why_row(struct oc_check *chk, int st, double off) {
  char buf[128];
  if (st == 2) {
    snprintf(buf, sizeof buf,
             "the saved logsumexp is %.3g from the scores' own (another convention or "
             "another forward)",
             off);
    oc_check_inconclusive(chk, buf);
  } else {
    oc_check_inconclusive(chk, "a score or dO.V overflows double: no bound derived");
  }
}

/* The row offsets of batch b in c->a's q, g, o and lse. */
static void offsets(const struct agc *c, const struct oc_tensor *out, int64_t b, int64_t *off) {
  const struct oc_attention_grad_args *a = c->a;
  int nl = out->rank - 2;
  off[0] = oc_batch_offset(a->q, nl, out->shape, b);
  off[1] = oc_batch_offset(a->g, nl, out->shape, b);
  off[2] = oc_batch_offset(a->o, nl, out->shape, b);
  off[3] = oc_batch_offset_rows(a->lse, 1, nl, out->shape, b); /* lse [.., S] */
}

/* dq: each marked query row of head b, whole. */
static void head_dq(struct agc *c, struct bufs *bf, struct oc_check *chk,
                    const struct oc_tensor *out, int64_t b, const int64_t *off, int64_t oo,
                    int fin) {
  int nl = out->rank - 2;
  int64_t idx[OC_MAX_RANK], D = c->D;
  oc_batch_index(nl, out->shape, b, idx);
  for (int64_t i = 0; i < c->Sq; i++) {
    if (!bf->rowmark[b * c->Sq + i]) continue;
    idx[nl] = i;
    double lse = gather_row(c, off, i, &bf->r);
    int st = fin ? row(c, bf->K, bf->V, lse, &bf->r) : 1;
    if (fin && st) why_row(chk, st, bf->r.lse_off);
    if (!st) {
      memset(bf->acc, 0, (size_t)(NSUM * D) * 8);
      for (int64_t j = 0; j < bf->r.n; j++)
        accumulate(bf->acc, D, bf->K + j * D, bf->r.dS[j], bf->r.rdS[j], bf->r.E[j], bf->r.St[j]);
    }
    for (int64_t col = 0; col < D; col++) {
      idx[nl + 1] = col;
      double k = oc_tensor_at(out, oo + i * out->stride[nl] + col * out->stride[nl + 1]);
      if (st) {
        unjudged(chk, k, idx);
        continue;
      }
      double t[NSUM];
      for (int q = 0; q < NSUM; q++)
        t[q] = bf->acc[q * D + col];
      judge(chk, c, t, bf->r.n, c->a->scale, k, idx);
    }
  }
}

/* dk, dv: the marked key rows of head b, each summed over every query row
 * that attends it. */
static void head_dkv(struct agc *c, struct bufs *bf, struct oc_check *chk,
                     const struct oc_tensor *out, int64_t b,
                     const struct oc_attention_grad_args *ga, int64_t G, int64_t oo, int fin) {
  int nl = out->rank - 2, dv = c->a->which == OC_ATTN_DV;
  int64_t off[4];
  int64_t cols = out->shape[nl + 1], nm = 0, jmin = c->Sk;
  int64_t idx[OC_MAX_RANK];
  oc_batch_index(nl, out->shape, b, idx);
  for (int64_t j = 0; j < c->Sk; j++) {
    bf->slot[j] = -1;
    if (!bf->rowmark[b * c->Sk + j]) continue;
    bf->slot[j] = nm;
    bf->marked[nm++] = j;
    if (j < jmin) jmin = j;
  }
  memset(bf->acc, 0, (size_t)(nm * cols * NSUM) * 8);
  /* per marked row: terms, and 1 where a row attending it is unjudged */
  int64_t *cnt = calloc((size_t)nm + 1, sizeof *cnt);
  uint8_t *bad = calloc((size_t)nm + 1, 1);
  if (!cnt || !bad) {
    free(cnt), free(bad);
    cnt = NULL, bad = NULL;
    oc_check_inconclusive(chk, "out of memory");
    fin = 0;
  }
  /* grouped dk/dv whose heads' parts are rounded (c->ug): the value plane
   * after the previous head, to take each head's part */
  double *prev = c->ug > 0 && G > 1 ? calloc((size_t)(nm * cols + 1), sizeof *prev) : NULL;
  if (c->ug > 0 && G > 1 && !prev) {
    oc_check_inconclusive(chk, "out of memory");
    fin = 0;
  }
  /* grouped-query attention: every query head of the group, in turn */
  for (int64_t gi = 0; gi < G && fin && nm; gi++) {
    c->a = &ga[gi];
    offsets(c, out, b, off);
    for (int64_t i = c->a->causal ? jmin : 0; i < c->Sq; i++) {
      double lse = gather_row(c, off, i, &bf->r);
      int st = row(c, bf->K, bf->V, lse, &bf->r);
      if (st) why_row(chk, st, bf->r.lse_off);
      for (int64_t m = 0; m < nm; m++) {
        int64_t j = bf->marked[m];
        if (j >= bf->r.n) continue; /* masked: no term */
        if (st) {
          bad[m] = 1;
          continue;
        }
        cnt[m]++;
        const double *x = dv ? bf->r.g : bf->r.q;
        double w = dv ? bf->r.P[j] : bf->r.dS[j];
        double rw = dv ? oc_add_up(oc_mul_up(bf->r.ePx, bf->r.P[j]), TINY) : bf->r.rdS[j];
        double ew = dv ? bf->r.EP[j] : bf->r.E[j], tw = dv ? bf->r.Pt[j] : bf->r.St[j];
        accumulate(bf->acc + m * cols * NSUM, cols, x, w, rw, ew, tw);
      }
    }
    for (int64_t m = 0; prev && m < nm; m++) {
      double *t = bf->acc + m * cols * NSUM, *pv = prev + m * cols;
      for (int64_t col = 0; col < cols; col++) {
        t[5 * cols + col] += fabs(t[col] - pv[col]);
        pv[col] = t[col];
      }
    }
  }
  free(prev);
  for (int64_t m = 0; m < nm; m++) {
    int64_t j = bf->marked[m];
    idx[nl] = j;
    const double *base = bf->acc + m * cols * NSUM;
    for (int64_t col = 0; col < cols; col++) {
      idx[nl + 1] = col;
      double k = oc_tensor_at(out, oo + j * out->stride[nl] + col * out->stride[nl + 1]);
      if (!fin || !bad || !cnt || bad[m]) {
        unjudged(chk, k, idx);
        continue;
      }
      double t[NSUM];
      for (int q = 0; q < NSUM; q++)
        t[q] = base[q * cols + col];
      judge(chk, c, t, cnt[m], dv ? 1.0 : c->a->scale, k, idx);
    }
  }
  free(cnt), free(bad);
}

int oc_check_attention_backward(const struct oc_attention_grad_args *args,
                                const struct oc_tensor *out, const struct oc_profile *p,
                                const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (!args || !v || !p || !out || out->rank < 2 || !args->q || !args->o || !args->g || !args->lse)
    return -1;
  /* dk, dv of grouped-query attention: q, o, g [.., G, Sq, *] and lse
   * [.., G, Sq], G query heads per key/value head, summed over the group */
  int64_t G = 1;
  int grouped = args->which != OC_ATTN_DQ && args->q->rank == out->rank + 1;
  if (grouped) {
    G = args->q->shape[args->q->rank - 3];
    if (args->o->rank != args->q->rank || args->g->rank != args->q->rank ||
        args->lse->rank != out->rank || args->o->shape[args->o->rank - 3] != G ||
        args->g->shape[args->g->rank - 3] != G || args->lse->shape[args->lse->rank - 2] != G ||
        G < 1)
      return -1;
  }
  struct oc_attention_grad_args *ga = calloc((size_t)G, sizeof *ga);
  struct oc_tensor *views = calloc((size_t)(4 * G), sizeof *views);
  if (!ga || !views) {
    free(ga), free(views);
    return -1;
  }
  for (int64_t gi = 0; gi < G; gi++) {
    ga[gi] = *args;
    if (!grouped) continue;
    struct oc_tensor *w = views + 4 * gi;
    group_view(args->q, args->q->rank - 3, gi, &w[0]), ga[gi].q = &w[0];
    group_view(args->o, args->o->rank - 3, gi, &w[1]), ga[gi].o = &w[1];
    group_view(args->g, args->g->rank - 3, gi, &w[2]), ga[gi].g = &w[2];
    group_view(args->lse, args->lse->rank - 2, gi, &w[3]), ga[gi].lse = &w[3];
  }
  if (!shapes_ok(&ga[0], out)) {
    free(ga), free(views);
    return -1;
  }
  args = &ga[0];
  struct agc c;
  memset(&c, 0, sizeof c);
  c.a = args, c.p = p;
  c.Sq = args->q->shape[args->q->rank - 2], c.D = args->q->shape[args->q->rank - 1];
  c.Sk = args->k->shape[args->k->rank - 2], c.Dv = args->v->shape[args->v->rank - 1];
  c.u = p->acc == OC_FP64 ? 0x1p-53 : 0x1p-24;
  c.up = args->p_fmt == OC_FP32 || args->p_fmt == OC_FP64 ? 0 : oc_unit_roundoff(args->p_fmt);
  c.G = G;
  /* profile partial=: ATen's flash backward computes grouped dk/dv per
   * query head into the output type (dk_expanded) and sums the heads; the
   * cuDNN backward's bf16 dv measured on the GPU needs the same */
  if (grouped && G > 1 && p->partial) {
    c.ug = oc_unit_roundoff(p->partial_fmt);
    c.etag = oc_format_info(p->partial_fmt)->min_subnormal / 2;
  }
  const struct oc_format_info *fa = oc_format_info(p->acc);
  const struct oc_format_info *fp = oc_format_info(c.up > 0 ? args->p_fmt : p->acc);
  c.nmin_acc = ldexp(1, fa->emin_normal - 1);
  c.st_acc = p->ftz ? c.nmin_acc : fa->min_subnormal;
  c.nmin_p = ldexp(1, fp->emin_normal - 1);
  c.st_p = p->ftz ? c.nmin_p : fp->min_subnormal;
  c.th_d = oc_dot_theta(p, c.D, 1);
  c.th_dv = oc_dot_theta(p, c.Dv, 1);
  c.libm = oc_libm_exp_log_trusted();
  c.L = c.libm ? OC_LIBM_ULPS : 1;
  mpfr_inits2(64, c.mx, c.my, (mpfr_ptr)0);
  int nl = out->rank - 2;
  int64_t nb = 1;
  for (int d = 0; d < nl; d++)
    nb *= out->shape[d];
  int64_t rows = out->shape[nl], cols = out->shape[nl + 1];
  struct bufs bf;
  memset(&bf, 0, sizeof bf);
  int64_t cnt = 0, nrand = 0;
  bf.plan = oc_sample_plan(nb, rows, cols, o, NULL, 0, &cnt, &nrand);
  if (!bf.plan || bufs_alloc(&bf, &c, nb * rows, cols)) {
    bufs_free(&bf);
    mpfr_clears(c.mx, c.my, (mpfr_ptr)0);
    free(ga), free(views);
    return -1;
  }
  static const char *const names[] = {"attention_backward[q]", "attention_backward[k]",
                                      "attention_backward[v]"};
  struct oc_check chk;
  oc_check_init(&chk, names[args->which], p, o, v, nb * rows * cols, out->rank, agrad_bound, NULL);
  for (int64_t r = 0; r < cnt; r++)
    bf.rowmark[bf.plan[r].b * rows + bf.plan[r].i] = 1;
  const struct oc_tensor *K = args->k, *V = args->v;
  for (int64_t b = 0; b < nb; b++) {
    int any = 0;
    for (int64_t i = 0; i < rows && !any; i++)
      any = bf.rowmark[b * rows + i];
    if (!any) continue;
    int64_t off[4];
    int64_t ok = oc_batch_offset(K, nl, out->shape, b), ov = oc_batch_offset(V, nl, out->shape, b);
    for (int64_t j = 0; j < c.Sk; j++) {
      oc_tensor_gather(K, ok + j * K->stride[K->rank - 2], K->stride[K->rank - 1], c.D,
                       bf.K + j * c.D);
      oc_tensor_gather(V, ov + j * V->stride[V->rank - 2], V->stride[V->rank - 1], c.Dv,
                       bf.V + j * c.Dv);
    }
    int fin = 1;
    for (int64_t gi = 0; gi < G && fin; gi++) {
      c.a = &ga[gi];
      offsets(&c, out, b, off);
      fin = head_finite(&c, &bf, off);
    }
    c.a = &ga[0];
    offsets(&c, out, b, off);
    if (!fin)
      oc_check_inconclusive(&chk, "NaN or Inf in the head's inputs: PyTorch's fused attention "
                                  "backward promises no particular result there");
    int64_t oo = oc_batch_offset(out, nl, out->shape, b);
    if (args->which == OC_ATTN_DQ)
      head_dq(&c, &bf, &chk, out, b, off, oo, fin);
    else
      head_dkv(&c, &bf, &chk, out, b, ga, G, oo, fin);
  }
  oc_check_finish(&chk, nrand);
  bufs_free(&bf);
  mpfr_clears(c.mx, c.my, (mpfr_ptr)0);
  free(ga), free(views);
  return 0;
}
