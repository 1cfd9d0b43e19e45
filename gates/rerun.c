/* gates/rerun.c — re-runs compared with the application's run, and the
 * classification of differences (rerun.h). */
#include "rerun.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gate_options.h"
#include "gate_util.h"
#include "intra.h"
#include "log.h"
#include "perturb.h"
#include "policy.h"
#include "report.h"
#include "san_route.h"

void kc_rerun_init(struct kc_rerun *r) {
  memset(r, 0, sizeof *r);
  r->exposed = json_array();
  r->status = json_object();
  r->ms = json_object();
}

void kc_rerun_free(struct kc_rerun *r) {
  json_decref(r->first);
  json_decref(r->exposed);
  json_decref(r->status);
  json_decref(r->ms);
  memset(r, 0, sizeof *r);
}

/* The re-runs made so far in the check in progress on this thread (the
 * launch's sequence number names the check): whether the determinism and
 * race gates re-ran a launch whose SASS the nondeterminism gate left
 * unread. */
struct check_key {
  uint64_t seq, signature;
  const void *kernel;
};

static struct check_key key_of(const struct kc_gate_ctx *ctx) {
  return (struct check_key){ctx->li->seq, ctx->li->signature, ctx->li->k};
}

static int same_key(struct check_key a, struct check_key b) {
  return a.seq == b.seq && a.signature == b.signature && a.kernel == b.kernel;
}

static __thread struct {
  struct check_key key;
  int runs;
} made;

static void count_run(const struct kc_gate_ctx *ctx) {
  if (!same_key(made.key, key_of(ctx))) made.key = key_of(ctx), made.runs = 0;
  made.runs++;
}

int kc_rerun_runs_in_check(const struct kc_gate_ctx *ctx) {
  return same_key(made.key, key_of(ctx)) ? made.runs : 0;
}

void kc_rerun_note_error(struct kc_gate_ctx *ctx, const struct kc_rerun *r) {
  if (!r->error) return;
  json_object_set_new(ctx->result, "error", json_string(r->error));
  if (r->error_run) json_object_set_new(ctx->result, "error_run", json_string(r->error_run));
}

/* A fault ends the CUDA context it happened in, and the re-runs run in the
 * application's (docs/safety.md): its later CUDA calls may fail because
 * of kcheck's re-run, which the program's own error cannot say. Said once. */
static void fault_said(const struct kc_gate_ctx *ctx, const char *run) {
  static atomic_int said;
  if (atomic_exchange(&said, 1)) return;
  kc_log_printf(KC_LOG_ERROR,
                "a re-run of %s (%s) faulted: a fault ends the CUDA context it ran in, "
                "so the program's later CUDA calls may fail with it (docs/safety.md)",
                ctx->li->k->demangled, run);
}

/* One run under p compared with post-state A: 1 differs, 0 same, -1 the
 * run was not made (*why; *error and error_run when it failed). */
static int one_run(struct kc_gate_ctx *ctx, const struct kc_perturb *p, struct kc_rerun *r,
                   json_t **ev, const char **why) {
  /* The comparison follows at once: the run may leave its wait to it. */
  ctx->shadow->defer_sync = 1;
  int rc = kc_shadow_run(ctx->shadow, p, why);
  if (rc) {
    if (!*why) *why = "failed";
    if (rc < 0) {
      r->error = *why, r->error_run = p->name;
      if (ctx->shadow->run_faulted) fault_said(ctx, p->name);
    }
    return -1;
  }
  r->runs++;
  count_run(ctx);
  long diff = kc_compare_with_post(ctx->shadow, ev);
  if (diff < 0) {
    *why = r->error = ctx->shadow->run_faulted ? KC_SHADOW_FAULTED : "comparing the results failed";
    r->error_run = p->name;
    if (ctx->shadow->run_faulted) fault_said(ctx, p->name);
    return -1;
  }
  return diff > 0;
}

void kc_rerun_identical(struct kc_gate_ctx *ctx, long n, struct kc_rerun *r) {
  static const struct kc_perturb identical = {.name = "identical"};
  for (long i = 0; i < n && !r->first && !r->error; i++) {
    json_t *ev = NULL;
    const char *why = NULL;
    if (one_run(ctx, &identical, r, &ev, &why) > 0) {
      json_object_set_new(ev, "runs", json_integer(r->runs));
      r->first = ev;
    }
  }
}

