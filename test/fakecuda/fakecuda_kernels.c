/* test/fakecuda/fakecuda_kernels.c — the registry of C "kernels" that module
 * images bind to by name: planted kernels for kcheck's tests (elementwise,
 * struct parameters, order-dependent and order-independent ones) and the
 * stand-ins for kcheck's own perturbation kernels (kc_scrub_shared, ...). */
#include <math.h>
#include <string.h>

#include "../../libkcheck/exec/kernels/cmp_table.h"
#include "../../libkcheck/exec/kernels/region_hash.h"
#include "fakecuda_int.h"

#define P(i, T) (*(T *)params[i])

static unsigned nthreads(const struct fk_launch_ctx *c) {
  return c->blockDim.x * c->blockDim.y * c->blockDim.z;
}
static unsigned long long block_lin(const struct fk_launch_ctx *c) {
  return c->blockIdx.x + (unsigned long long)c->gridDim.x *
                             (c->blockIdx.y + (unsigned long long)c->gridDim.y * c->blockIdx.z);
}
static unsigned long long nblocks(const struct fk_launch_ctx *c) {
  return (unsigned long long)c->gridDim.x * c->gridDim.y * c->gridDim.z;
}

/* ------------------------------------------------------- plain kernels */

static void k_vecadd(const struct fk_launch_ctx *c, void *const *params) {
  const float *a = P(0, const float *), *b = P(1, const float *);
  float *out = P(2, float *);
  int n = P(3, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) out[i] = a[i] + b[i];
  }
}

static void k_scale(const struct fk_launch_ctx *c, void *const *params) {
  float *x = P(0, float *);
  float s = P(1, float);
  int n = P(2, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) x[i] *= s;
  }
}

static void k_fill(const struct fk_launch_ctx *c, void *const *params) {
  int *out = P(0, int *);
  int v = P(1, int), n = P(2, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) out[i] = v;
  }
}

static void k_ti_add(const struct fk_launch_ctx *c, void *const *params) {
  const struct fk_ti_params *p = params[0];
  float *out = (void *)p->out;
  const float *a = (const void *)p->a, *b = (const void *)p->b;
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < p->n) out[i] = a[i] + p->alpha * b[i];
  }
}

static void k_vec_elem(const struct fk_launch_ctx *c, void *const *params) {
  int n = P(0, int);
  struct fk_muladd f = P(1, struct fk_muladd);
  char *const *data = (char *const *)params[2];
  float *out = (void *)data[0];
  const float *x = (const void *)data[1], *y = (const void *)data[2];
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) out[i] = f.a * x[i] + f.b * y[i];
  }
}

/* ---------------------------------------------- order-dependent (racy) */

/* Every block stores its index into out[0]: the last block to run wins. */
static void k_last_writer(const struct fk_launch_ctx *c, void *const *params) {
  int *out = P(0, int *);
  out[0] = (int)block_lin(c);
}

static void k_multi_ptr(const struct fk_launch_ctx *c, void *const *params) {
  const struct fk_multi_params *p = params[0];
  unsigned long long count = p->count < FK_MULTI_MAX ? p->count : FK_MULTI_MAX;
  unsigned long long pairs_end = p->racy && count ? count - 1 : count; /* the racy one unread */
  if (block_lin(c) == 0)
    for (unsigned long long i = 0; i + 1 < pairs_end; i += 2)
      for (unsigned long long j = 0; j < p->n; j++)
        p->t[i][j] = 2.0f * p->t[i + 1][j];
  if (p->racy && count) p->t[count - 1][0] = (float)block_lin(c);
}

/* Block b publishes buf[b] = b + 1 and reads its neighbour's slot without
 * any synchronisation: out[b] is 0 or b + 2 depending on who ran first. */
static void k_neighbor(const struct fk_launch_ctx *c, void *const *params) {
  int *buf = P(0, int *), *out = P(1, int *);
  int n = P(2, int);
  unsigned long long b = block_lin(c), nb = nblocks(c);
  if (b >= (unsigned long long)n) return;
  buf[b] = (int)b + 1;
  unsigned long long nbr = (b + 1) % (nb < (unsigned long long)n ? nb : (unsigned long long)n);
  out[b] = buf[nbr];
}

