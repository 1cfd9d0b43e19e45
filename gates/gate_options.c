/* gates/gate_options.c — registers the gates' option rows with the core's
 * parser. A constructor: the rows must be known before KCHECK_OPTIONS is
 * parsed at activation, whoever activates. */
#include "gate_options.h"

#include <string.h>

#include "gate.h"
#include "log.h"
#include "perturb.h"

struct kc_gate_options kc_gate_opt;

static const struct kc_opt_row rows[] = {
#define KC_OPT(...) KC_OPT_ROW(kc_gate_opt, __VA_ARGS__)
#include "gate_options.def"
};

struct kc_strategy_list kc_race_list;
struct kc_strategy_list kc_race_no_code_list;
unsigned long long kc_gates_chosen;

static const char *gate_at(size_t i) { return kc_gates[i]->id; }
static const char *strategy_at(size_t i) { return kc_strategy_info((enum kc_strategy)i)->name; }

struct kc_strategy_list kc_strategy_list_without(const struct kc_strategy_list *l,
                                                 enum kc_strategy s) {
  struct kc_strategy_list out = {0};
  for (int i = 0; i < l->n; i++)
    if (l->s[i] != s) out.s[out.n++] = l->s[i], out.mask |= 1u << l->s[i];
  return out;
}

/* gates and race_strategies, parsed once after every parse of the options:
 * an unknown entry, or a list that names nothing, would turn checks off
 * while the run still reads as a pass, so both are fatal. 'none' turns
 * every gate off on purpose; 'all' is every gate or strategy, in the
 * order of gates.def or perturb.def. */
static int parse_lists(void) {
  static const char *const gate_words[] = {"all", "none", NULL};
  static const char *const strategy_words[] = {"all", NULL};
  size_t ngates = 0;
  while (kc_gates[ngates])
    ngates++;
  int idx[64]; /* a bit of kc_gates_chosen per gate */
  if (ngates > 64 || KC_STRAT_COUNT > 32) {
    KC_INTERNAL_ERROR("more gates or strategies than the masks hold");
    return 1;
  }
  unsigned words = 0;
  const struct kc_list_spec gates = {"gates", "gate", gate_at, ngates, gate_words};
  int n = kc_options_list(&gates, kc_gate_opt.gates, idx, &words);
  kc_gates_chosen = 0;
  if (n >= 0) {
    for (int i = 0; i < n; i++)
      kc_gates_chosen |= 1ull << idx[i];
    if (words & 1) kc_gates_chosen = ngates >= 64 ? ~0ull : (1ull << ngates) - 1;
    if (!kc_gates_chosen && !(words & 2))
      kc_options_fatal("KCHECK_OPTIONS: gates='%s' names no gate (gates=none runs none on "
                       "purpose; `kcheck gates` lists them)",
                       kc_gate_opt.gates);
    else if (kc_gates_chosen && (words & 2))
      kc_options_fatal("KCHECK_OPTIONS: gates='%s' names gates and 'none'", kc_gate_opt.gates);
  }
  const struct kc_list_spec strategies = {"race_strategies", "race strategy", strategy_at,
                                          KC_STRAT_COUNT, strategy_words};
  memset(&kc_race_list, 0, sizeof kc_race_list);
  n = kc_options_list(&strategies, kc_gate_opt.race_strategies, idx, &words);
  if (n >= 0 && (words & 1)) {
    n = KC_STRAT_COUNT;
    for (int i = 0; i < n; i++)
      idx[i] = i;
  }
  for (int i = 0; i < n; i++) {
    kc_race_list.s[kc_race_list.n++] = (enum kc_strategy)idx[i];
    kc_race_list.mask |= 1u << idx[i];
  }
  if (n == 0)
    kc_options_fatal("KCHECK_OPTIONS: race_strategies='%s' names no strategy (the race gate "
                     "would run nothing; leave race out of gates instead)",
                     kc_gate_opt.race_strategies);
  /* race_no_code_strategies: '' (none) is a choice, not a lost list. */
  memset(&kc_race_no_code_list, 0, sizeof kc_race_no_code_list);
  const struct kc_list_spec no_code = {"race_no_code_strategies", "race strategy", strategy_at,
                                       KC_STRAT_COUNT, NULL};
  n = kc_options_list(&no_code, kc_gate_opt.race_no_code_strategies, idx, &words);
  for (int i = 0; i < n; i++) {
    kc_race_no_code_list.s[kc_race_no_code_list.n++] = (enum kc_strategy)idx[i];
    kc_race_no_code_list.mask |= 1u << idx[i];
  }
  return 0;
}

__attribute__((constructor)) static void register_rows(void) {
  if (kc_options_register(rows, sizeof rows / sizeof rows[0]) ||
      kc_options_register_check(parse_lists))
    KC_INTERNAL_ERROR("the gates' options could not be registered");
}
