/* test/fuzz/fuzz_options.c — libFuzzer harness for KCHECK_OPTIONS parsing:
 * any spec is parsed from the defaults; every value stored must lie in its
 * row's range (a value outside means a silent change of meaning: abort). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kc_verbosity = -1;
  char *spec = malloc(size + 1);
  if (!spec) return 0;
  memcpy(spec, data, size);
  spec[size] = 0;
  kc_options_parse(spec, "fuzz", 1);
  free(spec);
  /* The core's ranges, restated: a parse that stores outside them is a bug. */
  if (kc_opt.verbosity < 0 || kc_opt.verbosity > 3 || kc_opt.trace < 0 || kc_opt.trace > 2 ||
      !(kc_opt.sample >= 0 && kc_opt.sample <= 1) ||
      !(kc_opt.time_budget >= 0 && kc_opt.time_budget <= 1) || kc_opt.exitcode < 0 ||
      kc_opt.exitcode > 255 || kc_opt.mem_budget > (1ull << 50) || kc_opt.launch_count < -1 ||
      kc_opt.check_first < 0 || kc_opt.check_lock_ms < 0)
    abort();
  return 0;
}
