/* libkcheck/findings/prof.h — profile=1: per-stage time of the launch path and the
 * driver calls kcheck makes, summed over the process and written as a
 * `profile` record at exit (and a table on stderr). Off, each timer point
 * is one predictable branch on a global flag. */
#ifndef KC_PROF_H
#define KC_PROF_H

#include <stdint.h>
#include <time.h>

#include "driver.h"

enum kc_prof_stage {
#define KC_PROF_STAGE(id, desc) KC_PS_##id,
#include "prof.def"
#undef KC_PROF_STAGE
  KC_PS_COUNT
};

enum kc_prof_counter {
#define KC_PROF_COUNTER(id, desc) KC_PC_##id,
#include "prof_count.def"
#undef KC_PROF_COUNTER
  KC_PC_COUNT
};

/* Set from the profile option at start-up. */
extern int kc_prof_on;

static inline uint64_t kc_prof_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A timer start: 0 when profiling is off. */
static inline uint64_t kc_prof_now(void) { return kc_prof_on ? kc_prof_clock() : 0; }

void kc_prof_add_ns(enum kc_prof_stage s, uint64_t ns);
void kc_prof_count_call(enum kc_entry e);
void kc_prof_add_count(enum kc_prof_counter c, uint64_t n);

/* Adds n to counter c when profiling. */
static inline void kc_prof_count(enum kc_prof_counter c, uint64_t n) {
  if (kc_prof_on && n) kc_prof_add_count(c, n);
}

/* Adds the time since t0 to stage s and returns the new start. */
static inline uint64_t kc_prof_lap(enum kc_prof_stage s, uint64_t t0) {
  if (!kc_prof_on) return 0;
  uint64_t t = kc_prof_clock();
  kc_prof_add_ns(s, t - t0);
  return t;
}

/* One driver call kcheck itself makes (counted when profiling). */
#define KC_PROF_CALL(sym)                                                                          \
  do {                                                                                             \
    if (kc_prof_on) kc_prof_count_call(KC_E_##sym);                                                \
  } while (0)

/* The stages of the check running on this thread (profile=1): reset at
 * the check's start, read into its `check` record as stages_ms, so that
 * one costly check can be read stage by stage where the process totals
 * only give sums. NULL when profiling is off. */
void kc_prof_check_reset(void);
struct json_t;
struct json_t *kc_prof_check_json(void);

/* profile_mark: a `profile` record ("at": "mark") of the totals so far. */
void kc_prof_mark(void);
/* Writes the profile record ("at": "exit") and the stderr table (profile=1 only). */
void kc_prof_finish(void);

#endif
