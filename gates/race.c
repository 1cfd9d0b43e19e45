/* gates/race.c — contract: re-runs under each timing perturbation give the
 * bytes of the application's own run. Each strategy changes one thing a
 * correct kernel must not depend on: block order and concurrency (green
 * context with few SMs), blocks per SM (extra shared memory), memory
 * interference, cache state, the contents of never-written shared memory,
 * and the interleaving of warps inside a block (jitter, warporder: kcheck's
 * PTX copy of the kernel). All strategies run; the violation names those
 * that exposed it; a kernel kcheck has no code of gets the block-order
 * ones too on its signature's first check (race_no_code_strategies).
 * Kernels whose differences may come from the order of atomics are the
 * nondeterminism gate's (rerun.h). */
#include <stdio.h>
#include <string.h>

#include "gate.h"
#include "gate_options.h"
#include "gate_util.h"
#include "intra.h"
#include "launch.h"
#include "perturb.h"
#include "policy.h"
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
  kc_rerun_intra_note(ctx, &r);
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

/* Whether a strategy's status says it ran (its run made and compared). */
static int ran(const char *status) {
  return status && (!strcmp(status, "same") || !strcmp(status, "differs") ||
                    !strcmp(status, "conflicting accesses"));
}

/* Why kcheck has no PTX of the kernel to rewrite (NULL: it has). Where an
 * intra-block strategy is listed its copy was built (or refused) by now,
 * JIT failures included; with none listed, only whether the kernel's PTX
 * can be read (no JIT for strategies nobody asked for). */
static const char *no_code(struct kc_gate_ctx *ctx, const struct kc_rerun *r) {
  const char *key, *why = NULL;
  json_t *v;
  json_object_foreach(r->status, key, v) {
    int s = kc_strategy_find(key);
    struct kc_perturb p;
    if (s < 0) continue;
    kc_strategy_perturb((enum kc_strategy)s, 0, 0, 0, &p);
    if (!p.intra) continue;
    if (kc_intra_usable(ctx->li, 0, &why)) return why ? why : "no code";
    /* The Sanitizer route's copy is the kernel's SASS, not code kcheck
     * rewrote: the block-order strategies are kept for its first check
     * (they catch short cross-block lost updates whatever the route
     * sees), and the entry's route says the intra-block ones ran. */
    return kc_intra_no_ptx(ctx->li);
  }
  /* SASS whose atomics kcheck can read is still no code to rewrite */
  return kc_intra_ptx_missing(ctx->li->k);
}

/* Kernels kcheck has no PTX for (cubins: Triton, ATen, cuBLAS) get none of
 * the intra-block strategies, and the cheap default ones (scrub, l2flush)
 * do not change the order of blocks: a lost update between blocks whose
 * re-run is scheduled as before gives the same bytes every time. So the
 * first check of such a signature adds race_no_code_strategies (block
 * order: green, smem), once, where their cost is paid once. The entry says
 * which strategies could not run and why, and what was added. */
static void no_code_strategies(struct kc_gate_ctx *ctx, struct kc_rerun *r) {
  const char *why = no_code(ctx, r);
  if (!why) return;
  json_t *not_run = json_object();
  const char *key;
  json_t *v;
  json_object_foreach(r->status, key, v) {
    if (!ran(json_string_value(v))) json_object_set(not_run, key, v);
  }
  json_object_set_new(ctx->result, "not_run", not_run);
  json_object_set_new(ctx->result, "no_code", json_string(why));
  if (r->error || !kc_race_no_code_list.n) return;
  if (kc_policy_checks_of(ctx->li->signature) > 1) {
    json_object_set_new(ctx->result, "no_code_added",
                        json_string("none: not the first check of the signature"));
    return;
  }
  /* What the list adds: neither run already nor in race_strategies. */
  struct kc_strategy_list add = {0};
  char names[256] = "";
  for (int i = 0; i < kc_race_no_code_list.n; i++) {
    enum kc_strategy s = kc_race_no_code_list.s[i];
    const char *name = kc_strategy_info(s)->name;
    if (json_object_get(r->status, name) || kc_race_strategy_listed(s)) continue;
    add.s[add.n++] = s;
    add.mask |= 1u << s;
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? "," : "",
             name);
  }
  json_object_set_new(ctx->result, "no_code_added", json_string(names));
  if (add.n) kc_rerun_strategies(ctx, &add, r);
}

int kc_gate_race_run(struct kc_gate_ctx *ctx) {
  const char *cause = NULL;
  if (kc_rerun_not_mine(ctx, &cause)) return accesses_only(ctx);
  struct kc_rerun r;
  kc_rerun_init(&r);
  r.scrub_fault_is_finding = 1;
  kc_rerun_strategies(ctx, &kc_race_list, &r);
  no_code_strategies(ctx, &r);
  kc_rerun_note_error(ctx, &r);
  json_object_set_new(ctx->result, "runs", json_integer(r.runs));
  json_object_set_new(ctx->result, "strategies", json_incref(r.status));
  json_object_set_new(ctx->result, "strategy_ms", json_incref(r.ms));
  kc_rerun_intra_note(ctx, &r);
  if (!r.first) {
    /* A failed run stopped the strategies: what ran agreeing is no pass. */
    ctx->out.status = r.error ? KC_GS_ERROR : r.runs ? KC_GS_PASS : KC_GS_NOT_RUN;
    kc_rerun_free(&r);
    return 0;
  }
  const char *verdict = json_string_value(json_object_get(r.first, "verdict"));
  int accesses = verdict && !strcmp(verdict, "conflicting_accesses");
  int faulted = verdict && !strcmp(verdict, "faulted");
  /* differing bytes of a SASS-only kernel whose code, read now, has
   * order-dependent atomics: the nondeterminism gate's (racing accesses
   * never are, nor is an address read from never-written memory) */
  if (!accesses && !faulted && kc_rerun_handoff(ctx, &r, "race", &cause)) {
    kc_rerun_free(&r);
    return 0;
  }
  /* two threads' unordered accesses, seen: whatever the code's atomics */
  if (accesses) cause = kc_order_cause_name(KC_CAUSE_ACCESS);
  if (faulted) cause = "uninit-shared-memory";
  const char *message =
      accesses  ? "two threads accessed one memory word with nothing ordering them (no barrier "
                  "between them in one block, no fence-and-flag hand-off between blocks), at "
                  "least one writing (access-level check)"
      : faulted ? "the re-run with never-written shared memory filled with a pattern (scrub) "
                  "faulted where the application's run did not: the kernel reads shared memory "
                  "it has not written (or that another thread writes unordered) and uses it as "
                  "an address; the fault ended the CUDA context (docs/safety.md)"
                : "a re-run under a timing perturbation gave different bytes";
  ctx->out.status = KC_GS_FAIL;
  kc_gate_violation(ctx, json_pack("{s:s, s:s, s:O, s:O}", "message", message, "cause", cause,
                                   "exposed_by", r.exposed, "evidence", r.first));
  kc_rerun_free(&r);
  return 1;
}
