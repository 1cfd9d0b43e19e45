/* oracle/sample.c — which output elements of a GEMM/attention get an exact
 * check (tails, tiles, residue classes, uniform draws: ORACLE.md §4), and
 * the Freivalds screen that covers every element of a linear GEMM at
 * O(MK + KN + MN) cost with no false positives. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "verdict.h"

static int cmp_sample(const void *x, const void *y) {
  const struct oc_sample *a = x, *b = y;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  if (a->j != b->j) return a->j < b->j ? -1 : 1;
  if (a->i != b->i) return a->i < b->i ? -1 : 1;
  return 0;
}

struct vec {
  struct oc_sample *s;
  int64_t n, cap;
};
static int push(struct vec *v, int64_t b, int64_t i, int64_t j) {
  if (v->n == v->cap) {
    int64_t cap = v->cap ? v->cap * 2 : 1024;
    struct oc_sample *s = realloc(v->s, (size_t)cap * sizeof *s);
    if (!s) return -1;
    v->s = s;
    v->cap = cap;
  }
  v->s[v->n++] = (struct oc_sample){b, i, j};
  return 0;
}

struct oc_sample *oc_sample_plan(int64_t nb, int64_t m, int64_t n, const struct oc_options *o,
                                 const int64_t *extra_rows, int64_t n_extra, int64_t *count,
                                 int64_t *n_random) {
  struct vec v = {0};
  int64_t total = nb * m * n;
  *n_random = 0;
  int err = 0;
  if (o->full || total <= o->full_below) {
    for (int64_t b = 0; b < nb; b++)
      for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m && !err; i++)
          err = push(&v, b, i, j);
  } else {
    int64_t tm = o->tile_m > 0 ? o->tile_m : 128, tn = o->tile_n > 0 ? o->tile_n : 128;
    uint64_t st = o->seed ^ 0x5eed5a3b1eULL;
    /* Tails: the rows/columns of a partial last tile, or the last one. */
    int64_t rt = m % tm ? m % tm : 1, ct = n % tn ? n % tn : 1;
    for (int64_t b = 0; b < nb && !err; b++) {
      for (int64_t i = m - rt; i < m; i++)
        for (int64_t j = 0; j < n && !err; j++)
          err = push(&v, b, i, j);
      for (int64_t j = n - ct; j < n; j++)
        for (int64_t i = 0; i < m && !err; i++)
          err = push(&v, b, i, j);
    }
    /* One element per tile; tile t takes residue class t mod 1024 of
     * (i mod 32, j mod 32), and leftover classes go to random tiles. */
    int64_t gm = (m + tm - 1) / tm, gn = (n + tn - 1) / tn, tiles = nb * gm * gn;
    int64_t want = tiles > 1024 ? tiles : 1024;
    for (int64_t t = 0; t < want && !err; t++) {
      int64_t tt = t < tiles ? t : (int64_t)(oc_rand_next(&st) % (uint64_t)tiles);
      int64_t b = tt / (gm * gn), ti = tt / gn % gm, tj = tt % gn;
      int64_t r = t % 1024, i = ti * tm + (r / 32) % tm, j = tj * tn + (r % 32) % tn;
      if (i >= m) i = m - 1 - (int64_t)(oc_rand_next(&st) % (uint64_t)(m - ti * tm));
      if (j >= n) j = n - 1 - (int64_t)(oc_rand_next(&st) % (uint64_t)(n - tj * tn));
      err = push(&v, b, i, j);
    }
    int64_t s = (int64_t)ceil(log(1 / o->delta) / o->fraction);
    for (int64_t k = 0; k < s && !err; k++) {
      uint64_t x = oc_rand_next(&st) % (uint64_t)total;
      err = push(&v, (int64_t)(x / (uint64_t)(m * n)), (int64_t)(x / (uint64_t)n % (uint64_t)m),
                 (int64_t)(x % (uint64_t)n));
    }
    *n_random = s;
  }
  for (int64_t r = 0; r < n_extra && !err; r++)
    for (int64_t j = 0; j < n && !err; j++)
      err = push(&v, extra_rows[2 * r], extra_rows[2 * r + 1], j);
  if (err) {
    free(v.s);
    return NULL;
  }
  /* v.s is NULL when nothing was pushed: qsort's base must not be NULL */
  if (v.n > 1) qsort(v.s, (size_t)v.n, sizeof *v.s, cmp_sample);
  int64_t w = 0;
  for (int64_t r = 0; r < v.n; r++)
    if (w == 0 || cmp_sample(&v.s[w - 1], &v.s[r])) v.s[w++] = v.s[r];
  *count = w;
  return v.s;
}

