/* oracle/matmul.c — reference and per-element bound for
 * out = act(alpha A.B + beta C + bias), batched, any strides. Each checked
 * element gets a Dot2 (Ogita-Rump-Oishi) enclosure of the exact dot at
 * ~2 ns/term; the exact Kulisch accumulator settles the rare element whose
 * verdict or correct rounding the enclosure cannot decide. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "dot.h"
#include "exact.h"
#include "verdict.h"

int oc_act_parse(const char *name) {
  static const char *const n[] = {"none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"};
  for (int i = 0; i < 7; i++)
    if (!strcmp(name, n[i])) return i;
  if (!strcmp(name, "gelu_erf")) return OC_ACT_GELU_ERF;
  return -1;
}

int oc_matmul_extra(const struct oc_matmul_args *a) {
  int e = 0;
  if (a->c && a->beta != 0) e += 1 + (a->beta != 1);
  if (a->bias) e++;
  if (a->alpha != 1) e++;
  return e;
}

struct mm {
  const struct oc_matmul_args *args;
  const struct oc_profile *p;
  int64_t K;
  int extra;
  double lambda; /* statistical verdict */
};

/* in[]: 0 T = |alpha| sum|ab| + |beta c| + |bias| (upward), 1 mass of the
 * terms with a subnormal operand (ftz, tf32), 2-3 enclosure of the
 * pre-activation z. th: the accumulation coefficient (rigorous theta or the
 * statistical one). Writes the bound before the output rounding to *pre. */
static double mm_bound_th(const struct oc_profile *p, const struct oc_elem *e, const struct mm *m,
                          double th, double *pre) {
  double bz = oc_add_up(oc_mul_up(th, e->in[0]),
                        oc_mul_up(oc_acc_eta(p), oc_dot_roundings(p, m->K, m->extra, 1)));
  bz = oc_add_up(bz, oc_mul_up(oc_dot_sub_coef(p, oc_dot_theta(p, m->K, m->extra)), e->in[1]));
  double yabs = fmax(fabs(e->lo), fabs(e->hi)), by = bz;
  if (m->args->act != OC_ACT_NONE) {
    double zl = oc_down(e->in[2] - bz), zh = oc_up(e->in[3] + bz);
    double L = oc_act_lipschitz(m->args->act, zl, zh);
    double zabs = fmax(fabs(zl), fabs(zh));
    by = oc_add_up(oc_mul_up(L, bz),
                   oc_act_eval_err(p, m->args->act, zl, zabs, oc_add_up(yabs, oc_mul_up(L, bz))));
  }
  if (pre) *pre = by;
  return oc_out_bound(p, yabs, by);
}

static double mm_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  const struct mm *m = ctx;
  return mm_bound_th(p, e, m, oc_dot_theta(p, m->K, m->extra), NULL);
}

/* Builds the judged element from the dot enclosure [sl, sh]. */
static void mm_fill(const struct mm *m, double sl, double sh, double sabs, double ssub, double cv,
                    double bv, double kv, struct oc_elem *e) {
  const struct oc_matmul_args *a = m->args;
  const struct oc_profile *p = m->p;
  double alpha = a->alpha, beta = a->c ? a->beta : 0;
  memset(e, 0, sizeof *e);
  e->k = kv;
  if (!(sl == sl) || isinf(sl) || !(sh == sh) || isinf(sh) || !(cv == cv) || isinf(cv) ||
      !(bv == bv) || isinf(bv)) {
    double z = alpha * sl + beta * cv + bv;
    e->lo = e->hi = oc_act_value(a->act, z);
    e->prob = INFINITY;
    /* silu and both gelus tend to -0 at -Inf (the exact value); the usual
     * formulas give -Inf * 0 = NaN there, which is just as correct */
    if (z == -INFINITY && kv != kv &&
        (a->act == OC_ACT_SILU || a->act == OC_ACT_GELU_ERF || a->act == OC_ACT_GELU_TANH))
      e->alt_ok = 1;
    return;
  }
  double zl, zh;
  if (alpha == 1 && beta * cv == 0 && bv == 0) {
    zl = sl;
    zh = sh;
  } else {
    double t1 = alpha >= 0 ? alpha * sl : alpha * sh, t2 = alpha >= 0 ? alpha * sh : alpha * sl;
    double rl = t1 + beta * cv + bv, rh = t2 + beta * cv + bv;
    double mag = fabs(t1) + fabs(t2) + fabs(beta * cv) + fabs(bv);
    double rad = oc_mul_up(mag, 0x1p-51);
    zl = oc_down(rl - rad);
    zh = oc_up(rh + rad);
  }
  if (a->act == OC_ACT_NONE) {
    e->lo = zl;
    e->hi = zh;
  } else {
    double L = oc_act_lipschitz(a->act, zl, zh), ym = oc_act_value(a->act, zl / 2 + zh / 2);
    double rad = oc_add_up(oc_mul_up(L, oc_up((zh - zl) / 2)),
                           oc_add_up(oc_mul_up(fabs(ym), 1e-14), 1e-300));
    e->lo = oc_down(ym - rad);
    e->hi = oc_up(ym + rad);
  }
  e->in[0] = oc_add_up(oc_add_up(oc_mul_up(fabs(alpha), sabs), fabs(beta * cv)), fabs(bv));
  e->in[1] = ssub;
  e->in[2] = zl;
  e->in[3] = zh;
  e->in[4] = sabs;
  e->bound = mm_bound_th(p, e, m, oc_dot_theta(p, m->K, m->extra), &e->pre);
  e->pre_set = 1;
  double st = oc_dot_stat(p, m->K, m->extra, m->lambda, 1);
  e->prob = st < INFINITY ? mm_bound_th(p, e, m, st, NULL) : INFINITY;
  /* A kernel Inf/NaN may be a legitimate overflow of the accumulator
   * (partial sums can reach sum|ab|(1 + theta) in some order). */
  e->ovf_ok = oc_mul_up(e->in[0], oc_add_up(1, oc_dot_theta(p, m->K, m->extra))) >=
              oc_overflow_threshold(p->acc);
}