/* Per-block partial sums added with a float atomicAdd: with mixed
 * magnitudes the rounding, hence the bits of *sum, follow block order. */
static void k_float_accum(const struct fk_launch_ctx *c, void *const *params) {
  const float *x = P(0, const float *);
  float *sum = P(1, float *);
  int n = P(2, int);
  float part = 0;
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) part += x[i];
  }
  volatile float *s = sum;
  *s = *s + part;
}

/* Reads 1 KiB of static shared memory that nothing in the kernel writes. */
static void k_uninit_shared(const struct fk_launch_ctx *c, void *const *params) {
  unsigned *out = P(0, unsigned *);
  const unsigned *sh = (const unsigned *)c->shared;
  for (unsigned t = 0; t < nthreads(c); t++)
    out[block_lin(c) * nthreads(c) + t] = sh[t % 256];
}

/* ------------------------------------------------- order-independent */

static void k_disjoint(const struct fk_launch_ctx *c, void *const *params) {
  int *out = P(0, int *);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    out[i] = (int)(i * 3 + 1);
  }
}

static void k_atomic_sum(const struct fk_launch_ctx *c, void *const *params) {
  const int *x = P(0, const int *);
  unsigned long long *sum = P(1, unsigned long long *);
  int n = P(2, int);
  unsigned long long part = 0;
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) part += (unsigned long long)(long long)x[i];
  }
  __atomic_fetch_add(sum, part, __ATOMIC_RELAXED);
}

/* Reverses each block's chunk through dynamic shared memory (blockDim * 4
 * bytes), writing shared memory before reading it. */
static void k_shared_rev(const struct fk_launch_ctx *c, void *const *params) {
  const int *in = P(0, const int *);
  int *out = P(1, int *);
  unsigned nt = nthreads(c), n = nt;
  if (c->dynamic_shared / 4 < n) n = (unsigned)(c->dynamic_shared / 4);
  int *tile = (int *)(c->shared + c->static_shared);
  unsigned long long base = block_lin(c) * nt;
  for (unsigned t = 0; t < n; t++)
    tile[t] = in[base + t];
  for (unsigned t = 0; t < n; t++)
    out[base + t] = tile[n - 1 - t];
}

/* ------------------------------------------- contract bugs (planted) */

/* out[i] = a[i] + 1, but the last n % 128 elements are never written: a
 * tail loop that was forgotten. The coverage gate must see it. */
static void k_tail_unwritten(const struct fk_launch_ctx *c, void *const *params) {
  const float *a = P(0, const float *);
  float *out = P(1, float *);
  int n = P(2, int);
  unsigned long long full = (unsigned long long)(n - n % 128);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < full) out[i] = a[i] + 1.0f;
  }
}

/* out[i] = 2 * x[i], then x[i] = 0: uses its input as scratch space, which
 * the immutability gate must see. */
static void k_input_scratch(const struct fk_launch_ctx *c, void *const *params) {
  float *x = P(0, float *), *out = P(1, float *);
  int n = P(2, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) {
      out[i] = 2.0f * x[i];
      x[i] = 0.0f;
    }
  }
}

/* out[i] = a[i] - 1 for i < n, and thread n (present when n % 128 != 0)
 * also stores out[n]: an off-by-one bound check the bounds gate must see. */
static void k_oob_tail_write(const struct fk_launch_ctx *c, void *const *params) {
  const float *a = P(0, const float *);
  float *out = P(1, float *);
  int n = P(2, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n)
      out[i] = a[i] - 1.0f;
    else if (i == (unsigned long long)n)
      out[i] = -1.0f;
  }
}

/* ------------------------------------- numerical bugs (planted) + correct */

/* exp(x) = 2^k * p(r), x = k ln2 + r, |r| <= ln2/2, p the degree-5 Taylor
 * polynomial in float: relative error up to r^6/720 (~2.5e-6, tens of
 * ulps) where expf stays within its 2-ulp budget. */
static float exp_fast(float x) {
  float k = nearbyintf(x * 1.44269504f);
  float r = x - k * 0.693147182f;
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120)))));
  return ldexpf(p, (int)k);
}

