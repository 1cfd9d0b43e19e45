/* gates/rerun.c — re-runs compared with the application's run, and the
 * classification of differences (rerun.h). */
#include "rerun.h"

#include <stdio.h>
#include <string.h>

#include "gate_options.h"
#include "gate_util.h"
#include "intra.h"
#include "options.h"
#include "perturb.h"
#include "policy.h"
#include "report.h"

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

/* One run under p compared with post-state A: 1 differs, 0 same, -1 the
 * run was not made (*why; *error when it failed). */
static int one_run(struct kc_gate_ctx *ctx, const struct kc_perturb *p, struct kc_rerun *r,
                   json_t **ev, const char **why) {
  /* The comparison follows at once: the run may leave its wait to it. */
  ctx->shadow->defer_sync = 1;
  int rc = kc_shadow_run(ctx->shadow, p, why);
  if (rc) {
    if (!*why) *why = "failed";
    if (rc < 0) r->error = *why;
    return -1;
  }
  r->runs++;
  long diff = kc_compare_with_post(ctx->shadow, ev);
  if (diff < 0) {
    *why = r->error =
        ctx->shadow->run_faulted ? "the shadow run faulted" : "comparing the results failed";
    return -1;
  }
  return diff > 0;
}

void kc_rerun_identical(struct kc_gate_ctx *ctx, long n, struct kc_rerun *r) {
  static const struct kc_perturb identical = {.name = "identical"};
  long i = 0;
  if (n > 1 && n <= KC_BATCH_MAX) {
    struct kc_perturb ps[KC_BATCH_MAX];
    struct kc_batch_run out[KC_BATCH_MAX];
    for (long j = 0; j < n; j++)
      ps[j] = identical;
    const char *why = NULL;
    int rc = kc_shadow_batch(ctx->shadow, ps, (int)n, out, &why);
    if (rc < 0) {
      r->error = why;
      return;
    }
    /* A run after one that differed may be invalid; none is read. */
    for (; rc == 0 && i < n && !r->first && out[i].made && out[i].valid; i++) {
      r->runs++;
      if (out[i].d.words) {
        json_t *ev = kc_diff_evidence(ctx->shadow, &out[i].d);
        json_object_set_new(ev, "runs", json_integer(r->runs));
        r->first = ev;
      }
    }
    if (rc == 0 && i < n && !r->first) { /* not read: all made again alone */
      r->runs -= (int)i;
      i = 0;
    }
  }
  for (; i < n && !r->first && !r->error; i++) {
    json_t *ev = NULL;
    const char *why = NULL;
    if (one_run(ctx, &identical, r, &ev, &why) > 0) {
      json_object_set_new(ev, "runs", json_integer(r->runs));
      r->first = ev;
    }
  }
}

/* The seed of a strategy's run: fresh per launch and run, so the scrub
 * pattern left behind by one check is not what the next application
 * kernel reads. */
static uint64_t run_seed(const struct kc_gate_ctx *ctx, int runs) {
  return (uint64_t)(kc_policy_uniform(ctx->li->seq * 64 + (uint64_t)runs) * 0x1p53);
}

static void exposed(struct kc_rerun *r, const char *name, json_t *ev, long run, uint64_t seed) {
  json_array_append_new(r->exposed, json_string(name));
  if (r->first) {
    json_decref(ev);
    return;
  }
  json_object_set_new(ev, "strategy", json_string(name));
  json_object_set_new(ev, "run", json_integer(run));
  json_object_set_new(ev, "seed", json_integer((json_int_t)seed));
  r->first = ev;
}

/* Strategy `name`'s race_runs runs, each waited for and compared before
 * the next. */
static void strategy_alone(struct kc_gate_ctx *ctx, const char *name, struct kc_rerun *r) {
  const char *status = "same";
  int s = kc_strategy_find(name);
  double t0 = kc_now_s();
  for (long i = 0; i < kc_gate_opt.race_runs; i++) {
    if (s < 0) {
      status = "unknown strategy";
      break;
    }
    struct kc_perturb p;
    kc_strategy_perturb((enum kc_strategy)s, (int)kc_gate_opt.green_sms,
                        (unsigned)kc_gate_opt.extra_shmem, run_seed(ctx, r->runs), &p);
    if (p.intra_log) p.intra_log = (unsigned)kc_gate_opt.access_records;
    json_t *ev = NULL;
    const char *why = NULL;
    int d = one_run(ctx, &p, r, &ev, &why);
    if (d < 0) {
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
      exposed(r, name, ev, i + 1, p.seed);
      break;
    }
  }
  json_object_set_new(r->status, name, json_string(status));
  json_object_set_new(r->ms, name, json_real(1e3 * (kc_now_s() - t0)));
}

/* A run of a batch: its strategy and its index among the strategy's runs. */
struct planned {
  const char *name;
  long run;
};

/* Strategies names[0..n-1] (each batchable) queued as one batch of their
 * runs; a strategy whose runs cannot be read (queued after a run that
 * changed an input) is made again alone, with every one after it. Each
 * strategy's ms is its share of the batch's wall time. */
