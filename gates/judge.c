/* gates/judge.c — the numerical oracle's verdict on one shadow run of a
 * contracted launch: the contract's op dispatched to oracle/oracle.h over
 * tensors described from the bound contract (format, shape, strides) on the
 * host copies, and the evidence record of a failing verdict. Shared by the
 * gates that judge values (oracle, nonfinite, precision, extremes, shapes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gate.h"
#include "gate_util.h"
#include "judge.h"
#include "judge_cnn.h"
#include "judge_optim.h"
#include "options.h"

static json_t *jnum(double d) {
  if (isnan(d)) return json_string("nan");
  if (isinf(d)) return json_string(d > 0 ? "inf" : "-inf");
  return json_real(d);
}

/* Describes sb tensor i to the oracle: its bytes before the run (inputs)
 * or after it (outputs). 0, or -1 with why in err. */
static int describe(const struct kc_contract_sb *sb, int i, int after, struct oc_tensor *t,
                    char *err, size_t n) {
  const struct kc_contract_sb_tensor *s = &sb->t[i];
  if (s->t->v->tensor.format >= KC_FMT_INT8) {
    snprintf(err, n, "tensor '%s' has integer format %s: the oracle checks float tensors",
             s->t->v->name, kc_contract_format_name(s->t->v->tensor.format));
    return -1;
  }
  const unsigned char *base = (after ? s->after : s->before);
  if (!base) {
    snprintf(err, n, "tensor '%s' was not read back", s->t->v->name);
    return -1;
  }
  if (oc_tensor_make(t, base + KC_CONTRACT_SB_GUARD, (enum oc_format)s->t->v->tensor.format,
                     s->t->rank, s->t->shape, s->t->strides)) {
    snprintf(err, n, "tensor '%s': shape the oracle cannot take", s->t->v->name);
    return -1;
  }
  return 0;
}

/* The input named `name` (case-insensitive), else the input at position
 * `pos` when it is not taken by another name; -1 when neither. */
static int input(const struct kc_judgment *j, const struct kc_contract_sb *sb, const char *name,
                 int pos) {
  for (int k = 0; k < j->nin; k++)
    if (!strcasecmp(sb->t[j->in[k]].t->v->name, name)) return j->in[k];
  return pos >= 0 && pos < j->nin ? j->in[pos] : -1;
}

static int described(const struct kc_contract_sb *sb, int i, struct oc_tensor *t, const char *what,
                     char *err, size_t n) {
  if (i < 0) {
    snprintf(err, n, "the contract declares no input tensor for %s", what);
    return -1;
  }
  return describe(sb, i, 0, t, err, n);
}

/* The last two dims swapped (transpose_a / transpose_b). */
static void transpose(struct oc_tensor *t) {
  if (t->rank < 2) return;
  int a = t->rank - 2, b = t->rank - 1;
  int64_t s = t->shape[a];
  t->shape[a] = t->shape[b];
  t->shape[b] = s;
  s = t->stride[a];
  t->stride[a] = t->stride[b];
  t->stride[b] = s;
}

/* Attention's attrs: scale (default 1/sqrt(D)), causal, p_format, masked. */
static void attention_attrs(const struct kc_attrs *at, struct oc_attention_args *a) {
  a->scale = kc_attr_num(at, KC_ATTR_SCALE, 1.0 / sqrt((double)a->q->shape[a->q->rank - 1]));
  a->causal = kc_attr_bool(at, KC_ATTR_CAUSAL, 0);
  a->p_fmt = (enum oc_format)kc_attr_enum(at, KC_ATTR_P_FORMAT, OC_FP32);
  /* attrs.def's words "skip multiply" are indices 0 and 1. */
  if (at->v[KC_ATTR_MASKED].set)
    a->masked = at->v[KC_ATTR_MASKED].e ? OC_MASKED_MULTIPLY : OC_MASKED_SKIP;
}

static int axis_of(const struct kc_contract *c, const struct oc_tensor *x) {
  int axis = (int)kc_attr_num(&c->attr, KC_ATTR_AXIS, -1);
  return axis < 0 ? axis + x->rank : axis;
}

static int judge_matmul(const struct kc_contract *c, const struct kc_contract_sb *sb,
                        struct kc_judgment *j, const struct oc_tensor *out,
                        const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  int ia = input(j, sb, "a", 0), ib = input(j, sb, "b", 1), ic = input(j, sb, "c", -1),
      ibias = input(j, sb, "bias", -1);
  if (ia < 0 || ib < 0 || ia == ib) {
    snprintf(err, n, "matmul needs two input tensors (A and B)");
    return -1;
  }
  struct oc_tensor ta, tb, tc, tbias;
  if (describe(sb, ia, 0, &ta, err, n) || describe(sb, ib, 0, &tb, err, n)) return -1;
  if (kc_attr_bool(&c->attr, KC_ATTR_TRANSPOSE_A, 0)) transpose(&ta);
  if (kc_attr_bool(&c->attr, KC_ATTR_TRANSPOSE_B, 0)) transpose(&tb);
  struct oc_matmul_args a = {&ta,
                             &tb,
                             NULL,
                             NULL,
                             kc_attr_num(&c->attr, KC_ATTR_ALPHA, 1.0),
                             kc_attr_num(&c->attr, KC_ATTR_BETA, 0.0),
                             OC_ACT_NONE};
  if (ic >= 0) {
    if (describe(sb, ic, 0, &tc, err, n)) return -1;
    a.c = &tc;
  } else if (sb->t[j->out].role == KC_ROLE_INOUT && a.beta != 0) {
    if (describe(sb, j->out, 0, &tc, err, n)) return -1;
    a.c = &tc;
  }
  if (ibias >= 0) {
    if (describe(sb, ibias, 0, &tbias, err, n)) return -1;
    a.bias = &tbias;
  }
  a.act = (enum oc_act)kc_attr_enum(&c->attr, KC_ATTR_ACTIVATION, OC_ACT_NONE);
  j->ins[0] = ta, j->ins[1] = tb;
  j->ctx = KC_CTX_MATMUL, j->ctx_sb[0] = ia, j->ctx_sb[1] = ib;
  if (oc_check_matmul(&a, out, &c->profile, o, &j->v)) {
    snprintf(err, n, "the oracle rejected the matmul tensors (shapes A [..,M,K], B [..,K,N])");
    return -1;
  }
  return 0;
}

