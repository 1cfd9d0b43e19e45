/* gates/runner.c — runs the enabled gates on one selected launch inside one
 * shadow check (snapshot → application launch → shadow runs → restore) and
 * writes the `check` record. Installed as the core's check hook. */
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "gate.h"
#include "gate_util.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "perturb.h"
#include "policy.h"
#include "prof.h"
#include "report.h"
#include "streams.h"
#include "trial.h"

static CUresult run_gates(struct kc_launch_info *li, const struct kc_contract *c,
                          const char *annotation_note, const char *contract_note);

CUresult kc_gates_check(struct kc_launch_info *li) {
  /* The launch's contract: a loaded one, else one made from the annotation
   * in force on this (the launching) thread, when the launch takes the
   * annotated tensors. */
  struct kc_contract *annotated = NULL;
  const struct kc_contract *c = li->k ? kc_contract_match(li->k) : NULL;
  char note[160] = ""; /* why an annotation in force did not apply */
  /* A loaded contract judges only launches it describes: its domain at the
   * launch's own parameters and its launch section against the launch's
   * grid and block. Otherwise no contract gate runs (shadow buffers sized
   * for another shape would give wrong verdicts) and the check says why. */
  char not_applied[512] = "";
  if (c) {
    char why[400];
    kc_guard_enter();
    int applies = kc_contract_applies(c, li, why, sizeof why);
    kc_guard_leave();
    if (!applies) {
      snprintf(not_applied, sizeof not_applied, "contract %s does not apply: %s", c->where, why);
      c = NULL;
    }
  }
  if (!c && li->k && kc_contract_annotation_current()) {
    kc_guard_enter();
    char why[sizeof note - 16];
    c = annotated = kc_contract_from_annotation(kc_contract_annotation_current(), li->k,
                                                li->param_buf, li->param_size, why, sizeof why);
    if (!annotated) snprintf(note, sizeof note, "not applied: %s", why);
    kc_guard_leave();
  }
  CUresult r = run_gates(li, c, note, not_applied);
  kc_contract_free(annotated);
  return r;
}

/* stream_races: the parameters whose allocation this launch changed, when
 * no other parameter points into the same allocation (then which one wrote
 * is unknown). Later launches of the kernel count them as writes. */
static void learn_writes(struct kc_launch_info *li, struct kc_shadow *s) {
  uint32_t offs[64];
  int n = 0;
  kc_guard_enter();
  for (int i = 0; i < s->nregions && n < 64; i++) {
    int sharing = 0, at = -1;
    for (int p = 0; p < li->nptrs; p++)
      if (li->ptrs[p].base == s->regions[i].base) sharing++, at = p;
    if (sharing == 1 && kc_shadow_region_changed(s, i) == 1) offs[n++] = li->ptrs[at].offset;
  }
  kc_guard_leave();
  if (n) kc_streams_learn_writes(li->k, offs, n);
}

/* Runs each gate of the list on the check (shadow NULL: the application's
 * launch failed, no gate runs). */
static void run_gate_list(const struct kc_gate *const *run_list, int n, struct kc_gate_ctx *ctx,
                          struct kc_shadow *shadow, const struct kc_contract *c, json_t *gate_ms) {
  for (int i = 0; shadow && i < n; i++) {
    ctx[i] =
        (struct kc_gate_ctx){shadow->li, shadow, c, json_object(), {KC_GS_UNSET, 0, {NULL}, NULL}};
    double tg = gate_ms ? kc_now_s() : 0;
    int added = run_list[i]->run(&ctx[i]);
    if (gate_ms) json_object_set_new(gate_ms, run_list[i]->id, json_real(1e3 * (kc_now_s() - tg)));
    /* What a gate returns is what it put in its result (up to the cap). */
    KC_ASSERT(added == ctx[i].out.nviolations ||
              (added > KC_GATE_MAX_VIOLATIONS && ctx[i].out.nviolations == KC_GATE_MAX_VIOLATIONS));
  }
}

/* A gate's result and violations, before the gate runs again. */
static void free_gate_result(struct kc_gate_ctx *ctx) {
  json_decref(ctx->result);
  for (int v = 0; v < ctx->out.nviolations; v++)
    json_decref(ctx->out.violation[v]);
  json_decref(ctx->out.bundle);
  ctx->result = NULL;
  ctx->out = (struct kc_gate_result){KC_GS_UNSET, 0, {NULL}, NULL};
}

