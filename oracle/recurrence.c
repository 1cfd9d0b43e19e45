/* oracle/recurrence.c — gated delta rule forward (Gated DeltaNet; the
 * recurrent reference of flash-linear-attention): a double-double
 * reference and a rigorous bound carried along the recurrence with it,
 * E_t <= |A_t| E_{t-1} + local_t (ORACLE.md §2), tightened every step by a
 * per-column 2-norm bound that uses ||I - b k k^T||_2 <= max(1, |1 - b|k|^2|).
 *
 * Orientation (flash-linear-attention, fla/ops/gated_delta_rule naive /
 * fused_recurrent): the state S is dk x dv,
 *   S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T,  o_t = S_t^T (scale q_t),
 * computed there as h *= a; v' = b (v - h^T k); h += k v'^T; o = h^T (scale q).
 * The paper's dv x dk form S' = S^T (S'_t = a S'(I - b k k^T) + b v k^T,
 * o = S' q) is the same computation.
 *
 * Rounding model (profile's accumulator, unit u = oc_profile_u_acc): every
 * state element is a sum of products (a S_ij, a b k_i k_l S_lj, b k_i v_j);
 * whatever order a recurrent kernel uses, each product passes through at
 * most r = dk + 6 roundings (the dk-term dot h^T k, the cast of a, a*S,
 * v - w, b*, k_i*v'_j, h + ..), so |fl - exact(S_hat)| <= gamma_r(u) times
 * the same sum in absolute values (Higham ch. 3, Lemma 3.4 / eq. 3.4-3.5),
 * plus the exp error of a_t from oc_ulp_budget (CUDA guide, math mode of
 * the profile) and an underflow floor. Chunked (WY / UT-transform) kernels
 * evaluate a different expression and are not covered by this model. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "elementwise.h"
#include "verdict.h"

/* -------------------------------------------------- double-double arithmetic
 * Joldes, Muller, Popescu, "Tight and rigorous error bounds for basic
 * building blocks of double-word arithmetic" (ACM TOMS 2017): relative
 * errors 3u^2/(1-4u) (Alg. 6), 4u^2 (Alg. 12), 2u^2 (Alg. 9), u = 2^-53.
 * The reference's own error is bounded with the same recurrence using a
 * unit of 2^-100 per operation, which covers all three. */
struct dd {
  double hi, lo;
};
static inline struct dd fast_two_sum(double a, double b) {
  double s = a + b;
  return (struct dd){s, b - (s - a)};
}
static inline struct dd two_sum(double a, double b) {
  double s = a + b, ap = s - b, bp = s - ap;
  return (struct dd){s, (a - ap) + (b - bp)};
}
static inline struct dd dd_add(struct dd x, struct dd y) {
  struct dd s = two_sum(x.hi, y.hi), t = two_sum(x.lo, y.lo);
  struct dd v = fast_two_sum(s.hi, s.lo + t.hi);
  return fast_two_sum(v.hi, t.lo + v.lo);
}
static inline struct dd dd_mul(struct dd x, struct dd y) {
  double ch = x.hi * y.hi, cl1 = fma(x.hi, y.hi, -ch);
  double cl2 = fma(x.lo, y.hi, fma(x.hi, y.lo, x.lo * y.lo));
  return fast_two_sum(ch, cl1 + cl2);
}
static inline struct dd dd_mul_d(struct dd x, double y) {
  double ch = x.hi * y, cl1 = fma(x.hi, y, -ch);
  return fast_two_sum(ch, fma(x.lo, y, cl1));
}

/* Upward rounding of a nonnegative double result (round-to-nearest is
 * within half an ulp; adding at least one ulp covers it). Inline and
 * branch-free: the bound recurrence runs it ~20 times per state element. */
static inline double U(double x) { return x + (x * 0x1p-52 + 0x1p-1074); }

#define UR 0x1p-100     /* unit per double-double operation of the reference */
#define ETA_R 0x1p-1000 /* reference's absolute floor per step (dd underflow) */