static int judge_norm(const struct kc_contract *c, const struct kc_contract_sb *sb,
                      struct kc_judgment *j, const struct oc_tensor *out,
                      const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  int rms = oc_op_find(c->op)->id == OC_ID_RMS_NORM;
  int ix = input(j, sb, "x", 0), iw = input(j, sb, "weight", 1),
      ib = rms ? -1 : input(j, sb, "bias", 2);
  struct oc_tensor x, w, b;
  if (described(sb, ix, &x, c->op, err, n)) return -1;
  if (iw >= 0 && iw != ix && describe(sb, iw, 0, &w, err, n)) return -1;
  if (ib >= 0 && ib != ix && ib != iw && describe(sb, ib, 0, &b, err, n)) return -1;
  const struct oc_tensor *pw = iw >= 0 && iw != ix ? &w : NULL;
  const struct oc_tensor *pb = ib >= 0 && ib != ix && ib != iw ? &b : NULL;
  double eps = kc_attr_num(&c->attr, KC_ATTR_EPS, 1e-5);
  j->ins[0] = x;
  j->ctx = KC_CTX_ROW, j->axis = x.rank - 1, j->reduced = 0, j->ctx_sb[0] = ix;
  int r = rms ? oc_check_rms_norm(&x, pw, eps, out, &c->profile, o, &j->v)
              : oc_check_layer_norm(&x, pw, pb, eps, out, &c->profile, o, &j->v);
  if (r) {
    snprintf(err, n, "the oracle rejected the %s tensors (normalized over the last axis)", c->op);
    return -1;
  }
  return 0;
}

/* attention_backward's inputs by name (q, k, v, o, g, lse: positions
 * 0-5), attrs as the forward's plus which (q k v: indices 0-2). */
static int attention_grad(const struct oc_tensor *const t[6], const struct kc_attrs *at,
                          const struct oc_tensor *out, const struct oc_profile *p,
                          const struct oc_options *o, struct oc_verdict *v) {
  struct oc_attention_args f = {t[0], t[1], t[2], 0, 0, OC_FP32, OC_MASKED_EITHER};
  attention_attrs(at, &f);
  struct oc_attention_grad_args a = {t[0], t[1],    t[2],     t[3],    t[4],
                                     t[5], f.scale, f.causal, f.p_fmt, OC_ATTN_DQ};
  a.which = (enum oc_attn_grad_which)kc_attr_enum(at, KC_ATTR_WHICH, OC_ATTN_DQ);
  return oc_check_attention_backward(&a, out, p, o, v);
}

static const char *const ATT_GRAD_IN[6] = {"q", "k", "v", "o", "g", "lse"};

static int judge_attention(const struct kc_contract *c, const struct kc_contract_sb *sb,
                           struct kc_judgment *j, const struct oc_tensor *out,
                           const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  if (oc_op_find(c->op)->id == OC_ID_ATTENTION_BACKWARD) {
    struct oc_tensor t[6];
    const struct oc_tensor *pt[6];
    for (int k = 0; k < 6; k++) {
      if (described(sb, input(j, sb, ATT_GRAD_IN[k], k), &t[k], ATT_GRAD_IN[k], err, n)) return -1;
      pt[k] = &t[k];
    }
    if (attention_grad(pt, &c->attr, out, &c->profile, o, &j->v)) {
      snprintf(err, n,
               "the oracle rejected the attention_backward tensors (q, k, v [..,S,D], o "
               "and g [..,Sq,Dv], lse [..,Sq])");
      return -1;
    }
    return 0;
  }
  struct oc_tensor q, k, v;
  if (described(sb, input(j, sb, "q", 0), &q, "q", err, n) ||
      described(sb, input(j, sb, "k", 1), &k, "k", err, n) ||
      described(sb, input(j, sb, "v", 2), &v, "v", err, n))
    return -1;
  struct oc_attention_args a = {&q, &k, &v, 0, 0, OC_FP32, OC_MASKED_EITHER};
  attention_attrs(&c->attr, &a);
  if (oc_check_attention(&a, out, &c->profile, o, &j->v)) {
    snprintf(err, n, "the oracle rejected the attention tensors ([..,S,D] q, k, v)");
    return -1;
  }
  return 0;
}

static int judge_delta(const struct kc_contract *c, const struct kc_contract_sb *sb,
                       struct kc_judgment *j, const struct oc_tensor *out,
                       const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  struct oc_tensor q, k, v, g, b;
  if (described(sb, input(j, sb, "q", 0), &q, "q", err, n) ||
      described(sb, input(j, sb, "k", 1), &k, "k", err, n) ||
      described(sb, input(j, sb, "v", 2), &v, "v", err, n) ||
      described(sb, input(j, sb, "g", 3), &g, "the gate", err, n) ||
      described(sb, input(j, sb, "beta", 4), &b, "beta", err, n))
    return -1;
  struct oc_delta_args a = {&q, &k, &v, &g, &b, 0, 0};
  a.scale = kc_attr_num(&c->attr, KC_ATTR_SCALE, 1.0 / sqrt((double)q.shape[q.rank - 1]));
  a.gate_is_log = kc_attr_bool(&c->attr, KC_ATTR_GATE_IS_LOG, 0);
  if (oc_check_gated_delta(&a, out, &c->profile, o, &j->v)) {
    snprintf(err, n, "the oracle rejected the gated_delta tensors");
    return -1;
  }
  return 0;
}

/* The index (in c->scalars) of the contract's only float scalar, else -1:
 * the second operand of a binary elementwise op over one tensor. */
static int float_scalar(const struct kc_contract *c) {
  int found = -1;
  for (int i = 0; i < c->nscalars; i++)
    if (c->scalars[i]->scalar == KC_SC_F32 || c->scalars[i]->scalar == KC_SC_F64) {
      if (found >= 0) return -1;
      found = i;
    }
  return found;
}

/* A constant operand (attrs lhs, rhs, min, max) as the kernel holds it: a
 * float literal in fp32 arithmetic (fp32, fp16, bf16, fp8 tensors), a double
 * for fp64 tensors. */
static double kernel_constant(const struct oc_tensor *x, double v) {
  return x->fmt == OC_FP64 || isinf(v) ? v : oc_round(OC_FP32, v, OC_OVF_IEEE);
}

/* An elementwise op: its inputs in declaration order (in place: the
 * output's contents before the run), a binary op's second operand possibly
 * the contract's float scalar. */
