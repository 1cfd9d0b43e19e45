/* gates/gate.h — the fixed interface of every gate, the registry built
 * from gates.def, and the helpers gates share (comparison, violations). */
#ifndef KC_GATE_H
#define KC_GATE_H

#include <jansson.h>

#include "contract.h"
#include "launch.h"
#include "oracle.h"
#include "shadow.h"
#include "shadow_buffers.h"

struct kc_gate_ctx {
  struct kc_launch_info *li;
  struct kc_shadow *shadow;
  json_t *result; /* this gate's entry in the check record: status, runs, ... */
};

/* A registry row (gates.def). A gate with needs_contract runs only on
 * launches that have a contract (matched or from an annotation). */
struct kc_gate {
  const char *id;
  const char *severity;
  int needs_contract;
  const char *contract;
  /* Runs the gate; returns the number of violations it reported. */
  int (*run)(struct kc_gate_ctx *ctx);
};

/* Each gate file defines only kc_gate_<id>_run; registry.c makes the
 * kc_gate_<id> rows from gates.def. */
#define KC_GATE(id, sev, needs, contract)                                                          \
  extern const struct kc_gate kc_gate_##id;                                                        \
  int kc_gate_##id##_run(struct kc_gate_ctx *ctx);
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

/* Compares the latest shadow run with post-state A. Returns the number of
 * differing 32-bit words (-1 when the comparison failed); on a difference
 * *evidence describes the first one. */
long kc_compare_with_post(struct kc_shadow *s, json_t **evidence);
/* Emits a violation of gate g for this launch (adds kernel, launch,
 * signature, seed, stack). Takes ownership of details. */
void kc_gate_violation(const struct kc_gate *g, const struct kc_launch_info *li, json_t *details);

/* determinism, race: when the launch's contract says `nondeterminism:
 * allowed`, sets status "allowed" (nothing is run) and returns 1. */
int kc_gate_nondeterminism_allowed(struct kc_gate_ctx *ctx);
/* Does the launch have a contract (set by the check hook)? */
int kc_gate_has_contract(const struct kc_launch_info *li);
/* Creates the shadow buffers of the launch's contract; on failure sets the
 * gate's status to "error" with the reason and returns -1. */
int kc_gate_sb_create(struct kc_gate_ctx *ctx, struct kc_sb *sb);
/* One run on the shadow buffers (inputs from the check's pre-state); on
 * failure sets status "error" and frees sb. */
int kc_gate_sb_run(struct kc_gate_ctx *ctx, struct kc_sb *sb, unsigned char poison);
/* Completes the evidence of coverage, immutability and bounds: the
 * verdict class, tensor i's shape and exposed_by (the application's inputs,
 * scalars, shapes, grid, block). Returns ev. */
json_t *kc_gate_sb_evidence(json_t *ev, const struct kc_sb *sb, int i, const char *verdict);
/* One element's bytes as evidence: {"hex": little-endian value, and for
 * fp32/fp64/int32 the number}. */
json_t *kc_gate_elem_json(const unsigned char *p, int esize, int format);
/* A multi-index as a JSON array. */
json_t *kc_gate_index_json(const int64_t *idx, int rank);

/* ------------------------------------------------ the oracle's verdicts */

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
void kc_sb_declared_order(const struct kc_sb *sb, int *order);
/* The contract attribute `key`, or NULL. */
const char *kc_contract_attr(const struct kc_contract *c, const char *key);
/* Judges the outputs of sb's last run against c's op and profile. 0 with
 * j->v filled; -1 when the oracle cannot judge (why in j->err). */
int kc_judge(const struct kc_contract *c, const struct kc_sb *sb, struct kc_judgment *j);
/* "bitwise", "pass", "suspect", "inconclusive" or "fail". */
const char *kc_verdict_status(enum oc_verdict_kind k);
/* Adds verdict, class and coverage to a gate's result object. */
void kc_judge_result(const struct kc_judgment *j, json_t *result);
/* The evidence of a verdict: tensor, multi-index, values, bound, class. */
json_t *kc_judge_evidence(const struct kc_contract *c, const struct kc_sb *sb,
                          const struct kc_judgment *j);

/* ------------------------------------------------ generated-input trials */

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
json_t *kc_exposed_by(const struct kc_sb *sb, const struct kc_trial *tr, uint64_t seed);
/* One trial: shadow buffers at tr's scalars, inputs generated with seed,
 * outputs poisoned with NaN, one run, the oracle's verdict in j. 0: judged,
 * 2: run but the oracle cannot judge it (why in j->err) — in both sb stays
 * allocated: kc_sb_free it; 1: skipped (domain or size, why in j->err);
 * -1: not run (why in j->err). */
int kc_trial_run(struct kc_gate_ctx *ctx, const struct kc_contract *c, const struct kc_trial *tr,
                 uint64_t seed, struct kc_sb *sb, struct kc_judgment *j);
/* The trials of the generated-input gates for an oracle op (also what
 * op-level checks of a binding run, kcheck_op_trials): at most
 * KC_MAX_TRIALS into t; returns how many. */
#define KC_MAX_TRIALS 8
int kc_precision_trials(const char *op, struct kc_trial *t);
int kc_extremes_trials(const char *op, struct kc_trial *t);
int kc_nonfinite_trials(const char *op, struct kc_trial *t);
/* Every failing verdict, as a fail_mask. */
#define KC_VERDICT_FAILS (1u << OC_FAIL_PRECISION | 1u << OC_FAIL_VALUE | 1u << OC_FAIL_SPECIAL)
/* Runs trials in order until one gives a verdict in fail_mask (bits 1 <<
 * enum oc_verdict_kind) or, for trials at other scalars, changes a guard
 * zone; reports that as g's violation (message, evidence, exposed_by) and
 * sets the result: status, runs, and one entry per trial. Returns the
 * number of violations (0 or 1). */
int kc_trials_gate(struct kc_gate_ctx *ctx, const struct kc_gate *g, const struct kc_trial *trials,
                   int ntrials, unsigned fail_mask, const char *message);

#endif
