/* libkcheck/capture/launch.c — the application's own launch, and the
 * record of a selected launch that is not checked. */
#include "launch.h"

#include <stdatomic.h>

#include "audit.h"
#include "options.h"
#include "prof.h"
#include "report.h"
#include "serving.h"
#include "world.h"

/* The application's launch, inside the world lock (a no-op when this
 * thread already holds it, e.g. inside its own check). */
CUresult kc_app_launch(const struct kc_launch_args *a) {
  kc_cost_stop(); /* the application's own time, also while it waits for a check */
  if (kc_opt.check_lock) kc_world_enter();
  CUresult r;
  if (!kc_audit_active) {
    r = a->call_real(a);
  } else {
    kc_audit_expect_begin();
    r = a->call_real(a);
    kc_audit_expect_end();
  }
  if (kc_opt.check_lock) kc_world_leave();
  return r;
}

void kc_report_skip(const struct kc_launch_info *li, const char *why) {
  atomic_fetch_add(&kc_count.skips, 1);
  uint64_t t = kc_prof_now();
  json_t *rec = json_pack("{s:I, s:i, s:s, s:o, s:s}", "launch", (json_int_t)li->seq, "kernel",
                          li->k->id, "kernel_name", li->k->demangled, "signature",
                          kc_json_hash(li->signature), "reason", why);
  if (rec && li->graph) json_object_set_new(rec, "graph", kc_graph_ref_json(li->graph));
  kc_prof_lap(KC_PS_skip, t);
  kc_report_emit("skip", rec);
}