/* Where one element's operands come from: B's column j is gathered once
 * for a run of elements of the same column (the elements are visited
 * column by column); A's row i is gathered for each element, or, when
 * rows (an M x K double copy of the batch's A) is set, read from that copy,
 * made once a batch: a row is then met many times, and gathering a
 * transposed A costs a cache line an element. */
struct mm_iter {
  const struct oc_tensor *A, *B, *C, *bias;
  int nlead;
  const int64_t *lead;
  int64_t K;
  double *abuf, *bcol;
  int64_t cur_b, cur_j;
  double *rows; /* NULL: no copy */
  int64_t M, rows_b;
  const double *arow; /* the element's row: abuf or a row of rows */
};

/* Largest copy of A kept for an element loop (bytes). */
#define MM_ROWS_MAX ((int64_t)64 << 20)

/* it->rows for a loop meeting each row about `per_row` times on average. */
static void rows_plan(struct mm_iter *it, double per_row) {
  it->rows = NULL;
  it->rows_b = -1;
  if (per_row >= 2 && it->M > 0 && it->K > 0 && it->M <= MM_ROWS_MAX / 8 / it->K)
    it->rows = malloc((size_t)(it->M * it->K) * sizeof(double));
}

static void load(struct mm_iter *it, int64_t b, int64_t i, int64_t j) {
  const struct oc_tensor *A = it->A, *B = it->B;
  if (b != it->cur_b || j != it->cur_j) {
    int64_t ob = oc_batch_offset(B, it->nlead, it->lead, b);
    oc_tensor_gather(B, ob + j * B->stride[B->rank - 1], B->stride[B->rank - 2], it->K, it->bcol);
    it->cur_b = b;
    it->cur_j = j;
  }
  int64_t oa = oc_batch_offset(A, it->nlead, it->lead, b);
  if (it->rows) {
    if (b != it->rows_b) {
      for (int64_t r = 0; r < it->M; r++)
        oc_tensor_gather(A, oa + r * A->stride[A->rank - 2], A->stride[A->rank - 1], it->K,
                         it->rows + r * it->K);
      it->rows_b = b;
    }
    it->arow = it->rows + i * it->K;
    return;
  }
  oc_tensor_gather(A, oa + i * A->stride[A->rank - 2], A->stride[A->rank - 1], it->K, it->abuf);
  it->arow = it->abuf;
}

static double at2(const struct oc_tensor *t, int nlead, const int64_t *lead, int64_t b, int64_t i,
                  int64_t j) {
  return oc_tensor_at(t, oc_batch_offset(t, nlead, lead, b) + i * t->stride[t->rank - 2] +
                             j * t->stride[t->rank - 1]);
}

/* Evaluates one element; kv is the kernel value (NAN when only a reference
 * is wanted). Falls back to the exact accumulator when the enclosure
 * cannot settle the verdict or the correct rounding. */
