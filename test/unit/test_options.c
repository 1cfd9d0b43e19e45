/* test/unit/test_options.c — KCHECK_OPTIONS parsing: defaults, types,
 * sizes, bad values keep the default, unknown keys counted, the rows'
 * ranges, and a table registered by another layer parsed with the core's. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "log.h"
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

/* List options are parsed once into indices; an unknown entry or a list
 * that names nothing is fatal (counted, one line each), "all"/"none" are
 * reported as words, repeats and empty entries dropped. */
static const char *const fruits[] = {"apple", "pear", "plum"};
static const char *fruit_at(size_t i) { return fruits[i]; }
static void test_lists(void) {
  static const char *const words[] = {"all", "none", NULL};
  const struct kc_list_spec s = {"fruits", "fruit", fruit_at, 3, words};
  int idx[3];
  unsigned w = 7;
  kc_options_fatal_reset();
  CHECK(kc_options_list(&s, "plum,apple,plum,", idx, &w) == 2 && idx[0] == 2 && idx[1] == 0 &&
        w == 0);
  CHECK(kc_options_list(&s, "all", idx, &w) == 0 && w == 1);
  CHECK(kc_options_list(&s, "none", idx, &w) == 0 && w == 2);
  CHECK(kc_options_list(&s, "", idx, &w) == 0 && w == 0);
  CHECK(kc_options_fatal_count() == 0);
  /* "pea" is no prefix match, "plumm" no near match: each is fatal. */
  CHECK(kc_options_list(&s, "pea,apple,plumm", idx, &w) == -1);
  CHECK(kc_options_fatal_count() == 2);
  /* Entries longer than a name never match it by prefix. */
  CHECK(kc_options_list(&s, "applesauce", idx, &w) == -1 && kc_options_fatal_count() == 3);
  kc_options_fatal_reset();
  CHECK(kc_options_fatal_count() == 0);
  /* The core's own filters: a regex that cannot be used, and a
   * kernel_include of nothing but commas, are fatal at init. */
  setenv("KCHECK_OPTIONS", "kernel_include_regex=(a", 1);
  kc_options_init();
  CHECK(kc_options_fatal_count() == 1);
  setenv("KCHECK_OPTIONS", "kernel_include=,,", 1);
  kc_options_init();
  CHECK(kc_options_fatal_count() == 1);
  setenv("KCHECK_OPTIONS", "kernel_include=gemm,:kernel_exclude_regex=^void foo", 1);
  kc_options_init();
  CHECK(kc_options_fatal_count() == 0);
  unsetenv("KCHECK_OPTIONS");
  /* The front end's check before a run: the same verdicts, from a spec. */
  CHECK(kc_options_validate("kernel_include_regex=(a:kernel_include=,") == 2);
  CHECK(kc_options_validate("trcae=1:kernel_include=gemm") == 0);
  CHECK(!strcmp(kc_opt.kernel_include, "gemm"));
  kc_verbosity = 0; /* the fuzz's warnings are expected */
}

/* The report's silent changes of meaning: each is now refused, with the
 * value kept. */
static void test_values(void) {
  CHECK(kc_options_parse(NULL, "test", 1) == 0);
  static const char *const bad[] = {"mem_budget=99999999999T",
                                    "mem_budget=inf",
                                    "mem_budget=1e20",
                                    "mem_budget=nan",
                                    "mem_budget=-1",
                                    "mem_budget=0.3",
                                    "mem_budget=2P",
                                    "sample=nan",
                                    "sample=inf",
                                    "time_budget=-inf",
                                    "verbosity=7",
                                    "trace=3",
                                    "launch_skip=-5",
                                    "seed=9223372036854775808",
                                    "check_first=1e3",
                                    "exitcode=256",
                                    "check_first=010x",
                                    "verbosity=",
                                    "mem_budget=",
                                    NULL};
  for (int i = 0; bad[i]; i++) {
    int p = kc_options_parse(bad[i], "test", 0);
    if (p != 1) fprintf(stderr, "  accepted: %s\n", bad[i]);
    CHECK(p == 1);
  }
  CHECK(kc_opt.mem_budget == 4ull << 30 && kc_opt.sample == 0.0 && kc_opt.verbosity == 1);
  CHECK(kc_options_parse("seed=9223372036854775807:mem_budget=1.5K:check_first=010", "test", 0) ==
        0);
  CHECK(kc_opt.seed == INT64_MAX && kc_opt.mem_budget == 1536 && kc_opt.check_first == 10);
}

