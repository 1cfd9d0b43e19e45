/* gates/oracle.c — contract: the kernel computes its declared `op` within
 * its declared precision profile. One run on shadow buffers (inputs copied
 * from the check's pre-state, as coverage does); the outputs read back are
 * handed to the numerical oracle (oracle/oracle.h) with tensors described
 * from the bound contract (format, shape, strides) over the host copies.
 * Elementwise ops, matmul and the softmax family are checked; other ops
 * give "inconclusive". A failing verdict is a violation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gate.h"
#include "options.h"
#include "oracle.h"

#define POISON 0xFFu /* NaN in every float format: an unwritten output fails */

struct job {
  struct kc_gate_ctx *ctx;
  const struct kc_contract *c;
  struct kc_sb *sb;
  int out;        /* index of the output tensor in sb */
  int in[8], nin; /* role: in tensors, declaration order */
};

static json_t *jnum(double d) {
  if (isnan(d)) return json_string("nan");
  if (isinf(d)) return json_string(d > 0 ? "inf" : "-inf");
  return json_real(d);
}

static const char *attr(const struct kc_contract *c, const char *key) {
  for (int i = 0; i < c->nattrs; i++)
    if (!strcmp(c->attrs[i].key, key)) return c->attrs[i].value;
  return NULL;
}

