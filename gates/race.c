/* gates/race.c — contract: re-runs under each timing perturbation give the
 * bytes of the application's own run. Each strategy changes one thing a
 * correct kernel must not depend on: block order and concurrency (green
 * context with few SMs), blocks per SM (extra shared memory), memory
 * interference, cache state, and the contents of never-written shared
 * memory. All strategies run; the violation names those that exposed it. */
#include <stdio.h>
#include <string.h>

#include "gate.h"
#include "gate_options.h"
#include "gate_util.h"
#include "perturb.h"
#include "policy.h"
#include "report.h"

/* The strategies are perturb.def's rows (kc_strategy_*). */
static int make(const char *name, uint64_t seed, struct kc_perturb *p) {
  int s = kc_strategy_find(name);
  if (s < 0) return -1;
  kc_strategy_perturb((enum kc_strategy)s, (int)kc_gate_opt.green_sms,
                      (unsigned)kc_gate_opt.extra_shmem, seed, p);
  return 0;
}

int kc_gate_race_run(struct kc_gate_ctx *ctx) {
  if (kc_gate_nondeterminism_allowed(ctx)) return 0;
  json_t *strategies = json_object();
  json_t *strategy_ms = json_object(); /* what each strategy cost: its runs and comparisons */
  json_t *exposed = json_array();
  json_t *first_ev = NULL;
  int runs = 0;
  char list[256];
  snprintf(list, sizeof list, "%s", kc_gate_opt.race_strategies);
  char *save = NULL;
  for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    struct kc_perturb p;
    const char *status = "same";
    double t0 = kc_now_s();
    for (long i = 0; i < kc_gate_opt.race_runs; i++) {
      /* A fresh seed per launch and run: the scrub pattern left behind by
       * one check must not be what the next application kernel reads. */
      uint64_t seed = kc_policy_uniform(ctx->li->seq * 64 + (uint64_t)runs) * 0x1p53;
      if (make(name, seed, &p)) {
        status = "unknown strategy";
        break;
      }
      const char *why = NULL;
      int rc = kc_shadow_run(ctx->shadow, &p, &why);
      if (rc) {
        status = why ? why : "failed";
        if (rc < 0) json_object_set_new(ctx->result, "error", json_string(status));
        break;
      }
      runs++;
      json_t *ev = NULL;
      long diff = kc_compare_with_post(ctx->shadow, &ev);
      if (diff < 0) {
        status = "comparing the results failed";
        json_object_set_new(ctx->result, "error", json_string(status));
        break;
      }
      if (diff > 0) {
        status = "differs";
        json_array_append_new(exposed, json_string(name));
        if (!first_ev) {
          json_object_set_new(ev, "strategy", json_string(name));
          json_object_set_new(ev, "run", json_integer(i + 1));
          json_object_set_new(ev, "seed", json_integer((json_int_t)p.seed));
          first_ev = ev;
        } else {
          json_decref(ev);
        }
        break;
      }
    }
    json_object_set_new(strategies, name, json_string(status));
    json_object_set_new(strategy_ms, name, json_real(1e3 * (kc_now_s() - t0)));
  }
  json_object_set_new(ctx->result, "runs", json_integer(runs));
  json_object_set_new(ctx->result, "strategies", strategies);
  json_object_set_new(ctx->result, "strategy_ms", strategy_ms);
  if (!first_ev) {
    ctx->out.status = runs ? KC_GS_PASS : KC_GS_NOT_RUN;
    json_decref(exposed);
    return 0;
  }
  ctx->out.status = KC_GS_FAIL;
  kc_gate_violation(ctx, json_pack("{s:s, s:o, s:o}", "message",
                                   "a re-run under a timing perturbation gave different bytes",
                                   "exposed_by", exposed, "evidence", first_ev));
  return 1;
}
