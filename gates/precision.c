/* gates/precision.c — contract: the kernel meets its declared precision
 * profile on inputs built to expose cheaper arithmetic (oracle/
 * adversarial.h), not only on the application's data, where most precision
 * loss hides. The generators follow the op: products that all add up and
 * large leading terms that swamp a short accumulator (matmul, sums), partial
 * sums past fp16's range (matmul), rows with a large mean (norms). A
 * fail_precision verdict is a proof that the outputs lie beyond the
 * declared profile's rigorous bound and within a cheaper profile's (named in
 * the evidence as explained_by). */
#include "gate.h"
#include "trial.h"

int kc_gate_precision_trials(const char *name, struct kc_trial *t, unsigned *fail_mask) {
  *fail_mask = KC_VERDICT_FAILS;
  int g[KC_MAX_TRIALS], n = 0;
  const struct oc_op_info *op = oc_op_find(name);
  enum oc_opid id = op ? op->id : OC_ID_COUNT;
  if (id == OC_ID_MATMUL) {
    g[n++] = OC_GEN_ALL_POSITIVE, g[n++] = OC_GEN_STAGNATION, g[n++] = OC_GEN_FP16_OVERFLOW;
  } else if (id == OC_ID_SUM || id == OC_ID_MEAN || id == OC_ID_NORM2 || id == OC_ID_ATTENTION) {
    g[n++] = OC_GEN_ALL_POSITIVE, g[n++] = OC_GEN_STAGNATION;
  } else if (op && op->cls == OC_CLASS_NORM) {
    g[n++] = OC_GEN_LARGE_MEAN, g[n++] = OC_GEN_ALL_POSITIVE;
  } else {
    g[n++] = OC_GEN_UNIFORM, g[n++] = OC_GEN_ALL_POSITIVE;
  }
  for (int i = 0; i < n; i++)
    t[i] = (struct kc_trial){g[i], KC_TF_NONE, NULL, 0};
  return n;
}

int kc_gate_precision_run(struct kc_gate_ctx *ctx) {
  const struct kc_contract *c = ctx->contract;
  struct kc_trial t[KC_MAX_TRIALS];
  unsigned fails = KC_VERDICT_FAILS;
  int n = c && c->op ? kc_gate_precision_trials(c->op, t, &fails) : 0;
  return kc_trials_gate(ctx, &kc_gate_precision, t, n, fails,
                        "on adversarial inputs the outputs fall outside the declared precision "
                        "profile (numerical oracle)");
}
