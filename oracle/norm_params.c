/* oracle/norm_params.c — the norms' parameter gradients (ops.def class
 * GRAD, through oc_check_grad): dweight and dbias of layer_norm, dweight
 * of rms_norm, column sums over the rows of the incoming gradient g [M, N]
 * with the forward's saved statistics (mean, rstd: [M, 1] or [M]):
 *   layer_norm_dweight  dw_j = sum_i g_ij (x_ij - mean_i) rstd_i
 *   rms_norm_dweight    dw_j = sum_i g_ij x_ij rstd_i
 *   layer_norm_dbias    db_j = sum_i g_ij
 * Every output element is checked, exactly: each term g (x - mean) rstd is
 * split into products of two values of at most 24 bits (g rstd is exact in
 * double, its two float halves times x and times mean each exact) and
 * summed in the Kulisch accumulator; inputs wider than fp32 (or a split
 * that is not exact) take MPFR at 256 bits, whose own error is added to
 * the bound.
 *
 * Bound, any order of the sum (ATen's CUDA GammaBetaBackward and CPU
 * LayerNormBackward kernels accumulate blocks of rows and then the blocks,
 * in acc_type): a term x-hat = (x - mean) rstd takes two roundings, or
 * three as x rstd - mean rstd (or x rstd + b with b = -mean rstd), and one
 * more times g: |t^ - t| <= gamma_4 a_i, a_i = |g| (|x| + |mean|) |rstd|
 * (magnitudes of both forms); the M computed terms summed in any order:
 * gamma_(M-1) sum |t^| <= gamma_(M-1) (sum |t| + gamma_4 sum a). Together
 * gamma_(M-1) sum |t| + gamma_4 (1 + gamma_(M-1)) sum a, plus an underflow
 * floor eta per rounding (5M of them), then the output's rounding
 * (oc_out_bound). (The sum's part scales with |g x-hat|, not with the
 * mean's magnitude: a dropped mean term stays far outside.) dbias: gamma_(M-1) sum |g| + M eta. u
 * and eta are the profile's accumulator's (fp32, or fp64 for fp64 tensors). A column with Inf or
 * NaN: the IEEE sum is NaN or Inf in every order where all orders agree (an Inf and no NaN or
 * opposite Inf: that Inf); otherwise inconclusive. */
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "exact.h"
#include "norm_params.h"
#include "verdict.h"

#define WPREC 256

/* Exactly representable in fp32 (a product of two such is exact in double
 * unless it underflows, which the accumulator reports). */
static int is_f32(double v) { return (double)(float)v == v; }

/* The statistic of row i (t: [M, 1] or [M]; NULL: 0). */
static double stat(const struct oc_tensor *t, int64_t i) {
  return t ? oc_tensor_at(t, i * t->stride[0]) : 0;
}

static int rows_ok(const struct oc_tensor *t, int64_t m) {
  if (!t) return 1;
  if (t->rank == 2) return t->shape[0] == m && t->shape[1] == 1;
  return t->rank == 1 && t->shape[0] == m;
}

/* Adds g (x - mu) rs to acc exactly; 0 when the split is not exact (the
 * caller takes MPFR). */
static int add_term(struct oc_acc *acc, double g, double x, double mu, double rs) {
  if (!is_f32(g) || !is_f32(x) || !is_f32(mu) || !is_f32(rs)) return 0;
  double a = g * rs; /* 48 bits: exact */
  double ah = (double)(float)a, al = a - ah;
  if (!is_f32(al)) return 0;
  oc_acc_add_product(acc, ah, x);
  oc_acc_add_product(acc, al, x);
  oc_acc_add_product(acc, -ah, mu);
  oc_acc_add_product(acc, -al, mu);
  return 1;
}

/* The column's IEEE value where every order gives the same special (NaN,
 * or one Inf without NaN or the other Inf); 0 when the orders may differ. */
static int special_sum(int nan, int pinf, int ninf, double *v) {
  if (nan || (pinf && ninf)) {
    *v = NAN;
    return 1;
  }
  if (pinf || ninf) {
    *v = pinf ? INFINITY : -INFINITY;
    return 1;
  }
  return 0;
}

/* dweight's bound before the output's rounding: st = sum |t|, sa = sum a
 * (the header's derivation). */
static double weight_pre(int64_t m, double u, double eta, double st, double sa) {
  double gs = oc_gamma((double)(m > 1 ? m - 1 : 0), u), g4 = oc_gamma(4, u);
  return oc_add_up(oc_add_up(oc_mul_up(gs, st), oc_mul_up(oc_mul_up(g4, 1 + gs), sa)),
                   oc_mul_up(eta, 5 * (double)m));
}

