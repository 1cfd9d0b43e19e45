/* libkcheck/policy.h — which launches get checked. Every decision not to
 * check a selected-looking launch is visible in the report as a skip. */
#ifndef KC_POLICY_H
#define KC_POLICY_H

#include <stdint.h>

#include "kernel.h"

/* NULL when the launch is selected, else the reason it is not. */
const char *kc_policy_select(const struct kc_kernel *k, uint64_t seq);
/* Deterministic per-launch uniform number in [0,1) from seed and seq. */
double kc_policy_uniform(uint64_t seq);

#endif
