/* gates/runner.c — runs the enabled gates on one selected launch inside one
 * shadow check (snapshot → application launch → shadow runs → restore) and
 * writes the `check` record. Installed as the core's check hook. */
#include <stdio.h>

#include "core.h"
#include "gate.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "policy.h"
#include "report.h"

static void sig_hex(uint64_t sig, char out[20]) {
  snprintf(out, 20, "%016llx", (unsigned long long)sig);
}

void kc_gate_violation(const struct kc_gate *g, const struct kc_launch_info *li, json_t *details) {
  char sig[20];
  sig_hex(li->signature, sig);
  json_t *rec =
      json_pack("{s:s, s:s, s:i, s:s, s:s, s:I, s:s, s:[iii], s:[iii], s:i, s:I}", "gate", g->id,
                "severity", g->severity, "kernel", li->k->id, "kernel_name", li->k->demangled,
                "kernel_mangled", li->k->name, "launch", (json_int_t)li->seq, "signature", sig,
                "grid", li->grid[0], li->grid[1], li->grid[2], "block", li->block[0], li->block[1],
                li->block[2], "shmem", li->shmem, "seed", (json_int_t)kc_opt.seed);
  json_object_update(rec, details);
  json_decref(details);
  kc_report_violation(rec);
}

static void skip(const struct kc_launch_info *li, const char *why) {
  char sig[20];
  sig_hex(li->signature, sig);
  atomic_fetch_add(&kc_count.skips, 1);
  kc_report_emit("skip", json_pack("{s:I, s:i, s:s, s:s, s:s}", "launch", (json_int_t)li->seq,
                                   "kernel", li->k->id, "kernel_name", li->k->demangled,
                                   "signature", sig, "reason", why));
}

CUresult kc_gates_check(struct kc_launch_info *li) {
  const struct kc_gate *run_list[16];
  int n = 0;
  for (int i = 0; kc_gates[i] && n < 16; i++)
    if (kc_gate_enabled(kc_gates[i]) && !kc_gates[i]->needs_contract &&
        (!kc_gates[i]->applies || kc_gates[i]->applies(li)))
      run_list[n++] = kc_gates[i];
  if (!n) return kc_app_launch(li->args);

  double t0 = kc_now_s();
  struct kc_shadow s;
  const char *why = NULL;
  kc_guard_enter();
  int began = kc_shadow_begin(&s, li, &why) == 0;
  kc_guard_leave();
  if (!began) {
    skip(li, why ? why : "snapshot failed");
    return kc_app_launch(li->args);
  }
  /* The application's launch runs unguarded, as the application's own. */
  int ok = 0;
  CUresult r = kc_shadow_app_launch(&s, &ok);
  json_t *results = json_object();
  int violations = 0;
  kc_guard_enter();
  if (ok) {
    for (int i = 0; i < n; i++) {
      json_t *res = json_object();
      struct kc_gate_ctx ctx = {li, &s, res};
      violations += run_list[i]->run(&ctx);
      json_object_set_new(results, run_list[i]->id, res);
    }
  }
  int runs = s.runs;
  unsigned long long saved = s.saved_bytes;
  int nregions = s.nregions;
  if (kc_shadow_end(&s))
    KC_INTERNAL_ERROR("restoring the application's memory after a check failed");
  kc_guard_leave();
  double cost = kc_now_s() - t0;
  kc_policy_record(li->signature, li->k->id, ok && violations == 0, cost);
  if (!ok) {
    json_decref(results);
    skip(li, r == CUDA_SUCCESS ? "the application's launch could not be saved (device error)"
                               : "the application's launch failed");
    return r;
  }
  atomic_fetch_add(&kc_count.checks, 1);
  char sig[20];
  sig_hex(li->signature, sig);
  kc_report_emit("check", json_pack("{s:I, s:i, s:s, s:s, s:o, s:i, s:i, s:i, s:I, s:f}", "launch",
                                    (json_int_t)li->seq, "kernel", li->k->id, "kernel_name",
                                    li->k->demangled, "signature", sig, "gates", results,
                                    "violations", violations, "runs", runs, "regions", nregions,
                                    "saved_bytes", (json_int_t)saved, "cost_ms", 1e3 * cost));
  return r;
}
