/* oracle/attention.c — O = softmax(Q.K^T scale [+ causal mask]) . V per
 * query row: scores by Dot2 enclosures, softmax and P.V in MPFR, bound per
 * ORACLE.md §2 (score error through the softmax as e^{2 max ds}, the
 * softmax's own error, the cast of P, and the P.V accumulation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"
#include "verdict.h"

#define PREC 80
/* P_j (PREC bits) as PIECES doubles of at most 24 significant bits each,
 * so that each piece times a V element of fp32 or narrower is exact in
 * double and the P.V sum goes through the exact accumulator */
#define PIECES 4
#define PIECE_BITS 24
/* P_j below 2^-900 (a score ~620 below the row's max) takes the MPFR path:
 * its pieces could fall below double's range */
#define PIECE_MIN_EXP (-900)

/* Splits p (PREC bits, finite, nonzero) into PIECES doubles summing to it
 * exactly; r and c are scratch (PREC and PIECE_BITS bits). Returns 0, or
 * -1 when p is out of the pieces' range. */
static int split_pieces(mpfr_srcptr p, mpfr_ptr r, mpfr_ptr c, double *out, int64_t stride) {
  if (mpfr_get_exp(p) < PIECE_MIN_EXP) return -1;
  mpfr_set(r, p, MPFR_RNDN); /* exact: the same precision */
  for (int m = 0; m < PIECES; m++) {
    mpfr_set(c, r, MPFR_RNDZ);                  /* the top PIECE_BITS bits */
    out[m * stride] = mpfr_get_d(c, MPFR_RNDN); /* exact: c fits a double */
    mpfr_sub(r, r, c, MPFR_RNDN);               /* exact: the bits below them */
  }
  return mpfr_zero_p(r) ? 0 : -1; /* PIECES * PIECE_BITS >= PREC */
}

struct att {
  enum oc_format p_fmt;
};

/* in[0]: sum_j P_j|V_jk|, in[1]: max_j scale sum|q k_j|, in[2]: max|s_j|,
 * in[3]: score range, in[4]: keys n, in[5]: head dim d, in[6]: max_j |V_jk|. */
/* The absolute error one weight exp(s_j - m) may take from underflow in
 * format f: its smallest subnormal (exp near underflow is not correctly
 * rounded everywhere), its smallest normal under ftz. */
static double weight_step(const struct oc_profile *p, enum oc_format f) {
  const struct oc_format_info *fi = oc_format_info(f);
  return p->ftz ? ldexp(1, fi->emin_normal - 1) : fi->min_subnormal;
}

static double att_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  const struct att *a = ctx;
  double u = oc_profile_u_acc(p), n = e->in[4], d = e->in[5];
  double ds = oc_add_up(oc_mul_up(oc_gamma(d, u), e->in[1]), oc_mul_up(u, e->in[2]));
  double eps = oc_softmax_eps(p, e->in[3]);
  double resc = 0;
  if (p->softmax == OC_SOFTMAX_ONLINE) { /* numerator and denominator both rescaled */
    int64_t blk = p->online_block > 0 ? p->online_block : 1;
    double r = ceil(n / (double)blk) - 1;
    resc = oc_mul_up(
        2.02, oc_add_up(oc_mul_up(r, oc_add_up(oc_exp_rel(p, 0), u)),
                        oc_mul_up(u + (p->math == OC_MATH_PRECISE ? 0 : 2.4 * 0x1p-24), e->in[3])));
  }
  double sm = oc_softmax_rel(p, eps, eps, (int64_t)n, resc);
  double up = a->p_fmt == OC_FP32 || a->p_fmt == OC_FP64 ? 0 : oc_unit_roundoff(a->p_fmt);
  double rho = oc_up(
      oc_mul_up(oc_mul_up(oc_up(exp(oc_mul_up(2, ds))), oc_add_up(1, sm)), oc_add_up(1, up)) - 1);
  double g = oc_gamma(n, u);
  double f = oc_up(oc_mul_up(oc_add_up(1, rho), oc_add_up(1, g)) - 1);
  double b = oc_add_up(oc_mul_up(f, e->in[0]), oc_mul_up(oc_acc_eta(p), 2 * (n + 1)));
  /* Underflow of the unnormalised weights exp(s_j - m) <= 1 (in the
   * accumulator, then cast to p_format): each is off by at most the
   * format's smallest step absolutely, not relatively, and the division
   * by their sum (>= 1) only shrinks that; without this term a correct
   * kernel's subnormal-scale outputs (scores far apart) fail. */
  enum oc_format pf = a->p_fmt == OC_FP64 ? p->acc : a->p_fmt;
  double step = fmax(weight_step(p, pf), weight_step(p, p->acc));
  b = oc_add_up(b, oc_mul_up(oc_mul_up(n, step), e->in[6]));
  return oc_out_bound(p, fmax(fabs(e->lo), fabs(e->hi)), b);
}