/* A run that faulted under scrub where the application's own run (and the
 * runs before it) did not: scrub changes nothing but the contents of
 * shared memory nothing has written, so the kernel read such memory and
 * used it as an address (an uninitialised read, or a racing one). The
 * context is lost all the same (fault_said); this keeps the finding. */
static void scrub_fault(struct kc_rerun *r, const struct kc_perturb *p, long run) {
  assert(!r->first);
  r->first =
      json_pack("{s:s, s:s, s:s, s:I, s:I}", "verdict", "faulted", "faulted", KC_SHADOW_FAULTED,
                "strategy", "scrub", "run", (json_int_t)run, "seed", (json_int_t)p->seed);
  json_array_append_new(r->exposed, json_string("scrub"));
}

void kc_rerun_strategies(struct kc_gate_ctx *ctx, const struct kc_strategy_list *list,
                         struct kc_rerun *r) {
  int green_sms = 0;
  for (int k = 0; k < list->n && !r->error; k++) {
    const enum kc_strategy s = list->s[k];
    if (s == KC_STRAT_green && !green_sms) {
      green_sms = kc_perturb_green_sms(ctx->li, (int)kc_gate_opt.green_sms);
      json_object_set_new(ctx->result, "green_sms", json_integer(green_sms));
    }
    const char *name = kc_strategy_info(s)->name;
    const char *status = "same";
    double t0 = kc_now_s();
    for (long i = 0; i < kc_gate_opt.race_runs; i++) {
      /* A fresh seed per launch and run: the scrub pattern left behind by
       * one check must not be what the next application kernel reads. */
      uint64_t seed = kc_policy_uniform(ctx->li->seq * 64 + (uint64_t)r->runs) * 0x1p53;
      struct kc_perturb p;
      kc_strategy_perturb(s, green_sms, (unsigned)kc_gate_opt.extra_shmem, seed, &p);
      if (p.intra_log) p.intra_log = (unsigned)kc_gate_opt.access_records;
      json_t *ev = NULL;
      const char *why = NULL;
      /* (run_faulted stays set for the check: a fault of this run is one
       * that sets it) */
      int faulted_before = ctx->shadow->run_faulted;
      int d = one_run(ctx, &p, r, &ev, &why);
      if (d < 0) {
        if (s == KC_STRAT_scrub && r->scrub_fault_is_finding && !faulted_before &&
            ctx->shadow->run_faulted && !r->first) {
          scrub_fault(r, &p, i + 1);
          why = "faulted";
        }
        status = why;
        break;
      }
      if (p.intra_log) {
        /* the accesses themselves, whatever the bytes say */
        json_t *cev = NULL;
        unsigned retry = 0;
        int cr = kc_intra_conflicts(ctx->li, &cev, &retry, &why);
        if (cr == -2 && retry && !p.intra_stride) {
          /* over the log's capacity: once more, logging fewer blocks */
          p.intra_stride = retry;
          json_decref(ev);
          ev = NULL;
          d = one_run(ctx, &p, r, &ev, &why);
          if (d < 0) {
            status = why;
            break;
          }
          char sampled[48];
          snprintf(sampled, sizeof sampled, "1 block in %u", retry);
          json_object_set_new(ctx->result, "accesses_blocks_logged", json_string(sampled));
          cr = kc_intra_conflicts(ctx->li, &cev, &retry, &why);
        }
        if (cr < 0) {
          json_decref(ev);
          status = why;
          break;
        }
        if (cr == 0 && cev) {
          json_object_set(ctx->result, "accesses_logged", json_object_get(cev, "accesses_logged"));
          if (json_object_get(cev, "not_judged"))
            json_object_set(ctx->result, "accesses_not_judged", json_object_get(cev, "not_judged"));
        }
        /* kept in the entry whatever exposed the race first */
        if (cr > 0) json_object_set(ctx->result, "access_conflict", cev);
        if (cr > 0 && !d) {
          d = 2;
          ev = cev;
        } else {
          json_decref(cev);
        }
      }
      if (d > 0) {
        status = d == 2 ? "conflicting accesses" : "differs";
        json_array_append_new(r->exposed, json_string(name));
        if (!r->first) {
          json_object_set_new(ev, "strategy", json_string(name));
          json_object_set_new(ev, "run", json_integer(i + 1));
          json_object_set_new(ev, "seed", json_integer((json_int_t)p.seed));
          r->first = ev;
        } else {
          json_decref(ev);
        }
        break;
      }
    }
    json_object_set_new(r->status, name, json_string(status));
    json_object_set_new(r->ms, name, json_real(1e3 * (kc_now_s() - t0)));
  }
}

