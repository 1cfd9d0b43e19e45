/* oracle/conv.c — oc_check_conv: convolution forward, its input, weight
 * and bias gradients (conv.h), each output element against its exact
 * value.
 *
 * Every output is a dot product: conv's y[n,o,q] = bias[o] + sum over the
 * group's channels c and kernel taps k of x[n,c,q s - p + k d] w[o,c,k]
 * (taps in the padding contribute nothing); conv_transpose sums x[n,c,i]
 * w[c,o,k] over the (i, k) with i s - p + k d = q; the weight gradient
 * sums g[n,o,q] x[n,c,q s - p + k d] over n and q; the bias gradient sums
 * g[n,o,q]. However an implementation orders these products — im2col and
 * GEMM, implicit GEMM on tensor cores, direct loops, split reductions,
 * col2im's second sum, padding taps multiplied as zeros (a zero product
 * adds no rounding error) — it sums the same n terms, so the matmul's bound
 * for any order holds with n = the terms of the output (C/G times the
 * kernel volume, N times the output positions, ...):
 *   |out - y| <= u_out |y| + (1 + u_out) B + eta_out,
 *   B = theta_n (sum |a b| + |bias|) + eta_acc roundings + sub-mass term,
 * theta_n = gamma_{n + extra} at the accumulator's unit (blocks of a
 * tensor-core alignment, TF32 operand rounding 2u_t + u_t^2 with u_t =
 * 2^-10 included: oc_dot_theta), extra = 1 for the bias. ATen adds the
 * bias after cuDNN's convolution, to a result already rounded to the
 * output's type: for an output narrower than the accumulator the bound
 * takes that rounding too (B1 = u_out |dot| + (1 + u_out) B + eta_out,
 * then the float add). The bias gradient is a sum (oc_sum_theta).
 *
 * Transform algorithms (cuDNN's Winograd and FFT, which it may pick for
 * any of the three directions) compute transformed operands with rounding
 * errors that reach every output of a tile (Winograd) or of the whole
 * plane (FFT), amplified by transform constants cuDNN does not document:
 * no componentwise bound in terms of this output's own products covers
 * them. Under algorithm `any` an element beyond the dot-product bound is
 * therefore inconclusive (the reason in the verdict), and an Inf or NaN
 * (or a finite value where the exact sum overflows) is inconclusive where
 * any input holds one (a transform spreads it over the tile) or where the
 * mass times 2^20 nears the accumulator's range; a
 * NaN or Inf from all-finite small inputs still fails. Under `direct`
 * (the CPU's oneDNN direct and im2col paths, a custom kernel's contract)
 * the dot-product bound decides.
 *
 * A NaN where any input holds a non-finite value is accepted: an
 * implementation that multiplies the padding's zeros (or a transposed
 * convolution's inserted zeros) by an infinite weight gets 0 * Inf = NaN
 * where the sum without those taps is a number.
 *
 * Each element's dot is enclosed by Dot2 and settled by the exact
 * accumulator where the enclosure cannot decide (dot.h). */
#include "conv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "dot.h"
#include "exact.h"
#include "verdict.h"

/* Terms a sampled check sums at most (about a second): beyond, the
 * sampled fraction is raised (conv.h). */
#define CV_TERMS_BUDGET 0x1p27

struct cv {
  enum oc_conv_op op;
  const struct oc_conv_args *a;
  const struct oc_profile *p;
  int nsp;              /* spatial dims */
  int64_t N, G, Cg, Og; /* batch, groups, channels per group (the b side's), outputs per group */
  int64_t ks[OC_CONV_MAX_SP]; /* kernel */
  int64_t
      is[OC_CONV_MAX_SP]; /* the input side's spatial sizes (x; g for the weight gradient's q) */
  int64_t os[OC_CONV_MAX_SP]; /* the output's spatial sizes (weight gradient: x's) */
  int64_t kvol, ivol, ovol;
  int64_t K;     /* terms of each output (the bound's n) */
  int extra;     /* the bias's rounding */
  int products;  /* 0: the bias gradient, a sum */
  int nonfinite; /* some input holds Inf or NaN */
  int big, sub;  /* some operand rounds to Inf as tf32; some is subnormal in the profile's input */
  double *abuf, *bbuf;
};

