/* gates/uninit.c — contract: a kernel node of a replayed CUDA graph gives
 * the same bytes when the allocations nothing has touched since they were
 * allocated hold other contents (graph_uninit=1; libkcheck/capture/uninit.h says
 * what touches one): its result does not depend on never-initialised
 * memory. An identical re-run first (a node that differs without poison is
 * the determinism gate's to judge), then a run with those allocations
 * poison-filled; they are left out of that comparison, since they keep the
 * poison wherever the node does not write. Only allocations the
 * application's launch left unchanged are poisoned (a node's outputs are
 * written, not read). */
#include <stdio.h>

#include "gate.h"
#include "gate_util.h"
#include "options.h"
#include "uninit.h"

#define MAXPOISON 64
/* A quiet NaN as fp32, a large value as an integer: unlike fresh memory's
 * zeros, it changes what any read of it computes. */
#define POISON ((unsigned)KC_FILL_UNINIT_WORD)

int kc_gate_uninit_applies(const struct kc_launch_info *li) {
  return kc_opt.graph_uninit && li->graph != NULL;
}

static int error(struct kc_gate_ctx *ctx, const char *why) {
  ctx->out.status = KC_GS_ERROR;
  json_object_set_new(ctx->result, "error", json_string(why));
  return 0;
}

int kc_gate_uninit_run(struct kc_gate_ctx *ctx) {
  struct kc_shadow *s = ctx->shadow;
  int idx[MAXPOISON], n = 0;
  struct kc_poison poison[MAXPOISON];
  json_t *untouched = json_array();
  for (int i = 0; i < s->nregions && n < MAXPOISON; i++) {
    if (kc_shadow_region_changed(s, i) != 0 || !kc_uninit_untouched(s->regions[i].base)) continue;
    poison[n] = (struct kc_poison){i, 0, s->regions[i].size};
    idx[n++] = i;
    char a[24];
    snprintf(a, sizeof a, "0x%llx", (unsigned long long)s->regions[i].base);
    json_array_append_new(untouched, json_pack("{s:s, s:I}", "allocation", a, "size",
                                               (json_int_t)s->regions[i].size));
  }
  json_object_set_new(ctx->result, "untouched", json_integer(n));
  if (!n) {
    json_decref(untouched);
    ctx->out.status = KC_GS_PASS;
    return 0;
  }
  const char *why = NULL;
  static const struct kc_perturb identical = {.name = "identical"};
  json_t *ev = NULL;
  if (kc_shadow_run(s, &identical, &why) < 0) {
    json_decref(untouched);
    return error(ctx, why ? why : "a re-run failed");
  }
  long d = kc_compare_with_post(s, &ev);
  if (d != 0) {
    json_decref(untouched);
    json_decref(ev);
    if (d < 0) return error(ctx, "comparing a re-run failed");
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(ctx->result, "reason",
                        json_string("an identical re-run already differs (not reproducible)"));
    return 0;
  }
  struct kc_perturb p = {.name = "poison", .npoison = n, .poison = poison, .poison_word = POISON};
  if (kc_shadow_run(s, &p, &why) < 0) {
    json_decref(untouched);
    return error(ctx, why ? why : "the poisoned run failed");
  }
  for (int i = 0; i < n; i++)
    if (kc_shadow_region_reset(s, idx[i])) {
      json_decref(untouched);
      return error(ctx, "restoring a poisoned allocation failed");
    }
  d = kc_compare_with_post(s, &ev);
  json_object_set_new(ctx->result, "runs", json_integer(2));
  if (d <= 0) {
    json_decref(untouched);
    json_decref(ev);
    if (d < 0) return error(ctx, "comparing the poisoned run failed");
    ctx->out.status = KC_GS_PASS;
    return 0;
  }
  ctx->out.status = KC_GS_FAIL;
  if (ev)
    json_object_set_new(ev, "untouched", untouched);
  else
    json_decref(untouched);
  kc_gate_violation(
      ctx, json_pack("{s:s, s:o}", "message",
                     "with the memory nothing has written since it was allocated poison-filled, "
                     "this kernel node's result changed: it reads never-initialised memory",
                     "evidence", ev ? ev : json_object()));
  return 1;
}
