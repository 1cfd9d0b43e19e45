/* libkcheck/findings/prof.c — profile=1 accumulators and their report. Relaxed
 * atomics: launches from several threads add up; the totals are read once,
 * at exit. */
#include "prof.h"

#include <stdatomic.h>
#include <stdio.h>

#include "log.h"
#include "report.h"

int kc_prof_on;

static atomic_ullong stage_ns[KC_PS_COUNT];
static atomic_ullong stage_n[KC_PS_COUNT];
static atomic_ullong calls[KC_E_COUNT];
static atomic_ullong counts[KC_PC_COUNT];

static const char *const stage_names[KC_PS_COUNT] = {
#define KC_PROF_STAGE(id, desc) #id,
#include "prof.def"
#undef KC_PROF_STAGE
};
static const char *const stage_desc[KC_PS_COUNT] = {
#define KC_PROF_STAGE(id, desc) desc,
#include "prof.def"
#undef KC_PROF_STAGE
};
static const char *const counter_names[KC_PC_COUNT] = {
#define KC_PROF_COUNTER(id, desc) #id,
#include "prof_count.def"
#undef KC_PROF_COUNTER
};
static const char *const counter_desc[KC_PC_COUNT] = {
#define KC_PROF_COUNTER(id, desc) desc,
#include "prof_count.def"
#undef KC_PROF_COUNTER
};

void kc_prof_add_count(enum kc_prof_counter c, uint64_t n) {
  atomic_fetch_add_explicit(&counts[c], n, memory_order_relaxed);
}

/* Checks run one at a time (the world lock), each on its launching
 * thread: the current check's stages are that thread's. */
static __thread uint64_t check_ns[KC_PS_COUNT];

void kc_prof_check_reset(void) {
  for (int s = KC_PS_chk_begin; s < KC_PS_COUNT; s++)
    check_ns[s] = 0;
}

json_t *kc_prof_check_json(void) {
  if (!kc_prof_on) return NULL;
  json_t *o = json_object();
  for (int s = KC_PS_chk_begin; o && s < KC_PS_COUNT; s++)
    json_object_set_new(o, stage_names[s], json_real((double)check_ns[s] / 1e6));
  return o;
}

void kc_prof_add_ns(enum kc_prof_stage s, uint64_t ns) {
  if (s >= KC_PS_chk_begin && s < KC_PS_COUNT) check_ns[s] += ns;
  atomic_fetch_add_explicit(&stage_ns[s], ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&stage_n[s], 1, memory_order_relaxed);
}

void kc_prof_count_call(enum kc_entry e) {
  atomic_fetch_add_explicit(&calls[e], 1, memory_order_relaxed);
}

static void emit(const char *at, int table);

void kc_prof_mark(void) {
  if (kc_prof_on) emit("mark", 0);
}

void kc_prof_finish(void) {
  if (!kc_prof_on) return;
  kc_prof_on = 0; /* the record below is not a stage of any launch */
  emit("exit", 1);
}

static void emit(const char *at, int table) {
  /* What one timer point costs, to read the stages against. */
  uint64_t c0 = kc_prof_clock(), c1 = c0;
  for (int i = 0; i < 1000; i++)
    c1 = kc_prof_clock();
  double timer_ns = (double)(c1 - c0) / 1000.0;
  double launches = (double)atomic_load(&kc_count.launches);
  double per = launches > 0 ? 1.0 / launches : 0.0;
  json_t *stages = json_object(), *drv = json_object(), *cnt = json_object();
  unsigned long long total_calls = 0;
  for (int s = 0; s < KC_PS_COUNT; s++) {
    unsigned long long ns = atomic_load(&stage_ns[s]), n = atomic_load(&stage_n[s]);
    json_object_set_new(stages, stage_names[s],
                        json_pack("{s:I, s:I, s:f, s:f}", "n", (json_int_t)n, "ns", (json_int_t)ns,
                                  "ns_per_launch", (double)ns * per, "ns_per_n",
                                  n ? (double)ns / (double)n : 0.0));
  }
  for (int e = 0; e < KC_E_COUNT; e++) {
    unsigned long long n = atomic_load(&calls[e]);
    if (!n) continue;
    total_calls += n;
    json_object_set_new(drv, kc_entry_names[e],
                        json_pack("{s:I, s:f}", "n", (json_int_t)n, "per_launch", (double)n * per));
  }
  for (int c = 0; c < KC_PC_COUNT; c++)
    json_object_set_new(cnt, counter_names[c], json_integer((json_int_t)atomic_load(&counts[c])));
  kc_report_emit("profile",
                 json_pack("{s:s, s:I, s:f, s:o, s:o, s:I, s:f, s:o}", "at", at, "launches",
                           (json_int_t)launches, "timer_ns", timer_ns, "stages", stages,
                           "driver_calls", drv, "driver_calls_total", (json_int_t)total_calls,
                           "driver_calls_per_launch", (double)total_calls * per, "counts", cnt));
  if (!table || kc_verbosity < 1) return;
  fprintf(stderr,
          "kcheck: profile over %.0f launches (ns per launch, count, ns per count; one timer "
          "point costs %.0f ns):\n",
          launches, timer_ns);
  for (int s = 0; s < KC_PS_COUNT; s++) {
    unsigned long long ns = atomic_load(&stage_ns[s]), n = atomic_load(&stage_n[s]);
    if (!n) continue;
    fprintf(stderr, "kcheck:   %-13s %12.1f %10llu %12.1f  %s\n", stage_names[s], (double)ns * per,
            n, (double)ns / (double)n, stage_desc[s]);
  }
  fprintf(stderr, "kcheck:   driver calls by kcheck outside checks: %llu (%.3f per launch)\n",
          total_calls, (double)total_calls * per);
  for (int e = 0; e < KC_E_COUNT; e++) {
    unsigned long long n = atomic_load(&calls[e]);
    if (n)
      fprintf(stderr, "kcheck:     %-28s %10llu %8.3f\n", kc_entry_names[e], n, (double)n * per);
  }
  for (int c = 0; c < KC_PC_COUNT; c++) {
    unsigned long long n = atomic_load(&counts[c]);
    if (n)
      fprintf(stderr, "kcheck:   %-15s %12llu %8.3f per launch  %s\n", counter_names[c], n,
              (double)n * per, counter_desc[c]);
  }
}