/* The bound before the output rounding (in[0] sum|ab| + |bias|, in[1] the
 * mass of terms with a subnormal operand, in[2] |dot|, in[3] |bias|). */
static double cv_pre(const struct oc_profile *p, const struct oc_elem *e, const struct cv *m) {
  double th = m->products ? oc_dot_theta(p, m->K, m->extra) : oc_sum_theta(p, m->K, m->extra);
  double bz = oc_add_up(oc_mul_up(th, e->in[0]),
                        oc_mul_up(oc_acc_eta(p), oc_dot_roundings(p, m->K, m->extra, m->products)));
  if (m->products) bz = oc_add_up(bz, oc_mul_up(oc_dot_sub_coef(p, th), e->in[1]));
  double ua = oc_profile_u_acc(p);
  if (e->in[3] > 0 && oc_out_u(p) > ua) { /* the convolution rounded to out, then the bias */
    double b1 = oc_out_bound(p, e->in[2], bz);
    bz = oc_add_up(b1, oc_mul_up(ua, oc_add_up(oc_add_up(e->in[2], b1), e->in[3])));
  }
  return bz;
}

static double cv_bound(const struct oc_profile *p, const struct oc_elem *e, const void *ctx) {
  return oc_out_bound(p, fmax(fabs(e->lo), fabs(e->hi)), cv_pre(p, e, ctx));
}

/* Splits a flat spatial index into its coordinates (row-major over sz). */
static void unflat(int nsp, const int64_t *sz, int64_t f, int64_t *c) {
  for (int d = nsp - 1; d >= 0; d--) {
    c[d] = f % sz[d];
    f /= sz[d];
  }
}

static int64_t sp_off(const struct oc_tensor *t, int nsp, const int64_t *c) {
  int64_t off = 0;
  for (int d = 0; d < nsp; d++)
    off += c[d] * t->stride[2 + d];
  return off;
}

/* floor(a / b) and ceil(a / b) for b > 0. */
static int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

/* The weight and bias gradients' terms, whose sums run over the batch and
 * every position q of g: per spatial dim the range of q whose tap k
 * (weight gradient) lands in x, q s - p + k d in [0, x's length), then
 * runs along the last dim decoded at once (these sums are long: N times
 * the positions). Dims past nsp count as one position. */
static int64_t gather_sums(struct cv *m, int64_t o, int64_t c, const int64_t *k) {
  const struct oc_conv_args *a = m->a;
  const struct oc_tensor *A = a->a, *B = a->b;
  int wg = m->op == OC_CONV_OP_CONV_WEIGHT_GRAD;
  int64_t lo[OC_CONV_MAX_SP], hi[OC_CONV_MAX_SP], ga[OC_CONV_MAX_SP], xb[OC_CONV_MAX_SP],
      x0[OC_CONV_MAX_SP];
  for (int d = 0; d < OC_CONV_MAX_SP; d++) {
    int in = d < m->nsp;
    int64_t s = in ? a->stride[d] : 1, off = in && wg ? k[d] * a->dilation[d] - a->padding[d] : 0;
    lo[d] = 0, hi[d] = in ? m->is[d] : 1;
    if (in && wg) {
      lo[d] = ceil_div(-off, s) > 0 ? ceil_div(-off, s) : 0;
      int64_t h = floor_div(m->os[d] - 1 - off, s) + 1;
      hi[d] = h < hi[d] ? h : hi[d];
    }
    if (lo[d] >= hi[d]) return 0;
    ga[d] = in ? A->stride[2 + d] : 0;
    xb[d] = in && wg ? B->stride[2 + d] * s : 0; /* x's step per step of q */
    x0[d] = in && wg ? (lo[d] * s + off) * B->stride[2 + d] : 0;
  }
  int64_t n = 0, run = hi[2] - lo[2], gi = o / (m->Og ? m->Og : 1);
  for (int64_t b = 0; b < m->N; b++)
    for (int64_t q0 = lo[0]; q0 < hi[0]; q0++)
      for (int64_t q1 = lo[1]; q1 < hi[1]; q1++) {
        int64_t goff =
            b * A->stride[0] + o * A->stride[1] + q0 * ga[0] + q1 * ga[1] + lo[2] * ga[2];
        oc_tensor_gather(A, goff, ga[2], run, m->abuf + n);
        if (wg) {
          int64_t xoff = b * B->stride[0] + (gi * m->Cg + c) * B->stride[1] + x0[0] +
                         (q0 - lo[0]) * xb[0] + x0[1] + (q1 - lo[1]) * xb[1] + x0[2];
          oc_tensor_gather(B, xoff, xb[2], run, m->bbuf + n);
        } else {
          for (int64_t r = 0; r < run; r++)
            m->bbuf[n + r] = 1;
        }
        n += run;
      }
  return n;
}

