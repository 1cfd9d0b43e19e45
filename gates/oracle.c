/* gates/oracle.c — contract: the kernel computes its declared `op` within
 * its declared precision profile, on the application's own inputs. One run
 * on shadow buffers (inputs copied from the check's pre-state, outputs
 * poisoned with NaN so an unwritten element cannot pass), judged by the
 * numerical oracle (gates/judge.c). A failing verdict is a violation; an op
 * the oracle cannot judge gives "inconclusive". */
#include <stdio.h>
#include <stdlib.h>

#include "gate.h"
#include "gate_util.h"
#include "judge.h"
#include "trial.h"

#define POISON KC_FILL_NAN /* NaN in every float format: an unwritten output fails */

int kc_gate_oracle_run(struct kc_gate_ctx *ctx) {
  const struct kc_contract *c = ctx->contract;
  if (!c) return 0;
  struct kc_judgment *j = calloc(1, sizeof *j);
  if (!j) {
    ctx->out.status = KC_GS_ERROR;
    json_object_set_new(ctx->result, "error", json_string("out of host memory"));
    return 0;
  }
  int violations = 0;
  struct kc_contract_sb sb;
  if (!c->op || !c->profile_spec) {
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(
        ctx->result, "reason",
        json_string(c->op ? "the contract declares no profile" : "the contract declares no op"));
  } else if (!kc_gate_sb_create(ctx, &sb) && !kc_gate_sb_run(ctx, &sb, POISON)) {
    json_object_set_new(ctx->result, "runs", json_integer(1));
    if (kc_judge(c, &sb, j)) {
      ctx->out.status = KC_GS_INCONCLUSIVE;
      json_object_set_new(ctx->result, "reason", json_string(j->err));
    } else {
      ctx->out.status = kc_verdict_status(j->v.kind);
      kc_judge_result(j, ctx->result);
      if (!oc_verdict_is_fail(j->v.kind) && j->v.stat == OC_STAT_REJECTED) {
        char w[512];
        snprintf(w, sizeof w,
                 "statistical verdict rejected: %lld element(s) beyond the statistical bound "
                 "(worst %.3g x); the rounding-error model's false-alarm rate is %.2g (rows of "
                 "near-constant terms, whose errors correlate, are not judged); a hint, not a "
                 "proof (the rigorous verdict is %s)",
                 (long long)j->v.n_stat, j->v.stat_ratio, j->v.stat_alpha,
                 oc_verdict_name(j->v.kind));
        json_object_set_new(ctx->result, "warning", json_string(w));
      }
      if (oc_verdict_is_fail(j->v.kind)) {
        violations = 1;
        json_t *ev = kc_judge_evidence(c, &sb, j);
        json_object_set_new(ev, "exposed_by", kc_exposed_by(&sb, NULL, 0));
        kc_gate_violation(ctx,
                          json_pack("{s:s, s:o}", "message",
                                    "the kernel's outputs violate its declared op and precision "
                                    "profile (numerical oracle)",
                                    "evidence", ev));
      }
    }
    kc_contract_sb_free(&sb);
  }
  free(j);
  return violations;
}
