/* libkcheck/capture/policy.h — which launches get checked: filters, the launch
 * window, the first N launches of each signature then seeded sampling, a
 * clean limit per signature, max_checks and a wall-time budget. */
#ifndef KC_POLICY_H
#define KC_POLICY_H

#include <stdint.h>

#include "launch.h"

/* Decisions that need only the kernel and the launch index (no capture):
 * NULL when the launch may be checked, else the reason it is not. */
const char *kc_policy_prefilter(const struct kc_kernel *k, uint64_t seq);
/* The launch signature: kernel, grid, block, shared memory and the
 * parameter bytes with pointer words zeroed (the shapes). */
uint64_t kc_policy_signature(const struct kc_launch_info *li);
/* Per-signature decision after capture. NULL: check it; else the reason.
 * *first_time is set when this (signature, reason) pair is new. */
const char *kc_policy_decide(uint64_t sig, int kernel_id, uint64_t seq, int *first_time);
/* How many checks of signature sig the policy has let through so far (the
 * one running included); 0 when it has none. */
long kc_policy_checks_of(uint64_t sig);
/* Records a check's outcome and cost (seconds). */
void kc_policy_record(uint64_t sig, int kernel_id, int clean, double seconds);
/* Deterministic per-launch uniform number in [0,1) from seed and seq. */
double kc_policy_uniform(uint64_t seq);
/* A check of a launch of kernel_id refused for device memory (mem_budget,
 * device_mem_budget, free memory): after
 * kernel_clean_limit of them the kernel's new signatures are only sampled,
 * as after that many clean checks. */
void kc_policy_refused(int kernel_id);
double kc_policy_check_seconds(void);

#endif