/* The terms of output element (i0, i1, q) into m->abuf, m->bbuf: (n, o,
 * out position) for conv and conv_transpose, (o, c, tap) for the weight
 * gradient, (o) for the bias gradient. Returns how many. */
static int64_t gather(struct cv *m, int64_t i0, int64_t i1, const int64_t *q) {
  const struct oc_conv_args *a = m->a;
  const struct oc_tensor *A = a->a, *B = a->b;
  const int64_t *s = a->stride, *pd = a->padding, *dl = a->dilation;
  int nsp = m->nsp;
  int64_t n = 0, k[OC_CONV_MAX_SP], pos[OC_CONV_MAX_SP];
  switch (m->op) {
  case OC_CONV_OP_CONV: { /* i0 = n, i1 = o */
    int64_t gi = i1 / m->Og;
    for (int64_t c = 0; c < m->Cg; c++)
      for (int64_t kk = 0; kk < m->kvol; kk++) {
        unflat(nsp, m->ks, kk, k);
        int in = 1;
        for (int d = 0; d < nsp && in; d++) {
          pos[d] = q[d] * s[d] - pd[d] + k[d] * dl[d];
          in = pos[d] >= 0 && pos[d] < m->is[d];
        }
        if (!in) continue;
        m->abuf[n] = oc_tensor_at(A, i0 * A->stride[0] + (gi * m->Cg + c) * A->stride[1] +
                                         sp_off(A, nsp, pos));
        m->bbuf[n++] = oc_tensor_at(B, i1 * B->stride[0] + c * B->stride[1] + sp_off(B, nsp, k));
      }
    return n;
  }
  case OC_CONV_OP_CONV_TRANSPOSE: { /* i0 = n, i1 = o; x's channels c of o's group */
    int64_t gi = i1 / m->Og, ol = i1 % m->Og;
    for (int64_t c = gi * m->Cg; c < (gi + 1) * m->Cg; c++)
      for (int64_t kk = 0; kk < m->kvol; kk++) {
        unflat(nsp, m->ks, kk, k);
        int in = 1;
        for (int d = 0; d < nsp && in; d++) {
          int64_t t = q[d] + pd[d] - k[d] * dl[d];
          in = t >= 0 && t % s[d] == 0 && t / s[d] < m->is[d];
          pos[d] = in ? t / s[d] : 0;
        }
        if (!in) continue;
        m->abuf[n] = oc_tensor_at(A, i0 * A->stride[0] + c * A->stride[1] + sp_off(A, nsp, pos));
        m->bbuf[n++] = oc_tensor_at(B, c * B->stride[0] + ol * B->stride[1] + sp_off(B, nsp, k));
      }
    return n;
  }
  case OC_CONV_OP_CONV_WEIGHT_GRAD: /* i0 = o, i1 = c (within the group), q = the tap */
  case OC_CONV_OP_CONV_BIAS_GRAD: /* i0 = o */ return gather_sums(m, i0, i1, q);
  case OC_CONV_OP_COUNT: break;
  }
  return 0;
}