static CUresult run_gates(struct kc_launch_info *li, const struct kc_contract *c,
                          const char *annotation_note, const char *contract_note) {
  const struct kc_gate *run_list[KC_NGATES];
  int n = 0;
  /* Contract gates run only where a contract matched; they work on shadow
   * buffers of their own, so they share this check (and its pre-state, the
   * source of their inputs) without needing anything else from it. */
  for (int i = 0; kc_gates[i] && n < KC_NGATES; i++)
    if (kc_gate_enabled(kc_gates[i]) && (!kc_gates[i]->needs_contract || c) &&
        (!kc_gates[i]->applies || kc_gates[i]->applies(li)))
      run_list[n++] = kc_gates[i];
  int at_kernel = 0;
  for (int i = 0; i < n; i++)
    at_kernel |= kc_gate_at_kernel_level(run_list[i]);
  if (n && !at_kernel) {
    /* only op-level gates (layouts): each would say not_applicable, which
     * is not worth a shadow check; the skip record says so once here */
    kc_report_skip(li, "only op-level gates are enabled (not applicable to launches)");
    return kc_app_launch(li->args);
  }
  if (!n) {
    /* nothing left to run: the contract's refusal is the record */
    if (contract_note[0]) kc_report_skip(li, contract_note);
    return kc_app_launch(li->args);
  }

  /* kcheck's one-time device setup is the process's, not this launch's
   * check: timed apart (setup_ms in this record and the summary). */
  kc_guard_enter();
  double setup_ms = kc_perturb_setup(
      kc_gate_enabled(&kc_gate_race) && kc_race_strategy_listed(KC_STRAT_l2flush), li->stream);
  kc_guard_leave();
  double t0 = kc_now_s();
  kc_prof_check_reset();
  struct kc_shadow s;
  const char *why = NULL;
  kc_guard_enter();
  int began = kc_shadow_begin(&s, li, &why) == 0;
  kc_guard_leave();
  if (!began) {
    /* A refusal for device memory comes back at every new signature of
     * the kernel: counted, so the policy stops asking. */
    if (s.memory_refused) kc_policy_refused(li->k->id);
    kc_report_skip(li, why ? why : "snapshot failed");
    return kc_app_launch(li->args);
  }
  /* The application's launch runs unguarded, as the application's own. */
  int ok = 0;
  CUresult r = kc_shadow_app_launch(&s, &ok);
  if (ok && kc_opt.stream_races) learn_writes(li, &s);
  json_t *results = json_object();
  struct kc_gate_ctx ctx[KC_NGATES];
  kc_guard_enter();
  /* profile=1: each gate's wall time in the check (its runs included) */
  json_t *gate_ms = kc_prof_on ? json_object() : NULL;
  /* A contract's gates write memory the shadow does not track, and a
   * kernel once seen writing where its application launch did not needs
   * every region compared after every run (struct kc_shadow). */
  s.hash_every_region |= c != NULL || atomic_load(&li->k->hash_every_region);
  int unwatched_write = 0;
  run_gate_list(run_list, n, ctx, ok ? &s : NULL, c, gate_ms);
  if (ok && !s.hash_every_region && kc_shadow_verify_unwatched(&s) == 1) {
    /* A run changed memory that the application's launch left alone, in
     * a region no comparison looked at after that run: which run, and
     * what it did to the runs after it, is unknown. The gates' verdicts
     * are dropped and the gates run again comparing every region after
     * every run (the regions are restored before the first run). */
    unwatched_write = 1;
    atomic_store(&li->k->hash_every_region, 1);
    for (int i = 0; i < n; i++)
      free_gate_result(&ctx[i]);
    s.hash_every_region = 1;
    run_gate_list(run_list, n, ctx, &s, c, gate_ms);
  }
  /* A contract gate's runs use shadow buffers, but a pointer the contract
   * does not describe still reaches the application's memory. */
  if (ok && c) kc_shadow_touched(&s);
  int runs = s.runs;
  unsigned long long saved = s.saved_bytes;
  int nregions = s.nregions;
  double kernel_ms = s.kernel_ms, snapshot_ms = s.snapshot_ms, wait_ms = s.wait_ms;
  int hashed = s.have_hash, hash_differed = s.hash_differed;
  unsigned long long hashed_bytes = s.hashed_bytes;
  int pre_hashed = s.pre_hashed;
  int managed_left_out = s.managed_left_out;
  unsigned long long managed_left_out_bytes = s.managed_left_out_bytes;
  for (int i = 0; ok && i < n; i++) /* replay bundles need the pre-state */
    kc_findings_prepare(run_list[i], &ctx[i]);
  /* After a run faulted the context is gone, and the restore with it: the
   * fault was said (rerun.c), and is no failure of kcheck's own. */
  if (kc_shadow_end(&s) && !s.run_faulted)
    KC_INTERNAL_ERROR("restoring the application's memory after a check failed");
  unsigned long long copied_back = s.copied_back;
  /* Results become records after the application's memory is restored:
   * halt_on_error may exit while reporting. */
  int violations = 0, repeats = 0;
  for (int i = 0; ok && i < n; i++) {
    violations += ctx[i].out.nviolations;
    uint64_t tf = ctx[i].out.nviolations ? kc_prof_now() : 0;
    repeats += kc_findings_report(run_list[i], &ctx[i]);
    if (tf) kc_prof_lap(KC_PS_chk_findings, tf);
    json_object_set_new(results, run_list[i]->id, ctx[i].result);
  }
  kc_guard_leave();
  double cost = kc_now_s() - t0;
  kc_policy_record(li->signature, li->k->id, ok && violations == 0, cost);
  if (!ok) {
    json_decref(results);
    json_decref(gate_ms);
    kc_report_skip(li, r == CUDA_SUCCESS
                           ? "the application's launch could not be saved (device error)"
                           : "the application's launch failed");
    return r;
  }
  atomic_fetch_add(&kc_count.checks, 1);
  li->checked = 1;
  json_t *rec = json_pack("{s:I, s:i, s:s, s:o, s:o, s:i, s:i, s:i, s:I, s:f, s:f}", "launch",
                          (json_int_t)li->seq, "kernel", li->k->id, "kernel_name", li->k->demangled,
                          "signature", kc_json_hash(li->signature), "gates", results, "violations",
                          violations, "runs", runs, "regions", nregions, "saved_bytes",
                          (json_int_t)saved, "cost_ms", 1e3 * cost, "wait_ms", wait_ms);
  if (rec && managed_left_out)
    json_object_set_new(
        rec, "left_out",
        json_pack("{s:i, s:I, s:s}", "managed_allocations", managed_left_out, "managed_bytes",
                  (json_int_t)managed_left_out_bytes, "reason",
                  "managed memory: CPU threads write it without a driver call, so a check "
                  "neither saves, compares nor restores it"));
  /* The floor: the kernel's runs (device time of the application's launch,
   * events), one save and one restore of the reachable memory at the
   * device's copy bandwidth, and one wait for each kernel run, both
   * measured once per device; without those, two snapshots' device time
   * and no waits. And the wait for the work the application queued before
   * this launch (wait_ms): cost_ms counts from the launch call, and no
   * check can save the pre-state before that work has made it. */
  if (rec && kernel_ms >= 0 && snapshot_ms >= 0) {
    double copy_ms_per_byte = 0, sync_ms = 0;
    kc_guard_enter();
    int measured = kc_perturb_device_costs(li->stream, &copy_ms_per_byte, &sync_ms) == 0;
    kc_guard_leave();
    double kernels = (1 + runs) * kernel_ms;
    double copies = measured ? 2 * (double)saved * copy_ms_per_byte : 2 * snapshot_ms;
    double syncs = measured ? (1 + runs) * sync_ms : 0;
    double queued = wait_ms > 0 ? wait_ms : 0;
    double floor_ms = kernels + copies + syncs + queued;
    json_object_set_new(rec, "kernel_ms", json_real(kernel_ms));
    json_object_set_new(rec, "snapshot_ms", json_real(snapshot_ms));
    json_object_set_new(rec, "floor_ms", json_real(floor_ms));
    json_object_set_new(rec, "floor_terms",
                        json_pack("{s:f, s:f, s:f, s:f, s:b}", "kernels_ms", kernels, "copies_ms",
                                  copies, "syncs_ms", syncs, "queued_ms", queued, "measured_device",
                                  measured));
    if (floor_ms > 0) json_object_set_new(rec, "cost_over_floor", json_real(1e3 * cost / floor_ms));
  }
  /* profile=1: where this check's time went, stage by stage (the rest of
   * cost_ms is the gates' own work between the stages). */
  json_t *stages = kc_prof_check_json();
  if (rec && stages)
    json_object_set_new(rec, "stages_ms", stages);
  else
    json_decref(stages);
  if (rec && gate_ms)
    json_object_set_new(rec, "gates_ms", gate_ms);
  else
    json_decref(gate_ms);
  /* How re-runs were compared with the application's result: by hash
   * first (hash_compare) or word by word. */
  if (rec) json_object_set_new(rec, "compare", json_string(hashed ? "hash" : "words"));
  if (rec && hashed) json_object_set_new(rec, "hash_differed", json_integer(hash_differed));
  /* Bytes the hashes after runs read (watched regions, and the one hash
   * of the rest at the end): what the comparisons cost the device. */
  if (rec && hashed)
    json_object_set_new(rec, "hashed_bytes", json_integer((json_int_t)hashed_bytes));
  /* The pre-state was saved and hashed in one pass, and the application's
   * result hashed (not compared with it) to find what its launch changed. */
  if (rec && pre_hashed) json_object_set_new(rec, "pre_hashed", json_true());
  /* The gates ran twice: a run wrote where no comparison looked. */
  if (rec && unwatched_write) json_object_set_new(rec, "unwatched_write", json_true());
  /* A kernel node of a graph replayed node by node. */
  if (rec && li->graph) json_object_set_new(rec, "graph", kc_graph_ref_json(li->graph));
  /* Bytes copied back into the application's memory (restores before
   * runs and at the end): only what may have changed is. */
  if (rec) json_object_set_new(rec, "restored_bytes", json_integer((json_int_t)copied_back));
  /* kcheck's one-time device setup, done just before this check */
  if (rec && setup_ms > 0) json_object_set_new(rec, "setup_ms", json_real(setup_ms));
  /* Violations an earlier check of this signature already reported. */
  if (rec && repeats) json_object_set_new(rec, "repeated_violations", json_integer(repeats));
  /* Why the thread's annotation did not describe this launch. */
  if (rec && annotation_note[0])
    json_object_set_new(rec, "annotation", json_string(annotation_note));
  /* Why the matched contract's gates did not run on this launch. */
  if (rec && contract_note[0])
    json_object_set_new(rec, "contract_not_applied", json_string(contract_note));
  kc_report_emit("check", rec);
  return r;
}
