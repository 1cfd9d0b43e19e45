/* gates/gate_options.h — the gates' options (rows of gate_options.def),
 * parsed with the rest of KCHECK_OPTIONS by the core's option parser. */
#ifndef KC_GATE_OPTIONS_H
#define KC_GATE_OPTIONS_H

#include "options.h"

struct kc_gate_options {
#define KC_OPT KC_OPT_MEMBER
#include "gate_options.def"
};

extern struct kc_gate_options kc_gate_opt;

#endif