static int64_t vol(int nsp, const int64_t *sz) {
  int64_t v = 1;
  for (int d = 0; d < nsp; d++)
    v *= sz[d];
  return v;
}

/* conv's output length along one dim (PyTorch's formula). */
static int64_t conv_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

/* Whether out positions fit a convolution over in: PyTorch's length, or
 * (the gradients of a transposed convolution, whose output_padding may
 * reach past a stride when the dilation is larger) up to (max(s, d) -
 * 1) / s shorter. */
static int len_ok(int64_t out, int64_t in, int64_t k, const struct oc_conv_args *a, int d) {
  int64_t s = a->stride[d], full = conv_len(in, k, s, a->padding[d], a->dilation[d]);
  int64_t slack = ((s > a->dilation[d] ? s : a->dilation[d]) - 1) / s;
  return out <= full && out >= full - slack && out >= 0;
}

static int params_ok(const struct oc_conv_args *a, int nsp) {
  if (a->groups < 1) return 0;
  for (int d = 0; d < nsp; d++)
    if (a->stride[d] < 1 || a->padding[d] < 0 || a->dilation[d] < 1) return 0;
  return 1;
}

/* Fills m's sizes from the tensors; 0 when they fit the op. */
static int setup(struct cv *m, const struct oc_tensor *out) {
  const struct oc_conv_args *a = m->a;
  const struct oc_tensor *A = a->a, *B = a->b;
  if (!A || A->rank < 3 || A->rank > 2 + OC_CONV_MAX_SP) return 0;
  int nsp = m->nsp = A->rank - 2;
  if (!params_ok(a, nsp)) return 0;
  m->G = a->groups;
  m->N = A->shape[0];
  m->products = m->op != OC_CONV_OP_CONV_BIAS_GRAD;
  m->extra = a->bias && (m->op == OC_CONV_OP_CONV || m->op == OC_CONV_OP_CONV_TRANSPOSE);
  if (m->op == OC_CONV_OP_CONV_BIAS_GRAD) {
    if (out->rank != 1 || out->shape[0] != A->shape[1]) return 0;
    memcpy(m->is, A->shape + 2, (size_t)nsp * sizeof(int64_t));
    m->ivol = vol(nsp, m->is);
    m->K = m->N * m->ivol;
    return 1;
  }
  if (!B || B->rank != A->rank || out->rank != A->rank) return 0;
  switch (m->op) {
  case OC_CONV_OP_CONV: { /* x [N, C, *], w [O, Cg, *k] */
    int64_t O = B->shape[0];
    m->Cg = B->shape[1];
    if (A->shape[1] != m->Cg * m->G || O % m->G || out->shape[0] != m->N || out->shape[1] != O)
      return 0;
    m->Og = O / m->G;
    for (int d = 0; d < nsp; d++) {
      m->ks[d] = B->shape[2 + d];
      m->is[d] = A->shape[2 + d];
      m->os[d] = out->shape[2 + d];
      if (!len_ok(m->os[d], m->is[d], m->ks[d], a, d)) return 0;
    }
    break;
  }
  case OC_CONV_OP_CONV_TRANSPOSE: { /* x [N, C, *], w [C, Og, *k] */
    int64_t C = A->shape[1];
    m->Og = B->shape[1];
    if (B->shape[0] != C || C % m->G || out->shape[0] != m->N || out->shape[1] != m->Og * m->G)
      return 0;
    m->Cg = C / m->G;
    for (int d = 0; d < nsp; d++) {
      m->ks[d] = B->shape[2 + d];
      m->is[d] = A->shape[2 + d];
      m->os[d] = out->shape[2 + d];
      int64_t base =
          (m->is[d] - 1) * a->stride[d] - 2 * a->padding[d] + a->dilation[d] * (m->ks[d] - 1) + 1;
      int64_t slack = a->stride[d] > a->dilation[d] ? a->stride[d] : a->dilation[d];
      if (m->os[d] < base || m->os[d] >= base + slack) return 0;
    }
    break;
  }
  case OC_CONV_OP_CONV_WEIGHT_GRAD: { /* g [N, O, *], x [N, C, *] -> [O, Cg, *k] */
    int64_t O = A->shape[1], C = B->shape[1];
    m->Cg = out->shape[1];
    if (B->shape[0] != m->N || C != m->Cg * m->G || O % m->G || out->shape[0] != O) return 0;
    m->Og = O / m->G;
    for (int d = 0; d < nsp; d++) {
      m->ks[d] = out->shape[2 + d];
      m->is[d] = A->shape[2 + d]; /* g's positions q */
      m->os[d] = B->shape[2 + d]; /* x's, which q s - p + k d indexes */
      if (!len_ok(m->is[d], m->os[d], m->ks[d], a, d)) return 0;
    }
    break;
  }
  case OC_CONV_OP_CONV_BIAS_GRAD:
  case OC_CONV_OP_COUNT: return 0;
  }
  m->kvol = vol(nsp, m->ks);
  m->ivol = vol(nsp, m->is);
  m->ovol = vol(nsp, m->os);
  m->K = m->op == OC_CONV_OP_CONV_WEIGHT_GRAD ? m->N * m->ivol : m->Cg * m->kvol;
  if (a->bias && (m->op == OC_CONV_OP_CONV_WEIGHT_GRAD || a->bias->rank != 1 ||
                  a->bias->shape[0] != out->shape[1]))
    return 0;
  return 1;
}