static int judge_elementwise(const struct kc_contract *c, const struct kc_contract_sb *sb,
                             struct kc_judgment *j, const struct oc_op_info *op,
                             const struct oc_tensor *outp, const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  const struct oc_profile *p = &c->profile;
  int arity = op->arity;
  /* In place (no `in` tensor, the output inout): the input is the
   * output's contents before the run. */
  if (!j->nin && sb->t[j->out].role == KC_ROLE_INOUT) {
    j->in[0] = j->out;
    j->nin = 1;
  }
  int lhs = c->attr.v[KC_ATTR_LHS].set, rhs = c->attr.v[KC_ATTR_RHS].set;
  int konst = arity == 2 && j->nin == 1 && (lhs || rhs);
  int si = arity == 2 && j->nin == 1 && !konst ? float_scalar(c) : -1;
  if (j->nin != arity && si < 0 && !konst) {
    snprintf(err, n,
             "op '%s' takes %d input tensor%s (or, binary, one tensor and a float scalar "
             "or an lhs/rhs constant); the contract declares %d",
             c->op, arity, arity == 1 ? "" : "s", j->nin);
    return -1;
  }
  for (int k = 0; k < j->nin; k++)
    if (describe(sb, j->in[k], 0, &j->ins[k], err, n)) return -1;
  j->nins = j->nin;
  if (op->id == OC_ID_CLAMP) { /* bounds from the attrs min and max */
    double lo = kernel_constant(&j->ins[0], kc_attr_num(&c->attr, KC_ATTR_MIN, -INFINITY));
    double hi = kernel_constant(&j->ins[0], kc_attr_num(&c->attr, KC_ATTR_MAX, INFINITY));
    if (oc_check_clamp(&j->ins[0], lo, hi, outp, p, o, &j->v)) {
      snprintf(err, n, "the oracle rejected the tensors of op '%s'", c->op);
      return -1;
    }
    return 0;
  }
  if (konst) { /* the constant as a broadcast tensor, first for lhs */
    j->constant = lhs ? 2 : 1;
    j->scalar_value =
        kernel_constant(&j->ins[0], kc_attr_num(&c->attr, lhs ? KC_ATTR_LHS : KC_ATTR_RHS, 0));
    int64_t ones[OC_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    struct oc_tensor st;
    oc_tensor_make(&st, &j->scalar_value, OC_FP64, j->ins[0].rank, ones, NULL);
    if (lhs) {
      j->ins[1] = j->ins[0];
      j->ins[0] = st;
    } else {
      j->ins[1] = st;
    }
  } else if (si >= 0) { /* the scalar as a broadcast tensor, in declaration order */
    j->scalar = si;
    j->scalar_value = sb->b.fvals[c->scalars[si]->scalar_index];
    int64_t ones[OC_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    struct oc_tensor st;
    oc_tensor_make(&st, &j->scalar_value, OC_FP64, j->ins[0].rank, ones, NULL);
    if (c->scalars[si]->line < sb->t[j->in[0]].t->v->line) {
      j->ins[1] = j->ins[0];
      j->ins[0] = st;
      j->scalar_first = 1;
    } else {
      j->ins[1] = st;
    }
  }
  if (oc_check_elementwise((enum oc_op)op->kind, &j->ins[0], arity == 2 ? &j->ins[1] : NULL, outp,
                           p, o, &j->v)) {
    snprintf(err, n, "the oracle rejected the tensors of op '%s' (shapes must match or broadcast)",
             c->op);
    return -1;
  }
  return 0;
}

/* nll_loss and its backward from the tensors x, target, weight, g,
 * total_weight (NULL where absent) and the attrs reduction, ignore_index. */
static int nll(const struct oc_op_info *op, const struct kc_attrs *at,
               const struct oc_tensor *const *t, const struct oc_tensor *out,
               const struct oc_profile *p, const struct oc_options *o, struct oc_verdict *v) {
  struct oc_nll_args a = {t[0],
                          t[1],
                          t[2],
                          t[3],
                          t[4],
                          (enum oc_nll_reduction)kc_attr_enum(at, KC_ATTR_REDUCTION, OC_NLL_MEAN),
                          (int64_t)kc_attr_num(at, KC_ATTR_IGNORE_INDEX, -100)};
  return oc_check_nll_loss((enum oc_loss_op)op->kind, &a, out, p, o, v);
}

/* A convolution (ops.def class CONV) over the tensors a, b, bias (NULL
 * where absent) with the attrs stride, padding, dilation (one number, or
 * one per spatial dim), groups and algorithm. */
static int conv(const struct oc_op_info *op, const struct kc_attrs *at, const struct oc_tensor *a,
                const struct oc_tensor *b, const struct oc_tensor *bias,
                const struct oc_tensor *out, const struct oc_profile *p, const struct oc_options *o,
                struct oc_verdict *v, char *err, size_t n) {
  if (!a || (op->arity > 1 && !b)) {
    snprintf(err, n, "%s needs %s", op->name,
             op->kind == OC_CONV_OP_CONV_BIAS_GRAD     ? "g"
             : op->kind == OC_CONV_OP_CONV_WEIGHT_GRAD ? "g and x"
                                                       : "x and w");
    return -1;
  }
  int nsp = a->rank - 2;
  struct oc_conv_args ca = {a, b, bias, {0}, {0}, {0}, 1, OC_CONV_DIRECT};
  static const enum kc_attr_id lists[3] = {KC_ATTR_STRIDE, KC_ATTR_PADDING, KC_ATTR_DILATION};
  int64_t *dst[3] = {ca.stride, ca.padding, ca.dilation};
  for (int l = 0; l < 3; l++) {
    const struct kc_attr_val *av = &at->v[lists[l]];
    if (nsp < 1 || nsp > OC_CONV_MAX_SP || (av->set && av->ni > 1 && av->ni != nsp)) {
      snprintf(err, n,
               "%s: stride, padding and dilation give one number or one per spatial dim "
               "(1 to %d of them)",
               op->name, OC_CONV_MAX_SP);
      return -1;
    }
    for (int d = 0; d < nsp; d++)
      dst[l][d] = kc_attr_ints(at, lists[l], d, l == 1 ? 0 : 1, NULL);
  }
  ca.groups = (int64_t)kc_attr_num(at, KC_ATTR_GROUPS, 1);
  ca.alg = (enum oc_conv_alg)kc_attr_enum(at, KC_ATTR_ALGORITHM, OC_CONV_DIRECT);
  if (oc_check_conv((enum oc_conv_op)op->kind, &ca, out, p, o, v)) {
    snprintf(err, n,
             "the oracle rejected the %s tensors (shapes, stride, padding, dilation or "
             "groups)",
             op->name);
    return -1;
  }
  return 0;
}

/* A reduction along axis; var and std with the attr correction, cumsum
 * (out of x's shape). */
static int reduce(const struct oc_op_info *op, const struct kc_attrs *at, const struct oc_tensor *x,
                  int axis, const struct oc_tensor *out, const struct oc_profile *p,
                  const struct oc_options *o, struct oc_verdict *v) {
  if (op->id == OC_ID_CUMSUM) return oc_check_cumsum(x, axis, out, p, o, v);
  if (op->id == OC_ID_VAR || op->id == OC_ID_STD)
    return oc_check_var(x, axis, kc_attr_num(at, KC_ATTR_CORRECTION, 1), op->id == OC_ID_STD, out,
                        p, o, v);
  return oc_check_reduce((enum oc_reduce_op)op->kind, x, axis, out, p, o, v);
}

/* A reduction or the softmax family along the `axis` attribute. */
static int judge_rows(const struct kc_contract *c, const struct kc_contract_sb *sb,
                      struct kc_judgment *j, const struct oc_op_info *op,
                      const struct oc_tensor *outp, const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  const struct oc_profile *p = &c->profile;
  if (j->nin < 1) {
    snprintf(err, n, "%s needs an input tensor", c->op);
    return -1;
  }
  struct oc_tensor *x = &j->ins[0];
  if (describe(sb, j->in[0], 0, x, err, n)) return -1;
  int axis = axis_of(c, x);
  j->ctx = KC_CTX_ROW, j->axis = axis, j->ctx_sb[0] = j->in[0];
  j->reduced = outp->rank < x->rank;
  if (op->cls == OC_CLASS_REDUCE) {
    if (reduce(op, &c->attr, x, axis, outp, p, o, &j->v)) {
      snprintf(err, n, "the oracle rejected the %s tensors (axis %d)", c->op, axis);
      return -1;
    }
    return 0;
  }
  if (oc_check_softmax((enum oc_softmax_kind)op->kind, x, axis, outp, p, o, &j->v)) {
    snprintf(err, n, "the oracle rejected the %s tensors (axis %d)", c->op, axis);
    return -1;
  }
  return 0;
}

/* A gradient: the incoming gradient g, then the forward value (y or x). */
static int judge_grad(const struct kc_contract *c, const struct kc_contract_sb *sb,
                      struct kc_judgment *j, const struct oc_op_info *op,
                      const struct oc_tensor *outp, const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  int ig = input(j, sb, "g", 0), ix = input(j, sb, "y", -1);
  if (ix < 0) ix = input(j, sb, "x", 1);
  int no_x = ix < 0 && op->arity == 1; /* dbias: g alone */
  if (described(sb, ig, &j->ins[0], "g", err, n) ||
      (!no_x && described(sb, ix, &j->ins[1], "the forward value (y or x)", err, n)))
    return -1;
  /* the norms' saved statistics and weight, by name */
  int im = input(j, sb, "mean", -1), ir = input(j, sb, "rstd", -1), iw = input(j, sb, "weight", -1);
  struct oc_tensor tm, tr, tw;
  if ((im >= 0 && describe(sb, im, 0, &tm, err, n)) ||
      (ir >= 0 && describe(sb, ir, 0, &tr, err, n)) ||
      (iw >= 0 && describe(sb, iw, 0, &tw, err, n)))
    return -1;
  struct oc_grad_args a = {&j->ins[0],
                           no_x ? NULL : &j->ins[1],
                           no_x ? 0 : axis_of(c, &j->ins[1]),
                           kc_attr_num(&c->attr, KC_ATTR_THRESHOLD, 0),
                           im >= 0 ? &tm : NULL,
                           ir >= 0 ? &tr : NULL,
                           iw >= 0 ? &tw : NULL};
  if (oc_check_grad((enum oc_grad_op)op->kind, &a, outp, &c->profile, o, &j->v)) {
    snprintf(err, n, "the oracle rejected the %s tensors (g and the forward value: shapes)", c->op);
    return -1;
  }
  return 0;
}

static int judge_op(const struct kc_contract *c, const struct kc_contract_sb *sb,
                    struct kc_judgment *j, const struct oc_options *o) {
  char *err = j->err;
  size_t n = sizeof j->err;
  struct oc_tensor out;
  if (describe(sb, j->out, 1, &out, err, n)) return -1;
  const struct oc_op_info *op = oc_op_find(c->op);
  if (!op) {
    snprintf(err, n, "op '%s' is not checked by the oracle", c->op);
    return -1;
  }
  switch (op->cls) {
  case OC_CLASS_ELEMENTWISE: return judge_elementwise(c, sb, j, op, &out, o);
  case OC_CLASS_MATMUL: return judge_matmul(c, sb, j, &out, o);
  case OC_CLASS_NORM: return judge_norm(c, sb, j, &out, o);
  case OC_CLASS_ATTENTION: return judge_attention(c, sb, j, &out, o);
  case OC_CLASS_RECURRENCE: return judge_delta(c, sb, j, &out, o);
  case OC_CLASS_REDUCE:
  case OC_CLASS_SOFTMAX: return judge_rows(c, sb, j, op, &out, o);
  case OC_CLASS_GRAD: return judge_grad(c, sb, j, op, &out, o);
  case OC_CLASS_POINTWISE: {
    struct oc_tensor t[3];
    for (int k = 0; k < 3; k++)
      if (described(sb, k < j->nin ? j->in[k] : -1, &t[k], c->op, err, n)) return -1;
    struct oc_pointwise_args a = {&t[0], &t[1], &t[2], kc_attr_num(&c->attr, KC_ATTR_VALUE, 1)};
    if (oc_check_pointwise((enum oc_pw_op)op->kind, &a, &out, &c->profile, o, &j->v)) {
      snprintf(err, n,
               "the oracle rejected the %s tensors (three of the output's shape, or "
               "broadcast)",
               c->op);
      return -1;
    }
    return 0;
  }
  case OC_CLASS_LOSS: {
    struct oc_tensor t[5];
    static const char *const names[5] = {"x", "target", "weight", "g", "total_weight"};
    const struct oc_tensor *pt[5] = {NULL, NULL, NULL, NULL, NULL};
    for (int k = 0; k < 5; k++) {
      int i = input(j, sb, names[k], -1);
      if (i >= 0) {
        if (describe(sb, i, 0, &t[k], err, n)) return -1;
        pt[k] = &t[k];
      }
    }
    if (nll(op, &c->attr, pt, &out, &c->profile, o, &j->v)) {
      snprintf(err, n, "the oracle rejected the %s tensors (x [N, C], target [N]; by name)", c->op);
      return -1;
    }
    return 0;
  }
  case OC_CLASS_OPTIM: { /* every tensor by name, before the run (the state it updates) */
    struct oc_tensor t[16];
    const char *names[16];
    int k = 0;
    for (int i = 0; i < sb->n && k < 16; i++) {
      if (sb->t[i].role != KC_ROLE_IN && sb->t[i].role != KC_ROLE_INOUT) continue;
      if (describe(sb, i, 0, &t[k], err, n)) return -1;
      names[k++] = sb->t[i].t->v->name;
    }
    return kc_judge_optim(op, &c->attr, k, t, names, &out, &c->profile, o, &j->v, err, n);
  }
  case OC_CLASS_CONV: {
    int wg = op->kind == OC_CONV_OP_CONV_WEIGHT_GRAD, bg = op->kind == OC_CONV_OP_CONV_BIAS_GRAD;
    int ix[3] = {input(j, sb, wg || bg ? "g" : "x", 0), bg ? -1 : input(j, sb, wg ? "x" : "w", 1),
                 wg || bg ? -1 : input(j, sb, "bias", 2)};
    struct oc_tensor t[3];
    const struct oc_tensor *pt[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3; k++)
      if (ix[k] >= 0 && (k == 0 || ix[k] != ix[0])) {
        if (describe(sb, ix[k], 0, &t[k], err, n)) return -1;
        pt[k] = &t[k];
      }
    return conv(op, &c->attr, pt[0], pt[1], pt[2], &out, &c->profile, o, &j->v, err, n);
  }
  case OC_CLASS_GATHER: {
    struct oc_tensor x, ix;
    if (op->id == OC_ID_EMBEDDING_BACKWARD) {
      if (described(sb, input(j, sb, "g", 0), &x, "g", err, n) ||
          described(sb, input(j, sb, "index", 1), &ix, "index", err, n))
        return -1;
      if (oc_check_embedding_backward(&x, &ix,
                                      (int64_t)kc_attr_num(&c->attr, KC_ATTR_PADDING_IDX, -1), &out,
                                      &c->profile, o, &j->v)) {
        snprintf(err, n, "the oracle rejected the %s tensors (g [M, D], 1-D index [M])", c->op);
        return -1;
      }
      return 0;
    }
    if (described(sb, input(j, sb, "x", 0), &x, "x", err, n) ||
        described(sb, input(j, sb, "index", 1), &ix, "index", err, n))
      return -1;
    int axis = (int)kc_attr_num(&c->attr, KC_ATTR_AXIS, 0); /* index_select: dim 0 */
    if (axis < 0) axis += x.rank;
    if (oc_check_index_select(&x, axis, &ix, &out, &c->profile, o, &j->v)) {
      snprintf(err, n, "the oracle rejected the %s tensors (x, 1-D index, axis)", c->op);
      return -1;
    }
    return 0;
  }
  case OC_CLASS_BATCH_NORM:
  case OC_CLASS_POOL: {
    struct oc_tensor t[KC_JUDGE_MAX_IN];
    struct kc_named_tensor nt[KC_JUDGE_MAX_IN];
    int k = 0;
    for (; k < j->nin && k < KC_JUDGE_MAX_IN; k++) {
      if (describe(sb, j->in[k], 0, &t[k], err, n)) return -1;
      nt[k].name = sb->t[j->in[k]].t->v->name;
      nt[k].t = &t[k];
    }
    return kc_judge_cnn(op, &c->attr, nt, k, &out, &c->profile, o, &j->v, err, n);
  }
  }
  snprintf(err, n, "op '%s' is not checked by the oracle", c->op);
  return -1;
}

int kc_judge(const struct kc_contract *c, const struct kc_contract_sb *sb, struct kc_judgment *j) {
  memset(j, 0, sizeof *j);
  j->out = -1;
  j->scalar = -1;
  if (!c->op || !c->profile_spec) {
    snprintf(j->err, sizeof j->err, "%s",
             c->op ? "the contract declares no profile" : "the contract declares no op");
    return -1;
  }
  int order[64];
  kc_contract_sb_declared_order(sb, order);
  for (int o = 0; o < sb->n; o++) {
    int i = order[o];
    if (sb->t[i].role == KC_ROLE_IN && j->nin < 8)
      j->in[j->nin++] = i;
    else if (sb->t[i].role != KC_ROLE_IN && j->out < 0)
      j->out = i;
  }
  if (j->out < 0) {
    snprintf(j->err, sizeof j->err, "the contract declares no output tensor");
    return -1;
  }
  struct oc_options o;
  oc_options_default(&o);
  o.seed = (uint64_t)kc_opt.seed;
  return judge_op(c, sb, j, &o);
}

void kc_contract_sb_declared_order(const struct kc_contract_sb *sb, int *order) {
  for (int i = 0; i < sb->n; i++) { /* insertion sort: stable */
    int at = i;
    while (at > 0 && sb->t[order[at - 1]].t->v->line > sb->t[i].t->v->line) {
      order[at] = order[at - 1];
      at--;
    }
    order[at] = i;
  }
}

enum kc_gate_status kc_verdict_status(enum oc_verdict_kind k) {
  switch (k) {
  case OC_BITWISE: return KC_GS_BITWISE;
  case OC_PASS: return KC_GS_PASS;
  case OC_INCONCLUSIVE: return KC_GS_INCONCLUSIVE;
  default: return KC_GS_FAIL;
  }
}

void kc_judge_result(const struct kc_judgment *j, json_t *result) {
  char line[1024];
  oc_verdict_format(&j->v, line, sizeof line);
  json_object_set_new(result, "verdict", json_string(line));
  json_object_set_new(result, "class", json_string(oc_verdict_name(j->v.kind)));
  json_object_set_new(result, "coverage",
                      json_pack("{s:I, s:I, s:o, s:o, s:i}", "total", (json_int_t)j->v.total,
                                "checked", (json_int_t)j->v.checked, "miss_prob",
                                jnum(j->v.miss_prob), "fraction", jnum(j->v.fraction),
                                "screen_vectors", j->v.screen_vectors));
  if (j->v.screen_vectors)
    json_object_set_new(result, "screen",
                        json_pack("{s:i, s:o, s:o}", "flagged_rows", j->v.screen_failed,
                                  "single_element_catch", jnum(j->v.screen_catch), "miss_prob",
                                  jnum(j->v.screen_miss)));
  /* The statistical verdict is a separate, labelled opinion (a warning at
   * most): false_alarm is its probability for a correct kernel under the
   * profile's independent-rounding model, which adversarial data breaks. */
  if (j->v.stat != OC_STAT_NONE)
    json_object_set_new(result, "statistical",
                        json_pack("{s:s, s:o, s:o, s:I}", "verdict", oc_stat_name(j->v.stat),
                                  "false_alarm", jnum(j->v.stat_alpha), "worst_ratio",
                                  jnum(j->v.stat_ratio), "elements", (json_int_t)j->v.n_stat));
  /* The worst element's error against its bound (the HTML report plots it). */
  json_object_set_new(result, "error", jnum(j->v.error));
  json_object_set_new(result, "bound", jnum(j->v.bound));
  json_object_set_new(result, "ratio", jnum(j->v.ratio));
}

/* The 1-D slice of x through idx along axis: where it lies (the axis as
 * null), its length, min and max of its finite values, NaN and Inf counts,
 * and its first values. */
static json_t *slice_json(const char *name, const struct oc_tensor *x, const int64_t *idx,
                          int axis) {
  enum { HEAD = 8 };
  if (axis < 0 || axis >= x->rank) return NULL;
  int64_t n = x->shape[axis], off = 0;
  json_t *at = json_array();
  for (int d = 0; d < x->rank; d++) {
    json_array_append_new(at, d == axis ? json_null() : json_integer((json_int_t)idx[d]));
    if (d != axis) off += idx[d] * x->stride[d];
  }
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) {
    json_decref(at);
    return NULL;
  }
  oc_tensor_gather(x, off, x->stride[axis], n, v);
  double lo = INFINITY, hi = -INFINITY;
  int64_t nan = 0, inf = 0;
  json_t *head = json_array();
  for (int64_t i = 0; i < n; i++) {
    if (isnan(v[i]))
      nan++;
    else if (isinf(v[i]))
      inf++;
    else
      lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    if (i < HEAD) json_array_append_new(head, jnum(v[i]));
  }
  free(v);
  return json_pack("{s:s, s:o, s:I, s:o, s:o, s:I, s:I, s:o}", "tensor", name, "at", at, "length",
                   (json_int_t)n, "min", lo <= hi ? jnum(lo) : json_null(), "max",
                   lo <= hi ? jnum(hi) : json_null(), "nan", (json_int_t)nan, "inf",
                   (json_int_t)inf, "head", head);
}

/* The input slices the worst output element depends on. */
static json_t *input_slices(const struct kc_contract_sb *sb, const struct kc_judgment *j) {
  const struct oc_verdict *v = &j->v;
  int64_t idx[OC_MAX_RANK] = {0};
  json_t *a = json_array();
  if (j->ctx == KC_CTX_ROW) {
    const struct oc_tensor *x = &j->ins[0];
    for (int d = 0, k = 0; d < x->rank; d++) /* the output index, the axis put back */
      idx[d] = (j->reduced && d == j->axis) ? 0 : (k < v->rank ? v->index[k++] : 0);
    json_t *s = slice_json(sb->t[j->ctx_sb[0]].t->v->name, x, idx, j->axis);
    if (s) json_array_append_new(a, s);
  } else if (j->ctx == KC_CTX_MATMUL && v->rank >= 2) {
    for (int m = 0; m < 2; m++) { /* A: [.., i, *]; B: [.., *, j] */
      const struct oc_tensor *t = &j->ins[m];
      if (t->rank != v->rank) continue;
      memcpy(idx, v->index, (size_t)v->rank * sizeof *idx);
      int axis = m == 0 ? t->rank - 1 : t->rank - 2;
      for (int d = 0; d < t->rank - 2; d++)
        if (t->shape[d] == 1) idx[d] = 0; /* broadcast batch */
      json_t *s = slice_json(sb->t[j->ctx_sb[m]].t->v->name, t, idx, axis);
      if (s) json_array_append_new(a, s);
    }
  }
  if (!json_array_size(a)) {
    json_decref(a);
    return NULL;
  }
  return a;
}

json_t *kc_verdict_evidence(const char *tensor, const char *op, const int64_t *shape, int rank,
                            const struct oc_verdict *v) {
  char line[1024];
  oc_verdict_format(v, line, sizeof line);
  json_t *ev =
      json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:s}", "tensor",
                tensor, "verdict", oc_verdict_name(v->kind), "op", op, "profile", v->profile,
                "index", kc_gate_index_json(v->index, v->rank), "kernel", jnum(v->kernel), "exact",
                jnum(v->exact), "bound", jnum(v->bound), "error", jnum(v->error), "ratio",
                jnum(v->ratio), "shape", kc_gate_index_json(shape, rank), "n_fail",
                (json_int_t)v->n_fail, "n_special", (json_int_t)v->n_special, "verdict_line", line);
  if (!ev) return NULL;
  if (v->kind == OC_FAIL_PRECISION && v->explained_by[0])
    json_object_set_new(ev, "explained_by", json_string(v->explained_by));
  if (v->detail[0]) json_object_set_new(ev, "detail", json_string(v->detail));
  return ev;
}

