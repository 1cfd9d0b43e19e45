/* oracle/oracle.h — the public C API of the numerical oracle: give it the
 * inputs a kernel read, the output it wrote, and the precision profile it
 * declares; get back a verdict with evidence. Pure C on MPFR; no GPU.
 * Every entry point is thread-safe (no MPFR global state is changed). */
#ifndef OC_ORACLE_H
#define OC_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "elementwise.h"
#include "formats.h"
#include "profile.h"

#define OC_MAX_RANK 8

/* ---------------------------------------------------------------- tensors */

/* A view of host bytes. Strides are in elements (not bytes), may be any
 * sign, zero (broadcast) or non-contiguous. */
struct oc_tensor {
  const void *data;
  enum oc_format fmt;
  int rank;
  int64_t shape[OC_MAX_RANK];
  int64_t stride[OC_MAX_RANK];
};

/* Fills t; strides NULL means contiguous row-major. Returns 0, or -1 for a
 * bad rank/shape. */
int oc_tensor_make(struct oc_tensor *t, const void *data, enum oc_format fmt, int rank,
                   const int64_t *shape, const int64_t *strides);
int64_t oc_tensor_numel(const struct oc_tensor *t);
size_t oc_format_size(enum oc_format f); /* bytes per element */
/* Exact value of the element at a multi-index (length t->rank). */
double oc_tensor_get(const struct oc_tensor *t, const int64_t *idx);
/* Exact value at an element offset (sum of idx*stride). */
double oc_tensor_at(const struct oc_tensor *t, int64_t off);
/* Decodes n elements starting at offset off with stride inc into out. */
void oc_tensor_gather(const struct oc_tensor *t, int64_t off, int64_t inc, int64_t n, double *out);
/* Raw bit pattern at an offset. */
uint64_t oc_tensor_bits(const struct oc_tensor *t, int64_t off);

/* ---------------------------------------------------------------- options */

struct oc_options {
  double delta;       /* miss probability target for sampling (1e-6) */
  double fraction;    /* smallest defective fraction to catch (1e-3): S = ln(1/delta)/fraction */
  uint64_t seed;      /* sampling and screen seed (reproducible) */
  int tile_m, tile_n; /* output tile used for "one sample per tile" (128 x 128) */
  int full;           /* 1: check every output element (0: sample GEMM/attention) */
  int screen;         /* 1: run the Freivalds screen where it applies (default 1) */
  int screen_vectors; /* random +-1 vectors in the screen (2) */
  double stat_alpha;  /* statistical verdict: false-alarm probability under the profile's
                         independent-rounding model, for the whole check (1e-6) */
  int ladder;         /* 1: explain precision failures by a cheaper profile (1) */
  int64_t full_below; /* outputs with fewer elements are checked in full (65536) */
};
void oc_options_default(struct oc_options *o);

/* ---------------------------------------------------------------- verdicts */

enum oc_verdict_kind {
#define OC_VERDICT(id, name, desc) OC_##id,
#include "verdicts.def"
#undef OC_VERDICT
};

struct oc_verdict {
  enum oc_verdict_kind kind;
  char op[24];
  char profile[OC_PROFILE_NAME_MAX];
  /* coverage */
  int64_t total;    /* output elements */
  int64_t checked;  /* elements compared one by one */
  double miss_prob; /* P(a defect touching >= `fraction` of outputs escaped): 0 if full */
  double fraction;
  int screen_vectors;  /* Freivalds vectors run (0: none) */
  int screen_failed;   /* rows the screen flagged (each then checked in full) */
  double screen_catch; /* a single element beyond this many times its row's mean bound is
                          flagged except with probability screen_miss */
  double screen_miss;
  /* evidence: the worst element (largest error/bound) */
  int rank;
  int64_t index[OC_MAX_RANK];
  double kernel; /* kernel value there */
  double exact;  /* exact value (rounded to double) */
  double bound;  /* rigorous bound there */
  double error;  /* |kernel - exact| */
  double ratio;  /* error / bound (inf when bound is 0 and error is not) */
  /* statistical verdict, separate from `kind` (a warning, never a proof):
   * under the declared profile's model of independent mean-zero rounding
   * errors (Higham & Mary 2019), a correct kernel exceeds the statistical
   * bound somewhere with probability at most stat_alpha. */
  int stat;                               /* enum oc_stat_kind */
  double stat_alpha;                      /* that false-alarm probability */
  double stat_ratio;                      /* largest error / statistical bound */
  int64_t n_stat;                         /* elements beyond the statistical bound */
  int64_t stat_index[OC_MAX_RANK];        /* the worst of them */
  int64_t n_fail;                         /* elements beyond the bound */
  int64_t n_special;                      /* special-value mismatches */
  int64_t n_pos, n_neg;                   /* signs of nonzero errors (stagnation is one-signed) */
  int64_t n_bitwise;                      /* elements equal to the correctly rounded reference */
  char explained_by[OC_PROFILE_NAME_MAX]; /* fail_precision: cheapest profile that covers */
  char detail[160];                       /* special-value or inconclusive reason */
};