/* One pass over t: bit 1 an Inf or NaN, bit 2 a magnitude tf32 rounds to
 * Inf (>= 0x1.ffep127), bit 4 a nonzero value below fmt's smallest normal
 * (the subnormal terms of the tf32 and ftz bounds). */
static int scan(const struct oc_tensor *t, enum oc_format fmt) {
  if (!t) return 0;
  double mn = ldexp(1, oc_format_info(fmt)->emin_normal - 1);
  int64_t n = oc_tensor_numel(t), idx[OC_MAX_RANK] = {0};
  int f = 0;
  for (int64_t i = 0; i < n; i++) {
    double x = fabs(oc_tensor_get(t, idx));
    f |= (isfinite(x) ? 0 : 1) | (x >= 0x1.ffep127) << 1 | (x != 0 && x < mn) << 2;
    for (int d = t->rank - 1; d >= 0; d--) {
      if (++idx[d] < t->shape[d]) break;
      idx[d] = 0;
    }
  }
  return f;
}

/* The element from the dot's enclosure [sl, sh] and the bias value. */
static void fill(const struct cv *m, double sl, double sh, double sabs, double ssub, double bv,
                 double kv, struct oc_elem *e) {
  const struct oc_profile *p = m->p;
  memset(e, 0, sizeof *e);
  e->k = kv;
  e->prob = INFINITY;
  if (!isfinite(sl) || !isfinite(sh) || !isfinite(bv)) {
    e->lo = e->hi = sl + bv;
  } else {
    double rad = bv == 0 ? 0 : oc_mul_up(fabs(sl) + fabs(sh) + fabs(bv), 0x1p-51);
    e->lo = oc_down(sl + bv - rad);
    e->hi = oc_up(sh + bv + rad);
  }
  e->in[0] = oc_add_up(sabs, fabs(bv));
  e->in[1] = ssub;
  e->in[2] = fmax(fabs(sl), fabs(sh));
  e->in[3] = fabs(bv);
  if (e->lo == e->lo && !isinf(e->lo)) {
    e->pre = cv_pre(p, e, m);
    e->pre_set = 1;
    e->bound = oc_out_bound(p, fmax(fabs(e->lo), fabs(e->hi)), e->pre);
  }
  double th = m->products ? oc_dot_theta(p, m->K, m->extra) : oc_sum_theta(p, m->K, m->extra);
  double reach = oc_mul_up(e->in[0], oc_add_up(1, th));
  if (m->a->alg == OC_CONV_ANY) reach = oc_mul_up(reach, 0x1p20); /* a transform's sums */
  e->ovf_ok =
      !(reach < oc_overflow_threshold(p->acc)) || (m->a->alg == OC_CONV_ANY && m->nonfinite);
  /* a transform's value near the top of the range: neither its overflow
   * nor a finite value proves anything (the output rules read pre) */
  if (m->a->alg == OC_CONV_ANY && e->ovf_ok && e->pre_set) e->pre = e->bound = INFINITY;
  if (m->nonfinite && kv != kv) e->alt_ok = 1; /* 0 * Inf at a padding tap */
}