json_t *kc_judge_evidence(const struct kc_contract *c, const struct kc_contract_sb *sb,
                          const struct kc_judgment *j) {
  const struct oc_verdict *v = &j->v;
  const struct kc_contract_sb_tensor *t = &sb->t[j->out];
  json_t *ev = kc_verdict_evidence(t->t->v->name, c->op, t->t->shape, t->t->rank, v);
  if (!ev) return NULL;
  /* Elementwise ops: the inputs at the worst index (broadcast dims at 0). */
  if (j->nins) {
    json_t *in = json_object();
    for (int k = 0; k < j->nins; k++) {
      const struct oc_tensor *x =
          &j->ins[k + ((j->scalar >= 0 && j->scalar_first) || j->constant == 2)];
      int64_t idx[OC_MAX_RANK] = {0};
      for (int d = 0; d < x->rank && d < v->rank; d++)
        idx[d] = x->shape[d] == 1 ? 0 : v->index[d];
      json_object_set_new(in, sb->t[j->in[k]].t->v->name, jnum(oc_tensor_get(x, idx)));
    }
    if (j->scalar >= 0) json_object_set_new(in, c->scalars[j->scalar]->name, jnum(j->scalar_value));
    if (j->constant)
      json_object_set_new(in, j->constant == 2 ? "lhs" : "rhs", jnum(j->scalar_value));
    json_object_set_new(ev, "inputs", in);
  }
  json_t *slices = input_slices(sb, j);
  if (slices) json_object_set_new(ev, "input_slices", slices);
  return ev;
}