enum oc_stat_kind {
  OC_STAT_NONE,       /* no statistical model applies (truncating accumulation, exact ops, ...) */
  OC_STAT_CONSISTENT, /* every checked element within its statistical bound */
  OC_STAT_REJECTED,   /* some element beyond it: unlikely (<= stat_alpha) for a correct kernel */
};
/* "none", "consistent", "rejected". */
const char *oc_stat_name(int s);

const char *oc_verdict_name(enum oc_verdict_kind k);
/* 1 for the three failing verdicts. */
int oc_verdict_is_fail(enum oc_verdict_kind k);
/* One line: "fail_precision matmul[bf16_fp32acc] at (3,17): kernel=.. exact=..
 * bound=.. ratio=.. consistent with fp16 accumulation; checked 23049/16777216,
 * miss<=1e-06". Returns what snprintf returns. */
int oc_verdict_format(const struct oc_verdict *v, char *buf, size_t n);

/* ---------------------------------------------------------------- ops */

enum oc_act {
  OC_ACT_NONE,
  OC_ACT_RELU,
  OC_ACT_GELU_ERF,
  OC_ACT_GELU_TANH,
  OC_ACT_SILU,
  OC_ACT_SIGMOID,
  OC_ACT_TANH
};
int oc_act_parse(const char *name); /* "none", "relu", "gelu", "gelu_tanh", ... ; -1 unknown */

enum oc_reduce_op {
  OC_RED_SUM,
  OC_RED_MEAN,
  OC_RED_MAX,
  OC_RED_MIN,
  OC_RED_NORM2,
  OC_RED_CUMSUM, /* oc_check_cumsum */
  OC_RED_VAR,    /* oc_check_reduce: correction 1 (oc_check_var for another) */
  OC_RED_STD
};
/* Inclusive prefix sums of x along axis (torch.cumsum), out of x's shape:
 * each prefix within gamma_k sum |x_j| of its exact value for any
 * association a scan takes, in acc_type or the output's type (scan.c). */