void oc_batch_index(int nlead, const int64_t *lead, int64_t b, int64_t *idx) {
  for (int d = nlead - 1; d >= 0; d--) {
    idx[d] = lead[d] ? b % lead[d] : 0;
    b = lead[d] ? b / lead[d] : 0;
  }
}

int64_t oc_batch_offset(const struct oc_tensor *t, int nlead, const int64_t *lead, int64_t b) {
  return oc_batch_offset_rows(t, 2, nlead, lead, b);
}

int64_t oc_batch_offset_rows(const struct oc_tensor *t, int inner, int nlead, const int64_t *lead,
                             int64_t b) {
  int64_t idx[OC_MAX_RANK], off = 0;
  int tl = t->rank - inner < 0 ? 0 : t->rank - inner;
  oc_batch_index(nlead, lead, b, idx);
  for (int d = 0; d < nlead; d++) {
    int td = d - (nlead - tl);
    if (td < 0 || t->shape[td] == 1) continue;
    off += idx[d] * t->stride[td];
  }
  return off;
}

int oc_batch_fits(const struct oc_tensor *t, int nlead, const int64_t *lead) {
  int tl = t->rank - 2 < 0 ? 0 : t->rank - 2;
  if (tl > nlead) return 0;
  for (int td = 0; td < tl; td++) {
    int64_t n = t->shape[td], want = lead[td + nlead - tl];
    if (n != want && n != 1) return 0;
  }
  return 1;
}

/* gamma_n for double arithmetic (the screen's own rounding errors). */
static double g53(double n) { return oc_gamma(n + 2, 0x1p-53); }

/* One row y against the V sign vectors (rows of r, stride ldr): s[v] =
 * y.r_v, *sa = sum|y|, *sm = max|y|; *odd |= some |y_j| not below lim.
 * V = 2 (the default) has its own loop: the generic one keeps s[] in
 * memory. */
static void row_pass(const double *y, const double *r, int nv, int64_t n, int64_t ldr, double lim,
                     double *s, double *sa, double *sm, int *odd) {
  double a = 0, m = 0;
  int bad = 0;
  if (nv == 2) {
    double s0 = 0, s1 = 0;
    const double *r0 = r, *r1 = r + ldr;
    for (int64_t j = 0; j < n; j++) {
      double x = y[j], ax = fabs(x);
      s0 += x * r0[j];
      s1 += x * r1[j];
      a += ax;
      m = ax > m ? ax : m;
      bad |= !(ax < lim);
    }
    s[0] = s0, s[1] = s1;
  } else {
    for (int v = 0; v < nv; v++)
      s[v] = 0;
    for (int64_t j = 0; j < n; j++) {
      double x = y[j], ax = fabs(x);
      for (int v = 0; v < nv; v++)
        s[v] += x * r[v * ldr + j];
      a += ax;
      m = ax > m ? ax : m;
      bad |= !(ax < lim);
    }
  }
  *sa = a;
  *sm = m;
  *odd |= bad;
}

/* Row a of A against B r_v (rows of br, stride K): x[v] = a.(B r_v),
 * xabs[v] = sum|a_k (B r_v)_k|, *t1 = sum|a_k| absb_k, *tmax = sum|a_k| bmax_k. */
