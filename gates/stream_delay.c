/* gates/stream_delay.c — contract: a launch that races with an unordered
 * write on another stream (stream_races=1, libkcheck/core/streams.h) computes
 * the same bytes whether or not that write has landed. kcheck shows the
 * stream_order finding's consequence in the shadow: an identical re-run
 * first (a difference there says nothing about the ordering), then a
 * re-run with the bytes the earlier write put there zeroed, as if its
 * stream had been delayed past this launch (zero, not a poison pattern:
 * valid as an index, so the re-run itself cannot fault on it). Regions
 * the application's launch left unchanged are left out of that comparison
 * (they keep the zeros); a difference elsewhere is the changed result. A
 * kernel's write of unknown extent zeroes its allocation from the address
 * on. */
#include <stdio.h>

#include "gate.h"
#include "gate_util.h"
#include "options.h"
#include "stack.h"

int kc_gate_stream_delay_applies(const struct kc_launch_info *li) {
  return kc_opt.stream_races && li->delay.n > 0 && li->graph == NULL;
}

static int error(struct kc_gate_ctx *ctx, const char *why) {
  ctx->out.status = KC_GS_ERROR;
  json_object_set_new(ctx->result, "error", json_string(why));
  return 0;
}

int kc_gate_stream_delay_run(struct kc_gate_ctx *ctx) {
  struct kc_shadow *s = ctx->shadow;
  const struct kc_delay *d = &ctx->li->delay;
  struct kc_poison zero[KC_MAX_DELAY];
  int n = 0;
  json_t *ranges = json_array();
  for (int k = 0; k < d->n; k++)
    for (int i = 0; i < s->nregions; i++) {
      const struct kc_region *r = &s->regions[i];
      if (d->addr[k] < r->base || d->addr[k] - r->base >= r->size) continue;
      uint64_t off = d->addr[k] - r->base;
      zero[n] = (struct kc_poison){i, off, d->size[k] > 1 ? d->size[k] : r->size - off};
      char a[24];
      snprintf(a, sizeof a, "0x%llx", (unsigned long long)d->addr[k]);
      json_array_append_new(
          ranges, json_pack("{s:s, s:I}", "address", a, "size", (json_int_t)zero[n].size));
      n++;
      break;
    }
  if (!n) {
    json_decref(ranges);
    ctx->out.status = KC_GS_NOT_RUN;
    json_object_set_new(ctx->result, "reason",
                        json_string("the racing write is outside the memory the check saved"));
    return 0;
  }
  const char *why = NULL;
  static const struct kc_perturb identical = {.name = "identical"};
  json_t *ev = NULL;
  long diff = -1;
  if (kc_shadow_run(s, &identical, &why) < 0 || (diff = kc_compare_with_post(s, &ev)) != 0) {
    json_decref(ranges);
    json_decref(ev);
    if (diff <= 0) return error(ctx, why ? why : "a re-run failed");
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(ctx->result, "reason",
                        json_string("an identical re-run already differs (not reproducible)"));
    return 0;
  }
  struct kc_perturb p = {.name = "delay", .npoison = n, .poison = zero, .poison_word = 0};
  if (kc_shadow_run(s, &p, &why) < 0) {
    json_decref(ranges);
    return error(ctx, why ? why : "the delayed re-run failed");
  }
  for (int i = 0; i < n; i++)
    if (kc_shadow_region_changed(s, zero[i].region) == 0 &&
        kc_shadow_region_reset(s, zero[i].region)) {
      json_decref(ranges);
      return error(ctx, "restoring a zeroed region failed");
    }
  diff = kc_compare_with_post(s, &ev);
  json_object_set_new(ctx->result, "runs", json_integer(2));
  if (diff <= 0) {
    json_decref(ranges);
    json_decref(ev);
    if (diff < 0) return error(ctx, "comparing the delayed re-run failed");
    ctx->out.status = KC_GS_PASS; /* ordered or not, the bytes did not matter this time */
    return 0;
  }
  ctx->out.status = KC_GS_FAIL;
  char msg[256];
  snprintf(msg, sizeof msg,
           "re-run as if the unordered write by %s on stream %d had not landed yet (its bytes "
           "zeroed), this launch's result changed: the stream_order race changes results",
           d->what, d->stream);
  if (ev) {
    json_object_set_new(
        ev, "delayed",
        json_pack("{s:s, s:i, s:o}", "op", d->what, "stream", d->stream, "ranges", ranges));
    /* the earlier side's stack (taken when it was tracked), without
     * kcheck's frames: reporting symbolises it and names its line */
    if (d->stack)
      json_object_set_new(json_object_get(ev, "delayed"), "stack",
                          kc_stack_copy_without_own(d->stack));
  } else {
    json_decref(ranges);
  }
  kc_gate_violation(ctx,
                    json_pack("{s:s, s:o}", "message", msg, "evidence", ev ? ev : json_object()));
  return 1;
}
