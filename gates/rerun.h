/* gates/rerun.h — re-runs of a launch compared with the application's run,
 * shared by the determinism, race and nondeterminism gates, and the
 * classification that tells the last one's findings from races. */
#ifndef KC_RERUN_H
#define KC_RERUN_H

#include <jansson.h>

#include "gate.h"
#include "gate_options.h"

/* What a series of re-runs found. */
struct kc_rerun {
  int runs;              /* shadow runs made */
  json_t *first;         /* evidence of the first difference (owned), NULL if none */
  json_t *exposed;       /* strategies whose run differed (array, owned) */
  json_t *status;        /* per strategy: same / differs / why not run (object, owned) */
  json_t *ms;            /* per strategy: wall time of its runs, set-up and compare included */
  const char *error;     /* a run or comparison failed (then stop) */
  const char *error_run; /* the perturbation of the run that failed ("identical", a strategy) */
  int scrub_fault_is_finding; /* set by the caller: a run that faults under scrub alone is a
                               * finding (first: verdict "faulted"), not only an error */
};
void kc_rerun_init(struct kc_rerun *r);
void kc_rerun_free(struct kc_rerun *r);
/* n identical re-runs, stopping at the first difference. */
void kc_rerun_identical(struct kc_gate_ctx *ctx, long n, struct kc_rerun *r);
/* race_runs re-runs under each strategy of the list (race_strategies as
 * parsed, or a part of it); every strategy runs (each one's status is
 * recorded), the first difference is kept. */
void kc_rerun_strategies(struct kc_gate_ctx *ctx, const struct kc_strategy_list *list,
                         struct kc_rerun *r);
/* A failed run in the gate's result: "error" (why) and "error_run" (the
 * perturbation it ran under); nothing when none failed. */
void kc_rerun_note_error(struct kc_gate_ctx *ctx, const struct kc_rerun *r);
/* Adds to the race gate's result whether the intra-block strategies could
 * perturb the kernel: "intra_block": "perturbed" with the copy's delay
 * sites and JIT time, or the reason the route could not. */
void kc_rerun_intra_note(struct kc_gate_ctx *ctx, const struct kc_rerun *r);

/* How a difference between runs of this kernel is to be read. */
enum kc_order_cause {
  KC_CAUSE_UNKNOWN, /* the kernel's code is unavailable: cannot tell */
  KC_CAUSE_ACCESS,  /* no order-dependent atomics: unordered plain accesses (a race) */
  KC_CAUSE_ATOMIC,  /* the code has order-dependent atomics (atomic-order) */
  KC_CAUSE_UNREAD,  /* no PTX, and the SASS not read yet (kc_order_cause_unread) */
};
/* The kernel's cause for a difference; *detail (a JSON object, owned by
 * the caller) says why: the atomics found or the missing code. */
enum kc_order_cause kc_order_cause(struct kc_gate_ctx *ctx, json_t **detail);
/* The same without reading a SASS-only kernel's cubin: KC_CAUSE_UNREAD
 * when it has not been read (the first check of a SASS-only kernel
 * inflates its image: most of a GPT step's first-check time on an H100). */
enum kc_order_cause kc_order_cause_unread(struct kc_gate_ctx *ctx, json_t **detail);
/* determinism and race: 1 when this launch is not theirs to judge (status
 * and reason set): a kernel with order-dependent atomics when the
 * nondeterminism gate is on or its contract says `nondeterminism: allowed`
 * (status allowed), or such a contract on a kernel whose code kcheck
 * cannot read (allowed, marked unverified). A race in a kernel whose code
 * shows no order-dependent atomics is judged whatever the contract says. */
/* Otherwise 0, and *cause names what a difference would be: "unordered-
 * access" (no order-dependent atomics), "atomic-order" (the nondeterminism
 * gate is off) or "unclassified" (no code to read). */
int kc_rerun_not_mine(struct kc_gate_ctx *ctx, const char **cause);
/* determinism and race, after their re-runs differed: where the kernel's
 * SASS was left unread (kc_rerun_not_mine), it is read now. Order-
 * dependent atomics with the nondeterminism gate on: the difference is
 * handed to that gate (status not run, reason and atomics set) and 1 is
 * returned. Otherwise 0, *cause_name the cause the code shows. */
int kc_rerun_handoff(struct kc_gate_ctx *ctx, const struct kc_rerun *r, const char *gate,
                     const char **cause_name);
/* The nondeterminism gate: 1 with the difference handed to it in this
 * check (the evidence, the strategies that exposed it and the atomics,
 * owned by the caller; *by the gate whose re-runs differed), else 0. */
int kc_rerun_handed_off(struct kc_gate_ctx *ctx, json_t **evidence, json_t **exposed,
                        json_t **atomics, const char **by);
/* The re-runs the gates made so far in this check (the launch in ctx). */
int kc_rerun_runs_in_check(const struct kc_gate_ctx *ctx);
/* The name of a cause, as violations carry it. */
const char *kc_order_cause_name(enum kc_order_cause c);

#endif
