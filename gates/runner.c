/* gates/runner.c — runs the enabled gates on one selected launch inside one
 * shadow check (snapshot → application launch → shadow runs → restore) and
 * writes the `check` record. Installed as the core's check hook. */
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "gate.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "policy.h"
#include "report.h"

void kc_gate_violation(const struct kc_gate *g, const struct kc_launch_info *li, json_t *details) {
  json_t *rec = json_pack(
      "{s:s, s:s, s:i, s:s, s:s, s:I, s:o, s:[iii], s:[iii], s:i, s:I}", "gate", g->id, "severity",
      g->severity, "kernel", li->k->id, "kernel_name", li->k->demangled, "kernel_mangled",
      li->k->name, "launch", (json_int_t)li->seq, "signature", kc_json_hash(li->signature), "grid",
      li->grid[0], li->grid[1], li->grid[2], "block", li->block[0], li->block[1], li->block[2],
      "shmem", li->shmem, "seed", (json_int_t)kc_opt.seed);
  if (g->needs_contract && li->contract) /* which contract the kernel broke */
    json_object_set_new(rec, "contract", json_string(li->contract->where));
  /* The gate's one-line contract for the finding block, and the launch as
   * captured (parameter bytes, pointers) for `kcheck repro`. */
  json_object_set_new(rec, "gate_contract", json_string(g->contract));
  json_object_set_new(rec, "launch_record", kc_launch_json(li));
  json_object_update(rec, details);
  json_decref(details);
  kc_report_violation(rec);
}

int kc_gate_nondeterminism_allowed(struct kc_gate_ctx *ctx) {
  const struct kc_contract *c = ctx->li->contract;
  if (!c || !c->nondeterminism_allowed) return 0;
  json_object_set_new(ctx->result, "status", json_string("allowed"));
  json_object_set_new(ctx->result, "contract", json_string(c->where));
  json_object_set_new(ctx->result, "reason",
                      json_string("the contract declares nondeterminism: allowed"));
  return 1;
}

int kc_gate_has_contract(const struct kc_launch_info *li) { return li->contract != NULL; }

static CUresult run_gates(struct kc_launch_info *li, const char *annotation_note);

static void gate_error(struct kc_gate_ctx *ctx, const char *why) {
  json_object_set_new(ctx->result, "status", json_string("error"));
  json_object_set_new(ctx->result, "error", json_string(why));
}

int kc_gate_sb_create(struct kc_gate_ctx *ctx, struct kc_sb *sb) {
  char err[256] = "";
  const struct kc_contract *c = ctx->li->contract;
  if (!c) {
    gate_error(ctx, "no contract");
    return -1;
  }
  json_object_set_new(ctx->result, "contract", json_string(c->where));
  if (kc_sb_create(sb, ctx->li, c, err, sizeof err)) {
    gate_error(ctx, err);
    return -1;
  }
  return 0;
}

int kc_gate_sb_run(struct kc_gate_ctx *ctx, struct kc_sb *sb, unsigned char poison) {
  char err[256] = "";
  if (kc_sb_run(sb, ctx->shadow, poison, err, sizeof err)) {
    gate_error(ctx, err);
    kc_sb_free(sb);
    return -1;
  }
  return 0;
}

json_t *kc_gate_sb_evidence(json_t *ev, const struct kc_sb *sb, int i, const char *verdict) {
  if (!ev) return NULL;
  json_object_set_new(ev, "verdict", json_string(verdict));
  if (!json_object_get(ev, "shape"))
    json_object_set_new(ev, "shape", kc_gate_index_json(sb->t[i].t->shape, sb->t[i].t->rank));
  json_object_set_new(ev, "exposed_by", kc_exposed_by(sb, NULL, 0));
  return ev;
}

