/* gates/gate_util.c — helpers the gates share (gate_util.h): a contract's
 * nondeterminism, the launch's shadow buffers, evidence as JSON. */
#include "gate_util.h"

#include <stdio.h>
#include <string.h>

#include "gate_options.h"
#include "trial.h"

int kc_gate_nondeterminism_allowed(struct kc_gate_ctx *ctx) {
  const struct kc_contract *c = ctx->contract;
  if (!c || !c->nondeterminism_allowed) return 0;
  ctx->out.status = KC_GS_ALLOWED;
  json_object_set_new(ctx->result, "contract", json_string(c->where));
  json_object_set_new(ctx->result, "reason",
                      json_string("the contract declares nondeterminism: allowed"));
  return 1;
}

static void gate_error(struct kc_gate_ctx *ctx, const char *why) {
  ctx->out.status = KC_GS_ERROR;
  json_object_set_new(ctx->result, "error", json_string(why));
}

int kc_gate_sb_create(struct kc_gate_ctx *ctx, struct kc_contract_sb *sb) {
  char err[256] = "";
  const struct kc_contract *c = ctx->contract;
  if (!c) {
    gate_error(ctx, "no contract");
    return -1;
  }
  json_object_set_new(ctx->result, "contract", json_string(c->where));
  int r = kc_contract_sb_create(sb, ctx->li, c, err, sizeof err);
  if (r > 0) {
    /* Refused by a bound (a budget, an overstated shape) before any
     * allocation: not a failure of the gate, a check it did not make. */
    ctx->out.status = KC_GS_INCONCLUSIVE;
    json_object_set_new(ctx->result, "reason", json_string(err));
    return -1;
  }
  if (r) {
    gate_error(ctx, err);
    return -1;
  }
  return 0;
}

int kc_gate_sb_run(struct kc_gate_ctx *ctx, struct kc_contract_sb *sb, unsigned char poison) {
  char err[256] = "";
  if (kc_contract_sb_run(sb, ctx->shadow, poison, err, sizeof err)) {
    gate_error(ctx, err);
    kc_contract_sb_free(sb);
    return -1;
  }
  return 0;
}

json_t *kc_gate_sb_evidence(json_t *ev, const struct kc_contract_sb *sb, int i,
                            const char *verdict) {
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
  if (format == OC_FP32 && esize == 4) {
    float v;
    memcpy(&v, p, 4);
    json_object_set_new(o, "value", json_real((double)v));
  } else if (format == OC_FP64 && esize == 8) {
    double v;
    memcpy(&v, p, 8);
    json_object_set_new(o, "value", json_real(v));
  } else if (format == KC_FMT_INT32 && esize == 4) {
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

int kc_race_strategy_listed(enum kc_strategy s) { return (kc_race_list.mask >> s) & 1; }