static int attr_true(const struct kc_contract *c, const char *key) {
  const char *v = attr(c, key);
  return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

/* Describes sb tensor i to the oracle: its bytes before the run (inputs)
 * or after it (outputs). 0, or -1 with why in err. */
static int describe(const struct kc_sb *sb, int i, int after, struct oc_tensor *t, char *err,
                    size_t n) {
  const struct kc_sb_tensor *s = &sb->t[i];
  if (s->t->v->tensor.format >= KC_FMT_INT8) {
    snprintf(err, n, "tensor '%s' has integer format %s: the oracle checks float tensors",
             s->t->v->name, kc_ct_format_name(s->t->v->tensor.format));
    return -1;
  }
  const unsigned char *base = (after ? s->after : s->before);
  if (!base) {
    snprintf(err, n, "tensor '%s' was not read back", s->t->v->name);
    return -1;
  }
  if (oc_tensor_make(t, base + KC_SB_GUARD, (enum oc_format)s->t->v->tensor.format, s->t->rank,
                     s->t->shape, s->t->strides)) {
    snprintf(err, n, "tensor '%s': shape the oracle cannot take", s->t->v->name);
    return -1;
  }
  return 0;
}

static int by_name(const struct job *j, const char *name) {
  for (int k = 0; k < j->nin; k++)
    if (!strcasecmp(j->sb->t[j->in[k]].t->v->name, name)) return j->in[k];
  return -1;
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

static double num_attr(const struct kc_contract *c, const char *key, double dflt) {
  const char *v = attr(c, key);
  return v ? strtod(v, NULL) : dflt;
}

/* Runs the oracle. 0 with v filled; -1 with why in err (inconclusive). */
static int check(struct job *j, const struct oc_profile *p, const struct oc_options *o,
                 struct oc_verdict *v, struct oc_tensor *ins, char *err, size_t n) {
  const struct kc_contract *c = j->c;
  struct oc_tensor out;
  if (describe(j->sb, j->out, 1, &out, err, n)) return -1;
  int ew = oc_op_parse(c->op);
  if (ew >= 0) {
    int arity = oc_op_arity((enum oc_op)ew);
    if (j->nin != arity) {
      snprintf(err, n, "op '%s' takes %d input tensor%s; the contract declares %d", c->op, arity,
               arity == 1 ? "" : "s", j->nin);
      return -1;
    }
    for (int k = 0; k < arity; k++)
      if (describe(j->sb, j->in[k], 0, &ins[k], err, n)) return -1;
    if (oc_check_elementwise((enum oc_op)ew, &ins[0], arity == 2 ? &ins[1] : NULL, &out, p, o, v)) {
      snprintf(err, n,
               "the oracle rejected the tensors of op '%s' (shapes must match or broadcast)",
               c->op);
      return -1;
    }
    return 0;
  }
  if (!strcmp(c->op, "matmul")) {
    int ia = by_name(j, "a"), ib = by_name(j, "b"), ic = by_name(j, "c"),
        ibias = by_name(j, "bias");
    if (ia < 0 && j->nin >= 1) ia = j->in[0];
    if (ib < 0 && j->nin >= 2) ib = j->in[1];
    if (ia < 0 || ib < 0 || ia == ib) {
      snprintf(err, n, "matmul needs two input tensors (A and B)");
      return -1;
    }
    struct oc_tensor ta, tb, tc, tbias;
    if (describe(j->sb, ia, 0, &ta, err, n) || describe(j->sb, ib, 0, &tb, err, n)) return -1;
    if (attr_true(c, "transpose_a")) transpose(&ta);
    if (attr_true(c, "transpose_b")) transpose(&tb);
    struct oc_matmul_args a = {
        &ta, &tb, NULL, NULL, num_attr(c, "alpha", 1.0), num_attr(c, "beta", 0.0), OC_ACT_NONE};
    if (ic >= 0) {
      if (describe(j->sb, ic, 0, &tc, err, n)) return -1;
      a.c = &tc;
    } else if (j->sb->t[j->out].role == KC_ROLE_INOUT && a.beta != 0) {
      if (describe(j->sb, j->out, 0, &tc, err, n)) return -1;
      a.c = &tc;
    }
    if (ibias >= 0) {
      if (describe(j->sb, ibias, 0, &tbias, err, n)) return -1;
      a.bias = &tbias;
    }
    const char *act = attr(c, "activation");
    if (act) {
      int k = oc_act_parse(act);
      if (k < 0) {
        snprintf(err, n, "unknown activation '%s'", act);
        return -1;
      }
      a.act = (enum oc_act)k;
    }
    if (oc_check_matmul(&a, &out, p, o, v)) {
      snprintf(err, n, "the oracle rejected the matmul tensors (shapes A [..,M,K], B [..,K,N])");
      return -1;
    }
    return 0;
  }
  enum oc_softmax_kind sk;
  if (!strcmp(c->op, "softmax"))
    sk = OC_SOFTMAX;
  else if (!strcmp(c->op, "log_softmax"))
    sk = OC_LOG_SOFTMAX;
  else if (!strcmp(c->op, "logsumexp"))
    sk = OC_LOGSUMEXP;
  else {
    snprintf(err, n, "op '%s' is not checked by the oracle gate yet", c->op);
    return -1;
  }
  if (j->nin < 1) {
    snprintf(err, n, "%s needs an input tensor", c->op);
    return -1;
  }
  if (describe(j->sb, j->in[0], 0, &ins[0], err, n)) return -1;
  int axis = (int)num_attr(c, "axis", -1);
  if (axis < 0) axis += ins[0].rank;
  if (oc_check_softmax(sk, &ins[0], axis, &out, p, o, v)) {
    snprintf(err, n, "the oracle rejected the %s tensors (axis %d)", c->op, axis);
    return -1;
  }
  return 0;
}

static const char *status_of(enum oc_verdict_kind k) {
  switch (k) {
  case OC_BITWISE: return "bitwise";
  case OC_PASS: return "pass";
  case OC_SUSPECT: return "suspect";
  case OC_INCONCLUSIVE: return "inconclusive";
  default: return "fail";
  }
}

static int run(struct kc_gate_ctx *ctx) {
  const struct kc_contract *c = kc_contract_match(ctx->li->k);
  if (!c) return 0;
  if (!c->op || !c->profile_spec) {
    json_object_set_new(ctx->result, "status", json_string("inconclusive"));
    json_object_set_new(
        ctx->result, "reason",
        json_string(c->op ? "the contract declares no profile" : "the contract declares no op"));
    return 0;
  }
  struct kc_sb sb;
  if (kc_gate_sb_create(ctx, &sb) || kc_gate_sb_run(ctx, &sb, POISON)) return 0;
  struct job j = {ctx, c, &sb, -1, {0}, 0};
  for (int i = 0; i < sb.n; i++) {
    if (sb.t[i].role == KC_ROLE_IN && j.nin < 8)
      j.in[j.nin++] = i;
    else if (sb.t[i].role != KC_ROLE_IN && j.out < 0)
      j.out = i;
  }
  char err[256] = "";
  struct oc_verdict v;
  memset(&v, 0, sizeof v);
  struct oc_options o;
  oc_options_default(&o);
  o.seed = (uint64_t)kc_opt.seed;
  struct oc_tensor ins[8];
  int violations = 0;
  json_object_set_new(ctx->result, "runs", json_integer(1));
  if (j.out < 0) {
    snprintf(err, sizeof err, "the contract declares no output tensor");
  } else if (!check(&j, &c->profile, &o, &v, ins, err, sizeof err)) {
    char line[512];
    oc_verdict_format(&v, line, sizeof line);
    json_object_set_new(ctx->result, "status", json_string(status_of(v.kind)));
    json_object_set_new(ctx->result, "verdict", json_string(line));
    json_object_set_new(ctx->result, "class", json_string(oc_verdict_name(v.kind)));
    json_object_set_new(ctx->result, "coverage",
                        json_pack("{s:I, s:I, s:o, s:o, s:i}", "total", (json_int_t)v.total,
                                  "checked", (json_int_t)v.checked, "miss_prob", jnum(v.miss_prob),
                                  "fraction", jnum(v.fraction), "screen_vectors",
                                  v.screen_vectors));
    if (oc_verdict_is_fail(v.kind)) {
      violations = 1;
      const struct kc_sb_tensor *t = &sb.t[j.out];
      json_t *ev = json_pack(
          "{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:s}", "tensor",
          t->t->v->name, "verdict", oc_verdict_name(v.kind), "op", c->op, "profile", v.profile,
          "index", kc_gate_index_json(v.index, v.rank), "kernel", jnum(v.kernel), "exact",
          jnum(v.exact), "bound", jnum(v.bound), "error", jnum(v.error), "ratio", jnum(v.ratio),
          "shape", kc_gate_index_json(t->t->shape, t->t->rank), "n_fail", (json_int_t)v.n_fail,
          "n_special", (json_int_t)v.n_special, "verdict_line", line);
      if (v.kind == OC_FAIL_PRECISION && v.explained_by[0])
        json_object_set_new(ev, "explained_by", json_string(v.explained_by));
      if (v.detail[0]) json_object_set_new(ev, "detail", json_string(v.detail));
      int ew = oc_op_parse(c->op);
      if (ew >= 0) { /* the inputs at the worst index (broadcast dims at 0) */
        json_t *in = json_object();
        for (int k = 0; k < j.nin && k < oc_op_arity((enum oc_op)ew); k++) {
          int64_t idx[OC_MAX_RANK] = {0};
          for (int d = 0; d < ins[k].rank && d < v.rank; d++)
            idx[d] = ins[k].shape[d] == 1 ? 0 : v.index[d];
          json_object_set_new(in, sb.t[j.in[k]].t->v->name, jnum(oc_tensor_get(&ins[k], idx)));
        }
        json_object_set_new(ev, "inputs", in);
      }
      kc_gate_violation(&kc_gate_oracle, ctx->li,
                        json_pack("{s:s, s:o}", "message",
                                  "the kernel's outputs violate its declared op and precision "
                                  "profile (numerical oracle)",
                                  "evidence", ev));
    }
  }
  if (err[0]) {
    json_object_set_new(ctx->result, "status", json_string("inconclusive"));
    json_object_set_new(ctx->result, "reason", json_string(err));
  }
  kc_sb_free(&sb);
  return violations;
}

const struct kc_gate kc_gate_oracle = {
    "oracle",
    "error",
    1,
    "the outputs match the declared op within the declared precision profile (numerical oracle)",
    kc_gate_has_contract,
    run};
