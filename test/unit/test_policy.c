/* test/unit/test_policy.c — launch selection (libkcheck/capture/policy.c): the
 * prefilter (communication kernels, filters, launch window, max_checks),
 * the first N launches of a signature, the clean limits per signature and
 * per kernel, seeded sampling, the wall-time budget, and reasons reported
 * once per (signature, reason). Time and counters are this test's own. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "options.h"
#include "policy.h"
#include "report.h"
#include "serving.h"

/* What policy.c takes from report.c: the counters and the clock. */
struct kc_counters kc_count;
static double fake_now = 1000.0;
double kc_now_s(void) { return fake_now; }
/* serving.c writes budget_window records; none are read here. */
void kc_report_emit(const char *type, json_t *rec) {
  (void)type;
  json_decref(rec);
}

static int checked(uint64_t sig, int kernel, uint64_t seq) {
  int first = 0;
  return kc_policy_decide(sig, kernel, seq, &first) == NULL;
}

int main(void) {
  CHECK(kc_options_parse("check_first=2:clean_limit=2:kernel_clean_limit=-1:sample=0", "test", 1) ==
        0);
  /* Prefilter. */
  struct kc_kernel k = {.id = 1, .eligible = 1};
  CHECK(kc_policy_prefilter(&k, 0) == NULL);
  k.communication = 1;
  CHECK(kc_policy_prefilter(&k, 0) && strstr(kc_policy_prefilter(&k, 0), "communication"));
  k.communication = 0, k.eligible = 0;
  CHECK(kc_policy_prefilter(&k, 0) && strstr(kc_policy_prefilter(&k, 0), "filtered"));
  k.eligible = 1;
  CHECK(kc_options_parse("launch_skip=3:launch_count=2", "test", 0) == 0);
  CHECK(kc_policy_prefilter(&k, 2) && !kc_policy_prefilter(&k, 3) && !kc_policy_prefilter(&k, 4));
  CHECK(kc_policy_prefilter(&k, 5) && strstr(kc_policy_prefilter(&k, 5), "launch_count"));
  CHECK(kc_options_parse("launch_skip=0:launch_count=-1:max_checks=1", "test", 0) == 0);
  atomic_store(&kc_count.checks, 1);
  CHECK(kc_policy_prefilter(&k, 9) && strstr(kc_policy_prefilter(&k, 9), "max_checks"));
  atomic_store(&kc_count.checks, 0);
  CHECK(kc_options_parse("max_checks=-1", "test", 0) == 0);

  /* check_first: the first two launches of a signature, then sampling
   * (0: none); the reason is new once. */
  CHECK(checked(0xA, 1, 0) && checked(0xA, 1, 1));
  int first = 0;
  const char *why = kc_policy_decide(0xA, 1, 2, &first);
  CHECK(why && !strcmp(why, "not sampled") && first == 1);
  why = kc_policy_decide(0xA, 1, 3, &first);
  CHECK(why && first == 0);
  /* Another signature of the same kernel has its own first launches. */
  CHECK(checked(0xB, 1, 4));

  /* clean_limit: after two clean checks a signature is left alone, even
   * when every launch is sampled; a failing check does not count. */
  CHECK(kc_options_parse("sample=1", "test", 0) == 0);
  kc_policy_record(0xA, 1, 1, 0.0);
  kc_policy_record(0xA, 1, 0, 0.0);
  CHECK(checked(0xA, 1, 5));
  kc_policy_record(0xA, 1, 1, 0.0);
  why = kc_policy_decide(0xA, 1, 6, &first);
  CHECK(why && strstr(why, "clean_limit") && first == 1);

  /* kernel_clean_limit: a kernel clean under many signatures gets its new
   * signatures only sampled. */
  CHECK(kc_options_parse("kernel_clean_limit=3:sample=0", "test", 0) == 0);
  for (uint64_t s = 0; s < 3; s++) {
    CHECK(checked(0x100 + s, 7, 10 + s));
    kc_policy_record(0x100 + s, 7, 1, 0.0);
  }
  why = kc_policy_decide(0x200, 7, 20, &first);
  CHECK(why && strstr(why, "kernel_clean_limit"));
  CHECK(checked(0x200, 8, 21)); /* another kernel is not affected */

  /* op_clean_limit: ops (negative ids, gates/op_check.c) have their own
   * limit; kernel_clean_limit leaves them alone. */
  CHECK(kc_options_parse("kernel_clean_limit=1:op_clean_limit=3:sample=0", "test", 0) == 0);
  for (uint64_t s = 0; s < 3; s++) {
    CHECK(checked(0x300 + s, -5, 30 + s));
    kc_policy_record(0x300 + s, -5, 1, 0.0);
  }
  why = kc_policy_decide(0x400, -5, 40, &first);
  CHECK(why && strstr(why, "op_clean_limit"));
  CHECK(kc_options_parse("kernel_clean_limit=1:op_clean_limit=-1:sample=0", "test", 0) == 0);
  CHECK(checked(0x401, -5, 41)); /* -1: every new signature of the op */

  /* Sampling is seeded: the same seed and launch index give the same
   * draw, another seed another one; a fraction samples about that many. */
  double u0 = kc_policy_uniform(12345);
  CHECK(u0 >= 0 && u0 < 1 && kc_policy_uniform(12345) == u0);
  CHECK(kc_options_parse("seed=1", "test", 0) == 0 && kc_policy_uniform(12345) != u0);
  CHECK(kc_options_parse("check_first=0:sample=0.25:clean_limit=-1:kernel_clean_limit=-1", "test",
                         0) == 0);
  int n = 0;
  for (uint64_t seq = 0; seq < 4000; seq++)
    n += checked(0x300, 9, 1000 + seq);
  CHECK(n > 850 && n < 1150);

  /* time_budget: once checking took more than the fraction of wall time,
   * nothing more is checked. */
  CHECK(kc_options_parse("check_first=5:time_budget=0.5", "test", 0) == 0);
  CHECK(checked(0x400, 10, 9000));
  kc_policy_record(0x400, 10, 0, 400.0);
  CHECK(fabs(kc_policy_check_seconds() - 400.0) < 1e-9);
  CHECK(checked(0x400, 10, 9001)); /* 400 s of 1000 s */
  kc_policy_record(0x400, 10, 0, 200.0);
  why = kc_policy_decide(0x400, 10, 9002, &first);
  CHECK(why && strstr(why, "time_budget"));
  fake_now = 2000.0; /* the budget grows with wall time */
  CHECK(checked(0x400, 10, 9003));

  /* budget_window: the fraction holds per window, not for the run so far
   * (600 s spent by t=2000 would leave a whole-run budget of 5% exhausted
   * only until t=12000). A window starts where the last one ended, or at
   * the first decision after a gap: here at t=2010. */
  CHECK(kc_options_parse("check_first=1000:time_budget=0.05:budget_window=60", "test", 0) == 0);
  fake_now = 2010.0; /* a new window, nothing spent in it yet */
  CHECK(checked(0x500, 11, 9100));
  kc_policy_record(0x500, 11, 0, 2.5); /* within 3 s of the window */
  CHECK(checked(0x500, 11, 9101));
  kc_policy_record(0x500, 11, 0, 1.0); /* 3.5 s: over, the rest of it waits */
  why = kc_policy_decide(0x500, 11, 9102, &first);
  CHECK(why && strstr(why, "budget_window"));
  /* Spent: launches are turned away before capture until the window ends. */
  struct kc_kernel kk;
  memset(&kk, 0, sizeof kk);
  kk.eligible = 1;
  fake_now = 2050.0;
  why = kc_policy_prefilter(&kk, 9102);
  CHECK(why && strstr(why, "budget_window"));
  fake_now = 2071.0; /* the next window */
  CHECK(kc_policy_prefilter(&kk, 9103) == NULL);
  CHECK(checked(0x500, 11, 9103));
  CHECK(kc_policy_prefilter(&kk, 9104) == NULL);

  /* kcheck's time outside checks (serving.h) counts against the window's
   * budget with the checks: 3.5 s of it in a 3 s budget stops checks. */
  fake_now = 3000.0; /* a new window */
  CHECK(checked(0x600, 12, 9200));
  kc_cost_flush(3500000000ull);
  CHECK(fabs(kc_cost_seconds() - 3.5) < 1e-9);
  why = kc_policy_decide(0x600, 12, 9201, &first);
  CHECK(why && strstr(why, "budget_window"));

  /* A kernel checked clean kernel_clean_limit times is turned away by the
   * prefilter (before capture) exactly where kc_policy_decide would turn
   * it away whatever the signature: the launches the draw does not sample. */
  CHECK(kc_options_parse("check_first=1:clean_limit=-1:kernel_clean_limit=2:sample=0.1:"
                         "time_budget=1:budget_window=0",
                         "test", 0) == 0);
  struct kc_kernel ks;
  memset(&ks, 0, sizeof ks);
  ks.id = 20, ks.eligible = 1;
  int none = 1;
  for (uint64_t seq = 20000; seq < 20100; seq++)
    none &= kc_policy_prefilter(&ks, seq) == NULL;
  CHECK(none); /* not yet saturated */
  kc_policy_record(0x700, 20, 1, 0.0);
  CHECK(kc_policy_prefilter(&ks, 20000) == NULL); /* one clean check of two */
  kc_policy_record(0x701, 20, 1, 0.0);
  /* The first launch it would refuse goes on to decide (the kernel's skip
   * record); the later ones are refused before capture. */
  uint64_t first_refused = 20500;
  while (kc_policy_uniform(first_refused) < kc_opt.sample)
    first_refused++;
  CHECK(kc_policy_prefilter(&ks, first_refused) == NULL);
  CHECK(!checked(0x20000, 20, first_refused));
  int passed = 0, agree = 1;
  for (uint64_t seq = 21000; seq < 22000; seq++) {
    const char *pre = kc_policy_prefilter(&ks, seq);
    passed += pre == NULL;
    /* a new signature each time and a known one: decide refuses both */
    if (pre) agree &= !checked(0x10000 + seq, 20, seq) && !checked(0x700, 20, seq);
  }
  CHECK(agree);
  CHECK(passed > 50 && passed < 150);
  uint64_t refused = 21000;
  while (!kc_policy_prefilter(&ks, refused))
    refused++;
  CHECK(strstr(kc_policy_prefilter(&ks, refused), "not sampled"));
  /* kernel_clean_limit=-1: the limit is off, so is the prefilter's use of it. */
  CHECK(kc_options_parse("kernel_clean_limit=-1", "test", 0) == 0);
  passed = 0;
  for (uint64_t seq = 21000; seq < 21100; seq++)
    passed += kc_policy_prefilter(&ks, seq) == NULL;
  CHECK(passed == 100);
  return CHECK_DONE("policy");
}
