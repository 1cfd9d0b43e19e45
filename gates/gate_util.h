/* gates/gate_util.h — helpers the gates share: comparison with the
 * application's run, shadow buffers of the launch's contract, evidence. */
#ifndef KC_GATE_UTIL_H
#define KC_GATE_UTIL_H

#include <jansson.h>
#include <stdint.h>

#include "contract.h"
#include "gate.h"
#include "launch.h"
#include "perturb.h"
#include "shadow.h"
#include "shadow_buffers.h"

/* Compares the latest shadow run with post-state A. Returns the number of
 * differing 32-bit words (-1 when the comparison failed); on a difference
 * *evidence describes the first one. */
long kc_compare_with_post(struct kc_shadow *s, json_t **evidence);

/* determinism, race: when the launch's contract says `nondeterminism:
 * allowed`, sets status KC_GS_ALLOWED (nothing is run) and returns 1. */
int kc_gate_nondeterminism_allowed(struct kc_gate_ctx *ctx);
/* Creates the shadow buffers of the launch's contract; on failure returns
 * -1 with the gate's status KC_GS_INCONCLUSIVE and a `reason` where a bound
 * refused them (a budget, an overstated shape), else KC_GS_ERROR and an
 * `error`. */
int kc_gate_sb_create(struct kc_gate_ctx *ctx, struct kc_contract_sb *sb);
/* One run on the shadow buffers (inputs from the check's pre-state); on
 * failure sets status KC_GS_ERROR and frees sb. */
int kc_gate_sb_run(struct kc_gate_ctx *ctx, struct kc_contract_sb *sb, unsigned char poison);
/* Completes the evidence of coverage, immutability and bounds: the
 * verdict class, tensor i's shape and exposed_by (the application's inputs,
 * scalars, shapes, grid, block). Returns ev. */
json_t *kc_gate_sb_evidence(json_t *ev, const struct kc_contract_sb *sb, int i,
                            const char *verdict);
/* One element's bytes as evidence: {"hex": little-endian value, and for
 * fp32/fp64/int32 the number}. */
json_t *kc_gate_elem_json(const unsigned char *p, int esize, int format);
/* A multi-index as a JSON array. */
json_t *kc_gate_index_json(const int64_t *idx, int rank);
/* Whether race_strategies lists the strategy s. */
int kc_race_strategy_listed(enum kc_strategy s);

#endif
