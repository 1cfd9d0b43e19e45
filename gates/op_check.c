/* gates/op_check.c — op-level checks for framework bindings (kcheck.h
 * version 4): the binding copies an op's inputs before and its outputs after
 * the whole op (however many kernels it launched) into host memory, and asks
 * here for the policy decision and the oracle's verdict. Violations go
 * out through the findings (gates/findings.c: where suppressions apply) to
 * the core (counting, halt_on_error, exitcode) with the binding's context
 * (op, overload, Python stack, kernels, settings) merged in. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../include/kcheck.h"
#include "core.h"
#include "export.h"
#include "gate.h"
#include "guard.h"
#include "judge.h"
#include "log.h"
#include "options.h"
#include "oracle.h"
#include "policy.h"
#include "report.h"
#include "trial.h"

static atomic_long op_seq; /* ops offered to the policy, for sampling */

/* Options, report and gates are set up on the first CUDA call; a binding may
 * ask before that (an op on tensors made before any launch). */
static int ready(void) {
  if (kc_core_activate) kc_core_activate();
  return !kc_disabled;
}

/* Judging needs the options only, not a driver (kcheck.torch.replay). */
static int judge_ready(void) {
  if (kc_core_activate) kc_core_activate();
  return kc_core_initialized;
}

/* Op ids live below the kernel ids (which count up from 0), so per-kernel
 * policy state (op_clean_limit) is kept per op name. */
static int op_id(const char *op) { return -1 - (int)(XXH3_64bits(op, strlen(op)) & 0x3fffffff); }

KC_EXPORT int kcheck_op_decide(const char *op, const char *key, char *why, unsigned long n) {
  const char *reason = NULL;
  if (!op || !key)
    reason = "no op or key";
  else if (!ready())
    reason = "kcheck is not active";
  else if (!kc_gate_enabled(&kc_gate_oracle))
    reason = "the oracle gate is not enabled";
  else if (kc_opt.max_checks >= 0 && atomic_load(&kc_count.checks) >= kc_opt.max_checks)
    reason = "max_checks reached";
  if (!reason) {
    int first = 0;
    uint64_t seq = (uint64_t)atomic_fetch_add(&op_seq, 1);
    reason = kc_policy_decide(XXH3_64bits(key, strlen(key)), op_id(op), seq, &first);
  }
  /* Counted when decided: the judgments may finish later, on other
   * threads, and max_checks must hold all the same. */
  if (!reason) atomic_fetch_add(&kc_count.checks, 1);
  if (why && n) snprintf(why, n, "%s", reason ? reason : "");
  return reason == NULL;
}

static double num(const char *attrs, const char *key, double dflt) {
  return kc_judge_attr_num(attrs, key, dflt);
}

/* ------------------------------------------------ tensors */

static int describe(const struct kcheck_tensor *k, struct oc_tensor *t, char *err, size_t n) {
  int f = k->format ? oc_format_parse(k->format) : -1;
  if (f < 0) {
    snprintf(err, n, "tensor '%s': format '%s' is not one the oracle judges",
             k->name ? k->name : "?", k->format ? k->format : "(none)");
    return -1;
  }
  if (k->rank < 0 || k->rank > OC_MAX_RANK || !k->data) {
    snprintf(err, n, "tensor '%s': rank %d or data the oracle cannot take", k->name, k->rank);
    return -1;
  }
  int64_t shape[OC_MAX_RANK], stride[OC_MAX_RANK];
  for (int d = 0; d < k->rank; d++) {
    shape[d] = k->shape[d];
    stride[d] = k->strides ? k->strides[d] : 0;
  }
  if (oc_tensor_make(t, k->data, (enum oc_format)f, k->rank, shape, k->strides ? stride : NULL)) {
    snprintf(err, n, "tensor '%s': shape the oracle cannot take", k->name);
    return -1;
  }
  return 0;
}

struct op_in {
  int n;
  struct oc_tensor t[8];
  const char *name[8];
};

/* Has t a NaN or an infinity anywhere in its span (offsets 0 to the
 * largest its layout reaches: the binding's host copies start at the
 * span's start)? Elements in the gaps of a strided span count too: they
 * can only leave the screen out needlessly, which costs time, never a
 * verdict. */
static int any_nonfinite(const struct oc_tensor *t) {
  int64_t last = 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->shape[d] == 0) return 0;
    if (t->stride[d] < 0) return 1; /* not a span from offset 0: leave the screen out */
    last += (t->shape[d] - 1) * t->stride[d];
  }
  for (int64_t off = 0; off <= last; off++)
    if (!isfinite(oc_tensor_at(t, off))) return 1;
  return 0;
}