int oc_check_attention(const struct oc_attention_args *args, const struct oc_tensor *out,
                       const struct oc_profile *p, const struct oc_options *o,
                       struct oc_verdict *v) {
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (!args || !out || !v || out->rank < 2) return -1;
  const struct oc_tensor *Q = args->q, *K = args->k, *V = args->v;
  int nl = out->rank - 2;
  int64_t Sq = out->shape[nl], Dv = out->shape[nl + 1], D = Q->shape[Q->rank - 1];
  int64_t Sk = K->shape[K->rank - 2];
  if (Q->shape[Q->rank - 2] != Sq || K->shape[K->rank - 1] != D || V->shape[V->rank - 2] != Sk ||
      V->shape[V->rank - 1] != Dv)
    return -1;
  /* a batch of heads that does not broadcast against the output's (more
   * query heads than key heads, not split into groups) would be read
   * outside K and V */
  if (!oc_batch_fits(Q, nl, out->shape) || !oc_batch_fits(K, nl, out->shape) ||
      !oc_batch_fits(V, nl, out->shape))
    return -1;
  int64_t nb = 1;
  for (int d = 0; d < nl; d++)
    nb *= out->shape[d];
  struct att at = {args->p_fmt};
  struct oc_check c;
  oc_check_init(&c, "attention", p, o, v, nb * Sq * Dv, out->rank, att_bound, &at);
  int64_t cnt, nrand;
  struct oc_sample *plan = oc_sample_plan(nb, Sq, Dv, o, NULL, 0, &cnt, &nrand);
  /* Every element of a planned row is checked: the row's softmax is the cost. */
  uint8_t *rowmark = calloc((size_t)(nb * Sq > 0 ? nb * Sq : 1), 1);
  double *q = malloc((size_t)(D ? D : 1) * 8), *kr = malloc((size_t)(D ? D : 1) * 8);
  double *s = malloc((size_t)(Sk ? Sk : 1) * 8), *sab = malloc((size_t)(Sk ? Sk : 1) * 8);
  double *pj = malloc((size_t)(Sk ? Sk : 1) * 8), *vc = malloc((size_t)(Sk ? Sk : 1) * 8);
  mpfr_t *e = malloc((size_t)(Sk ? Sk : 1) * sizeof *e);
  double *pc = malloc((size_t)(Sk ? Sk : 1) * PIECES * 8);
  struct oc_acc *xacc = oc_acc_new();
  if (!plan || !rowmark || !q || !kr || !s || !sab || !pj || !vc || !e || !pc || !xacc) {
    free(plan), free(rowmark), free(q), free(kr), free(s), free(sab), free(pj), free(vc), free(e);
    free(pc), oc_acc_free(xacc);
    return -1;
  }
  for (int64_t j = 0; j < Sk; j++)
    mpfr_init2(e[j], PREC);
  mpfr_t S, t, acc, pr_, pc_;
  mpfr_inits2(PREC, S, t, acc, pr_, (mpfr_ptr)0);
  mpfr_init2(pc_, PIECE_BITS);
  /* V in fp32 or narrower: P.V by exact accumulation of the pieces'
   * products (a row whose P_j cannot be split takes the MPFR sum) */
  int v_exact = V->fmt != OC_FP64;
  for (int64_t r = 0; r < cnt; r++)
    rowmark[plan[r].b * Sq + plan[r].i] = 1;
  int64_t idx[OC_MAX_RANK];
  /* Q and K in fp32 or narrower: each q.k product is exact in double and
   * its FMA remainder +0 (as in matmul.c's dot2), so no libm fma call */
  int exact_products = Q->fmt != OC_FP64 && K->fmt != OC_FP64;
  for (int64_t b = 0; b < nb; b++) {
    int64_t oq = oc_batch_offset(Q, nl, out->shape, b), ok = oc_batch_offset(K, nl, out->shape, b);
    int64_t ov = oc_batch_offset(V, nl, out->shape, b),
            oo = oc_batch_offset(out, nl, out->shape, b);
    for (int64_t i = 0; i < Sq; i++) {
      if (!rowmark[b * Sq + i]) continue;
      oc_tensor_gather(Q, oq + i * Q->stride[Q->rank - 2], Q->stride[Q->rank - 1], D, q);
      int64_t n = args->causal ? (i + 1 < Sk ? i + 1 : Sk) : Sk;
      double m = -INFINITY, mn = INFINITY, smax = 0, sabmax = 0, radmax = 0;
      int bad = 0;
      for (int64_t j = 0; j < n; j++) {
        oc_tensor_gather(K, ok + j * K->stride[K->rank - 2], K->stride[K->rank - 1], D, kr);
        double sum = 0, c2 = 0, sa = 0, plain = 0;
        for (int64_t d = 0; d < D; d++) { /* Dot2: TwoSum on exact-or-split products */
          double pr = q[d] * kr[d], pe = exact_products ? 0.0 : fma(q[d], kr[d], -pr);
          double tt = sum + pr, z = tt - sum;
          c2 += (sum - (tt - z)) + (pr - z) + pe;
          sum = tt;
          sa += fabs(pr);
          plain += pr;
        }
        /* an infinite product: the score is that infinity (or NaN), which
         * TwoSum's Inf - Inf would turn into NaN */
        s[j] = isfinite(plain) ? args->scale * (sum + c2) : args->scale * plain;
        if (s[j] == -INFINITY) { /* weight exactly 0: no error, no range */
          sab[j] = 0;
          continue;
        }
        sab[j] = oc_mul_up(fabs(args->scale), oc_mul_up(sa, 1 + 0x1p-50 * (double)(D + 2)));
        double g = oc_gamma((double)D + 2, 0x1p-53);
        double rad = oc_add_up(oc_mul_up(0x1p-51, fabs(s[j])), oc_mul_up(oc_mul_up(g, g), sab[j]));
        bad |= !isfinite(s[j]); /* NaN or +Inf: the whole row is NaN */
        m = fmax(m, s[j]);
        mn = fmin(mn, s[j]);
        smax = fmax(smax, fabs(s[j]));
        sabmax = fmax(sabmax, sab[j]);
        radmax = fmax(radmax, rad);
      }
      bad |= n > 0 && m == -INFINITY; /* every weight exp(-inf - -inf): NaN */
      if (!bad && n > 0) {
        mpfr_set_zero(S, 1);
        for (int64_t j = 0; j < n; j++) {
          mpfr_set_d(t, s[j] - m, MPFR_RNDN);
          mpfr_exp(e[j], t, MPFR_RNDN);
          mpfr_add(S, S, e[j], MPFR_RNDN);
        }
        /* e[j] becomes P_j = e_j / S, rounded once per row (not once per
         * output column): the P.V sums below read it Dv times */
        for (int64_t j = 0; j < n; j++) {
          mpfr_div(e[j], e[j], S, MPFR_RNDN);
          pj[j] = mpfr_get_d(e[j], MPFR_RNDN);
        }
      }
      int pieces = v_exact && !bad && n > 0;
      for (int64_t j = 0; j < n && pieces; j++) {
        if (mpfr_zero_p(e[j])) {
          for (int h = 0; h < PIECES; h++)
            pc[h * Sk + j] = 0;
        } else if (split_pieces(e[j], pr_, pc_, pc + j, Sk)) {
          pieces = 0;
        }
      }
      /* reference error: score enclosure through softmax, plus MPFR/double rounding */
      double refrel = oc_add_up(oc_up(expm1(oc_mul_up(4, radmax))), 0x1p-60 * (double)(n + 8));
      /* a weight at least this large is nonzero in any kernel of the
       * profile (well above where exp(s_j - m) underflows in the
       * accumulator or in p_format); a smaller one may be 0 there */
      double wmin = 0x1p10 * fmax(weight_step(p, args->p_fmt == OC_FP64 ? p->acc : args->p_fmt),
                                  weight_step(p, p->acc));
      int64_t nread = args->causal ? Sk : n; /* masked keys [n, Sk) */
      for (int64_t k = 0; k < Dv; k++) {
        struct oc_elem el;
        memset(&el, 0, sizeof el);
        oc_tensor_gather(V, ov + k * V->stride[V->rank - 1], V->stride[V->rank - 2], nread, vc);
        /* Non-finite values of this V column (only this output column
         * depends on them): a NaN with any weight; an Inf, by sign (bit 0
         * +, bit 1 -), whose weight is surely nonzero (inf_def: the output
         * is that Inf; both signs: NaN) or may be 0 in the kernel
         * (inf_weak: Inf or 0 * Inf = NaN); one under a weight exactly 0
         * (a -inf score) or a masked key: 0 * v, or never read. */
        int nan_in = 0, inf_def = 0, inf_weak = 0, zero_nf = 0, masked_nf = 0;
        double vmax = 0;
        for (int64_t j = 0; j < nread && !bad; j++) {
          if (isfinite(vc[j])) {
            if (j < n && pj[j] != 0) vmax = fmax(vmax, fabs(vc[j]));
            continue;
          }
          int sg = vc[j] > 0 ? 1 : 2;
          if (j >= n)
            masked_nf = 1;
          else if (pj[j] == 0 && mpfr_zero_p(e[j]))
            zero_nf = 1;
          else if (isnan(vc[j]))
            nan_in = 1;
          else if (pj[j] >= wmin)
            inf_def |= sg;
          else
            inf_weak |= sg;
          vc[j] = 0; /* the finite part below leaves it out */
        }
        /* the expected special value (0: finite; 1 NaN; 2 +Inf; 3 -Inf)
         * and the other results a correct kernel may give instead */
        int want = 0, alt_nan = 0, alt_inf = 0;
        if (nan_in || inf_def == 3) {
          want = 1;
        } else if (inf_def) {
          want = inf_def == 1 ? 2 : 3;
          alt_nan = inf_weak != 0;
        } else if (inf_weak) {
          want = inf_weak == 3 ? 1 : inf_weak == 1 ? 2 : 3;
          alt_nan = inf_weak != 3;
          alt_inf = inf_weak == 3 ? 3 : 0;
        }
        int multiplied = masked_nf && args->masked == OC_MASKED_MULTIPLY;
        if (zero_nf && args->masked == OC_MASKED_MULTIPLY) multiplied = 1;
        if (multiplied) want = 1, alt_nan = 0, alt_inf = 0;
        if ((masked_nf || zero_nf) && args->masked == OC_MASKED_EITHER && want != 1) alt_nan = 1;
        if (zero_nf && args->masked == OC_MASKED_SKIP && want != 1) alt_nan = 1;
        if (bad || n == 0 || want == 1) {
          el.lo = el.hi = NAN;
        } else if (want) {
          el.lo = el.hi = want == 2 ? INFINITY : -INFINITY;
        } else {
          double pv = 0, pva = 0;
          for (int64_t j = 0; j < n; j++)
            pva += pj[j] * fabs(vc[j]);
          int done = 0;
          if (pieces) {
            /* the exact sum of P_j v_j, rounded once to double as the MPFR
             * path's sum is: the bound, which covers that path's 80-bit
             * roundings as well, covers this one */
            oc_acc_clear(xacc);
            for (int h = 0; h < PIECES; h++)
              oc_acc_add_dot(xacc, pc + h * Sk, 1, vc, 1, (size_t)n);
            if (oc_acc_is_exact(xacc)) {
              pv = oc_acc_round(xacc, MPFR_RNDN);
              done = 1;
            }
          }
          if (!done) {
            mpfr_set_zero(acc, 1);
            for (int64_t j = 0; j < n; j++) {
              mpfr_mul_d(t, e[j], vc[j], MPFR_RNDN);
              mpfr_add(acc, acc, t, MPFR_RNDN);
            }
            pv = mpfr_get_d(acc, MPFR_RNDN);
          }
          pva = oc_mul_up(pva, 1 + 0x1p-50 * (double)(n + 2));
          double rad = oc_add_up(oc_mul_up(oc_mul_up(pva, 1 + refrel), refrel), 1e-300);
          el.lo = oc_down(pv - rad);
          el.hi = oc_up(pv + rad);
          el.in[0] = oc_mul_up(pva, 1 + refrel);
          el.in[1] = sabmax;
          el.in[2] = smax;
          el.in[3] = m - mn;
          el.in[4] = (double)n;
          el.in[5] = (double)D;
          el.in[6] = vmax;
          el.bound = att_bound(p, &el, &at);
        }
        el.prob = INFINITY;
        el.k = oc_tensor_at(out, oo + i * out->stride[nl] + k * out->stride[nl + 1]);
        el.alt_ok = (alt_nan && isnan(el.k)) ||
                    (isinf(el.k) && (alt_inf >> (el.k < 0) & 1) && !bad && n > 0);
        oc_batch_index(nl, out->shape, b, idx);
        idx[nl] = i;
        idx[nl + 1] = k;
        oc_check_elem(&c, &el, idx);
      }
    }
  }
  oc_check_finish(&c, nrand);
  for (int64_t j = 0; j < Sk; j++)
    mpfr_clear(e[j]);
  mpfr_clears(S, t, acc, pr_, pc_, (mpfr_ptr)0);
  free(plan), free(rowmark), free(q), free(kr), free(s), free(sab), free(pj), free(vc), free(e);
  free(pc), oc_acc_free(xacc);
  return 0;
}
