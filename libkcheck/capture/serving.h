/* libkcheck/capture/serving.h — the serving profile (serving=1, `kcheck run
 * --serving`) and the time budget per window. A service must keep serving
 * while it is audited: checks, together with kcheck's other time on the
 * application's threads (below), may take at most time_budget of every
 * budget_window seconds (not of the run so far, which a long-running
 * process would bank), sampling spreads them over eager and graph launches,
 * and a `budget_window` record per window says what was checked in it. */
#ifndef KC_SERVING_H
#define KC_SERVING_H

#include <stdint.h>
#include <time.h>

/* serving=1: defaults for a service, applied where an option still has its
 * built-in default (time_budget 0.03, budget_window 60, sample 0.01,
 * graph_sample 0.01). Called once after the options are parsed. */
void kc_serving_apply(void);
/* NULL while checks may run now, else why not. check_seconds: the total
 * spent checking so far (policy.c). Closes finished windows (records). */
const char *kc_budget_exhausted(double check_seconds);
/* Before a launch is even captured: non-NULL while the window in progress
 * is known to be spent (a lock-free read), so a service's launches pay
 * nothing for a check that could not run until the next window. */
const char *kc_budget_spent_fast(void);
/* Writes the record of the window in progress (at exit). */
void kc_serving_finish(double check_seconds);

/* kcheck's own time on the application's threads outside checks and graph
 * replays (which record their cost themselves): the launch path's capture,
 * signature and policy, graph-launch bookkeeping, the stream model and the
 * touched-allocation tracking, records written on the way. It counts
 * against time_budget with the checks, so the budget bounds everything
 * kcheck takes from a service's threads, not only its checks. Measured
 * only while a budget applies (time_budget < 1): a span's clock is read
 * when it begins and when kcheck hands over to the application's own
 * driver call, a check or a graph replay (kc_cost_stop: the little that
 * follows goes untimed, so a launch costs two clock reads), nested spans
 * count once. Per thread, handed to a process total every
 * KC_COST_FLUSH_NS. */
struct kc_cost_tls {
  int depth, open; /* open: the outermost span is still timed */
  uint64_t t0, pending;
};
extern __thread struct kc_cost_tls kc_cost_tls __attribute__((tls_model("initial-exec")));
extern int kc_cost_on; /* a budget applies (set by kc_serving_apply) */
#define KC_COST_FLUSH_NS 20000u
void kc_cost_flush(uint64_t ns);
/* The process total so far, seconds. */
double kc_cost_seconds(void);

static inline uint64_t kc_cost_clock(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
static inline void kc_cost_charge(uint64_t ns) {
  struct kc_cost_tls *c = &kc_cost_tls;
  c->pending += ns;
  if (c->pending >= KC_COST_FLUSH_NS) {
    kc_cost_flush(c->pending);
    c->pending = 0;
  }
}
/* A span of kcheck's own work on this thread begins / ends. */
static inline void kc_cost_enter(void) {
  if (!kc_cost_on) return;
  struct kc_cost_tls *c = &kc_cost_tls;
  if (c->depth++) return;
  c->open = 1;
  c->t0 = kc_cost_clock();
}
static inline void kc_cost_leave(void) {
  if (!kc_cost_on) return;
  struct kc_cost_tls *c = &kc_cost_tls;
  if (--c->depth) return;
  if (c->open) kc_cost_charge(kc_cost_clock() - c->t0);
  c->open = 0;
}
/* The span in progress hands over to time that is not kcheck's (the
 * application's driver call) or that is counted elsewhere (a check, a
 * graph replay): nothing more of it is timed. */
static inline void kc_cost_stop(void) {
  if (!kc_cost_on) return;
  struct kc_cost_tls *c = &kc_cost_tls;
  if (!c->depth || !c->open) return;
  kc_cost_charge(kc_cost_clock() - c->t0);
  c->open = 0;
}

#endif
