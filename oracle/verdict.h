/* oracle/verdict.h — the element-by-element judge shared by every op: an
 * op hands it (kernel value, enclosure of the exact value, rigorous bound)
 * per checked element; it applies the special-value rules, keeps the
 * evidence, and at the end turns the tallies into one verdict, naming the
 * cheapest profile that explains a precision failure. */
#ifndef OC_VERDICT_H
#define OC_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "oracle.h"

#define OC_ELEM_IN 8

struct oc_elem {
  double k;      /* kernel value, decoded exactly */
  double lo, hi; /* the exact value lies in [lo, hi]; NaN when it is NaN */
  double bound;  /* rigorous bound on |k - exact|; +inf: none derivable */
  double prob;   /* statistical bound (the separate statistical verdict); +inf: none */
  double pre;    /* with pre_set: bound on the kernel's value before the output
                    rounding (decides which overflows the output rule allows) */
  int pre_set;
  int ovf_ok;            /* the profile's accumulation may overflow here: a kernel Inf or NaN
                            is consistent with it but proves nothing (inconclusive) */
  int ovf_any;           /* the profile's accumulation overflows on its way to this element
                            (a norm's sum of squares beyond the accumulator's range): a value
                            off its bound is what a correct kernel may return, and proves
                            nothing (inconclusive); one within it passes */
  int alt_ok;            /* the kernel value is another result a correct kernel of the profile
                            returns (silu(-inf) = NaN, a flushed input, fp32-then-narrow) */
  int zero_sign;         /* the exact value is a zero whose sign the kernel must match */
  int exact_only;        /* bound is 0 by definition (max, min, copies): ladder does not apply */
  double in[OC_ELEM_IN]; /* the bound's ingredients, handed back to the ladder */
};

/* Recomputes an element's bound under another profile (a ladder rung). */
typedef double (*oc_bound_fn)(const struct oc_profile *p, const struct oc_elem *e, const void *ctx);

struct oc_fail_rec {
  double err_lo, ratio;
  struct oc_elem e;
};

struct oc_check {
  struct oc_verdict *v;
  const struct oc_profile *p;
  const struct oc_options *o;
  oc_bound_fn bound_fn;
  const void *ctx;
  struct oc_fail_rec *fails;
  size_t nfails, capfails;
  int64_t n_inf_bound;
  int64_t n_ovf;     /* kernel Inf/NaN where the accumulation may overflow (ovf_ok) */
  int64_t n_ovf_any; /* a value off its bound where the accumulation overflows (ovf_any) */
  /* the first of those, the evidence of an inconclusive verdict */
  int have_ovf;
  struct oc_elem ovf_e;
  int64_t ovf_idx[OC_MAX_RANK];
  int64_t n_stat_elems;
  int have_special, have_worst;
  double worst_ratio;
};

void oc_check_init(struct oc_check *c, const char *op, const struct oc_profile *p,
                   const struct oc_options *o, struct oc_verdict *v, int64_t total, int rank,
                   oc_bound_fn bound_fn, const void *ctx);
/* Judges one element at multi-index idx. Returns 1 when it failed. */
int oc_check_elem(struct oc_check *c, const struct oc_elem *e, const int64_t *idx);
/* Marks the check inconclusive with a reason (kept unless something fails). */
void oc_check_inconclusive(struct oc_check *c, const char *why);
/* Settles the verdict; random_samples is the number of uniformly drawn
 * elements (for the miss probability) when not every element was checked. */
void oc_check_finish(struct oc_check *c, int64_t random_samples);

/* Correctly rounded value of the exact y in format f given [lo, hi] when
 * that is decidable (lo == hi, both round alike, or lo, hi adjacent
 * doubles). Returns 1 and sets *r, else 0. */
int oc_round_enclosure(enum oc_format f, enum oc_overflow ovf, double lo, double hi, double *r);

/* Overflow threshold of format f under round-to-nearest (max + half ulp);
 * +inf for formats without infinities. */
double oc_overflow_threshold(enum oc_format f);

struct oc_acc;
/* e for a sum whose exact value acc holds: its enclosure (acc rounded
 * outward), pre = gamma_k(us) sabs + k etas (k roundings in any order, each
 * with its underflow floor; Higham eq. 3.4-3.5), the bound through p's
 * output rounding, and ovf_ok where the terms' magnitudes sabs reach top
 * (the accumulator may overflow on the way). The sums of the scans and
 * scatters (cumsum, embedding backward). */