struct gd {
  const struct oc_delta_args *a;
  const struct oc_tensor *out;
  struct oc_tensor gate, beta; /* [..., T, 1] views so oc_batch_offset applies */
  int nl, in_wide;
  int64_t T, K, V, nb;
  /* ladder: bounds of every element under one rung, filled per head on demand */
  char cached[OC_PROFILE_NAME_MAX];
  double *cache, *tlo, *thi;
  uint8_t *have;
  int oom;
};

static struct oc_tensor unit_last(const struct oc_tensor *t) {
  struct oc_tensor r = *t;
  if (r.rank < OC_MAX_RANK) {
    r.shape[r.rank] = 1;
    r.stride[r.rank] = 0;
    r.rank++;
  }
  return r;
}

/* Runs head b under profile p: lo/hi enclose the exact output, bnd is the
 * rigorous bound of the profile (row-major [T][V]); ovf (NULL: not wanted)
 * marks the outputs whose state may overflow the profile's accumulator on
 * the way (a kernel's Inf or NaN there is consistent with correct
 * arithmetic). Returns -1 on OOM. */
static int run_head(const struct gd *g, int64_t b, const struct oc_profile *p, double *lo,
                    double *hi, double *bnd, uint8_t *ovf) {
  const struct oc_delta_args *a = g->a;
  const int64_t T = g->T, K = g->K, V = g->V, KV = K * V;
  const int nl = g->nl;
  int64_t oq = oc_batch_offset(a->q, nl, g->out->shape, b);
  int64_t ok = oc_batch_offset(a->k, nl, g->out->shape, b);
  int64_t ov = oc_batch_offset(a->v, nl, g->out->shape, b);
  int64_t og = oc_batch_offset(&g->gate, nl, g->out->shape, b);
  int64_t ob = oc_batch_offset(&g->beta, nl, g->out->shape, b);
  /* S starts as the zero state: calloc's all-zero bits are +0.0 (IEEE 754) */
  struct dd *S = calloc((size_t)KV, sizeof *S), *w = malloc((size_t)V * sizeof *w);
  double *E = calloc((size_t)KV, 8), *Er = calloc((size_t)KV, 8);
  double *col = calloc((size_t)V * 12, 8), *kk = malloc((size_t)K * 8 * 3),
         *vv = malloc((size_t)V * 8);
  uint8_t *bad = calloc((size_t)V, 1);
  if (!S || !w || !E || !Er || !col || !kk || !vv || !bad) {
    free(S), free(w), free(E), free(Er), free(col), free(kk), free(vv), free(bad);
    return -1;
  }
  double *e = col, *er = col + V, *c = col + 2 * V, *cr = col + 3 * V, *cE = col + 4 * V;
  double *cEr = col + 5 * V, *n2 = col + 6 * V, *n2r = col + 7 * V, *s1 = col + 8 * V;
  double *s1r = col + 9 * V, *sh = col + 10 * V, *shr = col + 11 * V;
  double *k = kk, *q = kk + K, *qa = kk + 2 * K;

  /* Units and rounding counts of the profile (see the header comment). */
  double u = oc_profile_u_acc(p);
  double blk = p->block > 0 ? ceil((double)K / p->block) : 0;
  double th = oc_gamma((double)K + 6 + blk + g->in_wide, u);
  double tho = oc_gamma((double)K + 2 + blk + g->in_wide, u);
  if (p->tf32 && p->in == OC_FP32) { /* k twice and S once (q and S) rounded to tf32 */
    double f = U(1 + 0x1p-10);
    th = U(U(U(U(f * f) * f) * U(1 + th)) - 1);
    tho = U(U(U(f * f) * U(1 + tho)) - 1);
  }
  double thr = oc_gamma((double)K + 6, UR), thor = oc_gamma((double)K + 2, UR);
  double eta = oc_acc_eta(p), maxacc = oc_format_info(p->acc)->max_finite;
  enum oc_format mf = p->acc == OC_FP64 ? OC_FP64 : OC_FP32; /* the kernel's exp */
  double um = oc_unit_roundoff(mf), sub_m = oc_format_info(mf)->min_subnormal;
  mpfr_t m;
  mpfr_init2(m, 110);

  for (int64_t t = 0; t < T; t++) {
    oc_tensor_gather(a->k, ok + t * a->k->stride[a->k->rank - 2], a->k->stride[a->k->rank - 1], K,
                     k);
    oc_tensor_gather(a->q, oq + t * a->q->stride[a->q->rank - 2], a->q->stride[a->q->rank - 1], K,
                     q);
    oc_tensor_gather(a->v, ov + t * a->v->stride[a->v->rank - 2], a->v->stride[a->v->rank - 1], V,
                     vv);
    double gt = oc_tensor_at(&g->gate, og + t * g->gate.stride[g->gate.rank - 2]);
    double bt = oc_tensor_at(&g->beta, ob + t * g->beta.stride[g->beta.rank - 2]);
    struct dd al;
    double dal, dalr; /* |a_hat - a| for the kernel and the reference */
    if (a->gate_is_log) {
      mpfr_set_d(m, gt, MPFR_RNDN);
      mpfr_exp(m, m, MPFR_RNDN);
      al.hi = mpfr_get_d(m, MPFR_RNDN);
      mpfr_sub_d(m, m, al.hi, MPFR_RNDN);
      al.lo = isfinite(al.hi) ? mpfr_get_d(m, MPFR_RNDN) : 0;
      /* k ulps against the correctly rounded value: (2k+1)u relative, and
       * k+1/2 smallest subnormals where the result is subnormal. */
      double kb = oc_ulp_budget(OC_OP_EXP, mf, p->math, gt, 0);
      dal = U(U(U((2 * kb + 1) * um) * fabs(al.hi)) + U((kb + 1) * sub_m));
      dalr = U(UR * fabs(al.hi)) + ETA_R;
    } else {
      al = (struct dd){gt, 0};
      dal = g->in_wide ? U(u * fabs(gt)) : 0;
      dalr = 0;
    }
    double aa = U(U(fabs(al.hi))), ba = fabs(bt), k2 = 0, ka = 0, qn2 = 0, qmax = 0;
    for (int64_t i = 0; i < K; i++) {
      k2 = U(k2 + U(k[i] * k[i]));
      ka = fmax(ka, fabs(k[i]));
      struct dd qs = {q[i] * a->scale, fma(q[i], a->scale, -(q[i] * a->scale))};
      qa[i] = U(fabs(qs.hi));
      qn2 = U(qn2 + U(qa[i] * qa[i]));
      qmax = fmax(qmax, qa[i]);
    }
    double x = U(ba * k2);
    double rho = bt >= 0 ? fmax(1, U(x - 1)) : U(1 + x); /* ||I - b k k^T||_2 */
    double fl = U(U(2 * (double)K + 12) * U(U(1 + U(ba * ka)) * U(1 + ka)));
    double etas = U(eta * fl), etar = U(ETA_R * fl);

    /* pass 1: column sums of |k| times the state magnitudes; w = (a S)^T k */
    for (int64_t j = 0; j < V; j++)
      c[j] = cr[j] = cE[j] = cEr[j] = n2[j] = n2r[j] = 0, w[j] = (struct dd){0, 0};
    for (int64_t i = 0; i < K; i++) {
      double ki = fabs(k[i]);
      const struct dd *Si = S + i * V;
      const double *Ei = E + i * V, *Eri = Er + i * V;
      for (int64_t j = 0; j < V; j++) {
        double hr = U(fabs(Si[j].hi)), hk = U(U(hr + Eri[j]) + Ei[j]);
        c[j] = U(c[j] + U(ki * hk));
        cr[j] = U(cr[j] + U(ki * hr));
        cE[j] = U(cE[j] + U(ki * Ei[j]));
        cEr[j] = U(cEr[j] + U(ki * Eri[j]));
        w[j] = dd_add(w[j], dd_mul_d(dd_mul(al, Si[j]), k[i]));
      }
    }
    for (int64_t j = 0; j < V; j++) {
      w[j] = dd_mul_d(dd_add((struct dd){vv[j], 0}, (struct dd){-w[j].hi, -w[j].lo}), bt);
      /* largest intermediate of column j: must stay finite in the accumulator */
      if (!(U(U(aa * c[j]) + fabs(vv[j])) * 2 < maxacc)) bad[j] = 1;
    }
    /* pass 2: new state, local rounding bounds, componentwise propagation */
    for (int64_t i = 0; i < K; i++) {
      double ki = fabs(k[i]), bk = U(ba * ki);
      struct dd *Si = S + i * V;
      double *Ei = E + i * V, *Eri = Er + i * V;
      for (int64_t j = 0; j < V; j++) {
        double hr = U(fabs(Si[j].hi)), hk = U(U(hr + Eri[j]) + Ei[j]);
        double t1 = U(hk + U(bk * c[j])), t1r = U(hr + U(bk * cr[j]));
        double bv = U(bk * fabs(vv[j]));
        double lk = U(U(U(th * U(U(aa * t1) + bv)) + U(U(U(1 + th) * dal) * t1)) + etas);
        double lr = U(U(U(thr * U(U(aa * t1r) + bv)) + U(U(U(1 + thr) * dalr) * t1r)) + etar);
        Ei[j] = U(U(aa * U(Ei[j] + U(bk * cE[j]))) + lk);
        Eri[j] = U(U(aa * U(Eri[j] + U(bk * cEr[j]))) + lr);
        n2[j] = U(n2[j] + U(lk * lk));
        n2r[j] = U(n2r[j] + U(lr * lr));
        if (!(U(t1 + bv) * 2 < maxacc)) bad[j] = 1;
        Si[j] = dd_add(dd_mul(al, Si[j]), dd_mul_d(w[j], k[i]));
      }
    }
    for (int64_t j = 0; j < V; j++) {
      e[j] = U(U(U(aa * rho) * e[j]) + U(sqrt(n2[j])));
      er[j] = U(U(U(aa * rho) * er[j]) + U(sqrt(n2r[j])));
      s1[j] = s1r[j] = sh[j] = shr[j] = n2[j] = n2r[j] = 0;
      w[j] = (struct dd){0, 0};
    }
    /* pass 3: clip by the column norms, output o = S^T (scale q) */
    for (int64_t i = 0; i < K; i++) {
      struct dd qs = {q[i] * a->scale, fma(q[i], a->scale, -(q[i] * a->scale))};
      const struct dd *Si = S + i * V;
      double *Ei = E + i * V, *Eri = Er + i * V;
      for (int64_t j = 0; j < V; j++) {
        Ei[j] = Ei[j] < e[j] ? Ei[j] : e[j];
        Eri[j] = Eri[j] < er[j] ? Eri[j] : er[j];
        double hr = U(fabs(Si[j].hi)), hk = U(U(hr + Eri[j]) + Ei[j]);
        n2[j] = U(n2[j] + U(Ei[j] * Ei[j]));
        n2r[j] = U(n2r[j] + U(Eri[j] * Eri[j]));
        s1[j] = U(s1[j] + U(qa[i] * Ei[j]));
        s1r[j] = U(s1r[j] + U(qa[i] * Eri[j]));
        sh[j] = U(sh[j] + U(qa[i] * hk));
        shr[j] = U(shr[j] + U(qa[i] * hr));
        w[j] = dd_add(w[j], dd_mul(Si[j], qs));
      }
    }
    double qn = U(sqrt(qn2)), etao = U(U(eta * U(2 * (double)K + 4)) * U(1 + qmax));
    for (int64_t j = 0; j < V; j++) {
      e[j] = fmin(e[j], U(sqrt(n2[j])));
      er[j] = fmin(er[j], U(sqrt(n2r[j])));
      double bk = U(U(fmin(s1[j], U(qn * e[j])) + U(tho * sh[j])) + etao);
      double br = U(U(fmin(s1r[j], U(qn * er[j])) + U(thor * shr[j])) + U(ETA_R * U(K + 2.0)));
      double rad = U(br + fabs(w[j].lo)), y = w[j].hi;
      int64_t at = t * V + j;
      int state_ovf = bad[j] || !(U(sh[j] * 2) < maxacc);
      if (ovf) ovf[at] = (uint8_t)state_ovf;
      if (!isfinite(y) || !isfinite(rad)) {
        lo[at] = hi[at] = NAN;
        bnd[at] = INFINITY;
        continue;
      }
      lo[at] = oc_down(y - rad);
      hi[at] = oc_up(y + rad);
      if (state_ovf) bk = INFINITY; /* state may overflow */
      double fb = oc_out_bound(p, fmax(fabs(lo[at]), fabs(hi[at])), bk);
      bnd[at] = fb == fb ? fb : INFINITY;
    }
  }
  mpfr_clear(m);
  free(S), free(w), free(E), free(Er), free(col), free(kk), free(vv), free(bad);
  return 0;
}

