/* gates/registry.c — the gate registry from gates.def, the gates option,
 * and `kcheck gates` output. */
#include <stdio.h>

#include "gate.h"
#include "gate_options.h"
#include "log.h"

#define KC_GATE(id, sev, needs, contract)                                                          \
  const struct kc_gate kc_gate_##id = {#id, sev, needs, contract, kc_gate_##id##_run};
#include "gates.def"
#undef KC_GATE

const struct kc_gate *const kc_gates[] = {
#define KC_GATE(id, sev, needs, contract) &kc_gate_##id,
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

void kc_gates_print(void) {
  fprintf(stderr, "kcheck: gates (KCHECK_OPTIONS=gates=id,id...):\n");
  for (size_t i = 0; i < NGATES; i++)
    fprintf(stderr, "kcheck:   %-12s %-6s %s%s\n", kc_gates[i]->id, kc_gates[i]->severity,
            kc_gates[i]->contract, kc_gates[i]->needs_contract ? " (needs a contract)" : "");
}

/* Public API (kcheck.h): the gate table, for `kcheck gates`. */
__attribute__((visibility("default"))) void kcheck_print_gates(void);
__attribute__((visibility("default"))) void kcheck_print_gates(void) { kc_gates_print(); }
