/* gates/nondeterminism.c — a result that varies between runs although no
 * plain access needs to race: the kernel's code has atomics whose order
 * changes the result (float atomic sums round in arrival order; atomic
 * worklists put items where a counter's arrival order says). Such kernels
 * are this gate's, not determinism's or race's (rerun.h): it makes their
 * re-runs (identical, then under the race strategies and green, which
 * changes the order of blocks) and reports a difference with cause
 * atomic-order. A kernel with no PTX has its SASS read only when a re-run
 * of the determinism or race gate differs (reading it inflates the
 * image's cubin): this gate runs after them and reports such a difference
 * when the SASS shows order-dependent atomics. A contract's `nondeterminism:
 * allowed` accepts exactly this; it never accepts a race. A racing plain
 * access beside such atomics is the race gate's access-level check's
 * (race.c); the bytes alone cannot tell which changed them. */
#include <stdio.h>
#include <string.h>

#include "gate.h"
#include "gate_options.h"
#include "gate_util.h"
#include "rerun.h"

/* The gate's violation: first (the differing run's evidence) with the
 * kernel's atomics, exposed (the strategies whose runs differed). */
static int violation(struct kc_gate_ctx *ctx, json_t *first, json_t *exposed) {
  ctx->out.status = KC_GS_FAIL;
  json_t *ev = json_incref(first);
  json_object_set_new(ev, "atomics", json_incref(json_object_get(ctx->result, "atomics")));
  kc_gate_violation(
      ctx, json_pack("{s:s, s:s, s:O, s:o}", "message",
                     "re-runs gave different bytes, and the kernel's code has atomics whose "
                     "order changes its result (declare `nondeterminism: allowed` if intended)",
                     "cause", "atomic-order", "exposed_by", exposed, "evidence", ev));
  return 1;
}

int kc_gate_nondeterminism_run(struct kc_gate_ctx *ctx) {
  json_t *detail = NULL, *first = NULL, *exposed = NULL;
  const char *by = NULL;
  /* The gate runs after determinism and race (gates.def): a SASS-only
   * kernel's code is read only when one of their re-runs differed, and
   * such a difference, where the code shows order-dependent atomics, was
   * handed here. */
  if (kc_rerun_handed_off(ctx, &first, &exposed, &detail, &by)) {
    json_object_set_new(ctx->result, "atomics", detail);
    json_object_set_new(ctx->result, "cause", json_string("atomic-order"));
    json_object_set_new(ctx->result, "runs_of", json_string(by));
    int n = violation(ctx, first, exposed);
    json_decref(first);
    json_decref(exposed);
    return n;
  }
  int allowed = ctx->contract && ctx->contract->nondeterminism_allowed;
  enum kc_order_cause cause =
      allowed ? kc_order_cause(ctx, &detail) : kc_order_cause_unread(ctx, &detail);
  if (cause == KC_CAUSE_UNREAD) {
    int runs = kc_rerun_runs_in_check(ctx);
    if (runs > 0) {
      char why[256];
      snprintf(why, sizeof why,
               "the %d re-runs of the determinism and race gates gave identical bytes: the "
               "kernel's SASS is read only when a re-run differs",
               runs);
      ctx->out.status = KC_GS_PASS;
      json_object_set_new(ctx->result, "atomics", detail);
      json_object_set_new(ctx->result, "reason", json_string(why));
      return 0;
    }
    /* no re-run to go by (determinism and race off or not run): read it */
    json_decref(detail);
    cause = kc_order_cause(ctx, &detail);
  }
  json_object_set_new(ctx->result, "atomics", detail);
  if (cause != KC_CAUSE_ATOMIC) {
    ctx->out.status = cause == KC_CAUSE_ACCESS ? KC_GS_PASS : KC_GS_NOT_RUN;
    json_object_set_new(ctx->result, "reason",
                        json_string(cause == KC_CAUSE_ACCESS
                                        ? "no order-dependent atomics in the kernel's code"
                                        : "the kernel's code is unavailable"));
    return 0;
  }
  json_object_set_new(ctx->result, "cause", json_string("atomic-order"));
  if (kc_gate_nondeterminism_allowed(ctx)) return 0;
  struct kc_rerun r;
  kc_rerun_init(&r);
  kc_rerun_identical(ctx, kc_gate_opt.determinism_runs, &r);
  if (!r.first && !r.error) {
    /* accesses judges accesses, not bytes (an undelayed run adds nothing
     * to the identical ones): the race gate runs it for such a kernel */
    struct kc_strategy_list list = kc_strategy_list_without(&kc_race_list, KC_STRAT_accesses);
    /* The default strategies leave the order of blocks as it was, and
     * the order of blocks is the order their atomics land in: a float
     * atomic sum gave identical bytes under all of them (the H100 race
     * corpus, 2026-12-07). green (fewer SMs) changes it, where the driver
     * has green contexts (else its status says why); last, it costs most. */
    if (!((list.mask >> KC_STRAT_green) & 1)) {
      list.s[list.n++] = KC_STRAT_green;
      list.mask |= 1u << KC_STRAT_green;
      json_object_set_new(ctx->result, "order_added", json_string("green"));
    }
    kc_rerun_strategies(ctx, &list, &r);
  }
  json_object_set_new(ctx->result, "runs", json_integer(r.runs));
  if (json_object_size(r.status)) {
    json_object_set_new(ctx->result, "strategies", json_incref(r.status));
    json_object_set_new(ctx->result, "strategy_ms", json_incref(r.ms));
  }
  kc_rerun_note_error(ctx, &r);
  if (!r.first) {
    /* A failed run stopped the strategies: what ran agreeing is no pass. */
    ctx->out.status = r.error ? KC_GS_ERROR : r.runs ? KC_GS_PASS : KC_GS_NOT_RUN;
    kc_rerun_free(&r);
    return 0;
  }
  int n = violation(ctx, r.first, r.exposed);
  kc_rerun_free(&r);
  return n;
}