/* in[0]: head, in[1]: t, in[2]: j. Recomputes the head's bounds under the
 * rung (the whole trajectory depends on the profile) and caches them. */
static double gd_bound(const struct oc_profile *p, const struct oc_elem *el, const void *ctx) {
  struct gd *g = (struct gd *)(uintptr_t)ctx;
  int64_t b = (int64_t)el->in[0], at = (int64_t)el->in[1] * g->V + (int64_t)el->in[2];
  int64_t TV = g->T * g->V;
  if (g->oom) return INFINITY;
  /* A rung whose one-step factor gamma_r(u) exceeds 1/8 bounds nothing
   * useful after a few steps (the bound grows like (1+gamma)^t): it would
   * "explain" any wrong recurrence (a forgotten decay as bf16 accumulation). */
  if (!(oc_gamma((double)g->K + 6, oc_profile_u_acc(p)) <= 0.125)) return INFINITY;
  if (!g->cache) {
    g->cache = malloc((size_t)(g->nb * TV) * 8);
    g->tlo = malloc((size_t)TV * 8);
    g->thi = malloc((size_t)TV * 8);
    g->have = calloc((size_t)g->nb, 1);
    if (!g->cache || !g->tlo || !g->thi || !g->have) {
      g->oom = 1;
      return INFINITY;
    }
  }
  if (strcmp(g->cached, p->name)) {
    memcpy(g->cached, p->name, sizeof g->cached);
    memset(g->have, 0, (size_t)g->nb);
  }
  if (!g->have[b]) {
    if (run_head(g, b, p, g->tlo, g->thi, g->cache + b * TV, NULL) < 0) {
      g->oom = 1;
      return INFINITY;
    }
    g->have[b] = 1;
  }
  return g->cache[b * TV + at];
}