/* A few hundred random values per core option: either refused (counted,
 * the value unchanged) or stored exactly as the text means. */
static unsigned long long rng = 88172645463325252ull;
static unsigned long long next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static void random_value(char *buf, size_t n) {
  static const char *const pieces[] = {"0",
                                       "1",
                                       "-1",
                                       "7",
                                       "1e3",
                                       "0x10",
                                       "inf",
                                       "nan",
                                       "-0",
                                       "1.5",
                                       "K",
                                       "M",
                                       "G",
                                       "T",
                                       "B",
                                       "P",
                                       "e",
                                       "99999999999999999999",
                                       ".",
                                       "+",
                                       "9223372036854775807",
                                       "-9223372036854775808",
                                       "18446744073709551615",
                                       " ",
                                       "abc",
                                       "true",
                                       "no",
                                       "0.25",
                                       "1e308",
                                       "1e-308",
                                       ":",
                                       "=",
                                       "4294967296",
                                       "2147483648"};
  size_t k = 1 + next() % 3, at = 0;
  buf[0] = 0;
  for (size_t i = 0; i < k; i++)
    at +=
        (size_t)snprintf(buf + at, n - at, "%s", pieces[next() % (sizeof pieces / sizeof *pieces)]);
}

static void test_fuzz(void) {
  const char *const names[] = {"verbosity",   "trace",      "launch_skip", "launch_count",
                               "check_first", "sample",     "time_budget", "seed",
                               "max_checks",  "mem_budget", "exitcode",    "check_lock_ms",
                               "save_all",    NULL};
  struct kc_options before;
  int silent = 0;
  for (int i = 0; names[i]; i++) {
    for (int t = 0; t < 300; t++) {
      char val[128], spec[192];
      random_value(val, sizeof val);
      if (strchr(val, ':')) continue; /* a separator: not one value */
      snprintf(spec, sizeof spec, "%s=%s", names[i], val);
      before = kc_opt;
      int p = kc_options_parse(spec, "fuzz", 0);
      if (p) {
        silent += memcmp(&before, &kc_opt, sizeof before) != 0;
        continue;
      }
      /* Accepted: the stored value is what the text says. */
      char *end;
      if (!strcmp(names[i], "sample") || !strcmp(names[i], "time_budget")) {
        double want = strtod(val, &end),
               got = !strcmp(names[i], "sample") ? kc_opt.sample : kc_opt.time_budget;
        silent += !(isfinite(got) && got == want && got >= 0 && got <= 1);
      } else if (!strcmp(names[i], "mem_budget")) {
        long double x = strtold(val, &end);
        long double mul = 1;
        if (*end == 'K')
          mul = 1024.0L, end++;
        else if (*end == 'M')
          mul = 1048576.0L, end++;
        else if (*end == 'G')
          mul = 1073741824.0L, end++;
        else if (*end == 'T')
          mul = 1099511627776.0L, end++;
        silent += (long double)kc_opt.mem_budget != x * mul;
      } else if (!strcmp(names[i], "save_all")) {
        silent += kc_opt.save_all != (!strcmp(val, "1") || !strcmp(val, "true"));
      } else {
        long want = strtol(val, &end, 10);
        long got = !strcmp(names[i], "verbosity")      ? kc_opt.verbosity
                   : !strcmp(names[i], "trace")        ? kc_opt.trace
                   : !strcmp(names[i], "launch_skip")  ? kc_opt.launch_skip
                   : !strcmp(names[i], "launch_count") ? kc_opt.launch_count
                   : !strcmp(names[i], "check_first")  ? kc_opt.check_first
                   : !strcmp(names[i], "seed")         ? kc_opt.seed
                   : !strcmp(names[i], "max_checks")   ? kc_opt.max_checks
                   : !strcmp(names[i], "exitcode")     ? kc_opt.exitcode
                                                       : kc_opt.check_lock_ms;
        if (got != want) fprintf(stderr, "  %s: stored %ld for '%s'\n", names[i], got, val);
        silent += got != want;
      }
    }
  }
  CHECK(silent == 0);
}

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
  /* -1 means "no limit"; other negative counts mean nothing. */
  CHECK(kc_options_parse("launch_count=-7", "test", 0) == 1 && kc_opt.launch_count == -1);
  CHECK(kc_options_parse("launch_count=7", "test", 0) == 0 && kc_opt.launch_count == 7);
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
  kc_verbosity = 0; /* the fuzz's warnings are expected */
  test_values();
  test_lists();
  test_fuzz();
  return CHECK_DONE("options");
}
