/* gates/gate_options.c — registers the gates' option rows with the core's
 * parser. A constructor: the rows must be known before KCHECK_OPTIONS is
 * parsed at activation, whoever activates. */
#include "gate_options.h"

#include "log.h"

struct kc_gate_options kc_gate_opt;

static const struct kc_opt_row rows[] = {
#define KC_OPT(...) KC_OPT_ROW(kc_gate_opt, __VA_ARGS__)
#include "gate_options.def"
};

__attribute__((constructor)) static void register_rows(void) {
  if (kc_options_register(rows, sizeof rows / sizeof rows[0]))
    KC_INTERNAL_ERROR("the gates' options could not be registered");
}
