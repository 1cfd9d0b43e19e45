/* contract/contract_options.h — the contracts' options (rows of
 * contract_options.def), parsed with the rest of KCHECK_OPTIONS by the
 * core's option parser; registered by contract/contract_load.c. */
#ifndef KC_CONTRACT_OPTIONS_H
#define KC_CONTRACT_OPTIONS_H

#include "options.h"

struct kc_contract_options {
#define KC_OPT KC_OPT_MEMBER
#include "contract_options.def"
};

extern struct kc_contract_options kc_contract_opt;

#endif
