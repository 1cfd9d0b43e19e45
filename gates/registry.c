/* gates/registry.c — the gate registry from gates.def, the gates option,
 * and `kcheck gates` output. */
#include <stdio.h>

#include "gate.h"
#include "gate_options.h"
#include "log.h"

/* A trials gate's row points at its kc_gate_<id>_trials (a missing one
 * fails to link); every other op has none. */
#define KC_TRIALS_none(id) NULL
#define KC_TRIALS_oracle(id) NULL
#define KC_TRIALS_inputs(id) NULL
#define KC_TRIALS_trials(id) kc_gate_##id##_trials
#define KC_TRIALS_poison(id) NULL
#define KC_TRIALS_guards(id) NULL
#define KC_TRIALS_shapes(id) NULL
#define KC_TRIALS_documented(id) NULL
#define KC_TRIALS_layouts(id) NULL
/* (The parameters are not named as the fields they set, which the
 * designators name.) */
#define KC_GATE(gid, sev, needs, how, kev, oev, text)                                              \
  const struct kc_gate kc_gate_##gid = {.id = #gid,                                                \
                                        .severity = sev,                                           \
                                        .needs_contract = needs,                                   \
                                        .op = KC_GATE_OP_##how,                                    \
                                        .kernel_evidence = kev,                                    \
                                        .op_evidence = oev,                                        \
                                        .contract = text,                                          \
                                        .run = kc_gate_##gid##_run,                                \
                                        .trials = KC_TRIALS_##how(gid),                            \
                                        .applies = kc_gate_##gid##_applies};
#include "gates.def"
#undef KC_GATE

const struct kc_gate *const kc_gates[] = {
#define KC_GATE(id, sev, needs, op, kev, oev, contract) &kc_gate_##id,
#include "gates.def"
#undef KC_GATE
    NULL};

#define NGATES (sizeof kc_gates / sizeof kc_gates[0] - 1)
static unsigned char enabled[NGATES];

int kc_gates_init(void) {
  /* gates was parsed with the options (gate_options.c): an unknown or
   * empty list ended the process there, so none here means gates=none. */
  int any = 0;
  for (size_t i = 0; i < NGATES; i++) {
    enabled[i] = (kc_gates_chosen >> i) & 1;
    any |= enabled[i];
  }
  return any ? 0 : -1;
}

int kc_gate_enabled(const struct kc_gate *g) {
  for (size_t i = 0; i < NGATES; i++)
    if (kc_gates[i] == g) return enabled[i];
  return 0;
}

const char *kc_gate_op_name(enum kc_gate_op op) {
  static const char *const names[] = {"none",   "oracle", "inputs",     "trials", "poison",
                                      "guards", "shapes", "documented", "layouts"};
  return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

int kc_gate_at_kernel_level(const struct kc_gate *g) {
  return g->kernel_evidence && g->kernel_evidence[0];
}

void kc_gates_print(void) {
  fprintf(stderr, "kcheck: gates (KCHECK_OPTIONS=gates=id,id...):\n");
  for (size_t i = 0; i < NGATES; i++) {
    const struct kc_gate *g = kc_gates[i];
    fprintf(stderr, "kcheck:   %-12s %-6s %s%s (%s)\n", g->id, g->severity, g->contract,
            g->needs_contract ? " (needs a contract)" : "",
            g->op == KC_GATE_OP_none      ? "kernel level"
            : !kc_gate_at_kernel_level(g) ? "op level: not applicable to launches"
                                          : "kernel and op level");
  }
}

/* Public API (kcheck.h): the gate table, for `kcheck gates`. */
__attribute__((visibility("default"))) void kcheck_print_gates(void);
__attribute__((visibility("default"))) void kcheck_print_gates(void) { kc_gates_print(); }
