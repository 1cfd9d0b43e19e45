/* gates/nonfinite.c — contract: NaN and Inf propagate as the exact math
 * requires, and finite inputs give no spurious NaN or Inf. Two trials on
 * generated inputs, judged by the oracle's special-value rules: one with
 * NaN, ±Inf, ±0 and subnormals placed at seeded spots ("specials", one
 * kind a row), one with plain finite data ("uniform"). An input of fewer
 * than 6 rows (a vector) cannot hold every kind at one seed: kc_trials_gate
 * repeats the specials trial at the seeds oc_specials_seed names (up to 6
 * runs). Only a fail_special verdict is this gate's violation: value and
 * precision failures belong to the oracle, precision and extremes gates. */
#include <string.h>

#include "gate.h"
#include "trial.h"

static const struct kc_trial trials[] = {
    {OC_GEN_SPECIALS, KC_TF_NONE, NULL, 0},
    {OC_GEN_UNIFORM, KC_TF_NONE, NULL, 0},
};

/* Only fail_special is this gate's (see the top). */
#define FAILS (1u << OC_FAIL_SPECIAL)

int kc_gate_nonfinite_trials(const char *op, struct kc_trial *t, unsigned *fail_mask) {
  (void)op;
  memcpy(t, trials, sizeof trials);
  *fail_mask = FAILS;
  return 2;
}

int kc_gate_nonfinite_run(struct kc_gate_ctx *ctx) {
  return kc_trials_gate(ctx, &kc_gate_nonfinite, trials, 2, FAILS,
                        "NaN or Inf handled against the exact math: dropped, invented, or "
                        "given the wrong sign (special-value rules of the oracle)");
}
