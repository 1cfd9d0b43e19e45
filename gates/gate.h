/* gates/gate.h — the interface of every gate: what it is given (the
 * context), what it returns (a typed result), and the registry built from
 * gates.def. The runner turns results into report records. Helpers the
 * gates share: gate_util.h, judge.h (the oracle), trial.h (generated
 * inputs). */
#ifndef KC_GATE_H
#define KC_GATE_H

#include <cuda.h>
#include <jansson.h>

struct kc_launch_info;
struct kc_shadow;
struct kc_contract;

/* A gate's verdict on one launch (the `status` of its entry in the check
 * record), one row each in gate_status.def. KC_GS_UNSET: the gate set none
 * (an internal error). */
enum kc_gate_status {
#define KC_GATE_STATUS(id, name, meaning) KC_GS_##id,
#include "gate_status.def"
};
const char *kc_gate_status_name(enum kc_gate_status s);

/* The bytes the gates fill memory with (gate_fills.def): KC_FILL_<ID>. */
enum {
#define KC_FILL(id, value, use) KC_FILL_##id = value,
#include "gate_fills.def"
};

/* What a gate found on one launch: its status and its violations (each a
 * JSON object with message and evidence, owned by the result). The runner
 * adds where (gate, kernel, launch, signature, shape, seed, contract),
 * de-duplicates and reports them. */
#define KC_GATE_MAX_VIOLATIONS 16
struct kc_gate_result {
  enum kc_gate_status status;
  int nviolations;
  json_t *violation[KC_GATE_MAX_VIOLATIONS];
  /* The replay bundle of the first violation ("bundle" or
   * "bundle_skipped"), written by kc_findings_prepare while the check's
   * pre-state still exists; NULL when none. */
  json_t *bundle;
};

struct kc_gate_ctx {
  struct kc_launch_info *li;
  struct kc_shadow *shadow;
  /* The launch's contract (a matched file or one made from the thread's
   * annotation); NULL when none. */
  const struct kc_contract *contract;
  /* The rest of the gate's entry in the check record (runs, verdict,
   * reason, ...): details the gate adds besides its status. */
  json_t *result;
  struct kc_gate_result out;
};

/* Adds a violation (message, evidence, ...) to the gate's result; takes
 * ownership of details. */
void kc_gate_violation(struct kc_gate_ctx *ctx, json_t *details);

/* How the op level (a framework binding) runs a gate: gates.def's op
 * column (KC_GATE_OP_none: kernel level only; a row with no kernel
 * evidence is op level only, its kernel-level run not_applicable). */
enum kc_gate_op {
  KC_GATE_OP_none,
  KC_GATE_OP_oracle,
  KC_GATE_OP_inputs,
  KC_GATE_OP_trials,
  KC_GATE_OP_poison,
  KC_GATE_OP_guards,
  KC_GATE_OP_shapes,
  KC_GATE_OP_documented,
  KC_GATE_OP_layouts,
};
const char *kc_gate_op_name(enum kc_gate_op op);

struct kc_trial;
/* A trials gate's generated-input runs for oracle op `op` (NULL: none
 * named) into t (KC_MAX_TRIALS at most): how many; the verdicts that are
 * its violations into *fail_mask (bit 1 << enum oc_verdict_kind). The
 * kernel level runs them on shadow buffers, the op level through
 * kcheck_op_trials. */
typedef int (*kc_gate_trials_fn)(const char *op, struct kc_trial *t, unsigned *fail_mask);

/* A registry row (gates.def). A gate with needs_contract runs only on
 * launches that have a contract (matched or from an annotation). */
struct kc_gate {
  const char *id;
  const char *severity;
  int needs_contract;
  enum kc_gate_op op;
  /* Its evidence fields at kernel and op level (space-separated). */
  const char *kernel_evidence, *op_evidence;
  const char *contract;
  /* Runs the gate: sets ctx->out.status, adds violations and details.
   * Returns the number of violations it added (checked by the runner). */
  int (*run)(struct kc_gate_ctx *ctx);
  /* op trials: kc_gate_<id>_trials; NULL for every other op. */
  kc_gate_trials_fn trials;
  /* A gate that runs only on some launches defines
   * kc_gate_<id>_applies in its own file (the registry finds it); NULL:
   * every launch its needs_contract allows. */
  int (*applies)(const struct kc_launch_info *li);
};

/* Does the gate judge launches (0: an op-level gate, gates.def's row with
 * no kernel evidence, whose kernel-level run says not_applicable)? */
int kc_gate_at_kernel_level(const struct kc_gate *g);

/* The number of gates, from gates.def (the runner's per-check arrays). */
enum {
#define KC_GATE(id, sev, needs, op, kev, oev, contract) KC_GATE_INDEX_##id,
#include "gates.def"
#undef KC_GATE
  KC_NGATES
};

/* Each gate file defines kc_gate_<id>_run (a trials gate kc_gate_<id>_trials
 * too, a gate for some launches only kc_gate_<id>_applies: weak, so a gate
 * without one leaves it NULL); registry.c makes the kc_gate_<id> rows from
 * gates.def. (uninit applies to kernel nodes of replayed graphs under
 * graph_uninit, stream_delay to launches that race with a new unordered
 * write.) */
#define KC_GATE(id, sev, needs, op, kev, oev, contract)                                            \
  extern const struct kc_gate kc_gate_##id;                                                        \
  int kc_gate_##id##_run(struct kc_gate_ctx *ctx);                                                 \
  int kc_gate_##id##_trials(const char *op, struct kc_trial *t, unsigned *fail_mask);              \
  __attribute__((weak, visibility("hidden"))) int kc_gate_##id##_applies(                          \
      const struct kc_launch_info *li);
#include "gates.def"
#undef KC_GATE

/* All gates, in registry order, NULL-terminated. */
extern const struct kc_gate *const kc_gates[];

/* Parses the gates option; 0 when at least one gate is enabled. Unknown
 * names are warned about with the nearest valid one. */
int kc_gates_init(void);
int kc_gate_enabled(const struct kc_gate *g);
/* The check hook: runs every enabled gate on one selected launch. */
CUresult kc_gates_check(struct kc_launch_info *li);
/* Prints the registry (id, severity, contract). */
void kc_gates_print(void);

/* After a check: puts g's status into its entry (ctx->result) and reports
 * its violations, unless an earlier check reported this (gate, kernel,
 * signature); returns how many were such repeats (gates/findings.c). */
int kc_findings_report(const struct kc_gate *g, struct kc_gate_ctx *ctx);
/* Before the check restores the application's memory: writes the replay
 * bundle (repro_dir) of a new finding of g, for kc_findings_report. */
void kc_findings_prepare(const struct kc_gate *g, struct kc_gate_ctx *ctx);
/* Reports one complete violation record (takes it): the one exit of every
 * violation, the runner's and the op-level checks' (gates/op_check.c). */
void kc_findings_emit(json_t *rec);
/* Forgets what was reported (a forked child writes a report of its own). */
void kc_findings_reset(void);

#endif
