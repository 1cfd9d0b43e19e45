/* gates/determinism.c — contract: an identical re-run of the launch, from
 * the same inputs, gives identical bytes. Catches races that show even
 * without perturbation from one launch; differences that may come from the
 * order of atomics are the nondeterminism gate's (rerun.h). */
#include "gate.h"
#include "gate_options.h"
#include "prof.h"
#include "report.h"
#include "rerun.h"

/* profile=1: where the gate's own time goes (the shadow's stages are in
 * the check's stages_ms; this splits what lies around them). */
static void profile_split(struct kc_gate_ctx *ctx, double t0, double t1, double t2) {
  if (kc_prof_on)
    json_object_set_new(ctx->result, "profile_ms",
                        json_pack("{s:f, s:f, s:f}", "cause", 1e3 * (t1 - t0), "runs",
                                  1e3 * (t2 - t1), "after", 1e3 * (kc_now_s() - t2)));
}

int kc_gate_determinism_run(struct kc_gate_ctx *ctx) {
  const char *cause = NULL;
  double t0 = kc_now_s();
  if (kc_rerun_not_mine(ctx, &cause)) return 0;
  double t1 = kc_now_s();
  struct kc_rerun r;
  kc_rerun_init(&r);
  kc_rerun_identical(ctx, kc_gate_opt.determinism_runs, &r);
  double t2 = kc_now_s();
  if (r.error) {
    ctx->out.status = KC_GS_ERROR;
    kc_rerun_note_error(ctx, &r);
    kc_rerun_free(&r);
    return 0;
  }
  json_object_set_new(ctx->result, "runs", json_integer(r.runs));
  if (!r.first) {
    ctx->out.status = KC_GS_PASS;
    kc_rerun_free(&r);
    profile_split(ctx, t0, t1, t2);
    return 0;
  }
  /* a SASS-only kernel's code read now: the order of its atomics is the
   * nondeterminism gate's */
  if (kc_rerun_handoff(ctx, &r, "determinism", &cause)) {
    kc_rerun_free(&r);
    profile_split(ctx, t0, t1, t2);
    return 0;
  }
  ctx->out.status = KC_GS_FAIL;
  kc_gate_violation(ctx, json_pack("{s:s, s:s, s:O}", "message",
                                   "an identical re-run from the same inputs gave different bytes",
                                   "cause", cause, "evidence", r.first));
  kc_rerun_free(&r);
  profile_split(ctx, t0, t1, t2);
  return 1;
}