int oc_check_cumsum(const struct oc_tensor *x, int axis, const struct oc_tensor *out,
                    const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

/* Reduction of x along `axis`. out has x's shape without that axis (or with
 * it of size 1). Checked in full. NaN propagates through every op (max/min
 * included: a kernel that drops it is fail_special). */
int oc_check_reduce(enum oc_reduce_op op, const struct oc_tensor *x, int axis,
                    const struct oc_tensor *out, const struct oc_profile *p,
                    const struct oc_options *o, struct oc_verdict *v);

/* var (take_sqrt 0) or std (1) of x along `axis`: sum (x - mean)^2 /
 * (n - correction), std its square root (torch.var, torch.std; correction
 * 1 is the unbiased estimate). out as oc_check_reduce's. Checked in full
 * with a bound that holds for Welford updates and merges in any order and
 * for two passes (variance.c); a row with Inf or NaN gives NaN, n <=
 * correction a division by zero (Inf, or NaN). */
int oc_check_var(const struct oc_tensor *x, int axis, double correction, int take_sqrt,
                 const struct oc_tensor *out, const struct oc_profile *p,
                 const struct oc_options *o, struct oc_verdict *v);

enum oc_softmax_kind { OC_SOFTMAX, OC_LOG_SOFTMAX, OC_LOGSUMEXP };
/* Softmax family along `axis`; out has x's shape (logsumexp: without axis).
 * The profile's softmax class (two-pass / online) selects the bound. */
int oc_check_softmax(enum oc_softmax_kind kind, const struct oc_tensor *x, int axis,
                     const struct oc_tensor *out, const struct oc_profile *p,
                     const struct oc_options *o, struct oc_verdict *v);

/* LayerNorm / RMSNorm over the last axis; weight and bias are 1-D of the
 * last-axis length or NULL. The profile's norm class selects the bound. */
int oc_check_layer_norm(const struct oc_tensor *x, const struct oc_tensor *weight,
                        const struct oc_tensor *bias, double eps, const struct oc_tensor *out,
                        const struct oc_profile *p, const struct oc_options *o,
                        struct oc_verdict *v);
int oc_check_rms_norm(const struct oc_tensor *x, const struct oc_tensor *weight, double eps,
                      const struct oc_tensor *out, const struct oc_profile *p,
                      const struct oc_options *o, struct oc_verdict *v);

/* out = act(alpha * A.B + beta * C + bias). A is [..., M, K], B [..., K, N],
 * out and C [..., M, N] (leading batch dims equal, stride 0 broadcasts);
 * bias is [N] or NULL; C may be NULL (beta ignored). Sampled per
 * ORACLE.md §4 unless o->full or the output is small; Freivalds screen when
 * act is NONE. */
struct oc_matmul_args {
  const struct oc_tensor *a, *b, *c, *bias;
  double alpha, beta;
  enum oc_act act;
};
int oc_check_matmul(const struct oc_matmul_args *args, const struct oc_tensor *out,
                    const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

/* O = softmax(Q.K^T * scale [+ causal mask]) . V over [..., S, D] tensors
 * (leading dims equal). Causal masks key j > query i (top-left, as PyTorch).
 * p_fmt: format P is cast to before P.V (OC_FP32 when it is not cast). */
/* What a causally masked key contributes to the output (contract attr
 * masked): EITHER (0 fills it, as C zero-initialisation): per element
 * either of the two below, as fused kernels give (the masked keys of their
 * diagonal tile are read with weight 0, the tiles past it skipped); SKIP:
 * never read (a NaN or Inf in its V row does not reach the output);
 * MULTIPLY: 0 * v, PyTorch's math SDPA (a NaN or Inf there gives NaN in
 * that output column). */
enum oc_masked { OC_MASKED_EITHER, OC_MASKED_SKIP, OC_MASKED_MULTIPLY };
struct oc_attention_args {
  const struct oc_tensor *q, *k, *v;
  double scale;
  int causal;
  enum oc_format p_fmt;
  enum oc_masked masked;
};
int oc_check_attention(const struct oc_attention_args *args, const struct oc_tensor *out,
                       const struct oc_profile *p, const struct oc_options *o,
                       struct oc_verdict *v);
#include "attention_grad.h"

/* Gated delta rule forward, per head, in flash-linear-attention's
 * orientation (fla/ops/gated_delta_rule, naive/fused_recurrent reference):
 * state S is dk x dv, initial state zero,
 *   S_t = a_t (I - b_t k_t k_t^T) S_{t-1} + b_t k_t v_t^T,  o_t = S_t^T (scale q_t)
 * (the paper's S' = S^T: S'_t = a_t S'_{t-1}(I - b_t k_t k_t^T) + b_t v_t k_t^T).
 * q, k: [..., T, dk]; v: [..., T, dv]; gate, beta: [..., T]; out: [..., T, dv].
 * gate_is_log: a_t = exp(g_t) (fla's g), else gate holds a_t. The state is
 * kept in the profile's accumulator format; every output is checked against
 * a double-double reference and a bound carried along the recurrence
 * (recurrence.c). Recurrent evaluation orders only (not chunked WY forms). */
struct oc_delta_args {
  const struct oc_tensor *q, *k, *v, *gate, *beta;
  double scale;
  int gate_is_log;
};
int oc_check_gated_delta(const struct oc_delta_args *args, const struct oc_tensor *out,
                         const struct oc_profile *p, const struct oc_options *o,
                         struct oc_verdict *v);

/* Elementwise op (elementwise.h: add sub mul div neg abs relu gelu_erf
 * gelu_tanh silu sigmoid tanh exp log sqrt rsqrt) over tensors, every
 * element checked: out must lie within oc_ulp_budget(op, out->fmt,
 * p->math, x, y) ulps of the correctly rounded result (CUDA guide budgets,
 * ORACLE.md §3), with elementwise.h's special-value rules. x (and y for
 * binary ops; NULL otherwise) have out's rank, each dim equal to out's or 1
 * (broadcast). Equal to the correctly rounded result everywhere: bitwise. */
int oc_check_elementwise(enum oc_op op, const struct oc_tensor *x, const struct oc_tensor *y,
                         const struct oc_tensor *out, const struct oc_profile *p,
                         const struct oc_options *o, struct oc_verdict *v);
/* clamp(x, lo, hi) = min(max(x, lo), hi) (torch.clamp; -inf/+inf for a
 * missing bound): exact, rounded once to out's format; NaN in x or a bound
 * gives NaN; a zero taken from a bound must have the bound's sign, clamp
 * of +-0 may keep either. Shapes as oc_check_elementwise (x unary). */
int oc_check_clamp(const struct oc_tensor *x, double lo, double hi, const struct oc_tensor *out,
                   const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

/* Gradients (ops.def class GRAD; grad.c gives each formula and bound):
 * out = op'(g, x) elementwise for the activations (x is the forward
 * output y for sigmoid and tanh, the forward input for threshold, silu and
 * gelu; g and x have out's rank, each dim equal or 1), or along `axis` for
 * softmax_backward y (g - sum g y) and log_softmax_backward g - e^y sum g
 * (g, y and out of one shape), or over the last axis for the norms' dx:
 * rstd (w g - mean(w g) - xh mean(w g xh)), xh = (x - mean) rstd (rms:
 * without the mean terms, xh = x rstd), or the norms' parameter gradients
 * (norm_params.c: column sums over the rows of g [M, N] of g xh, or of g
 * alone for the bias; out [N]; x, mean and rstd as above, x NULL for the
 * bias). Every element checked against its exact
 * value with a rigorous bound for ATen's evaluation in the profile's
 * compute precision (acc fp32, or fp64) and math mode. */
enum oc_grad_op {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_GRAD(cls, OC_GRAD_##id, )
#include "ops.def"
  OC_GRAD_COUNT
};
struct oc_grad_args {
  const struct oc_tensor *g, *x;
  int axis;         /* softmax family */
  double threshold; /* threshold_backward: x <= threshold gives 0 */
  /* layer_norm_backward / rms_norm_backward (dx over the last axis): the
   * forward's saved statistics, x's shape with the last dim 1 (mean NULL
   * for rms), and the weight ([N] or NULL) */
  const struct oc_tensor *mean, *rstd, *weight;
};
int oc_check_grad(enum oc_grad_op op, const struct oc_grad_args *a, const struct oc_tensor *out,
                  const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

/* out = x with `axis` indexed by index (1-D; integer values carried as
 * doubles, e.g. int64 indices converted on the host): out has x's shape
 * with that dim of index's length, and every element must be the selected
 * element of x bit for bit (same format). An index that is not an integer
 * in [0, size) (or [-size, size), counted from the end) leaves the verdict
 * inconclusive: the kernel's behaviour there is not defined. */
int oc_check_index_select(const struct oc_tensor *x, int axis, const struct oc_tensor *index,
                          const struct oc_tensor *out, const struct oc_profile *p,
                          const struct oc_options *o, struct oc_verdict *v);

/* The ops of three operand tensors (ops.def class POINTWISE; pointwise.c
 * gives each formula and bound): where c ? a : b (x the condition, any
 * nonzero value true; exact), addcmul x + value y z, addcdiv x + value y /
 * z, lerp x + z (y - x), in ATen's compute type (the profile's acc: fp32,
 * or fp64) with `value` as ATen holds it (rounded to it). x, y, z have
 * out's rank, each dim equal to out's or 1. */
enum oc_pw_op {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_PW(cls, OC_PW_##id, )
#include "ops.def"
  OC_PW_COUNT
};
struct oc_pointwise_args {
  const struct oc_tensor *x, *y, *z;
  double value; /* addcmul, addcdiv */
};
int oc_check_pointwise(enum oc_pw_op op, const struct oc_pointwise_args *a,
                       const struct oc_tensor *out, const struct oc_profile *p,
                       const struct oc_options *o, struct oc_verdict *v);

/* The negative log-likelihood loss (ops.def class LOSS; loss.c gives the
 * bounds): nll_loss over log-probabilities x [N, C] (or [C], or
 * [N, C, S] for nll_loss2d with target [N, S] and out [N, S]) and class
 * indices target [N] (integer values carried as doubles; ignore_index
 * skips a row), weight [C] or NULL: out [N] (reduction none) or one
 * element (sum, mean); nll_loss_backward: out [N, C] (or [C], or
 * [N, C, S]), zero but
 * at each row's class, from the incoming gradient g ([N] for none, one
 * element otherwise) and, for mean, the forward's total_weight (x is not
 * read: NULL is fine). */
enum oc_loss_op {
#define OC_OPDEF(id, name, arity, cls) OC_OP_IF_LOSS(cls, OC_LOSS_##id, )
#include "ops.def"
  OC_LOSS_COUNT
};
enum oc_nll_reduction { OC_NLL_NONE, OC_NLL_MEAN, OC_NLL_SUM }; /* ATen's Reduction enum */
struct oc_nll_args {
  const struct oc_tensor *x, *target, *weight;
  const struct oc_tensor *g, *total_weight; /* backward */
  enum oc_nll_reduction reduction;
  int64_t ignore_index;
};
int oc_check_nll_loss(enum oc_loss_op op, const struct oc_nll_args *a, const struct oc_tensor *out,
                      const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v);

/* grad_weight of an embedding: out [num_weights, D], row r the sum of the
 * rows of g [M, D] whose index (1-D [M], integer values as doubles) is r,
 * zero for padding_idx (-1: none) and for rows no index names; the bound
 * holds for any summation order, in acc_type or in the output's type
 * (scatter.c). */
int oc_check_embedding_backward(const struct oc_tensor *g, const struct oc_tensor *index,
                                int64_t padding_idx, const struct oc_tensor *out,
                                const struct oc_profile *p, const struct oc_options *o,
                                struct oc_verdict *v);

/* ---------------------------------------------------------------- references */

/* Reference values (exact, rounded to nearest double) and rigorous bounds
 * without a kernel output: `ref` and `bound` have out's element count in
 * row-major order of out's shape (either may be NULL). */
int oc_reference_matmul(const struct oc_matmul_args *args, const int64_t *out_shape, int out_rank,
                        const struct oc_profile *p, double *ref, double *bound);
int oc_reference_reduce(enum oc_reduce_op op, const struct oc_tensor *x, int axis,
                        const struct oc_profile *p, double *ref, double *bound);
int oc_reference_softmax(enum oc_softmax_kind kind, const struct oc_tensor *x, int axis,
                         const struct oc_profile *p, double *ref, double *bound);
/* Softmax rows in double first (on by default; a row whose enclosure is not
 * negligible against its bounds is redone in MPFR). Off: every row in
 * MPFR (tests compare the two). Counts: rows computed in double since the
 * process started, and of those the rows redone in MPFR. */
void oc_softmax_set_double(int on);
void oc_softmax_double_counts(unsigned long *in_double, unsigned long *redone);

/* ---------------------------------------------------------------- generators */
#include "adversarial.h"
#include "cnn.h"
#include "conv.h"
#include "optim.h"

#endif