/* The oracle's verdict on out = op(in) under profile p, through
 * gates/judge.c's dispatch (the ops.def table, as for contracts). The
 * binding's sampling of generated-input trials (judge.py) arrives as the
 * attributes fraction, full_below and screen. 0, or -1 with why. */
static int judge(const char *op, const char *attrs, const struct op_in *in,
                 const struct oc_tensor *out, const struct oc_profile *p, struct oc_verdict *v,
                 char *err, size_t n) {
  struct oc_options o;
  oc_options_default(&o);
  o.seed = (uint64_t)kc_opt.seed;
  o.screen = (int)num(attrs, "screen", o.screen);
  /* A matmul's Freivalds screen sums whole rows: one infinite input (a
   * -inf attention mask in C) makes them NaN, so the screen is left out
   * and every sampled element is judged. Scanned here, on the binding's
   * worker thread, rather than on the program's thread before the op. */
  for (int i = 0; o.screen && !strcmp(op, "matmul") && i < in->n; i++)
    if (any_nonfinite(&in->t[i])) o.screen = 0;
  o.fraction = num(attrs, "fraction", o.fraction);
  o.full_below = (int64_t)num(attrs, "full_below", (double)o.full_below);
  struct kc_judge_tensors a = {op, attrs, in->n, in->t, in->name, out, p, &o};
  return kc_judge_tensors(&a, v, err, n);
}

static json_t *jnum(double d) {
  if (isnan(d)) return json_string("nan");
  if (isinf(d)) return json_string(d > 0 ? "inf" : "-inf");
  return json_real(d);
}

/* The gate result object (status, verdict line, class, coverage; an
 * inconclusive verdict's reason on its own, which the binding counts by). */
static json_t *result(const struct oc_verdict *v) {
  char line[512];
  oc_verdict_format(v, line, sizeof line);
  json_t *o = json_pack(
      "{s:s, s:s, s:s, s:{s:I, s:I, s:o, s:o, s:i}}", "status",
      oc_verdict_is_fail(v->kind) ? "fail" : kc_gate_status_name(kc_verdict_status(v->kind)),
      "verdict", line, "class", oc_verdict_name(v->kind), "coverage", "total", (json_int_t)v->total,
      "checked", (json_int_t)v->checked, "miss_prob", jnum(v->miss_prob), "fraction",
      jnum(v->fraction), "screen_vectors", v->screen_vectors);
  if (o && v->kind == OC_INCONCLUSIVE && v->detail[0])
    json_object_set_new(o, "reason", json_string(v->detail));
  return o;
}

static void put(char *buf, unsigned long n, json_t *o) {
  if (!buf || !n) return;
  char *s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
  snprintf(buf, n, "%s", s ? s : "{}");
  free(s);
}

static const struct kc_gate *gate_by_id(const char *id) {
  for (int i = 0; kc_gates[i]; i++)
    if (!strcmp(kc_gates[i]->id, id)) return kc_gates[i];
  return NULL;
}

KC_EXPORT int kcheck_op_judge(const char *gate, const char *op, const char *profile,
                              const char *attrs, int nin, const struct kcheck_tensor *in,
                              const struct kcheck_tensor *out, unsigned fail_mask,
                              const char *context_json, char *result_json, unsigned long n) {
  char err[256] = "";
  json_t *res = NULL;
  int status = KCHECK_OP_ERROR;
  const struct kc_gate *g = gate ? gate_by_id(gate) : NULL;
  struct oc_profile p;
  struct op_in ins = {0};
  struct oc_tensor to;
  struct oc_verdict v;
  if (!judge_ready() || !g || !op || !out || nin < 0 || nin > 8 || (nin && !in)) {
    snprintf(err, sizeof err, "%s", !g ? "unknown gate" : "bad arguments or kcheck not active");
    goto done;
  }
  if (oc_profile_parse_err(profile ? profile : "", &p, err, sizeof err)) goto done;
  for (int i = 0; i < nin; i++) {
    if (describe(&in[i], &ins.t[i], err, sizeof err)) goto done;
    ins.name[i] = in[i].name;
  }
  ins.n = nin;
  if (describe(out, &to, err, sizeof err)) goto done;
  memset(&v, 0, sizeof v);
  kc_guard_enter();
  int r = judge(op, attrs ? attrs : "", &ins, &to, &p, &v, err, sizeof err);
  kc_guard_leave();
  if (r) goto done;
  res = result(&v);
  if (!fail_mask) fail_mask = KC_VERDICT_FAILS;
  status = (fail_mask >> v.kind) & 1u  ? KCHECK_OP_VIOLATION
           : v.kind == OC_INCONCLUSIVE ? KCHECK_OP_INCONCLUSIVE
                                       : KCHECK_OP_PASS;
  if (status == KCHECK_OP_VIOLATION) {
    json_error_t je;
    json_t *rec = context_json && *context_json ? json_loads(context_json, 0, &je) : json_object();
    if (!rec || !json_is_object(rec)) {
      if (rec) json_decref(rec);
      rec = json_object();
    }
    char msg[600];
    oc_verdict_format(&v, msg, sizeof msg);
    json_object_set_new(rec, "gate", json_string(g->id));
    json_object_set_new(rec, "severity", json_string(g->severity));
    json_object_set_new(rec, "message", json_string(msg));
    json_object_set_new(
        rec, "evidence",
        kc_verdict_evidence(out->name ? out->name : "out", op, to.shape, to.rank, &v));
    if (!json_object_get(rec, "kernel_name")) /* the core's log line names it */
      json_object_set_new(rec, "kernel_name", json_string(op));
    kc_findings_emit(rec);
  }
done:
  if (!res) res = json_pack("{s:s, s:s}", "status", "error", "reason", err);
  put(result_json, n, res);
  json_decref(res);
  return status;
}

