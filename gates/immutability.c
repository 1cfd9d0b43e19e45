/* gates/immutability.c — contract: tensors declared `role: in` are
 * bytewise unchanged by the kernel. One run on shadow buffers; every
 * logical element of each input is compared with what it held before. */
#include <stdlib.h>
#include <string.h>

#include "../include/kcheck.h"
#include "gate.h"
#include "gate_util.h"

struct scan {
  const struct kc_contract_sb_tensor *t;
  uint64_t count, first_off;
  int64_t idx[KC_CONTRACT_MAX_RANK];
  int rank;
};

static int visit(void *ctx, const int64_t *idx, int rank, uint64_t off) {
  struct scan *s = ctx;
  size_t at = KC_CONTRACT_SB_GUARD + off;
  unsigned es = (unsigned)s->t->esize; /* one element, by the op level's rule */
  if (!kcheck_bytes_changed(s->t->before + at, s->t->after + at, es, es, NULL, NULL)) return 0;
  if (!s->count++) {
    memcpy(s->idx, idx, (size_t)rank * sizeof *idx);
    s->rank = rank;
    s->first_off = off;
  }
  return 0;
}

int kc_gate_immutability_run(struct kc_gate_ctx *ctx) {
  struct kc_contract_sb sb;
  if (kc_gate_sb_create(ctx, &sb) || kc_gate_sb_run(ctx, &sb, KC_FILL_POISON_A)) return 0;
  int violations = 0;
  for (int i = 0; i < sb.n; i++) {
    const struct kc_contract_sb_tensor *t = &sb.t[i];
    if (t->role != KC_ROLE_IN) continue;
    struct scan s = {t, 0, 0, {0}, 0};
    kc_contract_sb_each_element(t, visit, &s);
    if (!s.count) continue;
    violations++;
    int fmt = t->t->v->tensor.format;
    size_t at = KC_CONTRACT_SB_GUARD + s.first_off;
    json_t *ev = json_pack("{s:s, s:o, s:I, s:o, s:o}", "tensor", t->t->v->name, "index",
                           kc_gate_index_json(s.idx, s.rank), "changed", (json_int_t)s.count,
                           "before", kc_gate_elem_json(t->before + at, t->esize, fmt), "after",
                           kc_gate_elem_json(t->after + at, t->esize, fmt));
    kc_gate_violation(ctx, json_pack("{s:s, s:o}", "message",
                                     "the kernel wrote into a tensor declared role: in", "evidence",
                                     kc_gate_sb_evidence(ev, &sb, i, "input_modified")));
  }
  ctx->out.status = violations ? KC_GS_FAIL : KC_GS_PASS;
  json_object_set_new(ctx->result, "runs", json_integer(1));
  kc_contract_sb_free(&sb);
  return violations;
}