static void k_exp_fast_wrong(const struct fk_launch_ctx *c, void *const *params) {
  const float *x = P(0, const float *);
  float *out = P(1, float *);
  int n = P(2, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) out[i] = exp_fast(x[i]);
  }
}

static void k_exp_correct(const struct fk_launch_ctx *c, void *const *params) {
  const float *x = P(0, const float *);
  float *out = P(1, float *);
  int n = P(2, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) out[i] = expf(x[i]);
  }
}

/* expf with infinite inputs "sanitized" to 0: right for -Inf (e^-Inf = 0),
 * wrong for +Inf (e^+Inf = +Inf); NaN still propagates and every finite
 * input is expf's. Only a +Inf input shows it: on a vector (one row) the
 * nonfinite gate's specials gave NaN alone before the generator's rows
 * were rotated for inputs of fewer than 6 rows. */
static void k_exp_inf_zero(const struct fk_launch_ctx *c, void *const *params) {
  const float *x = P(0, const float *);
  float *out = P(1, float *);
  int n = P(2, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i < (unsigned long long)n) out[i] = isinf(x[i]) ? 0.0f : expf(x[i]);
  }
}

/* v rounded to the nearest fp16 value (ties to even; no overflow handling:
 * the planted GEMM stays far below 65504). */
static float round_fp16(float v) {
  if (v == 0.0f || !isfinite(v)) return v;
  int e;
  (void)frexpf(v, &e);
  int q = e - 11 < -24 ? -24 : e - 11; /* quantum 2^q: 11 significant bits */
  return (float)ldexp(nearbyint(ldexp((double)v, -q)), q);
}

/* C[m][n] = sum_k A[m][k] B[k][n], one thread per output element; fp16acc
 * rounds the running sum to fp16 after every step (an fp16 accumulator). */
static void gemm(const struct fk_launch_ctx *c, void *const *params, int fp16acc) {
  const float *A = P(0, const float *), *B = P(1, const float *);
  float *C = P(2, float *);
  int M = P(3, int), N = P(4, int), K = P(5, int);
  for (unsigned t = 0; t < nthreads(c); t++) {
    unsigned long long i = block_lin(c) * nthreads(c) + t;
    if (i >= (unsigned long long)M * (unsigned long long)N) continue;
    unsigned long long m = i / (unsigned)N, nn = i % (unsigned)N;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
      acc =
          fmaf(A[m * (unsigned)K + (unsigned)k], B[(unsigned long long)k * (unsigned)N + nn], acc);
      if (fp16acc) acc = round_fp16(acc);
    }
    C[i] = acc;
  }
}

static void k_gemm_fp16acc(const struct fk_launch_ctx *c, void *const *params) {
  gemm(c, params, 1);
}

static void k_gemm_fp32acc(const struct fk_launch_ctx *c, void *const *params) {
  gemm(c, params, 0);
}

/* ------------------------- numerical and shape bugs for the adversarial
 * gates (nonfinite, precision, shapes, extremes) + correct counterparts.
 * Each is right on the inputs and shape the application gives it; only
 * kcheck's generated inputs or shapes show the bug. Row kernels run one
 * block per row (grid-stride over rows, so any grid is correct); a block's
 * threads do not matter here. */

/* Row r of a rows x cols row-major array, for each row this block owns. */
#define FOR_ROWS(c, r, rows)                                                                       \
  for (unsigned long long r = block_lin(c); (rows) > 0 && r < (unsigned long long)(rows);          \
       r += nblocks(c))

/* out[r] = max of row r. fmaxf returns the other operand when one is NaN,
 * so a NaN in the row is dropped (the bug: max must propagate NaN). Signed
 * zeros are ordered (+0 > -0) in both, so NaN is the only difference. */
static void rowmax_each_row(const struct fk_launch_ctx *c, void *const *params, int drop_nan) {
  const float *x = P(0, const float *);
  float *out = P(1, float *);
  int rows = P(2, int), cols = P(3, int);
  FOR_ROWS(c, r, rows) {
    const float *row = x + r * (unsigned long long)(cols > 0 ? cols : 0);
    float m = -INFINITY;
    for (int k = 0; k < cols; k++) {
      float v = row[k];
      if (v == 0 && m == 0) /* +0 > -0; fmaxf may return either zero */
        m = signbit(m) ? v : m;
      else if (drop_nan)
        m = fmaxf(m, v);
      else if (v > m || v != v)
        m = v; /* once NaN, stays NaN: nothing compares greater */
    }
    out[r] = m;
  }
}

