/* gates/nondeterminism.c — a result that varies between runs although no
 * plain access needs to race: the kernel's code has atomics whose order
 * changes the result (float atomic sums round in arrival order; atomic
 * worklists put items where a counter's arrival order says). Such kernels
 * are this gate's, not determinism's or race's (rerun.h): it makes their
 * re-runs (identical, then under the race strategies and green, which
 * changes the order of blocks) and reports a difference with cause
 * atomic-order. A contract's `nondeterminism:
 * allowed` accepts exactly this; it never accepts a race. A racing plain
 * access beside such atomics is the race gate's access-level check's
 * (race.c); the bytes alone cannot tell which changed them. */
#include <stdio.h>
#include <string.h>

#include "gate.h"
#include "gate_options.h"
#include "gate_util.h"
#include "rerun.h"

int kc_gate_nondeterminism_run(struct kc_gate_ctx *ctx) {
  json_t *detail = NULL;
  enum kc_order_cause cause = kc_order_cause(ctx, &detail);
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
  if (r.error) json_object_set_new(ctx->result, "error", json_string(r.error));
  if (!r.first) {
    ctx->out.status = r.runs ? KC_GS_PASS : KC_GS_NOT_RUN;
    kc_rerun_free(&r);
    return 0;
  }
  ctx->out.status = KC_GS_FAIL;
  json_t *ev = json_incref(r.first);
  json_object_set_new(ev, "atomics", json_incref(json_object_get(ctx->result, "atomics")));
  kc_gate_violation(
      ctx, json_pack("{s:s, s:s, s:O, s:o}", "message",
                     "re-runs gave different bytes, and the kernel's code has atomics whose "
                     "order changes its result (declare `nondeterminism: allowed` if intended)",
                     "cause", "atomic-order", "exposed_by", r.exposed, "evidence", ev));
  kc_rerun_free(&r);
  return 1;
}