/* ------------------------------------------------ described tensors */

int kc_judge_attr(const char *attrs, const char *key, char *val, size_t n) {
  size_t kl = strlen(key);
  for (const char *p = attrs; p && *p;) {
    while (*p == ' ')
      p++;
    const char *end = strchr(p, ' ');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
      snprintf(val, n, "%.*s", (int)(len - kl - 1), p + kl + 1);
      return 1;
    }
    p += len;
  }
  return 0;
}

double kc_judge_attr_num(const char *attrs, const char *key, double dflt) {
  char v[64];
  return kc_judge_attr(attrs, key, v, sizeof v) ? strtod(v, NULL) : dflt;
}

/* The input named name, else the one at position pos (-1: none). */
static const struct oc_tensor *named(const struct kc_judge_tensors *a, const char *name, int pos) {
  for (int i = 0; i < a->n; i++)
    if (a->name && a->name[i] && !strcasecmp(a->name[i], name)) return &a->in[i];
  return pos >= 0 && pos < a->n ? &a->in[pos] : NULL;
}

static int tensors_matmul(const struct kc_judge_tensors *a, const struct kc_attrs *at,
                          struct oc_verdict *v, char *err, size_t n) {
  const struct oc_tensor *a0 = named(a, "a", 0), *b0 = named(a, "b", 1);
  if (!a0 || !b0) {
    snprintf(err, n, "matmul needs A and B");
    return -1;
  }
  struct oc_tensor ta = *a0, tb = *b0;
  if (kc_attr_bool(at, KC_ATTR_TRANSPOSE_A, 0)) transpose(&ta);
  if (kc_attr_bool(at, KC_ATTR_TRANSPOSE_B, 0)) transpose(&tb);
  struct oc_matmul_args m = {&ta,
                             &tb,
                             named(a, "c", -1),
                             named(a, "bias", -1),
                             kc_attr_num(at, KC_ATTR_ALPHA, 1),
                             kc_attr_num(at, KC_ATTR_BETA, 0),
                             (enum oc_act)kc_attr_enum(at, KC_ATTR_ACTIVATION, OC_ACT_NONE)};
  (void)err, (void)n;
  return oc_check_matmul(&m, a->out, a->p, a->o, v);
}

