/* libkcheck/serving.h — the serving profile (serving=1, `kcheck run
 * --serving`) and the time budget per window. A service must keep serving
 * while it is audited: checks may take at most time_budget of every
 * budget_window seconds (not of the run so far, which a long-running
 * process would bank), sampling spreads them over eager and graph launches,
 * and a `budget_window` record per window says what was checked in it. */
#ifndef KC_SERVING_H
#define KC_SERVING_H

/* serving=1: defaults for a service, applied where an option still has its
 * built-in default (time_budget 0.05, budget_window 60, sample 0.01,
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

#endif