KC_EXPORT int kcheck_op_trials(const char *gate, const char *op, char *buf, unsigned long n,
                               unsigned *fail_mask) {
  if (buf && n) buf[0] = 0;
  if (!gate || !op || !ready()) return -1;
  /* The gates whose op column is trials (gates.def): each lists its own. */
  for (size_t i = 0; kc_gates[i]; i++) {
    const struct kc_gate *g = kc_gates[i];
    if (!g->trials || strcmp(gate, g->id)) continue;
    if (!kc_gate_enabled(g)) return 0;
    struct kc_trial t[KC_MAX_TRIALS];
    unsigned mask = 0;
    int k = g->trials(op, t, &mask);
    size_t used = 0;
    for (int j = 0; j < k && buf; j++) {
      int w =
          snprintf(buf + used, n - used, "%s %s %llu\n", oc_gen_name((enum oc_gen)t[j].gen),
                   kc_transform_name(t[j].transform), (unsigned long long)kc_trial_seed(gate, j));
      if (w < 0 || (size_t)w >= n - used) return -1;
      used += (size_t)w;
    }
    if (fail_mask) *fail_mask = mask;
    return k;
  }
  return -1;
}

KC_EXPORT void kcheck_op_report(const char *gate, const char *message, const char *context_json) {
  const struct kc_gate *g = gate ? gate_by_id(gate) : NULL;
  if (!g || !ready() || !kc_gate_enabled(g)) return;
  json_error_t je;
  json_t *rec = context_json ? json_loads(context_json, 0, &je) : NULL;
  if (!rec || !json_is_object(rec)) {
    if (rec) json_decref(rec);
    rec = json_object();
  }
  json_object_set_new(rec, "gate", json_string(g->id));
  json_object_set_new(rec, "severity", json_string(g->severity));
  json_object_set_new(rec, "message", json_string(message ? message : g->contract));
  if (!json_object_get(rec, "kernel_name")) {
    json_t *op = json_object_get(rec, "op");
    json_object_set_new(rec, "kernel_name", op ? json_copy(op) : json_string("?"));
  }
  kc_findings_emit(rec);
}

KC_EXPORT void kcheck_op_done(const char *op, const char *key, int clean, double seconds,
                              const char *record_json) {
  if (!op || !key || !ready()) return;
  kc_policy_record(XXH3_64bits(key, strlen(key)), op_id(op), clean, seconds);
  json_error_t je;
  json_t *rec = record_json ? json_loads(record_json, 0, &je) : NULL;
  if (rec && json_is_object(rec))
    kc_report_emit("op_check", rec);
  else if (rec)
    json_decref(rec);
}

KC_EXPORT void kcheck_record(const char *type, const char *record_json) {
  /* op_check: the generated-input part of a check run later (torch_budget) */
  static const char *const allowed[] = {"op_skip", "op_check", "torch", "torch_summary", NULL};
  if (!type || !record_json || !ready()) return;
  int ok = 0;
  for (int i = 0; allowed[i]; i++)
    ok |= !strcmp(type, allowed[i]);
  json_error_t je;
  json_t *rec = ok ? json_loads(record_json, 0, &je) : NULL;
  if (rec && json_is_object(rec))
    kc_report_emit(type, rec);
  else if (rec)
    json_decref(rec);
}