void oc_elem_sum(struct oc_elem *e, const struct oc_acc *acc, double k, double sabs, double us,
                 double etas, double top, const struct oc_profile *p);

#endif

/* ---- shared by the op files (not for gate authors) ---- */

/* One sampled output element: batch b (flattened leading dims), row i, col j. */
struct oc_sample {
  int64_t b, i, j;
};

/* The sampling plan of ORACLE.md §4 for nb outputs of M x N: every element
 * when small or o->full; else tail rows/columns, one element per tile, all
 * (i mod 32, j mod 32) residue classes, and ln(1/delta)/fraction uniform
 * draws. Sorted by (b, j, i), duplicates removed. Caller frees. extra_rows
 * (b, i pairs, may be NULL) are added in full (rows the screen flagged). */
struct oc_sample *oc_sample_plan(int64_t nb, int64_t m, int64_t n, const struct oc_options *o,
                                 const int64_t *extra_rows, int64_t n_extra, int64_t *count,
                                 int64_t *n_random);

/* Offset of batch b's [0,0] element in t, where b indexes out's leading
 * dims (nlead of them, shape lead[]); t's own leading dims align from the
 * right and broadcast where of size 1 or missing. */
int64_t oc_batch_offset(const struct oc_tensor *t, int nlead, const int64_t *lead, int64_t b);
/* The same with t's last `inner` dims inside a batch (oc_batch_offset:
 * 2, a matrix; a logsumexp [.., S]: 1). */
int64_t oc_batch_offset_rows(const struct oc_tensor *t, int inner, int nlead, const int64_t *lead,
                             int64_t b);
/* 1 when t's leading dims (all but its last two, right-aligned against
 * lead) are each lead's size or 1 (broadcast), so that oc_batch_offset
 * stays inside t; 0 otherwise. */
int oc_batch_fits(const struct oc_tensor *t, int nlead, const int64_t *lead);
/* Splits a flattened batch index into a multi-index. */
void oc_batch_index(int nlead, const int64_t *lead, int64_t b, int64_t *idx);

/* Freivalds screen for out = alpha A.B + beta C + bias (no activation):
 * with V random +-1 vectors r, compares out.r to alpha A(B r) + beta C r +
 * bias.r against lambda sqrt(sum_j b_ij^2) (b_ij the elements' rigorous
 * bounds, sum of squares bounded by max * sum) plus the screen's own
 * floating-point error, lambda = sqrt(2 ln(2 / delta^(1/V))). A flagged row
 * is only checked in full, so the screen never decides a verdict. A
 * single element whose error exceeds catch_factor times its row's mean
 * bound (the others within theirs) escapes all V vectors with probability
 * <= delta. Writes the flagged (b, i) rows to *rows (malloc'd) and returns
 * how many; -1 on allocation failure. */
int64_t oc_freivalds_matmul(const struct oc_matmul_args *args, const struct oc_tensor *out,
                            const struct oc_profile *p, const struct oc_options *o, int64_t **rows,
                            double *catch_factor);
/* Roundings the matmul epilogue adds to every path (C, bias, alpha, beta). */
int oc_matmul_extra(const struct oc_matmul_args *args);

/* Row iteration for ops along one axis (reductions, softmax, norms). */
struct oc_rows {
  const struct oc_tensor *x, *out;
  int axis;
  int64_t n, nrows;
  int out_same;             /* out has x's shape (softmax, norms) */
  int out_map[OC_MAX_RANK]; /* out dim for each x dim, -1 when dropped */
};
/* out_same: 1 when out has x's shape; 0 when it lacks the axis (or keeps it
 * with size 1). Returns 0, or -1 when shapes disagree. */
int oc_rows_init(struct oc_rows *r, const struct oc_tensor *x, int axis,
                 const struct oc_tensor *out, int out_same);
/* Offsets of row `row` (x's multi-index with the axis at 0 into idx). */
void oc_rows_at(const struct oc_rows *r, int64_t row, int64_t *xoff, int64_t *ooff, int64_t *idx);
/* Fills the out-index of element k of the row from x's index. */
void oc_rows_out_index(const struct oc_rows *r, const int64_t *xidx, int64_t k, int64_t *oidx);