static void mm_elem(const struct mm *m, struct mm_iter *it, struct oc_acc *acc, int64_t b,
                    int64_t i, int64_t j, double kv, int judge, struct oc_elem *e) {
  load(it, b, i, j);
  double s, rad, sabs, pmin, pmax;
  oc_dot2(it->arow, it->bcol, it->K, it->A->fmt != OC_FP64 && it->B->fmt != OC_FP64, &s, &rad,
          &sabs, &pmin, &pmax);
  int corr = oc_stat_correlated(m->p, pmin, pmax, it->K); /* no statistical verdict */
  double cv = it->C ? at2(it->C, it->nlead, it->lead, b, i, j) : 0;
  double bv = it->bias ? oc_tensor_at(it->bias, j * it->bias->stride[it->bias->rank - 1]) : 0;
  int tf32 = m->p->tf32 && (m->p->in == OC_FP32 || m->p->in == OC_FP64);
  double ssub = m->p->ftz || tf32 ? oc_dot_sub_mass(m->p, it->arow, it->bcol, it->K) : 0;
  int exact = 0;
  double sl, sh;
  if (!(s == s) || isinf(s) || !(sabs < INFINITY)) {
    oc_dot_exact_enclose(acc, it->arow, it->bcol, it->K, &sl, &sh);
    exact = 1;
  } else {
    sl = oc_down(s - rad);
    sh = oc_up(s + rad);
  }
  mm_fill(m, sl, sh, sabs, ssub, cv, bv, kv, e);
  if (corr) e->prob = INFINITY;
  /* tf32 rounds an operand of fp32 magnitude >= 0x1.ffep127 to Inf */
  if (tf32 && !e->ovf_ok && oc_dot_tf32_overflows(it->arow, it->bcol, it->K)) e->ovf_ok = 1;
  if (exact || !judge) return;
  double r;
  int undecided = !oc_round_enclosure(m->p->out, m->p->out_ovf, e->lo, e->hi, &r);
  double elo = kv < e->lo ? e->lo - kv : kv > e->hi ? kv - e->hi : 0;
  double ehi = fmax(fabs(kv - e->lo), fabs(kv - e->hi));
  if (undecided || (elo <= e->bound && ehi > e->bound)) {
    int ovf = e->ovf_ok;
    oc_dot_exact_enclose(acc, it->arow, it->bcol, it->K, &sl, &sh);
    mm_fill(m, sl, sh, sabs, ssub, cv, bv, kv, e);
    e->ovf_ok |= ovf;
    if (corr) e->prob = INFINITY;
  }
}

static int shapes_ok(const struct oc_matmul_args *a, int orank, const int64_t *oshape) {
  if (!a || !a->a || !a->b || orank < 2 || a->a->rank < 2 || a->b->rank < 2) return 0;
  int64_t M = oshape[orank - 2], N = oshape[orank - 1], K = a->a->shape[a->a->rank - 1];
  if (a->a->shape[a->a->rank - 2] != M || a->b->shape[a->b->rank - 2] != K ||
      a->b->shape[a->b->rank - 1] != N)
    return 0;
  if (a->c &&
      (a->c->rank < 2 || a->c->shape[a->c->rank - 2] != M || a->c->shape[a->c->rank - 1] != N))
    return 0;
  if (a->bias && a->bias->shape[a->bias->rank - 1] != N) return 0;
  return 1;
}

