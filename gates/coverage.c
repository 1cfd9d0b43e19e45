/* gates/coverage.c — contract: the kernel writes every element of every
 * output tensor. Two runs on shadow buffers whose outputs start as two
 * different poison fills; an element that differs between them was not
 * written (a written element gets the same value from the same inputs).
 * Under `nondeterminism: allowed` written elements may differ too, so there
 * an element is unwritten when it kept the poison of both runs. */
#include <stdlib.h>
#include <string.h>

#include "../include/kcheck.h"
#include "gate.h"
#include "gate_util.h"

#define POISON_A KC_FILL_POISON_A
#define POISON_B KC_FILL_POISON_B

struct scan {
  const struct kc_contract_sb_tensor *t;
  const unsigned char *first_run; /* run A's tensor bytes */
  uint64_t count;
  int64_t idx[KC_CONTRACT_MAX_RANK];
  int rank;
  /* The contract allows nondeterminism: two runs may differ anywhere, so an
   * element counts as unwritten only when it kept each run's poison. */
  int nondeterministic;
};

static int visit(void *ctx, const int64_t *idx, int rank, uint64_t off) {
  struct scan *s = ctx;
  const unsigned char *b = s->t->after + KC_CONTRACT_SB_GUARD + off;
  const unsigned char *a = s->first_run + off;
  /* One element: the rule the op level applies to its host copies too. */
  unsigned es = (unsigned)s->t->esize;
  if (!kcheck_bytes_unwritten(a, b, es, es, POISON_A, POISON_B, s->nondeterministic, NULL, NULL))
    return 0;
  if (!s->count++) {
    memcpy(s->idx, idx, (size_t)rank * sizeof *idx);
    s->rank = rank;
  }
  return 0;
}

int kc_gate_coverage_run(struct kc_gate_ctx *ctx) {
  struct kc_contract_sb sb;
  if (kc_gate_sb_create(ctx, &sb) || kc_gate_sb_run(ctx, &sb, POISON_A)) return 0;
  /* Keep run A's output bytes: run B reuses the host buffers. */
  unsigned char *first[64] = {0};
  int ok = 1;
  for (int i = 0; i < sb.n && ok; i++) {
    if (sb.t[i].role != KC_ROLE_OUT || !sb.t[i].bytes) continue;
    first[i] = malloc(sb.t[i].bytes);
    if (first[i])
      memcpy(first[i], sb.t[i].after + KC_CONTRACT_SB_GUARD, sb.t[i].bytes);
    else
      ok = 0;
  }
  int violations = 0;
  if (ok && !kc_gate_sb_run(ctx, &sb, POISON_B)) {
    json_t *tensors = json_object();
    for (int i = 0; i < sb.n; i++) {
      if (!first[i]) continue;
      struct scan s = {&sb.t[i], first[i], 0, {0}, 0, ctx->contract->nondeterminism_allowed};
      kc_contract_sb_each_element(&sb.t[i], visit, &s);
      json_object_set_new(tensors, sb.t[i].t->v->name, json_integer((json_int_t)s.count));
      if (!s.count) continue;
      violations++;
      json_t *ev = json_pack("{s:s, s:o, s:I, s:[ii]}", "tensor", sb.t[i].t->v->name,
                             "first_unwritten", kc_gate_index_json(s.idx, s.rank), "unwritten",
                             (json_int_t)s.count, "poison", POISON_A, POISON_B);
      kc_gate_violation(ctx,
                        json_pack("{s:s, s:o}", "message",
                                  "output elements were not written (they kept the poison fill)",
                                  "evidence", kc_gate_sb_evidence(ev, &sb, i, "unwritten")));
    }
    json_object_set_new(ctx->result, "unwritten", tensors);
    ctx->out.status = violations ? KC_GS_FAIL : KC_GS_PASS;
    json_object_set_new(ctx->result, "runs", json_integer(2));
    kc_contract_sb_free(&sb);
  } else if (!ok) {
    ctx->out.status = KC_GS_ERROR;
    json_object_set_new(ctx->result, "error", json_string("out of host memory"));
    kc_contract_sb_free(&sb);
  }
  for (int i = 0; i < 64; i++)
    free(first[i]);
  return violations;
}