static void a_pass(const double *a, const double *br, int nv, int64_t K, const double *absb,
                   const double *bmax, double *x, double *xabs, double *t1, double *tmax) {
  double t = 0, tm = 0;
  if (nv == 2) {
    double x0 = 0, x1 = 0, e0 = 0, e1 = 0;
    const double *b0 = br, *b1 = br + K;
    for (int64_t k = 0; k < K; k++) {
      double v = a[k], av = fabs(v), p0 = v * b0[k], p1 = v * b1[k];
      x0 += p0, x1 += p1, e0 += fabs(p0), e1 += fabs(p1);
      t += av * absb[k];
      tm += av * bmax[k];
    }
    x[0] = x0, x[1] = x1, xabs[0] = e0, xabs[1] = e1;
  } else {
    for (int v = 0; v < nv; v++)
      x[v] = xabs[v] = 0;
    for (int64_t k = 0; k < K; k++) {
      double v0 = a[k], av = fabs(v0);
      for (int v = 0; v < nv; v++) {
        double pr = v0 * br[v * K + k];
        x[v] += pr;
        xabs[v] += fabs(pr);
      }
      t += av * absb[k];
      tm += av * bmax[k];
    }
  }
  *t1 = t;
  *tmax = tm;
}

int64_t oc_freivalds_matmul(const struct oc_matmul_args *args, const struct oc_tensor *out,
                            const struct oc_profile *p, const struct oc_options *o,
                            int64_t **rows_out, double *catch_out) {
  const struct oc_tensor *A = args->a, *B = args->b, *C = args->c, *bias = args->bias;
  int nlead = out->rank - 2;
  int64_t M = out->shape[nlead], N = out->shape[nlead + 1], K = A->shape[A->rank - 1];
  int64_t nb = 1;
  for (int d = 0; d < nlead; d++)
    nb *= out->shape[d];
  double beta = C ? args->beta : 0, alpha = args->alpha;
  enum { VMAX = 16 };
  int nv = o->screen_vectors < 1 ? 1 : o->screen_vectors > VMAX ? VMAX : o->screen_vectors;
  int64_t mx = K > N ? K : N;
  /* all V vectors ride one pass over B and one over each row of A, out, C */
  double *r = malloc((size_t)(nv * N) * sizeof *r), *br = malloc((size_t)(nv * K) * sizeof *br),
         *absb = malloc((size_t)K * sizeof *absb), *buf = malloc((size_t)mx * sizeof *buf),
         *buf2 = malloc((size_t)N * sizeof *buf2), *bv = malloc((size_t)N * sizeof *bv),
         *bmax = malloc((size_t)K * sizeof *bmax);
  int64_t nflag = 0, capflag = 0, *flag = NULL;
  double catch_f = 0;
  if (!r || !br || !absb || !buf || !buf2 || !bv || !bmax) {
    nflag = -1;
    goto done;
  }
  double theta = oc_dot_theta(p, K, oc_matmul_extra(args));
  double eta_acc = oc_mul_up(oc_acc_eta(p), oc_dot_roundings(p, K, oc_matmul_extra(args), 1));
  double u_out = oc_out_u(p), eta_out = oc_out_eta(p), maxf = oc_format_info(p->out)->max_finite;
  /* |y| <= |out| + b: the per-element bound with |out| for |y|, times
   * (1 + u)/(1 - u) <= 1 + 3u (u <= 1/8), covers the true one */
  double ufac = oc_add_up(1, oc_mul_up(3, u_out));
  /* Hoeffding over our own +-1 draws: per vector a correct row's residual
   * exceeds lambda sqrt(sum_j b_ij^2) with probability <= 2 exp(-lambda^2/2)
   * = delta^(1/V); lambda is chosen so that V vectors all miss a single bad
   * element (see the catch threshold below) with probability <= delta. */
  double lam = sqrt(2 * log(2 / pow(o->delta, 1.0 / nv))) * (1 + 1e-12);
  double bias_max = 0, abs_bias = 0;
  if (bias) oc_tensor_gather(bias, 0, bias->stride[bias->rank - 1], N, bv);
  for (int64_t j = 0; bias && j < N; j++) {
    bias_max = fmax(bias_max, fabs(bv[j]));
    abs_bias += fabs(bv[j]);
  }
  abs_bias = oc_mul_up(abs_bias, oc_add_up(1, g53((double)N)));
  for (int64_t b = 0; b < nb; b++) {
    int64_t oa = oc_batch_offset(A, nlead, out->shape, b),
            ob = oc_batch_offset(B, nlead, out->shape, b);
    int64_t oo = oc_batch_offset(out, nlead, out->shape, b),
            oc = C ? oc_batch_offset(C, nlead, out->shape, b) : 0;
    double br_bias[VMAX] = {0};
    for (int v = 0; v < nv; v++) {
      uint64_t st = o->seed ^ ((uint64_t)b * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(v + 1) << 56);
      for (int64_t j = 0; j < N; j++) {
        r[v * N + j] = oc_rand_next(&st) >> 63 ? 1.0 : -1.0;
        if (bias) br_bias[v] += bv[j] * r[v * N + j];
      }
    }
    for (int64_t k = 0; k < K; k++) {
      oc_tensor_gather(B, ob + k * B->stride[B->rank - 2], B->stride[B->rank - 1], N, buf);
      double s[VMAX];
      int unused = 0;
      row_pass(buf, r, nv, N, N, INFINITY, s, &absb[k], &bmax[k], &unused);
      for (int v = 0; v < nv; v++)
        br[v * K + k] = s[v];
    }
    for (int64_t i = 0; i < M; i++) {
      oc_tensor_gather(A, oa + i * A->stride[A->rank - 2], A->stride[A->rank - 1], K, buf);
      double x[VMAX], xabs[VMAX], t1, tmax;
      a_pass(buf, br, nv, K, absb, bmax, x, xabs, &t1, &tmax);
      t1 = oc_mul_up(t1, oc_add_up(1, g53((double)K + 1)));
      tmax = oc_mul_up(tmax, oc_add_up(1, g53((double)K + 1)));
      double cr[VMAX] = {0}, yr[VMAX], cabs = 0, cmax = 0, yabs, ymax;
      int odd = !(t1 < INFINITY);
      for (int v = 0; v < nv; v++)
        odd |= !(x[v] == x[v]) || isinf(x[v]);
      if (C) {
        oc_tensor_gather(C, oc + i * C->stride[C->rank - 2], C->stride[C->rank - 1], N, buf2);
        row_pass(buf2, r, nv, N, N, INFINITY, cr, &cabs, &cmax, &odd);
      }
      oc_tensor_gather(out, oo + i * out->stride[nlead], out->stride[nlead + 1], N, buf2);
      row_pass(buf2, r, nv, N, N, maxf, yr, &yabs, &ymax, &odd);
      cabs = oc_mul_up(cabs, oc_add_up(1, g53((double)N)));
      yabs = oc_mul_up(yabs, oc_add_up(1, g53((double)N)));
      double tsum =
          oc_add_up(oc_add_up(oc_mul_up(fabs(alpha), t1), oc_mul_up(fabs(beta), cabs)), abs_bias);
      /* sum_j b_ij and max_j b_ij of the per-element bounds b_ij =
       * u_out|out_ij| + eta_out + theta T_ij + eta_acc; sum_j b_ij^2 <=
       * max * sum, with max_j T_ij <= |alpha| sum_k |a_ik| max_j |b_kj| +
       * |beta| max|c| + max|bias|. */
      double bsum = oc_mul_up(
          ufac, oc_add_up(oc_add_up(oc_mul_up(u_out, yabs), oc_mul_up((double)N, eta_out)),
                          oc_add_up(oc_mul_up(theta, tsum), oc_mul_up((double)N, eta_acc))));
      double tm =
          oc_add_up(oc_add_up(oc_mul_up(fabs(alpha), tmax), oc_mul_up(fabs(beta), cmax)), bias_max);
      double bmx = oc_mul_up(ufac, oc_add_up(oc_add_up(oc_mul_up(u_out, ymax), eta_out),
                                             oc_add_up(oc_mul_up(theta, tm), eta_acc)));
      double bound = oc_mul_up(lam, oc_up(sqrt(oc_mul_up(bsum, bmx))));
      int flagged = odd;
      for (int v = 0; v < nv; v++) {
        double ref = alpha * x[v] + beta * cr[v] + br_bias[v];
        /* The screen's own double rounding: B r, A (B r), C r, out r and
         * the final combination, each by Higham's gamma in binary64. */
        double e = oc_mul_up(g53((double)N), yabs);
        e = oc_add_up(e, oc_mul_up(fabs(alpha), oc_add_up(oc_mul_up(g53((double)K), xabs[v]),
                                                          oc_mul_up(g53((double)N), t1))));
        e = oc_add_up(e,
                      oc_mul_up(g53((double)N), oc_add_up(oc_mul_up(fabs(beta), cabs), abs_bias)));
        e = oc_add_up(
            e, oc_mul_up(g53(4), oc_add_up(fabs(alpha * x[v]),
                                           oc_add_up(fabs(beta * cr[v]), fabs(br_bias[v])))));
        double lim = oc_mul_up(oc_add_up(bound, e), 1 + 1e-9);
        /* A single element off by more than 2 lim (the others within
         * their bounds) leaves a residual beyond lim unless the others'
         * residual exceeds lambda sqrt(sum b^2): caught except with
         * probability delta^(1/V) per vector. The threshold relative to
         * the row's mean bound is the screen's catch factor. */
        if (bsum > 0) catch_f = fmax(catch_f, oc_div_up(oc_mul_up(2, lim), bsum / (double)N));
        flagged |= !(fabs(yr[v] - ref) <= lim);
      }
      if (flagged) {
        if (nflag == capflag) {
          capflag = capflag ? 2 * capflag : 16;
          int64_t *f = realloc(flag, (size_t)capflag * 2 * sizeof *f);
          if (!f) {
            nflag = -1;
            goto done;
          }
          flag = f;
        }
        flag[2 * nflag] = b;
        flag[2 * nflag + 1] = i;
        nflag++;
      }
    }
  }
done:
  free(r);
  free(br);
  free(absb);
  free(buf);
  free(buf2);
  free(bv);
  free(bmax);
  if (catch_out) *catch_out = catch_f;
  if (nflag < 0) {
    free(flag);
    flag = NULL;
  }
  *rows_out = flag;
  return nflag;
}

