/* libkcheck/capture/serving.c — the serving profile and the per-window time budget
 * (see serving.h). */
#include "serving.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "report.h"

__thread struct kc_cost_tls kc_cost_tls __attribute__((tls_model("initial-exec")));
int kc_cost_on;
static atomic_ullong cost_ns;

void kc_cost_flush(uint64_t ns) { atomic_fetch_add_explicit(&cost_ns, ns, memory_order_relaxed); }

double kc_cost_seconds(void) {
  return 1e-9 * (double)atomic_load_explicit(&cost_ns, memory_order_relaxed);
}

static void apply_profile(void) {
  /* Only what no setting gave: an explicit time_budget=1 means no budget. */
  if (!kc_option_given(&kc_opt.time_budget)) kc_opt.time_budget = 0.03;
  if (!kc_option_given(&kc_opt.budget_window)) kc_opt.budget_window = 60;
  if (!kc_option_given(&kc_opt.sample)) kc_opt.sample = 0.01;
  if (!kc_option_given(&kc_opt.graph_sample)) kc_opt.graph_sample = 0.01;
  KC_LOG(KC_LOG_INFO,
         "serving profile: time_budget=%g per budget_window=%gs, sample=%g, graph_sample=%g",
         kc_opt.time_budget, kc_opt.budget_window, kc_opt.sample, kc_opt.graph_sample);
}

void kc_serving_apply(void) {
  if (kc_opt.serving) apply_profile();
  kc_cost_on = kc_opt.time_budget < 1.0;
}

/* The end of the window in progress once its budget is spent (seconds,
 * as bits; 0: not spent), and the launches turned away before capture. */
static atomic_uint_fast64_t spent_until;
static atomic_long fast_skips;

static uint64_t bits_of(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

const char *kc_budget_spent_fast(void) {
  uint64_t b = atomic_load_explicit(&spent_until, memory_order_relaxed);
  if (!b) return NULL;
  double until;
  memcpy(&until, &b, sizeof until);
  if (kc_now_s() >= until) return NULL; /* the next window: kc_budget_exhausted decides */
  atomic_fetch_add_explicit(&fast_skips, 1, memory_order_relaxed);
  return "time_budget exhausted in this budget_window";
}

/* The window in progress: its start and the counters at its start. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long index_;
static double w_start, s_start, o_start; /* s_start: checks and kcheck's other time */
static long c_launches, c_checks, c_graph_kernels, c_graph_checks, c_graph_launches, c_replays,
    skipped;

static void snapshot(double now, double check_seconds, double cost) {
  w_start = now;
  s_start = check_seconds + cost;
  o_start = cost;
  c_launches = atomic_load(&kc_count.launches);
  c_checks = atomic_load(&kc_count.checks);
  c_graph_launches = atomic_load(&kc_count.graph_launches);
  c_replays = atomic_load(&kc_count.graph_replays);
  c_graph_kernels = atomic_load(&kc_count.graph_kernel_launches);
  c_graph_checks = atomic_load(&kc_count.graph_kernel_checks);
  skipped = 0;
  atomic_store(&fast_skips, 0);
  atomic_store(&spent_until, 0);
}

/* Locked. check_s: checks and graph replays; overhead_s: kcheck's other
 * time on the application's threads; fraction: both, of the window. */
static void emit(double end, double check_seconds, double cost) {
  double wall = end - w_start, spent = check_seconds + cost - s_start, over = cost - o_start;
  static int warned;
  if (!warned && index_ > 0 && wall > 0 && over > kc_opt.time_budget * wall) {
    /* The budget can refuse checks, captures and replays, not the pass-
     * through of every launch: such a window checks nothing. */
    warned = 1;
    KC_LOG(KC_LOG_WARN,
           "budget_window %ld: kcheck's own time outside checks took %.1f%% of it, more than "
           "time_budget (%g), so nothing was checked in it (see overhead_s in the budget_window "
           "records)",
           index_, 100.0 * over / wall, kc_opt.time_budget);
  }
  kc_report_emit(
      "budget_window",
      json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "window",
                (json_int_t)index_, "t_start", w_start, "wall_s", wall, "check_s", spent - over,
                "overhead_s", over, "fraction", wall > 0 ? spent / wall : 0.0, "launches",
                (json_int_t)(atomic_load(&kc_count.launches) - c_launches), "checks",
                (json_int_t)(atomic_load(&kc_count.checks) - c_checks), "graph_launches",
                (json_int_t)(atomic_load(&kc_count.graph_launches) - c_graph_launches),
                "graph_replays", (json_int_t)(atomic_load(&kc_count.graph_replays) - c_replays),
                "graph_kernel_launches",
                (json_int_t)(atomic_load(&kc_count.graph_kernel_launches) - c_graph_kernels),
                "graph_kernels_checked",
                (json_int_t)(atomic_load(&kc_count.graph_kernel_checks) - c_graph_checks),
                "skipped_for_budget", (json_int_t)(skipped + atomic_load(&fast_skips))));
}

const char *kc_budget_exhausted(double check_seconds) {
  if (kc_opt.time_budget >= 1.0) return NULL;
  double now = kc_now_s(), cost = kc_cost_seconds();
  if (kc_opt.budget_window <= 0) /* the run so far */
    return check_seconds + cost > kc_opt.time_budget * now ? "time_budget exhausted" : NULL;
  const char *why = NULL;
  pthread_mutex_lock(&lock);
  static int started;
  if (!started) { /* the first window starts with the process, from zero */
    started = 1;
    w_start = s_start = o_start = 0;
    c_launches = c_checks = c_graph_launches = c_graph_kernels = c_graph_checks = c_replays =
        skipped = 0;
  }
  if (now >= w_start + kc_opt.budget_window) {
    emit(now, check_seconds, cost);
    index_++;
    snapshot(now, check_seconds, cost);
  }
  /* A check may overrun what is left; the rest of the window then waits. */
  if (check_seconds + cost - s_start > kc_opt.time_budget * kc_opt.budget_window) {
    why = "time_budget exhausted in this budget_window";
    skipped++;
    atomic_store(&spent_until, bits_of(w_start + kc_opt.budget_window));
  }
  pthread_mutex_unlock(&lock);
  return why;
}

void kc_serving_finish(double check_seconds) {
  if (kc_opt.time_budget >= 1.0 || kc_opt.budget_window <= 0) return;
  pthread_mutex_lock(&lock);
  emit(kc_now_s(), check_seconds, kc_cost_seconds());
  pthread_mutex_unlock(&lock);
}