/* One output element: its terms, enclosure, bound; the exact sum where
 * Dot2 cannot settle the verdict or the correct rounding. */
static void elem(struct cv *m, struct oc_acc *acc, int64_t i0, int64_t i1, const int64_t *q,
                 double bv, double kv, struct oc_elem *e) {
  int64_t n = gather(m, i0, i1, q);
  const struct oc_profile *p = m->p;
  int exact_products = m->a->a->fmt != OC_FP64 && (!m->products || m->a->b->fmt != OC_FP64);
  double s, rad, sabs, pmin, pmax, sl, sh;
  oc_dot2(m->abuf, m->bbuf, n, exact_products, &s, &rad, &sabs, &pmin, &pmax);
  int tf32 = p->tf32 && (p->in == OC_FP32 || p->in == OC_FP64) && m->products;
  double ssub =
      m->products && m->sub && (p->ftz || tf32) ? oc_dot_sub_mass(p, m->abuf, m->bbuf, n) : 0;
  int exact = 0;
  if (!isfinite(s) || !(sabs < INFINITY)) {
    oc_dot_exact_enclose(acc, m->abuf, m->bbuf, n, &sl, &sh);
    exact = 1;
  } else {
    sl = oc_down(s - rad);
    sh = oc_up(s + rad);
  }
  fill(m, sl, sh, sabs, ssub, bv, kv, e);
  if (tf32 && m->big && !e->ovf_ok && oc_dot_tf32_overflows(m->abuf, m->bbuf, n)) e->ovf_ok = 1;
  if (exact) return;
  double r;
  int undecided = !oc_round_enclosure(p->out, p->out_ovf, e->lo, e->hi, &r);
  double elo = kv < e->lo ? e->lo - kv : kv > e->hi ? kv - e->hi : 0;
  double ehi = fmax(fabs(kv - e->lo), fabs(kv - e->hi));
  if (undecided || (elo <= e->bound && ehi > e->bound)) {
    int ovf = e->ovf_ok;
    oc_dot_exact_enclose(acc, m->abuf, m->bbuf, n, &sl, &sh);
    fill(m, sl, sh, sabs, ssub, bv, kv, e);
    e->ovf_ok |= ovf;
  }
}

/* The sampling view of out: rows x cols, one tile (oc_sample_plan's
 * tails are then the last row and the last column, not whole partial
 * tiles of a matmul's 128 x 128: a weight gradient's outputs each sum N
 * times the positions). conv, conv_transpose: rows (n, o), cols the
 * positions; weight gradient: rows o, cols (c, tap); bias gradient: one row. */
static void view(const struct cv *m, const struct oc_tensor *out, int64_t *M, int64_t *Nc) {
  if (m->op == OC_CONV_OP_CONV_BIAS_GRAD) {
    *M = 1, *Nc = out->shape[0];
  } else if (m->op == OC_CONV_OP_CONV_WEIGHT_GRAD) {
    *M = out->shape[0], *Nc = m->Cg * m->kvol;
  } else {
    *M = m->N * out->shape[1], *Nc = m->ovol;
  }
}

