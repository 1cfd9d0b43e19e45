/* test/unit/test_options.c — KCHECK_OPTIONS parsing: defaults, types,
 * sizes, bad values keep the default, unknown keys counted. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "options.h"

int main(void) {
  CHECK(kc_options_parse(NULL, "test", 1) == 0);
  CHECK(!strcmp(kc_opt.log_path, "kcheck"));
  CHECK(kc_opt.trace == 0 && kc_opt.sample == 0.0 && kc_opt.launch_count == -1 &&
        kc_opt.check_first == 1);
  CHECK(kc_opt.mem_budget == 4ull << 30);
  CHECK(kc_options_parse("trace=2:sample=0.25:log_path=/tmp/x:mem_budget=512M:strict=1", "test",
                         1) == 0);
  CHECK(kc_opt.trace == 2 && kc_opt.sample == 0.25 && kc_opt.strict == 1);
  CHECK(!strcmp(kc_opt.log_path, "/tmp/x") && kc_opt.mem_budget == 512ull << 20);
  /* Bad values: reported, previous value kept. */
  CHECK(kc_options_parse("trace=lots", "test", 0) == 1 && kc_opt.trace == 2);
  CHECK(kc_options_parse("sample=1.5", "test", 0) == 1 && kc_opt.sample == 0.25);
  CHECK(kc_options_parse("mem_budget=12Q", "test", 0) == 1 && kc_opt.mem_budget == 512ull << 20);
  CHECK(kc_options_parse("log_path=/tmp/y:halt_on_error=maybe", "test", 0) == 1);
  CHECK(!strcmp(kc_opt.log_path, "/tmp/y") && kc_opt.halt_on_error == 0);
  /* Unknown keys and malformed pairs are problems, the rest still applies. */
  CHECK(kc_options_parse("trcae=1:verbosity=3:justakey", "test", 1) == 2 && kc_opt.verbosity == 3);
  CHECK(kc_edit_distance("trcae", "trace") == 2);
  CHECK(kc_edit_distance("sampel", "sample") == 2);
  CHECK(kc_edit_distance("", "abc") == 3);
  /* Empty pairs are tolerated (trailing ':'). */
  CHECK(kc_options_parse("trace=1::", "test", 1) == 0 && kc_opt.trace == 1);
  return CHECK_DONE("options");
}