json_t *kc_gate_elem_json(const unsigned char *p, int esize, int format) {
  char hex[2 * 16 + 3] = "0x";
  int n = esize > 16 ? 16 : esize;
  for (int i = n - 1, at = 2; i >= 0; i--, at += 2)
    snprintf(hex + at, sizeof hex - (size_t)at, "%02x", p[i]);
  json_t *o = json_pack("{s:s}", "hex", hex);
  const char *f = kc_ct_format_name(format);
  if (f && !strcmp(f, "fp32") && esize == 4) {
    float v;
    memcpy(&v, p, 4);
    json_object_set_new(o, "value", json_real((double)v));
  } else if (f && !strcmp(f, "fp64") && esize == 8) {
    double v;
    memcpy(&v, p, 8);
    json_object_set_new(o, "value", json_real(v));
  } else if (f && !strcmp(f, "int32") && esize == 4) {
    int32_t v;
    memcpy(&v, p, 4);
    json_object_set_new(o, "value", json_integer(v));
  }
  return o;
}

json_t *kc_gate_index_json(const int64_t *idx, int rank) {
  json_t *a = json_array();
  for (int r = 0; r < rank; r++)
    json_array_append_new(a, json_integer((json_int_t)idx[r]));
  return a;
}

CUresult kc_gates_check(struct kc_launch_info *li) {
  /* The launch's contract: a loaded one, else one made from the annotation
   * in force on this (the launching) thread, when the launch takes the
   * annotated tensors. */
  struct kc_contract *annotated = NULL;
  li->contract = li->k ? kc_contract_match(li->k) : NULL;
  char note[160] = ""; /* why an annotation in force did not apply */
  if (!li->contract && li->k && kc_annotation_current()) {
    kc_guard_enter();
    char why[sizeof note - 16];
    li->contract = annotated = kc_contract_from_annotation(
        kc_annotation_current(), li->k, li->param_buf, li->param_size, why, sizeof why);
    if (!annotated) snprintf(note, sizeof note, "not applied: %s", why);
    kc_guard_leave();
  }
  CUresult r = run_gates(li, note);
  li->contract = NULL;
  kc_contract_free(annotated);
  return r;
}

static CUresult run_gates(struct kc_launch_info *li, const char *annotation_note) {
  const struct kc_gate *run_list[16];
  int n = 0;
  /* Contract gates run only where a contract matched; they work on shadow
   * buffers of their own, so they share this check (and its pre-state, the
   * source of their inputs) without needing anything else from it. */
  for (int i = 0; kc_gates[i] && n < 16; i++)
    if (kc_gate_enabled(kc_gates[i]) && (!kc_gates[i]->needs_contract || kc_gate_has_contract(li)))
      run_list[n++] = kc_gates[i];
  if (!n) return kc_app_launch(li->args);

  double t0 = kc_now_s();
  struct kc_shadow s;
  const char *why = NULL;
  kc_guard_enter();
  int began = kc_shadow_begin(&s, li, &why) == 0;
  kc_guard_leave();
  if (!began) {
    kc_report_skip(li, why ? why : "snapshot failed");
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
    kc_report_skip(li, r == CUDA_SUCCESS
                           ? "the application's launch could not be saved (device error)"
                           : "the application's launch failed");
    return r;
  }
  atomic_fetch_add(&kc_count.checks, 1);
  json_t *rec =
      json_pack("{s:I, s:i, s:s, s:o, s:o, s:i, s:i, s:i, s:I, s:f}", "launch", (json_int_t)li->seq,
                "kernel", li->k->id, "kernel_name", li->k->demangled, "signature",
                kc_json_hash(li->signature), "gates", results, "violations", violations, "runs",
                runs, "regions", nregions, "saved_bytes", (json_int_t)saved, "cost_ms", 1e3 * cost);
  /* Why the thread's annotation did not describe this launch. */
  if (rec && annotation_note[0])
    json_object_set_new(rec, "annotation", json_string(annotation_note));
  kc_report_emit("check", rec);
  return r;
}
