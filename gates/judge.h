/* gates/judge.h — the numerical oracle's verdict on one shadow run of a
 * contracted launch (gates/judge.c), shared by the gates that judge values. */
#ifndef KC_JUDGE_H
#define KC_JUDGE_H

#include <jansson.h>

#include "contract.h"
#include "gate.h"
#include "oracle.h"
#include "shadow_buffers.h"

/* One shadow run judged by the numerical oracle (gates/judge.c). */
struct kc_judgment {
  struct oc_verdict v;
  int out;        /* sb index of the judged output tensor */
  int in[8], nin; /* role: in tensors, declaration order */
  struct oc_tensor ins[8];
  int nins; /* elementwise ops: inputs described, for the evidence */
  /* Binary elementwise op over one tensor: the float scalar (index in
   * c->scalars, -1: none) taken as the other operand, its value, and
   * whether it comes first (declared before the tensor). */
  int scalar, scalar_first;
  double scalar_value;
  /* ... or a constant operand from the attrs: 1 rhs (x op c), 2 lhs (c op
   * x), 0 none; its value (as the kernel holds it) in scalar_value. */
  int constant;
  /* For the evidence of other ops: the input slices an output element
   * depends on. KC_CTX_ROW: ins[0] along `axis` (reduced: the output lacks
   * that axis); KC_CTX_MATMUL: row i of ins[0] (A) and column j of ins[1]
   * (B). ctx_sb: their sb indices. */
  enum { KC_CTX_NONE, KC_CTX_ROW, KC_CTX_MATMUL } ctx;
  int axis, reduced, ctx_sb[2];
  char err[256]; /* why no verdict (kc_judge returned -1) */
};
/* sb's tensor indices in the contract's declaration order (by source
 * line; an annotation's tensors in the order they were annotated), which
 * is the order the ops take their inputs in. order has sb->n slots. */
void kc_contract_sb_declared_order(const struct kc_contract_sb *sb, int *order);
/* Judges the outputs of sb's last run against c's op and profile. 0 with
 * j->v filled; -1 when the oracle cannot judge (why in j->err). */
int kc_judge(const struct kc_contract *c, const struct kc_contract_sb *sb, struct kc_judgment *j);
/* The gate status of a verdict: bitwise, pass, inconclusive or fail. */
enum kc_gate_status kc_verdict_status(enum oc_verdict_kind k);
/* Adds verdict, class and coverage to a gate's result object. */
void kc_judge_result(const struct kc_judgment *j, json_t *result);
/* The evidence of a verdict: tensor, multi-index, values, bound, class;
 * the inputs at the worst index where the op is elementwise. */
json_t *kc_judge_evidence(const struct kc_contract *c, const struct kc_contract_sb *sb,
                          const struct kc_judgment *j);
/* Its fields common to kernel and op level (gates.def's evidence columns),
 * for output `tensor` of oracle op `op` and that shape: the op level
 * (gates/op_check.c) writes these, kc_judge_evidence adds the inputs. */
json_t *kc_verdict_evidence(const char *tensor, const char *op, const int64_t *shape, int rank,
                            const struct oc_verdict *v);

/* An op over tensors already described (the PyTorch binding's host copies,
 * gates/op_check.c): the oracle op's name (ops.def, aliases included), its
 * attributes as "key=value key=value", the inputs in the op's order with
 * their names (matmul: a, b, c, bias; norms: x, weight, bias; attention: q,
 * k, v; gated_delta: q, k, v, g, beta; by name, else by position), the
 * output, the profile and the oracle's options. */
struct kc_judge_tensors {
  const char *op;
  const char *attrs;
  int n;
  const struct oc_tensor *in;
  const char *const *name;
  const struct oc_tensor *out;
  const struct oc_profile *p;
  const struct oc_options *o;
};
/* The verdict on a's output, dispatched by the op's ops.def class as
 * kc_judge does for contracts. 0 with v filled; -1 with why in err. */
int kc_judge_tensors(const struct kc_judge_tensors *a, struct oc_verdict *v, char *err, size_t n);
/* Attribute `key` of "k=v k=v": 1 with its text in val, else 0. */
int kc_judge_attr(const char *attrs, const char *key, char *val, size_t n);
/* ... as a number, dflt when absent. */
double kc_judge_attr_num(const char *attrs, const char *key, double dflt);

#endif