int oc_rows_init(struct oc_rows *r, const struct oc_tensor *x, int axis,
                 const struct oc_tensor *out, int out_same) {
  memset(r, 0, sizeof *r);
  if (axis < 0) axis += x->rank;
  if (axis < 0 || axis >= x->rank) return -1;
  r->x = x;
  r->out = out;
  r->axis = axis;
  r->n = x->shape[axis];
  r->nrows = r->n ? oc_tensor_numel(x) / r->n : 0;
  r->out_same = out_same;
  if (out_same) {
    if (out->rank != x->rank) return -1;
    for (int d = 0; d < x->rank; d++) {
      if (out->shape[d] != x->shape[d]) return -1;
      r->out_map[d] = d;
    }
    return 0;
  }
  int keep = out->rank == x->rank;
  if (!keep && out->rank != x->rank - 1) return -1;
  for (int d = 0, o = 0; d < x->rank; d++) {
    if (d == axis) {
      r->out_map[d] = keep ? o++ : -1;
      if (keep && out->shape[d] != 1) return -1;
      continue;
    }
    if (out->shape[o] != x->shape[d]) return -1;
    r->out_map[d] = o++;
  }
  return 0;
}

void oc_rows_at(const struct oc_rows *r, int64_t row, int64_t *xoff, int64_t *ooff, int64_t *idx) {
  const struct oc_tensor *x = r->x;
  *xoff = *ooff = 0;
  for (int d = x->rank - 1; d >= 0; d--) {
    if (d == r->axis) {
      idx[d] = 0;
      continue;
    }
    idx[d] = row % x->shape[d];
    row /= x->shape[d];
    *xoff += idx[d] * x->stride[d];
    if (r->out_map[d] >= 0) *ooff += idx[d] * r->out->stride[r->out_map[d]];
  }
}

void oc_rows_out_index(const struct oc_rows *r, const int64_t *xidx, int64_t k, int64_t *oidx) {
  for (int d = 0; d < r->x->rank; d++)
    if (r->out_map[d] >= 0) oidx[r->out_map[d]] = d == r->axis ? (r->out_same ? k : 0) : xidx[d];
}