static void k_rowmax_fmaxf(const struct fk_launch_ctx *c, void *const *params) {
  rowmax_each_row(c, params, 1);
}

static void k_rowmax(const struct fk_launch_ctx *c, void *const *params) {
  rowmax_each_row(c, params, 0);
}

/* out = a + b in tiles of 64 elements. A full tile is right; in a partial
 * last tile (n % 64 != 0) each element adds its left neighbour of b: an
 * indexing bug in the tail path that a multiple of 64 never reaches. */
static void k_tiled_add_bug(const struct fk_launch_ctx *c, void *const *params) {
  const float *a = P(0, const float *), *b = P(1, const float *);
  float *out = P(2, float *);
  int n = P(3, int);
  if (n <= 0) return;
  unsigned long long un = (unsigned long long)n, step = nblocks(c) * nthreads(c);
  for (unsigned t = 0; t < nthreads(c); t++)
    for (unsigned long long i = block_lin(c) * nthreads(c) + t; i < un; i += step) {
      unsigned long long tile = i / 64 * 64;
      if (tile + 64 <= un)
        out[i] = a[i] + b[i];
      else
        out[i] = a[i] + b[i ? i - 1 : 0];
    }
}

/* Softmax over each row. nomax: exp(x) / sum exp(x) without subtracting
 * the row max, which overflows to Inf (then NaN or 0) for logits above ~88.
 * Correct: max (NaN-propagating), then sum of exp(x - max), then divide. */
static void softmax_each_row(const struct fk_launch_ctx *c, void *const *params, int nomax) {
  const float *x = P(0, const float *);
  float *y = P(1, float *);
  int rows = P(2, int), cols = P(3, int);
  if (cols <= 0) return;
  FOR_ROWS(c, r, rows) {
    const float *xr = x + r * (unsigned long long)cols;
    float *yr = y + r * (unsigned long long)cols;
    float m = -INFINITY, s = 0.0f;
    if (nomax)
      m = 0.0f;
    else
      for (int k = 0; k < cols; k++)
        if (xr[k] > m || xr[k] != xr[k]) m = xr[k];
    for (int k = 0; k < cols; k++)
      s += expf(xr[k] - m);
    for (int k = 0; k < cols; k++)
      yr[k] = expf(xr[k] - m) / s;
  }
}

static void k_softmax_nomax(const struct fk_launch_ctx *c, void *const *params) {
  softmax_each_row(c, params, 1);
}

static void k_softmax_rows(const struct fk_launch_ctx *c, void *const *params) {
  softmax_each_row(c, params, 0);
}

/* LayerNorm over each row, no weight or bias: y = (x - mean) / sqrt(var +
 * eps), all in float. onepass: var = E[x^2] - mean^2, which cancels
 * catastrophically when |mean| >> sigma (the bug). twopass: the mean, then
 * the mean of squared deviations from it. */
static void layernorm_each_row(const struct fk_launch_ctx *c, void *const *params, int onepass) {
  const float *x = P(0, const float *);
  float *y = P(1, float *);
  int rows = P(2, int), cols = P(3, int);
  float eps = P(4, float);
  if (cols <= 0) return;
  FOR_ROWS(c, r, rows) {
    const float *xr = x + r * (unsigned long long)cols;
    float *yr = y + r * (unsigned long long)cols;
    float s = 0.0f, ss = 0.0f;
    for (int k = 0; k < cols; k++) {
      s += xr[k];
      if (onepass) ss += xr[k] * xr[k];
    }
    float mean = s / (float)cols, var;
    if (onepass) {
      var = ss / (float)cols - mean * mean;
      if (var < 0) var = 0; /* cancellation can make it negative */
    } else {
      for (int k = 0; k < cols; k++) {
        float d = xr[k] - mean;
        ss += d * d;
      }
      var = ss / (float)cols;
    }
    float rs = 1.0f / sqrtf(var + eps);
    for (int k = 0; k < cols; k++)
      yr[k] = (xr[k] - mean) * rs;
  }
}

