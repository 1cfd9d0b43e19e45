/* libkcheck/policy.c — launch selection from the options: filters, launch
 * window, check budget and seeded sampling (replayable with the same seed). */
#include "policy.h"

#include "options.h"
#include "report.h"

double kc_policy_uniform(uint64_t seq) {
  /* splitmix64: well-mixed, so consecutive launches sample independently. */
  uint64_t z = seq + 0x9e3779b97f4a7c15ull * (uint64_t)(kc_opt.seed + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) * 0x1.0p-53;
}

const char *kc_policy_select(const struct kc_kernel *k, uint64_t seq) {
  if (k->communication) return "communication kernel (never re-run)";
  if (!k->eligible) return "kernel filtered by kernel_include/kernel_exclude";
  if (seq < (uint64_t)kc_opt.launch_skip) return "before launch_skip";
  if (kc_opt.launch_count >= 0 && seq >= (uint64_t)(kc_opt.launch_skip + kc_opt.launch_count))
    return "after launch_count";
  if (kc_opt.max_checks >= 0 && atomic_load(&kc_count.checks) >= kc_opt.max_checks)
    return "max_checks reached";
  if (kc_opt.sample < 1.0 && kc_policy_uniform(seq) >= kc_opt.sample) return "not sampled";
  return NULL;
}