int oc_check_matmul(const struct oc_matmul_args *args, const struct oc_tensor *out,
                    const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  if (!o) {
    oc_options_default(&od);
    o = &od;
  }
  if (!out || !shapes_ok(args, out->rank, out->shape)) return -1;
  int nlead = out->rank - 2;
  int64_t M = out->shape[nlead], N = out->shape[nlead + 1], K = args->a->shape[args->a->rank - 1];
  int64_t nb = 1;
  for (int d = 0; d < nlead; d++)
    nb *= out->shape[d];
  struct mm m = {args, p, K, oc_matmul_extra(args), INFINITY};
  struct oc_check c;
  oc_check_init(&c, "matmul", p, o, v, nb * M * N, out->rank, mm_bound, &m);

  int64_t *flagged = NULL, nflag = 0;
  int sampled = !(o->full || nb * M * N <= o->full_below);
  if (sampled && o->screen && args->act == OC_ACT_NONE && !p->ftz && o->screen_vectors > 0) {
    double catch_f = 0;
    nflag = oc_freivalds_matmul(args, out, p, o, &flagged, &catch_f);
    if (nflag < 0) return -1;
    v->screen_vectors = o->screen_vectors;
    v->screen_failed = nflag > INT32_MAX ? INT32_MAX : (int)nflag;
    v->screen_catch = catch_f;
    v->screen_miss = o->delta;
  }
  int64_t count, nrand;
  struct oc_sample *plan = oc_sample_plan(nb, M, N, o, flagged, nflag, &count, &nrand);
  free(flagged);
  m.lambda = oc_stat_lambda(o->stat_alpha, (double)K + m.extra + 1, (double)count);
  struct oc_acc *acc = oc_acc_new();
  struct mm_iter it = {args->a,
                       args->b,
                       args->c,
                       args->bias,
                       nlead,
                       out->shape,
                       K,
                       malloc((size_t)(K ? K : 1) * sizeof(double)),
                       malloc((size_t)(K ? K : 1) * sizeof(double)),
                       -1,
                       -1,
                       NULL,
                       M,
                       -1,
                       NULL};
  rows_plan(&it, (double)count / (double)(nb * (M ? M : 1)));
  if (!plan || !acc || !it.abuf || !it.bcol) {
    free(plan);
    oc_acc_free(acc);
    free(it.abuf);
    free(it.bcol);
    free(it.rows);
    return -1;
  }
  int64_t idx[OC_MAX_RANK];
  for (int64_t s = 0; s < count; s++) {
    struct oc_sample q = plan[s];
    double kv = at2(out, nlead, out->shape, q.b, q.i, q.j);
    struct oc_elem e;
    mm_elem(&m, &it, acc, q.b, q.i, q.j, kv, 1, &e);
    oc_batch_index(nlead, out->shape, q.b, idx);
    idx[nlead] = q.i;
    idx[nlead + 1] = q.j;
    oc_check_elem(&c, &e, idx);
  }
  oc_check_finish(&c, nrand);
  free(plan);
  oc_acc_free(acc);
  free(it.abuf);
  free(it.bcol);
  free(it.rows);
  return 0;
}

int oc_reference_matmul(const struct oc_matmul_args *args, const int64_t *out_shape, int out_rank,
                        const struct oc_profile *p, double *ref, double *bound) {
  if (!shapes_ok(args, out_rank, out_shape)) return -1;
  int nlead = out_rank - 2;
  int64_t M = out_shape[nlead], N = out_shape[nlead + 1], K = args->a->shape[args->a->rank - 1];
  int64_t nb = 1;
  for (int d = 0; d < nlead; d++)
    nb *= out_shape[d];
  struct mm m = {args, p, K, oc_matmul_extra(args), INFINITY};
  struct oc_acc *acc = oc_acc_new();
  struct mm_iter it = {args->a,
                       args->b,
                       args->c,
                       args->bias,
                       nlead,
                       out_shape,
                       K,
                       malloc((size_t)(K ? K : 1) * sizeof(double)),
                       malloc((size_t)(K ? K : 1) * sizeof(double)),
                       -1,
                       -1,
                       NULL,
                       M,
                       -1,
                       NULL};
  rows_plan(&it, (double)N); /* every element: each row N times */
  int rc = acc && it.abuf && it.bcol ? 0 : -1;
  for (int64_t b = 0; b < nb && !rc; b++)
    for (int64_t j = 0; j < N; j++)
      for (int64_t i = 0; i < M; i++) {
        struct oc_elem e;
        mm_elem(&m, &it, acc, b, i, j, NAN, 0, &e);
        if (args->act == OC_ACT_NONE && !(e.lo == e.hi)) {
          /* exact reference: correctly rounded to double */
          double lo, hi;
          oc_dot_exact_enclose(acc, it.arow, it.bcol, K, &lo, &hi);
          mm_fill(
              &m, lo, hi, e.in[4], e.in[1], args->c ? at2(args->c, nlead, out_shape, b, i, j) : 0,
              args->bias ? oc_tensor_at(args->bias, j * args->bias->stride[args->bias->rank - 1])
                         : 0,
              NAN, &e);
        }
        int64_t at = (b * M + i) * N + j;
        if (ref) ref[at] = e.lo == e.hi ? e.lo : e.lo + (e.hi - e.lo) / 2;
        if (bound) bound[at] = e.bound;
      }
  oc_acc_free(acc);
  free(it.abuf);
  free(it.bcol);
  free(it.rows);
  return rc;
}