static void k_layernorm_onepass(const struct fk_launch_ctx *c, void *const *params) {
  layernorm_each_row(c, params, 1);
}

static void k_layernorm_twopass(const struct fk_launch_ctx *c, void *const *params) {
  layernorm_each_row(c, params, 0);
}

/* ------------------------------------------------ kcheck's own kernels */

static unsigned long long splitmix(unsigned long long *s) {
  unsigned long long z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void k_scrub(const struct fk_launch_ctx *c, void *const *params) {
  unsigned long long s =
      P(0, unsigned long long) ^ ((unsigned long long)c->smid << 40) ^ block_lin(c);
  size_t n = c->static_shared + c->dynamic_shared;
  for (size_t i = 0; i < n; i += 8) {
    unsigned long long v = splitmix(&s);
    memcpy(c->shared + i, &v, n - i < 8 ? n - i : 8);
  }
}

static void k_occupier(const struct fk_launch_ctx *c, void *const *params) {
  volatile unsigned *release = P(0, volatile unsigned *);
  fk_occupier_take(c->smid, release, P(1, unsigned long long));
}

static void k_hammer(const struct fk_launch_ctx *c, void *const *params) {
  unsigned *buf = P(0, unsigned *);
  unsigned long long words = P(1, unsigned long long), iters = P(2, unsigned long long);
  /* Bounded: launches run one after another here, so there is no
   * concurrency to gain; touching a slice keeps checks fast on the CPU. */
  if (iters > 1) iters = 1;
  if (words > (1u << 16)) words = 1u << 16;
  unsigned long long step = nblocks(c) * nthreads(c);
  for (unsigned long long it = 0; it < iters; it++)
    for (unsigned t = 0; t < nthreads(c); t++)
      for (unsigned long long i = block_lin(c) * nthreads(c) + t; i < words; i += step)
        buf[i]++;
}

static void k_flush_l2(const struct fk_launch_ctx *c, void *const *params) {
  unsigned *buf = P(0, unsigned *);
  unsigned long long words = P(1, unsigned long long);
  /* No cache to evict here: a slice is enough to exercise the launch. */
  if (words > (1u << 16)) words = 1u << 16;
  unsigned long long step = nblocks(c) * nthreads(c);
  for (unsigned t = 0; t < nthreads(c); t++)
    for (unsigned long long i = block_lin(c) * nthreads(c) + t; i < words; i += step)
      buf[i] = (unsigned)i;
}

/* out[1] holds ~(first differing index), as the device kernel keeps it
 * (atomicMax on zeroed slots). */
static void note_difference(unsigned long long *out, unsigned long long i) {
  out[0]++;
  if (~i > out[1]) out[1] = ~i;
}

static void k_compare(const struct fk_launch_ctx *c, void *const *params) {
  const unsigned *a = P(0, const unsigned *), *b = P(1, const unsigned *);
  unsigned long long words = P(2, unsigned long long);
  unsigned long long *out = P(3, unsigned long long *);
  /* Blocks run one at a time here: block 0 does the whole comparison. */
  if (block_lin(c) != 0) return;
  for (unsigned long long i = 0; i < words; i++)
    if (a[i] != b[i]) note_difference(out, i);
}

static void k_compare_table(const struct fk_launch_ctx *c, void *const *params) {
  const struct kc_cmp_table *t = params[0];
  unsigned long long *out = P(1, unsigned long long *);
  unsigned long long seed = P(2, unsigned long long);
  unsigned long long *hout = P(3, unsigned long long *);
  if (block_lin(c) != 0 || t->n > KC_CMP_MAX) return;
  for (unsigned long long r = 0; r < t->n; r++) {
    const unsigned *a = (const unsigned *)(uintptr_t)t->a[r];
    const unsigned *b = (const unsigned *)(uintptr_t)t->b[r];
    for (unsigned long long i = 0; i < t->words[r]; i++)
      if (a[i] != b[i]) note_difference(&out[2 * r], i);
    if (hout) kc_rh_region(a, t->words[r], seed, &hout[2 * r]);
  }
}

/* The hash kernels' publish_sums: with pub, out[0 .. 2n) moved there
 * (host memory mapped for the device: here the same address) and left
 * zeroed; *done, the GPU's count of finished blocks, is left 0 as the last
 * block leaves it. */
static void publish_sums(unsigned long long *out, unsigned long long n, unsigned *done,
                         unsigned long long *pub) {
  if (!pub) return;
  memcpy(pub, out, 16 * n);
  memset(out, 0, 16 * n);
  if (done) *done = 0;
}

/* kc_hash_table: out[2r], out[2r+1] += region r's two hash lanes, then
 * published (publish_sums); b[] and start[] are ignored. */
static void k_hash_table(const struct fk_launch_ctx *c, void *const *params) {
  const struct kc_cmp_table *t = params[0];
  unsigned long long seed = P(1, unsigned long long);
  unsigned long long *out = P(2, unsigned long long *);
  if (block_lin(c) != 0 || t->n > KC_CMP_MAX) return;
  for (unsigned long long r = 0; r < t->n; r++)
    kc_rh_region((const unsigned *)(uintptr_t)t->a[r], t->words[r], seed, &out[2 * r]);
  publish_sums(out, t->n, P(3, unsigned *), P(4, unsigned long long *));
}

/* kc_copy_hash_table: b[r] = a[r], and out[2r], out[2r+1] += its two hash
 * lanes, then published (publish_sums); start[] is ignored. */
static void k_copy_hash_table(const struct fk_launch_ctx *c, void *const *params) {
  const struct kc_cmp_table *t = params[0];
  unsigned long long seed = P(1, unsigned long long);
  unsigned long long *out = P(2, unsigned long long *);
  if (block_lin(c) != 0 || t->n > KC_CMP_MAX) return;
  for (unsigned long long r = 0; r < t->n; r++) {
    const unsigned *a = (const unsigned *)(uintptr_t)t->a[r];
    memmove((void *)(uintptr_t)t->b[r], a, 4 * t->words[r]);
    kc_rh_region(a, t->words[r], seed, &out[2 * r]);
  }
  publish_sums(out, t->n, P(3, unsigned *), P(4, unsigned long long *));
}

/* ----------------------------------------------------------- registry */

static const struct fk_kernel_def builtin[] = {
    {FK_K_VECADD, k_vecadd, 4, {8, 8, 8, 4}, {0}, 0, 0},
    {FK_K_SCALE, k_scale, 3, {8, 4, 4}, {0}, 0, 0},
    {FK_K_FILL, k_fill, 3, {8, 4, 4}, {0}, 0, 0},
    {FK_K_TI_ADD, k_ti_add, 1, {sizeof(struct fk_ti_params)}, {8}, 0, 0},
    {FK_K_VEC_ELEM, k_vec_elem, 3, {4, 8, 24}, {4, 4, 8}, 0, 0},
    {FK_K_LAST_WRITER, k_last_writer, 1, {8}, {0}, 0, 1},
    {FK_K_NEIGHBOR, k_neighbor, 3, {8, 8, 4}, {0}, 0, 1},
    {FK_K_FLOAT_ACCUM, k_float_accum, 3, {8, 8, 4}, {0}, 0, 1},
    {FK_K_UNINIT_SHARED, k_uninit_shared, 1, {8}, {0}, 1024, 1},
    {FK_K_DISJOINT, k_disjoint, 1, {8}, {0}, 0, 0},
    {FK_K_MULTI_PTR, k_multi_ptr, 1, {sizeof(struct fk_multi_params)}, {8}, 0, 1},
    {FK_K_ATOMIC_SUM, k_atomic_sum, 3, {8, 8, 4}, {0}, 0, 0},
    {FK_K_SHARED_REV, k_shared_rev, 2, {8, 8}, {0}, 0, 0},
    {FK_K_TAIL_UNWRITTEN, k_tail_unwritten, 3, {8, 8, 4}, {0}, 0, 0},
    {FK_K_INPUT_SCRATCH, k_input_scratch, 3, {8, 8, 4}, {0}, 0, 0},
    {FK_K_OOB_TAIL_WRITE, k_oob_tail_write, 3, {8, 8, 4}, {0}, 0, 0},
    {FK_K_EXP_FAST_WRONG, k_exp_fast_wrong, 3, {8, 8, 4}, {0}, 0, 0},
    {FK_K_EXP_CORRECT, k_exp_correct, 3, {8, 8, 4}, {0}, 0, 0},
    {FK_K_EXP_INF_ZERO, k_exp_inf_zero, 3, {8, 8, 4}, {0}, 0, 0},
    {FK_K_GEMM_FP16ACC, k_gemm_fp16acc, 6, {8, 8, 8, 4, 4, 4}, {0}, 0, 0},
    {FK_K_GEMM_FP32ACC, k_gemm_fp32acc, 6, {8, 8, 8, 4, 4, 4}, {0}, 0, 0},
    {FK_K_ROWMAX_FMAXF, k_rowmax_fmaxf, 4, {8, 8, 4, 4}, {0}, 0, 0},
    {FK_K_ROWMAX, k_rowmax, 4, {8, 8, 4, 4}, {0}, 0, 0},
    {FK_K_TILED_ADD_BUG, k_tiled_add_bug, 4, {8, 8, 8, 4}, {0}, 0, 0},
    {FK_K_SOFTMAX_NOMAX, k_softmax_nomax, 4, {8, 8, 4, 4}, {0}, 0, 0},
    {FK_K_SOFTMAX_ROWS, k_softmax_rows, 4, {8, 8, 4, 4}, {0}, 0, 0},
    {FK_K_LAYERNORM_ONEPASS, k_layernorm_onepass, 5, {8, 8, 4, 4, 4}, {0}, 0, 0},
    {FK_K_LAYERNORM_TWOPASS, k_layernorm_twopass, 5, {8, 8, 4, 4, 4}, {0}, 0, 0},
    {FK_K_SCRUB, k_scrub, 1, {8}, {0}, 0, 0},
    {FK_K_OCCUPIER, k_occupier, 3, {8, 8, 8}, {0}, 0, 0},
    {FK_K_HAMMER, k_hammer, 3, {8, 8, 8}, {0}, 0, 0},
    {FK_K_FLUSH_L2, k_flush_l2, 2, {8, 8}, {0}, 0, 0},
    {FK_K_COMPARE, k_compare, 4, {8, 8, 8, 8}, {0}, 0, 0},
    {FK_K_COMPARE_TABLE,
     k_compare_table,
     4,
     {sizeof(struct kc_cmp_table), 8, 8, 8},
     {8, 8, 8, 8},
     0,
     0},
    {FK_K_HASH_TABLE,
     k_hash_table,
     5,
     {sizeof(struct kc_cmp_table), 8, 8, 8, 8},
     {8, 8, 8, 8, 8},
     0,
     0},
    {FK_K_COPY_HASH_TABLE,
     k_copy_hash_table,
     5,
     {sizeof(struct kc_cmp_table), 8, 8, 8, 8},
     {8, 8, 8, 8, 8},
     0,
     0},
    {NULL, NULL, 0, {0}, {0}, 0, 0},
};

#define MAX_EXTRA 256
static const struct fk_kernel_def *extra[MAX_EXTRA];
static unsigned nextra;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

const struct fk_kernel_def *fakecuda_builtin_kernels(void) { return builtin; }

const struct fk_kernel_def *fakecuda_find_kernel(const char *name) {
  for (const struct fk_kernel_def *d = builtin; d->name; d++)
    if (strcmp(d->name, name) == 0) return d;
  const struct fk_kernel_def *hit = NULL;
  pthread_mutex_lock(&reg_lock);
  for (unsigned i = 0; i < nextra && !hit; i++)
    if (strcmp(extra[i]->name, name) == 0) hit = extra[i];
  pthread_mutex_unlock(&reg_lock);
  return hit;
}

int fakecuda_register_kernel(const struct fk_kernel_def *def) {
  if (def == NULL || def->name == NULL || def->fn == NULL || def->nparams > FK_MAX_PARAMS)
    return -1;
  if (fakecuda_find_kernel(def->name)) return -1;
  int rc = -1;
  pthread_mutex_lock(&reg_lock);
  if (nextra < MAX_EXTRA) {
    extra[nextra++] = def;
    rc = 0;
  }
  pthread_mutex_unlock(&reg_lock);
  return rc;
}

void fk_kernels_init(void) {}