int oc_check_norm_params(enum oc_grad_op id, const struct oc_grad_args *a,
                         const struct oc_tensor *out, const struct oc_profile *p,
                         const struct oc_options *o, struct oc_verdict *v, const char *name) {
  int bias = id == OC_GRAD_LAYER_NORM_DBIAS, ln = id == OC_GRAD_LAYER_NORM_DWEIGHT;
  const struct oc_tensor *g = a->g, *x = a->x, *mt = ln ? a->mean : NULL, *rt = a->rstd;
  if (!g || g->rank != 2 || out->rank != 1 || out->shape[0] != g->shape[1]) return -1;
  int64_t m = g->shape[0], n = g->shape[1];
  if (!bias) {
    if (!x || !rt || (ln && !mt) || x->rank != 2 || x->shape[0] != m || x->shape[1] != n ||
        !rows_ok(mt, m) || !rows_ok(rt, m))
      return -1;
  }
  double u = oc_profile_u_acc(p), eta = oc_format_info(p->acc)->min_subnormal;
  double top = oc_overflow_threshold(p->acc);
  struct oc_acc *acc = oc_acc_new();
  if (!acc) return -1;
  mpfr_t s, t;
  mpfr_inits2(WPREC, s, t, (mpfr_ptr)0);
  struct oc_check c;
  oc_check_init(&c, name, p, o, v, n, 1, NULL, NULL);
  int64_t idx[1];
  for (int64_t j = 0; j < n; j++) {
    struct oc_elem e;
    memset(&e, 0, sizeof e);
    idx[0] = j;
    e.k = oc_tensor_at(out, j * out->stride[0]);
    e.prob = INFINITY;
    oc_acc_clear(acc);
    int exact = 1, nan = 0, pinf = 0, ninf = 0;
    double sabs = 0, st = 0; /* sum a_i, sum |t_i| */
    for (int64_t i = 0; i < m; i++) {
      double gv = oc_tensor_at(g, i * g->stride[0] + j * g->stride[1]);
      if (bias) {
        oc_acc_add(acc, gv);
        if (isfinite(gv)) sabs = oc_add_up(sabs, fabs(gv));
        nan |= isnan(gv), pinf |= gv == INFINITY, ninf |= gv == -INFINITY;
        continue;
      }
      double xv = oc_tensor_at(x, i * x->stride[0] + j * x->stride[1]);
      double mu = stat(mt, i), rs = stat(rt, i);
      double tv = gv * (xv - mu) * rs; /* its IEEE value decides the specials */
      if (!isfinite(gv) || !isfinite(xv) || !isfinite(mu) || !isfinite(rs) || !isfinite(tv)) {
        nan |= isnan(tv), pinf |= tv == INFINITY, ninf |= tv == -INFINITY;
        if (isfinite(tv)) exact = 0; /* an overflow on the way: no bound derived here */
        continue;
      }
      sabs = oc_add_up(sabs, oc_mul_up(fabs(gv), oc_mul_up(fabs(xv) + fabs(mu), fabs(rs))));
      st = oc_add_up(st, oc_mul_up(fabs(tv), 1 + 0x1p-50)); /* tv's three double roundings */
      if (exact && !add_term(acc, gv, xv, mu, rs)) exact = 0;
    }
    double sv;
    if (special_sum(nan, pinf, ninf, &sv)) {
      e.lo = e.hi = oc_round(p->out, sv, p->out_ovf);
      e.exact_only = 1;
      oc_check_elem(&c, &e, idx);
      continue;
    }
    if (!bias && (!exact || !oc_acc_is_exact(acc))) { /* MPFR at 256 bits */
      mpfr_set_zero(s, 1);
      int fin = 1;
      for (int64_t i = 0; i < m; i++) {
        double gv = oc_tensor_at(g, i * g->stride[0] + j * g->stride[1]);
        double xv = oc_tensor_at(x, i * x->stride[0] + j * x->stride[1]);
        mpfr_set_d(t, xv, MPFR_RNDN);
        mpfr_sub_d(t, t, stat(mt, i), MPFR_RNDN);
        mpfr_mul_d(t, t, gv, MPFR_RNDN);
        mpfr_mul_d(t, t, stat(rt, i), MPFR_RNDN);
        mpfr_add(s, s, t, MPFR_RNDN);
        fin &= mpfr_number_p(t);
      }
      if (!fin) { /* an intermediate overflow of the IEEE terms (exact = 0 above) */
        v->checked++;
        oc_check_inconclusive(&c, "a term overflows double: no bound for the parameter gradient");
        continue;
      }
      double slack = oc_mul_up(oc_mul_up((double)m + 4, 0x1p-250), sabs);
      e.lo = oc_down(mpfr_get_d(s, MPFR_RNDD) - slack);
      e.hi = oc_up(mpfr_get_d(s, MPFR_RNDU) + slack);
      e.pre = oc_add_up(weight_pre(m, u, eta, st, sabs), 2 * slack);
      e.pre_set = 1;
      e.bound = oc_out_bound(p, fmax(fabs(e.lo), fabs(e.hi)), e.pre);
      e.ovf_ok = !(oc_mul_up(sabs, 1.01) < top);
    } else if (bias) {
      oc_elem_sum(&e, acc, (double)m, sabs, u, eta, top, p);
    } else {
      e.lo = oc_acc_round(acc, MPFR_RNDD);
      e.hi = oc_acc_round(acc, MPFR_RNDU);
      e.pre = weight_pre(m, u, eta, st, sabs);
      e.pre_set = 1;
      e.bound = oc_out_bound(p, fmax(fabs(e.lo), fabs(e.hi)), e.pre);
      e.ovf_ok = !(oc_mul_up(sabs, 1.01) < top);
    }
    oc_check_elem(&c, &e, idx);
  }
  oc_check_finish(&c, 0);
  mpfr_clears(s, t, (mpfr_ptr)0);
  oc_acc_free(acc);
  return 0;
}