static int tensors_attention(const struct kc_judge_tensors *a, const struct kc_attrs *attrs,
                             struct oc_verdict *v, char *err, size_t n) {
  if (oc_op_find(a->op)->id == OC_ID_ATTENTION_BACKWARD) {
    const struct oc_tensor *t[6];
    for (int k = 0; k < 6; k++)
      if (!(t[k] = named(a, ATT_GRAD_IN[k], k))) {
        snprintf(err, n, "attention_backward needs q, k, v, o, g and lse");
        return -1;
      }
    return attention_grad(t, attrs, a->out, a->p, a->o, v);
  }
  const struct oc_tensor *q = named(a, "q", 0), *k = named(a, "k", 1), *vv = named(a, "v", 2);
  if (!q || !k || !vv) {
    snprintf(err, n, "attention needs q, k and v");
    return -1;
  }
  struct oc_attention_args at = {q, k, vv, 0, 0, OC_FP32, OC_MASKED_EITHER};
  attention_attrs(attrs, &at);
  return oc_check_attention(&at, a->out, a->p, a->o, v);
}

static int tensors_delta(const struct kc_judge_tensors *a, const struct kc_attrs *at,
                         struct oc_verdict *v, char *err, size_t n) {
  const struct oc_tensor *q = named(a, "q", 0), *k = named(a, "k", 1), *vv = named(a, "v", 2),
                         *g = named(a, "g", 3), *b = named(a, "beta", 4);
  if (!q || !k || !vv || !g || !b) {
    snprintf(err, n, "gated_delta needs q, k, v, g and beta");
    return -1;
  }
  struct oc_delta_args d = {
      q,
      k,
      vv,
      g,
      b,
      kc_attr_num(at, KC_ATTR_SCALE, 1.0 / sqrt((double)q->shape[q->rank - 1])),
      kc_attr_bool(at, KC_ATTR_GATE_IS_LOG, 0)};
  return oc_check_gated_delta(&d, a->out, a->p, a->o, v);
}

