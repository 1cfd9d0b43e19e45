/* gates/gate.h — the fixed interface of every gate, the registry built
 * from gates.def, and the helpers gates share (comparison, violations). */
#ifndef KC_GATE_H
#define KC_GATE_H

#include <jansson.h>

#include "contract.h"
#include "launch.h"
#include "shadow.h"
#include "shadow_buffers.h"

struct kc_gate_ctx {
  struct kc_launch_info *li;
  struct kc_shadow *shadow;
  json_t *result; /* this gate's entry in the check record: status, runs, ... */
};

struct kc_gate {
  const char *id;
  const char *severity;
  int needs_contract;
  const char *contract;
  /* Whether the gate applies to this launch (NULL: always). */
  int (*applies)(const struct kc_launch_info *li);
  /* Runs the gate; returns the number of violations it reported. */
  int (*run)(struct kc_gate_ctx *ctx);
};

#define KC_GATE(id, sev, needs, contract) extern const struct kc_gate kc_gate_##id;
#include "gates.def"
#undef KC_GATE

/* All gates, in registry order, NULL-terminated. */
extern const struct kc_gate *const kc_gates[];

/* Parses the gates option; 0 when at least one gate is enabled. Unknown
 * names are warned about with the nearest valid one. */
int kc_gates_init(void);
int kc_gate_enabled(const struct kc_gate *g);
/* The check hook: runs every enabled gate on one selected launch. */
CUresult kc_gates_check(struct kc_launch_info *li);
/* Prints the registry (id, severity, contract). */
void kc_gates_print(void);

/* Compares the latest shadow run with post-state A. Returns the number of
 * differing 32-bit words (-1 when the comparison failed); on a difference
 * *evidence describes the first one. */
long kc_compare_with_post(struct kc_shadow *s, json_t **evidence);
/* Emits a violation of gate g for this launch (adds kernel, launch,
 * signature, seed, stack). Takes ownership of details. */
void kc_gate_violation(const struct kc_gate *g, const struct kc_launch_info *li, json_t *details);

/* Contract gates: applies() of every gate that needs a contract (the
 * launch's kernel has one). */
int kc_gate_has_contract(const struct kc_launch_info *li);
/* Creates the shadow buffers of the launch's contract; on failure sets the
 * gate's status to "error" with the reason and returns -1. */
int kc_gate_sb_create(struct kc_gate_ctx *ctx, struct kc_sb *sb);
/* One run on the shadow buffers (inputs from the check's pre-state); on
 * failure sets status "error" and frees sb. */
int kc_gate_sb_run(struct kc_gate_ctx *ctx, struct kc_sb *sb, unsigned char poison);
/* One element's bytes as evidence: {"hex": little-endian value, and for
 * fp32/fp64/int32 the number}. */
json_t *kc_gate_elem_json(const unsigned char *p, int esize, int format);
/* A multi-index as a JSON array. */
json_t *kc_gate_index_json(const int64_t *idx, int rank);

#endif
