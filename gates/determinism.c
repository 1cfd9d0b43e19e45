/* gates/determinism.c — contract: an identical re-run of the launch, from
 * the same inputs, gives identical bytes. Catches nondeterminism (float
 * atomics, races that show even without perturbation) from one launch. */
#include "gate.h"
#include "gate_options.h"
#include "gate_util.h"

int kc_gate_determinism_run(struct kc_gate_ctx *ctx) {
  static const struct kc_perturb identical = {.name = "identical"};
  if (kc_gate_nondeterminism_allowed(ctx)) return 0;
  int runs = 0;
  for (long i = 0; i < kc_gate_opt.determinism_runs; i++) {
    const char *why = NULL;
    if (kc_shadow_run(ctx->shadow, &identical, &why)) {
      ctx->out.status = KC_GS_ERROR;
      json_object_set_new(ctx->result, "error", json_string(why ? why : "?"));
      return 0;
    }
    runs++;
    json_t *ev = NULL;
    long diff = kc_compare_with_post(ctx->shadow, &ev);
    if (diff < 0) {
      ctx->out.status = KC_GS_ERROR;
      json_object_set_new(ctx->result, "error", json_string("comparing the results failed"));
      return 0;
    }
    if (diff > 0) {
      json_object_set_new(ev, "runs", json_integer(runs));
      ctx->out.status = KC_GS_FAIL;
      json_object_set_new(ctx->result, "runs", json_integer(runs));
      kc_gate_violation(ctx,
                        json_pack("{s:s, s:o}", "message",
                                  "an identical re-run from the same inputs gave different bytes",
                                  "evidence", ev));
      return 1;
    }
  }
  ctx->out.status = KC_GS_PASS;
  json_object_set_new(ctx->result, "runs", json_integer(runs));
  return 0;
}