static void strategies_batched(struct kc_gate_ctx *ctx, char **names, int n, struct kc_rerun *r) {
  struct kc_perturb ps[KC_BATCH_MAX];
  struct planned plan[KC_BATCH_MAX];
  struct kc_batch_run out[KC_BATCH_MAX];
  int np = 0, runs = r->runs;
  for (int k = 0; k < n; k++)
    for (long i = 0; i < kc_gate_opt.race_runs; i++) {
      const char *why = NULL;
      kc_strategy_perturb((enum kc_strategy)kc_strategy_find(names[k]), (int)kc_gate_opt.green_sms,
                          (unsigned)kc_gate_opt.extra_shmem, run_seed(ctx, runs), &ps[np]);
      plan[np++] = (struct planned){names[k], i};
      if (kc_perturb_inapplicable(&ps[np - 1], ctx->li, &why)) break; /* not made, as alone */
      runs++;
    }
  double t0 = kc_now_s();
  const char *why = NULL;
  int rc = kc_shadow_batch(ctx->shadow, ps, np, out, &why);
  if (rc < 0) {
    r->error = why;
    json_object_set_new(r->status, names[0], json_string(why));
    return;
  }
  int made = 0;
  for (int j = 0; rc == 0 && j < np; j++)
    made += out[j].made;
  if (made) json_object_set_new(ctx->result, "batched_runs", json_integer(made));
  double share = made ? 1e3 * (kc_now_s() - t0) / made : 0;
  int j = 0;
  for (int k = 0; k < n; k++) {
    if (rc != 0) {
      strategy_alone(ctx, names[k], r);
      continue;
    }
    const char *status = "same";
    int read = 0, alone = 0;
    for (; j < np && plan[j].name == names[k]; j++) {
      const struct kc_batch_run *e = &out[j];
      if (alone || (strcmp(status, "same") && e->made)) continue; /* past the strategy's end */
      if (!e->made) {
        status = e->why;
        continue;
      }
      if (!e->valid) {
        alone = 1;
        continue;
      }
      r->runs++;
      read++;
      if (e->d.words) {
        status = "differs";
        exposed(r, names[k], kc_diff_evidence(ctx->shadow, &e->d), plan[j].run + 1, ps[j].seed);
      }
    }
    if (alone) {
      /* its earlier runs (all the same) are made again with the rest */
      r->runs -= read;
      rc = 1;
      strategy_alone(ctx, names[k], r);
      continue;
    }
    json_object_set_new(r->status, names[k], json_string(status));
    json_object_set_new(r->ms, names[k], json_real(share * read));
  }
}

void kc_rerun_strategies(struct kc_gate_ctx *ctx, const char *list_in, struct kc_rerun *r) {
  char list[256];
  snprintf(list, sizeof list, "%s", list_in);
  char *names[64];
  int n = 0;
  char *save = NULL;
  for (char *name = strtok_r(list, ",", &save); name && n < 64; name = strtok_r(NULL, ",", &save))
    names[n++] = name;
  for (int i = 0; i < n && !r->error;) {
    /* the longest run of strategies that can be queued together */
    int k = i, runs = 0;
    while (k < n && kc_opt.batch_runs) {
      int s = kc_strategy_find(names[k]);
      struct kc_perturb p;
      if (s < 0) break;
      kc_strategy_perturb((enum kc_strategy)s, (int)kc_gate_opt.green_sms,
                          (unsigned)kc_gate_opt.extra_shmem, 0, &p);
      if (!kc_shadow_batchable(&p) || runs + kc_gate_opt.race_runs > KC_BATCH_MAX) break;
      runs += (int)kc_gate_opt.race_runs;
      k++;
    }
    if (runs >= 2) {
      strategies_batched(ctx, &names[i], k - i, r);
      i = k;
    } else {
      strategy_alone(ctx, names[i], r);
      i++;
    }
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
    if (st && (!strcmp(st, "same") || !strcmp(st, "differs")) &&
        kc_intra_info(ctx->li, &sites, &jit_ms) == 0) {
      json_object_set_new(ctx->result, "intra_block", json_string("perturbed"));
      json_object_set_new(ctx->result, "intra_sites", json_integer(sites));
      json_object_set_new(ctx->result, "intra_jit_ms", json_real(jit_ms));
    } else {
      json_object_set_new(ctx->result, "intra_block", json_string(st ? st : "not run"));
    }
    return;
  }
}

/* ------------------------------------------------------ classification */

enum kc_order_cause kc_order_cause(struct kc_gate_ctx *ctx, json_t **detail) {
  struct kc_ptx_atomics a;
  const char *why = NULL;
  if (kc_intra_atomics(ctx->li->k, &a, &why)) {
    *detail = json_pack("{s:s}", "code", why ? why : "unavailable");
    return KC_CAUSE_UNKNOWN;
  }
  *detail = json_pack("{s:i, s:i, s:i}", "float_atomic_adds", a.float_adds, "slot_atomics",
                      a.slot_atomics, "other_atomics", a.other_atomics);
  if (a.first[0]) json_object_set_new(*detail, "first", json_string(a.first));
  return a.float_adds || a.slot_atomics ? KC_CAUSE_ATOMIC : KC_CAUSE_ACCESS;
}

const char *kc_order_cause_name(enum kc_order_cause c) {
  return c == KC_CAUSE_ATOMIC   ? "atomic-order"
         : c == KC_CAUSE_ACCESS ? "unordered-access"
                                : "unclassified";
}

int kc_rerun_not_mine(struct kc_gate_ctx *ctx, const char **cause_name) {
  const struct kc_gate *nd = NULL;
  for (int i = 0; kc_gates[i]; i++)
    if (!strcmp(kc_gates[i]->id, "nondeterminism")) nd = kc_gates[i];
  int allowed = ctx->contract && ctx->contract->nondeterminism_allowed;
  json_t *detail = NULL;
  enum kc_order_cause cause = kc_order_cause(ctx, &detail);
  *cause_name = kc_order_cause_name(cause);
  int mine = 1;
  if (cause == KC_CAUSE_ATOMIC && allowed) {
    /* What the declaration accepts: the order of atomics. */
    kc_gate_nondeterminism_allowed(ctx);
    json_object_set_new(ctx->result, "cause", json_string("atomic-order"));
    mine = 0;
  } else if (cause == KC_CAUSE_ATOMIC && nd && kc_gate_enabled(nd)) {
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