int oc_check_conv(enum oc_conv_op op, const struct oc_conv_args *args, const struct oc_tensor *out,
                  const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  struct oc_options od;
  if (o)
    od = *o;
  else
    oc_options_default(&od);
  if (!args || !out || !p || !v || (unsigned)op >= OC_CONV_OP_COUNT) return -1;
  struct cv m = {.op = op, .a = args, .p = p};
  if (!setup(&m, out)) return -1;
  int seen = scan(args->a, p->in) | scan(args->b, p->in) | scan(args->bias, p->in);
  m.nonfinite = seen & 1, m.big = seen >> 1 & 1, m.sub = seen >> 2 & 1;
  int64_t M, Nc;
  view(&m, out, &M, &Nc);
  int64_t total = M * Nc;
  od.tile_m = M > 0 && M < INT32_MAX ? (int)M : od.tile_m;
  od.tile_n = Nc > 0 && Nc < INT32_MAX ? (int)Nc : od.tile_n;
  if (!od.full && (double)total * (double)m.K > CV_TERMS_BUDGET) {
    od.full_below = 0;
    double f = log(1 / od.delta) * (double)m.K / CV_TERMS_BUDGET;
    if (f > od.fraction) od.fraction = fmin(f, 0.05);
  }
  struct oc_check c;
  static const char *const names[] = {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_CONV(cls, name, )
#include "ops.def"
  };
  oc_check_init(&c, names[op], p, &od, v, total, out->rank, cv_bound, &m);
  int64_t count, nrand;
  struct oc_sample *plan = oc_sample_plan(1, M, Nc, &od, NULL, 0, &count, &nrand);
  struct oc_acc *acc = oc_acc_new();
  size_t cap = (size_t)(m.K > 0 ? m.K : 1);
  m.abuf = malloc(cap * sizeof(double));
  m.bbuf = malloc(cap * sizeof(double));
  if (!plan || !acc || !m.abuf || !m.bbuf) {
    free(plan);
    oc_acc_free(acc);
    free(m.abuf);
    free(m.bbuf);
    return -1;
  }
  int64_t any_beyond = 0;
  for (int64_t s = 0; s < count; s++) {
    struct oc_sample q = plan[s];
    int64_t idx[OC_MAX_RANK] = {0}, sp[OC_CONV_MAX_SP] = {0}, i0, i1;
    double bv = 0;
    if (op == OC_CONV_OP_CONV_BIAS_GRAD) {
      i0 = idx[0] = q.j, i1 = 0;
    } else if (op == OC_CONV_OP_CONV_WEIGHT_GRAD) {
      i0 = idx[0] = q.i, i1 = idx[1] = q.j / m.kvol;
      unflat(m.nsp, m.ks, q.j % m.kvol, sp);
    } else {
      i0 = idx[0] = q.i / out->shape[1], i1 = idx[1] = q.i % out->shape[1];
      unflat(m.nsp, m.os, q.j, sp);
      if (args->bias) bv = oc_tensor_at(args->bias, i1 * args->bias->stride[0]);
    }
    int64_t off = 0;
    for (int d = 0; d < m.nsp && op != OC_CONV_OP_CONV_BIAS_GRAD; d++)
      idx[2 + d] = sp[d];
    for (int d = 0; d < out->rank; d++)
      off += idx[d] * out->stride[d];
    double kv = oc_tensor_at(out, off);
    struct oc_elem e;
    elem(&m, acc, i0, i1, sp, bv, kv, &e);
    if (args->alg == OC_CONV_ANY && isfinite(kv) && e.lo == e.lo && !isinf(e.lo)) {
      double err_lo = kv < e.lo ? oc_down(e.lo - kv) : kv > e.hi ? oc_down(kv - e.hi) : 0;
      if (err_lo > e.bound) { /* a transform algorithm's error, or a defect: no proof either way */
        if (!any_beyond++)
          oc_check_inconclusive(&c, "beyond the dot-product bound, where cuDNN may have used a "
                                    "Winograd or FFT algorithm (no componentwise bound: "
                                    "algorithm any)");
        e.bound = e.pre = INFINITY; /* nor does a must-overflow rule from the dot's bound hold */
      }
    }
    oc_check_elem(&c, &e, idx);
  }
  oc_check_finish(&c, nrand);
  free(plan);
  oc_acc_free(acc);
  free(m.abuf);
  free(m.bbuf);
  return 0;
}
