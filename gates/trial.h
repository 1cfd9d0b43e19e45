/* gates/trial.h — runs of a contracted launch on generated inputs and at
 * other shapes (gates/trial.c): nonfinite, precision, extremes, shapes. */
#ifndef KC_TRIAL_H
#define KC_TRIAL_H

#include <jansson.h>
#include <stdint.h>

#include "gate.h"
#include "judge.h"

/* Magnitudes the extremes gate moves generated values in [-1, 1) to. */
enum kc_transform { KC_TF_NONE, KC_TF_HUGE, KC_TF_TINY, KC_TF_SUBNORMAL, KC_TF_ZEROS };

/* One run on generated inputs (gates/trial.c). */
struct kc_trial {
  int gen; /* enum oc_gen */
  enum kc_transform transform;
  const int64_t *scalars; /* one per contract scalar; NULL: the application's */
  uint64_t max_bytes;     /* skip when the tensors need more (0: no limit) */
};
/* rows x cols values of generator gen (oracle/adversarial.h: role, seed),
 * made in fp64, moved by tf, rounded to float format fmt and packed
 * little-endian into out (rows * cols elements of fmt's size). What every
 * trial feeds the kernel, and what kcheck_generate() gives back. 0, or -1
 * for bad arguments. */
int kc_generate_packed(int gen, enum kc_transform tf, int fmt, int role, int64_t rows, int64_t cols,
                       uint64_t seed, void *out);
/* The seed of trial i of a gate, from the seed option. */
uint64_t kc_trial_seed(const char *gate, int trial);
const char *kc_transform_name(enum kc_transform t);
/* What exposed a result: inputs (application, or generator, transform and
 * seed), scalars, tensor shapes, grid and block. tr NULL: the application's
 * inputs. */
json_t *kc_exposed_by(const struct kc_contract_sb *sb, const struct kc_trial *tr, uint64_t seed);
/* One trial: shadow buffers at tr's scalars, inputs generated with seed,
 * outputs poisoned with NaN, one run, the oracle's verdict in j. 0: judged,
 * 2: run but the oracle cannot judge it (why in j->err) — in both sb stays
 * allocated: kc_contract_sb_free it; 1: skipped (domain or size, why in j->err);
 * -1: not run (why in j->err). */
int kc_trial_run(struct kc_gate_ctx *ctx, const struct kc_contract *c, const struct kc_trial *tr,
                 uint64_t seed, struct kc_contract_sb *sb, struct kc_judgment *j);
/* The first tensor of sb (after a run) with a changed guard byte: evidence
 * in the bounds gate's terms (side, offset of the first changed byte
 * nearest the tensor, changed bytes, guard size, reached_guard_end when
 * the last guard byte changed), or NULL. */
json_t *kc_trial_guard_damage(const struct kc_contract_sb *sb);
/* Every failing verdict, as a fail_mask. */
#define KC_VERDICT_FAILS (1u << OC_FAIL_PRECISION | 1u << OC_FAIL_VALUE | 1u << OC_FAIL_SPECIAL)
/* The most trials a generated-input gate lists for an oracle op (its
 * kc_gate_<id>_trials, gate.h: also what a binding's op-level checks run,
 * kcheck_op_trials). */
#define KC_MAX_TRIALS 8
/* Runs trials in order until one gives a verdict in fail_mask (bits 1 <<
 * enum oc_verdict_kind) or, for trials at other scalars, changes a guard
 * zone; reports that as g's violation (message, evidence, exposed_by) and
 * sets the result: status, runs, and one entry per run. A specials trial
 * whose inputs have fewer than 6 rows runs again at the seeds
 * oc_specials_seed names until every input has met every special kind
 * (entries with rotation and seed). Returns the number of violations (0
 * or 1). */
int kc_trials_gate(struct kc_gate_ctx *ctx, const struct kc_gate *g, const struct kc_trial *trials,
                   int ntrials, unsigned fail_mask, const char *message);

#endif