int oc_check_gated_delta(const struct oc_delta_args *args, const struct oc_tensor *out,
                         const struct oc_profile *p, const struct oc_options *o,
                         struct oc_verdict *v) {
  struct oc_options od;
  if (!args || !out || !v || !p || !args->q || !args->k || !args->v || !args->gate || !args->beta ||
      out->rank < 2 || out->rank > OC_MAX_RANK - 1)
    return -1;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  const struct oc_tensor *Q = args->q, *K = args->k, *Vt = args->v;
  struct gd g;
  memset(&g, 0, sizeof g);
  g.a = args;
  g.out = out;
  g.nl = out->rank - 2;
  g.T = out->shape[g.nl];
  g.V = out->shape[g.nl + 1];
  if (Q->rank < 2 || K->rank < 2 || Vt->rank < 2 || args->gate->rank < 1 || args->beta->rank < 1 ||
      args->gate->rank >= OC_MAX_RANK || args->beta->rank >= OC_MAX_RANK)
    return -1;
  g.K = K->shape[K->rank - 1];
  if (Q->shape[Q->rank - 1] != g.K || Q->shape[Q->rank - 2] != g.T ||
      K->shape[K->rank - 2] != g.T || Vt->shape[Vt->rank - 2] != g.T ||
      Vt->shape[Vt->rank - 1] != g.V || args->gate->shape[args->gate->rank - 1] != g.T ||
      args->beta->shape[args->beta->rank - 1] != g.T || g.K < 1)
    return -1;
  g.gate = unit_last(args->gate);
  g.beta = unit_last(args->beta);
  g.nb = 1;
  for (int d = 0; d < g.nl; d++)
    g.nb *= out->shape[d];
  /* inputs wider than the accumulator are rounded once on the way in */
  int pa = oc_format_info(p->acc)->p;
  const struct oc_tensor *ins[5] = {Q, K, Vt, args->gate, args->beta};
  for (int i = 0; i < 5; i++)
    g.in_wide |= oc_format_info(ins[i]->fmt)->p > pa;

  struct oc_check c;
  int64_t TV = g.T * g.V;
  oc_check_init(&c, "gated_delta", p, o, v, g.nb * TV, out->rank, gd_bound, &g);
  double *lo = malloc((size_t)(TV ? TV : 1) * 8), *hi = malloc((size_t)(TV ? TV : 1) * 8);
  double *bd = malloc((size_t)(TV ? TV : 1) * 8);
  uint8_t *ovf = malloc((size_t)(TV ? TV : 1));
  int rc = lo && hi && bd && ovf ? 0 : -1;
  int64_t idx[OC_MAX_RANK];
  for (int64_t b = 0; b < g.nb && rc == 0; b++) {
    if (run_head(&g, b, p, lo, hi, bd, ovf) < 0) {
      rc = -1;
      break;
    }
    int64_t oo = oc_batch_offset(out, g.nl, out->shape, b);
    oc_batch_index(g.nl, out->shape, b, idx);
    for (int64_t t = 0; t < g.T; t++)
      for (int64_t j = 0; j < g.V; j++) {
        struct oc_elem el;
        memset(&el, 0, sizeof el);
        int64_t at = t * g.V + j;
        el.lo = lo[at];
        el.hi = hi[at];
        el.bound = bd[at];
        el.prob = INFINITY; /* no probabilistic model for the recurrence */
        /* the state may pass the accumulator's largest value on the way
         * (a 1e20 in k or v): Inf - Inf = NaN is what correct fp32
         * arithmetic gives there, so a special value proves nothing */
        el.ovf_ok = ovf[at];
        el.k = oc_tensor_at(out, oo + t * out->stride[g.nl] + j * out->stride[g.nl + 1]);
        /* A non-finite input (NaN, or Inf, whose IEEE result depends on the
         * evaluation order) makes the exact value NaN: any non-finite kernel
         * value is accepted there, a finite one is fail_special. */
        if (el.lo != el.lo && !isfinite(el.k)) el.k = NAN;
        el.in[0] = (double)b;
        el.in[1] = (double)t;
        el.in[2] = (double)j;
        idx[g.nl] = t;
        idx[g.nl + 1] = j;
        oc_check_elem(&c, &el, idx);
      }
  }
  if (rc == 0 && g.oom) oc_check_inconclusive(&c, "out of memory while explaining a failure");
  oc_check_finish(&c, 0);
  if (rc == 0 && g.oom && !oc_verdict_is_fail(v->kind)) v->kind = OC_INCONCLUSIVE;
  free(lo), free(hi), free(bd), free(ovf), free(g.cache), free(g.tlo), free(g.thi), free(g.have);
  return rc;
}
