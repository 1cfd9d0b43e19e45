/* gates/gate_options.h — the gates' options (rows of gate_options.def),
 * parsed with the rest of KCHECK_OPTIONS by the core's option parser. */
#ifndef KC_GATE_OPTIONS_H
#define KC_GATE_OPTIONS_H

#include "options.h"
#include "perturb.h"

struct kc_gate_options {
#define KC_OPT KC_OPT_MEMBER
#include "gate_options.def"
};

extern struct kc_gate_options kc_gate_opt;

/* The list options as parsed once with KCHECK_OPTIONS (every user reads
 * these, never the text): race_strategies in order, repeats dropped, and as
 * a bitmask (1u << strategy); gates as a bitmask over kc_gates[]. */
struct kc_strategy_list {
  int n;
  enum kc_strategy s[KC_STRAT_COUNT];
  unsigned mask;
};
extern struct kc_strategy_list kc_race_list;
/* race_no_code_strategies, likewise (may be empty: none). */
extern struct kc_strategy_list kc_race_no_code_list;
extern unsigned long long kc_gates_chosen;
/* l without the strategy s (a copy). */
struct kc_strategy_list kc_strategy_list_without(const struct kc_strategy_list *l,
                                                 enum kc_strategy s);

#endif