static int tensors_elementwise(const struct kc_judge_tensors *a, const struct kc_attrs *at,
                               const struct oc_op_info *op, struct oc_verdict *v, char *err,
                               size_t n) {
  if (op->id == OC_ID_CLAMP) {
    if (a->n != 1) {
      snprintf(err, n, "clamp takes 1 input tensor, %d given", a->n);
      return -1;
    }
    double lo = kernel_constant(&a->in[0], kc_attr_num(at, KC_ATTR_MIN, -INFINITY));
    double hi = kernel_constant(&a->in[0], kc_attr_num(at, KC_ATTR_MAX, INFINITY));
    return oc_check_clamp(&a->in[0], lo, hi, a->out, a->p, a->o, v);
  }
  if (a->n != op->arity) {
    snprintf(err, n, "op '%s' takes %d inputs, %d given", op->name, op->arity, a->n);
    return -1;
  }
  return oc_check_elementwise((enum oc_op)op->kind, &a->in[0], op->arity == 2 ? &a->in[1] : NULL,
                              a->out, a->p, a->o, v);
}

int kc_judge_tensors(const struct kc_judge_tensors *a, struct oc_verdict *v, char *err, size_t n) {
  const struct oc_op_info *op = oc_op_find(a->op);
  int r = -1;
  if (!op) {
    snprintf(err, n, "op '%s' is not checked by the oracle", a->op ? a->op : "(none)");
    return -1;
  }
  err[0] = 0;
  struct kc_attrs at; /* typed once, as a contract's are at load */
  if (kc_attrs_parse_kv(a->attrs, &at, err, n)) return -1;
  switch (op->cls) {
  case OC_CLASS_ELEMENTWISE: r = tensors_elementwise(a, &at, op, v, err, n); break;
  case OC_CLASS_MATMUL: r = tensors_matmul(a, &at, v, err, n); break;
  case OC_CLASS_ATTENTION: r = tensors_attention(a, &at, v, err, n); break;
  case OC_CLASS_RECURRENCE: r = tensors_delta(a, &at, v, err, n); break;
  case OC_CLASS_NORM: {
    const struct oc_tensor *x = named(a, "x", 0), *w = named(a, "weight", -1),
                           *b = named(a, "bias", -1);
    if (!x) {
      snprintf(err, n, "%s needs x", op->name);
      return -1;
    }
    double eps = kc_attr_num(&at, KC_ATTR_EPS, 1e-5);
    r = op->id == OC_ID_RMS_NORM ? oc_check_rms_norm(x, w, eps, a->out, a->p, a->o, v)
                                 : oc_check_layer_norm(x, w, b, eps, a->out, a->p, a->o, v);
    break;
  }
  case OC_CLASS_REDUCE:
  case OC_CLASS_SOFTMAX: {
    if (a->n < 1) {
      snprintf(err, n, "op '%s' needs an input", op->name);
      return -1;
    }
    int axis = (int)kc_attr_num(&at, KC_ATTR_AXIS, -1);
    if (axis < 0) axis += a->in[0].rank;
    r = op->cls == OC_CLASS_REDUCE ? reduce(op, &at, &a->in[0], axis, a->out, a->p, a->o, v)
                                   : oc_check_softmax((enum oc_softmax_kind)op->kind, &a->in[0],
                                                      axis, a->out, a->p, a->o, v);
    break;
  }
  case OC_CLASS_POINTWISE: {
    if (a->n != 3) {
      snprintf(err, n, "%s takes 3 input tensors, %d given", op->name, a->n);
      return -1;
    }
    struct oc_pointwise_args pa = {&a->in[0], &a->in[1], &a->in[2],
                                   kc_attr_num(&at, KC_ATTR_VALUE, 1)};
    r = oc_check_pointwise((enum oc_pw_op)op->kind, &pa, a->out, a->p, a->o, v);
    break;
  }
  case OC_CLASS_LOSS: {
    const struct oc_tensor *t[5] = {named(a, "x", -1), named(a, "target", -1),
                                    named(a, "weight", -1), named(a, "g", -1),
                                    named(a, "total_weight", -1)};
    r = nll(op, &at, t, a->out, a->p, a->o, v);
    break;
  }
  case OC_CLASS_CONV: {
    int wg = op->kind == OC_CONV_OP_CONV_WEIGHT_GRAD, bg = op->kind == OC_CONV_OP_CONV_BIAS_GRAD;
    const struct oc_tensor *ta = named(a, wg || bg ? "g" : "x", 0), *tb = NULL, *tbias = NULL;
    if (wg) tb = named(a, "x", 1);
    if (!wg && !bg) {
      tb = named(a, "w", -1);
      if (!tb) tb = named(a, "weight", 1);
      tbias = named(a, "bias", -1);
    }
    r = conv(op, &at, ta, tb, tbias, a->out, a->p, a->o, v, err, n);
    break;
  }
  case OC_CLASS_GATHER: {
    if (op->id == OC_ID_EMBEDDING_BACKWARD) {
      const struct oc_tensor *g = named(a, "g", 0), *ix = named(a, "index", 1);
      if (!g || !ix) {
        snprintf(err, n, "%s needs g and index", op->name);
        return -1;
      }
      r = oc_check_embedding_backward(g, ix, (int64_t)kc_attr_num(&at, KC_ATTR_PADDING_IDX, -1),
                                      a->out, a->p, a->o, v);
      break;
    }
    const struct oc_tensor *x = named(a, "x", 0), *ix = named(a, "index", 1);
    if (!x || !ix) {
      snprintf(err, n, "%s needs x and index", op->name);
      return -1;
    }
    int axis = (int)kc_attr_num(&at, KC_ATTR_AXIS, 0);
    if (axis < 0) axis += x->rank;
    r = oc_check_index_select(x, axis, ix, a->out, a->p, a->o, v);
    break;
  }
  case OC_CLASS_OPTIM:
    return kc_judge_optim(op, &at, a->n, a->in, a->name, a->out, a->p, a->o, v, err, n);
  case OC_CLASS_BATCH_NORM:
  case OC_CLASS_POOL: {
    struct kc_named_tensor nt[KC_JUDGE_MAX_IN];
    int k = 0;
    for (; k < a->n && k < KC_JUDGE_MAX_IN; k++) {
      nt[k].name = a->name ? a->name[k] : NULL;
      nt[k].t = &a->in[k];
    }
    r = kc_judge_cnn(op, &at, nt, k, a->out, a->p, a->o, v, err, n);
    break;
  }
  case OC_CLASS_GRAD: {
    const struct oc_tensor *g = named(a, "g", 0), *x = named(a, "y", -1);
    if (!x) x = named(a, "x", 1);
    if (!g || (!x && op->arity > 1)) {
      snprintf(err, n, "%s needs g and the forward value (y or x)", op->name);
      return -1;
    }
    int axis = (int)kc_attr_num(&at, KC_ATTR_AXIS, -1);
    if (axis < 0 && x) axis += x->rank;
    struct oc_grad_args ga = {g,
                              x,
                              axis,
                              kc_attr_num(&at, KC_ATTR_THRESHOLD, 0),
                              named(a, "mean", -1),
                              named(a, "rstd", -1),
                              named(a, "weight", -1)};
    r = oc_check_grad((enum oc_grad_op)op->kind, &ga, a->out, a->p, a->o, v);
    break;
  }
  }
  if (r && !err[0])
    snprintf(err, n, "the oracle rejected the tensors of op '%s' (shapes or axis)", op->name);
  return r ? -1 : 0;
}
