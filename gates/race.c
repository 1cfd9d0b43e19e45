/* gates/race.c — contract: re-runs under each timing perturbation give the
 * bytes of the application's own run. Each strategy changes one thing a
 * correct kernel must not depend on: block order and concurrency (green
 * context with few SMs), blocks per SM (extra shared memory), memory
 * interference, cache state, the contents of never-written shared memory,
 * and the interleaving of warps inside a block (jitter, warporder: kcheck's
 * PTX copy of the kernel). All strategies run; the violation names those
 * that exposed it. Kernels whose differences may come from the order of
 * atomics are the nondeterminism gate's (rerun.h). */
#include <string.h>

#include "gate.h"
#include "gate_options.h"
#include "gate_util.h"
#include "rerun.h"

/* A kernel whose differences are the nondeterminism gate's can still have
 * racing plain accesses: the access-level check (when listed) looks at
 * them, whatever the bytes say, and a race is never accepted. */
static int accesses_only(struct kc_gate_ctx *ctx) {
  if (!kc_race_strategy_listed(KC_STRAT_accesses)) return 0;
  static const struct kc_strategy_list only = {1, {KC_STRAT_accesses}, 1u << KC_STRAT_accesses};
  struct kc_rerun r;
  kc_rerun_init(&r);
  kc_rerun_strategies(ctx, &only, &r);
  json_object_set_new(ctx->result, "strategies", json_incref(r.status));
  json_object_set_new(ctx->result, "strategy_ms", json_incref(r.ms));
  json_t *conf = json_object_get(ctx->result, "access_conflict");
  if (!conf) {
    /* the bytes may differ (the atomics' order): not this check's verdict */
    const char *st = json_string_value(json_object_get(r.status, "accesses"));
    if (st && (!strcmp(st, "same") || !strcmp(st, "differs")))
      json_object_set_new(json_object_get(ctx->result, "strategies"), "accesses",
                          json_string("no conflicting accesses"));
    kc_rerun_free(&r);
    return 0;
  }
  ctx->out.status = KC_GS_FAIL;
  json_object_set_new(ctx->result, "reason",
                      json_string("racing plain accesses beside the order-dependent atomics"));
  kc_gate_violation(ctx, json_pack("{s:s, s:s, s:[s], s:O}", "message",
                                   "two threads accessed one memory word with nothing ordering "
                                   "them, at least one writing (access-level check), in a kernel "
                                   "that also has order-dependent atomics",
                                   "cause", "unordered-access", "exposed_by", "accesses",
                                   "evidence", conf));
  kc_rerun_free(&r);
  return 1;
}

int kc_gate_race_run(struct kc_gate_ctx *ctx) {
  const char *cause = NULL;
  if (kc_rerun_not_mine(ctx, &cause)) return accesses_only(ctx);
  struct kc_rerun r;
  kc_rerun_init(&r);
  kc_rerun_strategies(ctx, &kc_race_list, &r);
  if (r.error) json_object_set_new(ctx->result, "error", json_string(r.error));
  json_object_set_new(ctx->result, "runs", json_integer(r.runs));
  json_object_set_new(ctx->result, "strategies", json_incref(r.status));
  json_object_set_new(ctx->result, "strategy_ms", json_incref(r.ms));
  kc_rerun_intra_note(ctx, &r);
  if (!r.first) {
    ctx->out.status = r.runs ? KC_GS_PASS : KC_GS_NOT_RUN;
    kc_rerun_free(&r);
    return 0;
  }
  ctx->out.status = KC_GS_FAIL;
  const char *verdict = json_string_value(json_object_get(r.first, "verdict"));
  int accesses = verdict && !strcmp(verdict, "conflicting_accesses");
  kc_gate_violation(
      ctx, json_pack("{s:s, s:s, s:O, s:O}", "message",
                     accesses ? "two threads accessed one memory word with nothing "
                                "ordering them (no barrier between them in one block, "
                                "no fence-and-flag hand-off between blocks), at least "
                                "one writing (access-level check)"
                              : "a re-run under a timing perturbation gave different bytes",
                     "cause", cause, "exposed_by", r.exposed, "evidence", r.first));
  kc_rerun_free(&r);
  return 1;
}
