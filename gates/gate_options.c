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

/* Warns about each item of the ','-separated list that is not in
 * known[0..n) (nor an extra word), naming the nearest known one. */
static int check_list(const char *option, const char *noun, const char *list,
                      const char *(*name_at)(size_t), size_t n, const char *const *extra) {
  int problems = 0;
  for (const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char item[64];
    snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
    int known = len == 0;
    const char *best = "?";
    size_t bestd = (size_t)-1;
    for (size_t i = 0; extra && extra[i]; i++)
      known |= !strcmp(item, extra[i]);
    for (size_t i = 0; i < n; i++) {
      known |= !strcmp(item, name_at(i));
      size_t d = kc_edit_distance(item, name_at(i));
      if (d < bestd) bestd = d, best = name_at(i);
    }
    if (!known) {
      kc_log_printf(KC_LOG_WARN,
                    "KCHECK_OPTIONS: %s: unknown %s '%s' (did you mean '%s'?); ignored", option,
                    noun, item, best);
      problems++;
    }
    if (!comma) break;
    p = comma + 1;
  }
  return problems;
}

static const char *gate_at(size_t i) { return kc_gates[i]->id; }
static const char *strategy_at(size_t i) { return kc_strategy_info((enum kc_strategy)i)->name; }

static int check_lists(void) {
  static const char *const gate_words[] = {"all", "none", NULL};
  size_t ngates = 0, nstrat = KC_STRAT_COUNT;
  while (kc_gates[ngates])
    ngates++;
  return check_list("gates", "gate", kc_gate_opt.gates, gate_at, ngates, gate_words) +
         check_list("race_strategies", "race strategy", kc_gate_opt.race_strategies, strategy_at,
                    nstrat, NULL) +
         check_list("race_no_code_strategies", "race strategy", kc_gate_opt.race_no_code_strategies,
                    strategy_at, nstrat, NULL);
}

__attribute__((constructor)) static void register_rows(void) {
  if (kc_options_register(rows, sizeof rows / sizeof rows[0]) ||
      kc_options_register_check(check_lists))
    KC_INTERNAL_ERROR("the gates' options could not be registered");
}
