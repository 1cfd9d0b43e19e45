/* test/unit/test_options.c — KCHECK_OPTIONS parsing: defaults, types,
 * sizes, bad values keep the default, unknown keys counted, the rows'
 * ranges, and a table registered by another layer parsed with the core's. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "options.h"

/* A layer's own rows, as gates/ and contract/ register theirs. */
#define TEST_ROWS(X)                                                                               \
  X(INT, t_runs, 2, 1, 8, "runs")                                                                  \
  X(DOUBLE, t_frac, 0.5, 0, 1, "fraction")                                                         \
  X(SIZE, t_bytes, "1K", KC_ANY, 4096, "bytes")                                                    \
  X(STR, t_name, "x", KC_ANY, KC_ANY, "name")
static struct { TEST_ROWS(KC_OPT_MEMBER) } topt;
static const struct kc_opt_row trows[] = {
#define T_ROW(...) KC_OPT_ROW(topt, __VA_ARGS__)
    TEST_ROWS(T_ROW)};

int main(void) {
  CHECK(kc_options_register(trows, sizeof trows / sizeof trows[0]) == 0);
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
  /* Ranges of the core's rows: inclusive bounds, outside keeps the value. */
  CHECK(kc_options_parse("sample=1:exitcode=255:trace=0", "test", 1) == 0 && kc_opt.sample == 1.0 &&
        kc_opt.exitcode == 255);
  CHECK(kc_options_parse("exitcode=256", "test", 0) == 1 && kc_opt.exitcode == 255);
  CHECK(kc_options_parse("trace=-1", "test", 0) == 1 && kc_opt.trace == 0);
  CHECK(kc_options_parse("launch_count=-7", "test", 0) == 0 && kc_opt.launch_count == -7);
  /* The registered table: defaults, values, ranges, help and "did you mean". */
  CHECK(topt.t_runs == 2 && topt.t_frac == 0.5 && topt.t_bytes == 1024 &&
        !strcmp(topt.t_name, "x"));
  CHECK(kc_options_parse("t_runs=8:t_frac=0:t_bytes=4K:t_name=yz:trace=1", "test", 0) == 0);
  CHECK(topt.t_runs == 8 && topt.t_frac == 0 && topt.t_bytes == 4096 &&
        !strcmp(topt.t_name, "yz") && kc_opt.trace == 1);
  CHECK(kc_options_parse("t_runs=0:t_runs=9:t_frac=1.01:t_bytes=5K", "test", 0) == 4);
  CHECK(topt.t_runs == 8 && topt.t_frac == 0 && topt.t_bytes == 4096);
  CHECK(kc_options_parse("t_rnus=3", "test", 0) == 1 && topt.t_runs == 8);
  CHECK(kc_options_parse(NULL, "test", 1) == 0 && topt.t_runs == 2 && !strcmp(topt.t_name, "x"));
  return CHECK_DONE("options");
}