void kc_rerun_intra_note(struct kc_gate_ctx *ctx, const struct kc_rerun *r) {
  /* The first intra-block strategy in the list tells whether the route
   * applied: its status is its reason when it did not. */
  const char *key;
  json_t *v;
  json_object_foreach(r->status, key, v) {
    int s = kc_strategy_find(key);
    struct kc_perturb p;
    if (s < 0) continue;
    kc_strategy_perturb((enum kc_strategy)s, 0, 0, 0, &p);
    if (!p.intra) continue;
    const char *st = json_string_value(v);
    int sites = 0;
    double jit_ms = 0;
    const char *route = NULL;
    if (st &&
        (!strcmp(st, "same") || !strcmp(st, "differs") || !strcmp(st, "conflicting accesses")) &&
        kc_intra_info(ctx->li, &sites, &jit_ms, &route) == 0) {
      json_object_set_new(ctx->result, "intra_block", json_string("perturbed"));
      json_object_set_new(ctx->result, "route", json_string(route));
      double load_ms = 0, patch_ms = 0;
      if (!strcmp(route, "sanitizer")) {
        json_object_set_new(ctx->result, "sanitizer", json_string(kc_san_state()));
        if (kc_intra_san_times(ctx->li, &load_ms, &patch_ms) == 0) {
          json_object_set_new(ctx->result, "sanitizer_load_ms", json_real(load_ms));
          json_object_set_new(ctx->result, "sanitizer_patch_ms", json_real(patch_ms));
        }
      }
      json_object_set_new(ctx->result, "intra_sites", json_integer(sites));
      json_object_set_new(ctx->result, "intra_jit_ms", json_real(jit_ms));
    } else {
      json_object_set_new(ctx->result, "intra_block", json_string(st ? st : "not run"));
      /* neither route: the PTX route's reason, and the Sanitizer
       * route's where it was tried */
      const char *san = kc_intra_route_why(ctx->li);
      if (san && st && !strcmp(san, st)) san = NULL; /* the route's own stand-down: said once */
      char why[1280];
      snprintf(why, sizeof why, "%s%s%s", st ? st : "not run", san ? "; Sanitizer route: " : "",
               san ? san : "");
      json_object_set_new(ctx->result, "route", json_string("none"));
      json_object_set_new(ctx->result, "route_why", json_string(why));
    }
    return;
  }
}

/* ------------------------------------------------------ classification */

static enum kc_order_cause classify(struct kc_gate_ctx *ctx, json_t **detail, int read_sass) {
  struct kc_ptx_atomics a;
  const char *why = NULL;
  int rc = read_sass ? kc_intra_atomics(ctx->li->k, &a, &why)
                     : kc_intra_atomics_unread(ctx->li->k, &a, &why);
  if (rc == 1) {
    *detail = json_pack("{s:s, s:s}", "code", why ? why : "no PTX", "sass",
                        "not read: read only when a re-run differs");
    return KC_CAUSE_UNREAD;
  }
  if (rc) {
    *detail = json_pack("{s:s}", "code", why ? why : "unavailable");
    return KC_CAUSE_UNKNOWN;
  }
  *detail = json_pack("{s:i, s:i, s:i}", "float_atomic_adds", a.float_adds, "slot_atomics",
                      a.slot_atomics, "other_atomics", a.other_atomics);
  if (a.first[0]) json_object_set_new(*detail, "first", json_string(a.first));
  return a.float_adds || a.slot_atomics ? KC_CAUSE_ATOMIC : KC_CAUSE_ACCESS;
}

enum kc_order_cause kc_order_cause(struct kc_gate_ctx *ctx, json_t **detail) {
  return classify(ctx, detail, 1);
}

enum kc_order_cause kc_order_cause_unread(struct kc_gate_ctx *ctx, json_t **detail) {
  return classify(ctx, detail, 0);
}

const char *kc_order_cause_name(enum kc_order_cause c) {
  return c == KC_CAUSE_ATOMIC   ? "atomic-order"
         : c == KC_CAUSE_ACCESS ? "unordered-access"
                                : "unclassified";
}

