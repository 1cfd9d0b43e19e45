/* gates/extremes.c — contract: the kernel is right at the edges of its
 * formats' range, not only near 1. Signed generated data moved to huge
 * magnitudes (2^(emax/4): squares and sums of squares stay finite, so a
 * correct two-pass algorithm has no excuse to overflow), tiny ones
 * (2^(emin/4)), subnormals, signed zeros, plain cancellation, and for the
 * softmax family logits in [80, 100] (exp overflows without the max
 * subtracted). Any failing verdict is a violation. */
#include "gate.h"
#include "trial.h"

int kc_gate_extremes_trials(const char *name, struct kc_trial *t, unsigned *fail_mask) {
  int n = 0;
  *fail_mask = KC_VERDICT_FAILS;
  const struct oc_op_info *op = name ? oc_op_find(name) : NULL;
  if (op && op->cls == OC_CLASS_SOFTMAX)
    t[n++] = (struct kc_trial){OC_GEN_LARGE_LOGITS, KC_TF_NONE, NULL, 0};
  t[n++] = (struct kc_trial){OC_GEN_CANCEL, KC_TF_HUGE, NULL, 0};
  t[n++] = (struct kc_trial){OC_GEN_CANCEL, KC_TF_TINY, NULL, 0};
  t[n++] = (struct kc_trial){OC_GEN_CANCEL, KC_TF_SUBNORMAL, NULL, 0};
  t[n++] = (struct kc_trial){OC_GEN_CANCEL, KC_TF_ZEROS, NULL, 0};
  t[n++] = (struct kc_trial){OC_GEN_CANCEL, KC_TF_NONE, NULL, 0};
  return n;
}

int kc_gate_extremes_run(struct kc_gate_ctx *ctx) {
  const struct kc_contract *c = ctx->contract;
  struct kc_trial t[KC_MAX_TRIALS];
  unsigned fails = KC_VERDICT_FAILS;
  /* no op declared: nothing to judge against (as precision) */
  int n = c && c->op ? kc_gate_extremes_trials(c->op, t, &fails) : 0;
  return kc_trials_gate(ctx, &kc_gate_extremes, t, n, fails,
                        "at extreme input magnitudes the outputs violate the declared op and "
                        "profile (numerical oracle)");
}
