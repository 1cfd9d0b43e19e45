/* gates/bounds.c — contract: the kernel writes nothing outside its tensors'
 * extents. One run on shadow buffers, each tensor between guard zones of a
 * known byte; a changed guard byte is a store before the start or past the
 * end of that tensor (within KC_CONTRACT_SB_GUARD bytes before it; after it, as far
 * as the application's allocation reaches past the declared extent). */
#include <stdlib.h>
#include <string.h>

#include "../include/kcheck.h"
#include "gate.h"
#include "gate_util.h"

/* First changed byte of a guard zone, or -1; its count in *count (the
 * rule the op level applies to its guard zones too). */
static long first_changed(const unsigned char *g, size_t n, size_t *count) {
  long long first;
  *count = kcheck_bytes_not_fill(g, n, KC_CONTRACT_SB_GUARD_BYTE, &first, NULL);
  return (long)first;
}

int kc_gate_bounds_run(struct kc_gate_ctx *ctx) {
  struct kc_contract_sb sb;
  if (kc_gate_sb_create(ctx, &sb) || kc_gate_sb_run(ctx, &sb, KC_FILL_POISON_A)) return 0;
  int violations = 0;
  for (int i = 0; i < sb.n; i++) {
    const struct kc_contract_sb_tensor *t = &sb.t[i];
    size_t nb = 0, na = 0;
    const unsigned char *after_zone = t->after + KC_CONTRACT_SB_GUARD + t->bytes;
    long b = first_changed(t->after, KC_CONTRACT_SB_GUARD, &nb);
    long a = first_changed(after_zone, t->tail, &na);
    if (b < 0 && a < 0) continue;
    violations++;
    /* The first corrupted byte nearest the tensor: past the end is the
     * common off-by-one; before the start is reported when only it is hit. */
    int past = a >= 0;
    const unsigned char *at = past ? after_zone + a : t->after + b;
    long rel = past ? a : b - (long)KC_CONTRACT_SB_GUARD;
    unsigned char before = KC_CONTRACT_SB_GUARD_BYTE;
    json_t *ev = json_pack("{s:s, s:s, s:i, s:s, s:I, s:I, s:I, s:i, s:i}", "tensor", t->t->v->name,
                           "side", past ? "after_end" : "before_start",
                           past ? "bytes_past_end" : "bytes_before_start", (int)(past ? rel : -rel),
                           "relative_to", past ? "end" : "start", "tensor_bytes",
                           (json_int_t)t->bytes, "changed_bytes_after", (json_int_t)na,
                           "changed_bytes_before", (json_int_t)nb, "before", before, "after", *at);
    kc_gate_violation(ctx, json_pack("{s:s, s:o}", "message",
                                     past ? "the kernel wrote past the end of a tensor"
                                          : "the kernel wrote before the start of a tensor",
                                     "evidence", kc_gate_sb_evidence(ev, &sb, i, "out_of_bounds")));
  }
  ctx->out.status = violations ? KC_GS_FAIL : KC_GS_PASS;
  json_object_set_new(ctx->result, "runs", json_integer(1));
  kc_contract_sb_free(&sb);
  return violations;
}