int kc_rerun_not_mine(struct kc_gate_ctx *ctx, const char **cause_name) {
  int allowed = ctx->contract && ctx->contract->nondeterminism_allowed;
  json_t *detail = NULL;
  /* A SASS-only kernel's code is read when a re-run differs
   * (kc_rerun_handoff), not before: most kernels' re-runs agree. A
   * contract's `nondeterminism: allowed` is checked against the code
   * first. */
  enum kc_order_cause cause =
      allowed ? kc_order_cause(ctx, &detail) : kc_order_cause_unread(ctx, &detail);
  *cause_name = kc_order_cause_name(cause);
  int mine = 1;
  if (cause == KC_CAUSE_ATOMIC && allowed) {
    /* What the declaration accepts: the order of atomics. */
    kc_gate_nondeterminism_allowed(ctx);
    json_object_set_new(ctx->result, "cause", json_string("atomic-order"));
    mine = 0;
  } else if (cause == KC_CAUSE_ATOMIC && kc_gate_enabled(&kc_gate_nondeterminism)) {
    ctx->out.status = KC_GS_NOT_RUN;
    json_object_set_new(ctx->result, "reason",
                        json_string("the kernel's code has order-dependent atomics: the "
                                    "nondeterminism gate judges its differences"));
    mine = 0;
  } else if (cause == KC_CAUSE_UNKNOWN && allowed) {
    /* Nothing tells atomic order from a race here: the declaration is
     * taken, and the record says it was not verified. */
    kc_gate_nondeterminism_allowed(ctx);
    json_object_set_new(ctx->result, "verified",
                        json_string("no: the kernel's code is unavailable to tell atomic "
                                    "order from a race"));
    mine = 0;
  }
  if (!mine)
    json_object_set_new(ctx->result, "atomics", detail);
  else
    json_decref(detail);
  return !mine;
}

/* ------------------------------------------------ the deferred reading */

/* A difference of a SASS-only kernel's re-runs that its code shows to be
 * the order of its atomics, for the nondeterminism gate (it runs after
 * determinism and race, gates.def): one per check, on the check's
 * thread. */
static __thread struct {
  struct check_key key; /* the check */
  json_t *evidence, *exposed, *atomics;
  const char *by;
} handoff;

static void handoff_clear(void) {
  json_decref(handoff.evidence);
  json_decref(handoff.exposed);
  json_decref(handoff.atomics);
  memset(&handoff, 0, sizeof handoff);
}

int kc_rerun_handoff(struct kc_gate_ctx *ctx, const struct kc_rerun *r, const char *gate,
                     const char **cause_name) {
  struct kc_ptx_atomics a;
  const char *why = NULL;
  if (kc_intra_atomics_unread(ctx->li->k, &a, &why) != 1) return 0; /* read before: named */
  json_t *detail = NULL;
  enum kc_order_cause cause = kc_order_cause(ctx, &detail);
  if (cause != KC_CAUSE_ATOMIC || !kc_gate_enabled(&kc_gate_nondeterminism)) {
    *cause_name = kc_order_cause_name(cause);
    json_object_set_new(ctx->result, "atomics", detail);
    return 0;
  }
  handoff_clear();
  handoff.key = key_of(ctx);
  handoff.evidence = json_incref(r->first);
  handoff.exposed = r->exposed ? json_incref(r->exposed) : json_array();
  handoff.atomics = json_incref(detail);
  handoff.by = gate;
  ctx->out.status = KC_GS_NOT_RUN;
  json_object_set_new(ctx->result, "reason",
                      json_string("the kernel's code has order-dependent atomics: the "
                                  "nondeterminism gate judges its differences"));
  json_object_set_new(ctx->result, "atomics", detail);
  return 1;
}

int kc_rerun_handed_off(struct kc_gate_ctx *ctx, json_t **evidence, json_t **exposed,
                        json_t **atomics, const char **by) {
  if (!handoff.evidence || !same_key(handoff.key, key_of(ctx))) {
    handoff_clear();
    return 0;
  }
  *evidence = handoff.evidence;
  *exposed = handoff.exposed;
  *atomics = handoff.atomics;
  *by = handoff.by;
  memset(&handoff, 0, sizeof handoff);
  return 1;
}
