/* libkcheck/core/dispatch.c — the core's launch path: count, identify, and
 * only when tracing or checking, capture parameters and pointers. The
 * pass-through path does no driver calls after a kernel's first sight. */
#include "dispatch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "graph.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "policy.h"
#include "prof.h"
#include "report.h"
#include "serving.h"
#include "shadow.h"
#include "stack.h"
#include "streams.h"
#include "thread_launches.h"
#include "uninit.h"
#include "world.h"

static kc_check_fn check_hook;

void kc_set_check_hook(kc_check_fn fn) { check_hook = fn; }

int kc_check_hook_installed(void) { return check_hook != NULL; }

/* A check, with every other thread's GPU work held off for its duration. */
static CUresult checked_launch(struct kc_launch_info *li) {
  const char *why = NULL;
  if (kc_opt.check_lock && kc_world_lock((unsigned)kc_opt.check_lock_ms, &why)) {
    kc_guard_enter();
    kc_report_skip(li, why);
    kc_guard_leave();
    return kc_app_launch(li->args);
  }
  if (kc_graph_captures_active()) {
    /* A check synchronizes the whole device, which fails during another
     * thread's stream capture and breaks it (seen on driver 580 even in
     * relaxed mode). Captures begin only outside checks (fenced). */
    if (kc_opt.check_lock) kc_world_unlock();
    kc_guard_enter();
    kc_report_skip(li, KC_SKIP_CAPTURING);
    kc_guard_leave();
    return kc_app_launch(li->args);
  }
  if (kc_opt.check_lock) {
    /* Another thread may have freed an allocation between the capture and
     * the lock (a false pointer's, or save_all's): the check resolves the
     * pointers itself (kc_shadow_begin), now that no one can free anything
     * until it is over, and only once it knows the check may run. */
    kc_guard_enter();
    free(li->ptrs);
    li->ptrs = NULL;
    li->nptrs = 0;
    li->ptrs_pending = 1;
    kc_guard_leave();
  }
  CUstreamCaptureMode mode;
  int relaxed = kc_capture_mode_relax(&mode);
  kc_cost_stop(); /* a check records its own cost */
  CUresult r = check_hook(li);
  if (relaxed) kc_capture_mode_restore(mode);
  if (kc_opt.check_lock) kc_world_unlock();
  return r;
}

/* Stream capture: no sync is legal, so a launch there is never checked. */
static int stream_capturing(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!kc_drv.cuStreamIsCapturing) return 1;
  KC_PROF_CALL(cuStreamIsCapturing);
  if (kc_drv.cuStreamIsCapturing(s, &st) != CUDA_SUCCESS) return 1;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* The application's launch of an unchecked launch, timed as its stage. */
static CUresult app_launch_timed(const struct kc_launch_args *a, uint64_t t, uint64_t t_in) {
  if (!kc_prof_on) return kc_app_launch(a);
  CUresult r = kc_app_launch(a);
  t = kc_prof_lap(KC_PS_app_launch, t);
  kc_prof_add_ns(KC_PS_launch, t - t_in);
  return r;
}

/* A launch on a capturing stream is recorded into a graph, not run: it is
 * counted as captured and passes through (its kernel node is seen when
 * the graph is launched). Only asked while some capture is active. */
static int captured(const struct kc_launch_args *a) {
  if (!kc_graph_captures_active()) return 0;
  CUstream s = a->entry == KC_LE_KERNEL_EX && a->config ? a->config->hStream : a->stream;
  if (a->ptsz && !s) s = CU_STREAM_PER_THREAD;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  kc_guard_enter();
  int yes = kc_drv.cuStreamIsCapturing && kc_drv.cuStreamIsCapturing(s, &st) == CUDA_SUCCESS &&
            st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  kc_guard_leave();
  return yes;
}

CUresult kc_on_graph_kernel(const struct kc_launch_args *a, const struct kc_graph_ref *ref) {
  atomic_fetch_add_explicit(&kc_count.graph_kernels_replayed, 1, memory_order_relaxed);
  /* The index the next eager launch gets: graph nodes have no index of
   * their own; the record's `graph` member says where the node is. */
  uint64_t seq = (uint64_t)atomic_load_explicit(&kc_count.launches, memory_order_relaxed);
  kc_guard_enter();
  struct kc_kernel *k = kc_kernel_get(a->f);
  kc_guard_leave();
  if (KC_NEVER(!k) || !check_hook || kc_policy_prefilter(k, seq)) return a->call_real(a);
  struct kc_launch_info li = {0};
  unsigned char params[2048];
  li.seq = seq;
  li.inline_buf = params;
  li.inline_cap = sizeof params;
  li.graph = ref;
  int check = 0;
  kc_guard_enter();
  if (kc_capture(&li, k, a) == 0) {
    check = 1;
    if (!strcmp(li.param_form, "unknown")) {
      check = 0;
      kc_report_skip(&li, "parameter layout unknown");
    } else {
      int first = 0;
      li.signature = kc_policy_signature(&li);
      const char *why = kc_policy_decide(li.signature, k->id, seq, &first);
      if (why) {
        check = 0;
        if (first) kc_report_skip(&li, why);
      }
    }
    /* The world is held: pointers resolved now stay valid for the check. */
    if (check || kc_opt.graph_uninit)
      kc_capture_pointers(&li, check ? KC_PTRS_ASK_DRIVER : KC_PTRS_REMEMBER_MISSES);
  }
  kc_guard_leave();
  /* Only inside a replay, which records its whole cost (kcheck's time of
   * its nodes included): nothing here is charged again. */
  CUresult r = check ? check_hook(&li) : a->call_real(a);
  if (li.checked) atomic_fetch_add(&kc_count.graph_kernel_checks, 1);
  /* After its own check: the node touched what it reaches from now on. */
  if (kc_opt.graph_uninit) {
    kc_guard_enter();
    kc_uninit_touch_launch(&li);
    kc_guard_leave();
  }
  kc_capture_free(&li);
  return r;
}

/* kcheck's time on this launch counts against time_budget (serving.h):
 * everything here but the application's own call and a check. */
static CUresult on_launch(const struct kc_launch_args *a);

CUresult kc_on_launch(const struct kc_launch_args *a) {
  kc_cost_enter();
  CUresult r = on_launch(a);
  kc_cost_leave();
  return r;
}

static CUresult on_launch(const struct kc_launch_args *a) {
  if (captured(a)) {
    atomic_fetch_add_explicit(&kc_count.captured_launches, 1, memory_order_relaxed);
    kc_cost_stop();
    return a->call_real(a);
  }
  uint64_t t_in = kc_prof_now(), t = t_in;
  uint64_t seq = (uint64_t)atomic_fetch_add_explicit(&kc_count.launches, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&kc_count.launches_by_entry[a->entry], 1, memory_order_relaxed);
  if (kc_prof_on) {
    if (KC_NEVER(seq == (uint64_t)kc_opt.profile_mark)) {
      kc_guard_enter();
      kc_prof_mark();
      kc_guard_leave();
    }
  }
  t = kc_prof_lap(KC_PS_count, t);
  kc_guard_enter();
  struct kc_kernel *k = kc_kernel_get(a->f);
  kc_guard_leave();
  t = kc_prof_lap(KC_PS_kernel, t);
  if (KC_NEVER(!k)) {
    KC_INTERNAL_ERROR("could not record kernel %p", (void *)a->f);
    return kc_app_launch(a);
  }
  kc_thread_note_launch(k);

  int check = check_hook && kc_policy_prefilter(k, seq) == NULL;
  t = kc_prof_lap(KC_PS_prefilter, t);
  if (!check && !kc_opt.trace && !kc_opt.stream_races && !kc_opt.graph_uninit)
    return app_launch_timed(a, t, t_in);

  struct kc_launch_info li = {0};
  unsigned char params[2048];
  li.seq = seq;
  li.inline_buf = params;
  li.inline_cap = sizeof params;
  kc_guard_enter();
  int ok = kc_capture(&li, k, a) == 0;
  t = kc_prof_lap(KC_PS_capture, t);
  if (ok && check && !strcmp(li.param_form, "unknown")) {
    /* Without the layout kcheck cannot know what memory the kernel can
     * reach, so it cannot save it: re-running would corrupt it. */
    check = 0;
    kc_report_skip(&li, "parameter layout unknown");
    t = kc_prof_now();
  }
  if (ok && check) {
    /* The signature needs no pointer resolution (address-like words are
     * left out of it), so a launch the policy skips costs no driver call. */
    int first = 0;
    li.signature = kc_policy_signature(&li);
    t = kc_prof_lap(KC_PS_signature, t);
    const char *why = kc_policy_decide(li.signature, k->id, seq, &first);
    t = kc_prof_lap(KC_PS_policy, t);
    if (why) {
      check = 0;
      if (first) {
        kc_report_skip(&li, why);
        t = kc_prof_now();
      }
    } else {
      int capturing = stream_capturing(li.stream);
      t = kc_prof_lap(KC_PS_stream, t);
      if (capturing) {
        check = 0;
        kc_report_skip(&li, "stream capture in progress");
        t = kc_prof_now();
      }
    }
  }
  /* A check needs every reachable allocation, so it asks the driver about
   * words kcheck's map does not know (under the world lock, when there is
   * one, the check resolves them itself: kc_shadow_begin); a trace record
   * lists pointers too but remembers the words the driver did not know
   * (stale stack bytes recur). */
  if (ok &&
      ((check && !kc_opt.check_lock) || kc_opt.trace || kc_opt.stream_races || kc_opt.graph_uninit))
    kc_capture_pointers(&li, check ? KC_PTRS_ASK_DRIVER : KC_PTRS_REMEMBER_MISSES);
  t = kc_prof_lap(KC_PS_pointers, t);
  if (ok && kc_opt.graph_uninit) kc_uninit_touch_launch(&li);
  kc_guard_leave();
  /* Ordering against other streams' work, before the launch runs. */
  if (ok && kc_opt.stream_races) {
    kc_streams_launch(&li);
    t = kc_prof_lap(KC_PS_streams, t);
  }
  /* A new race with an earlier write: this launch is checked, so the
   * stream_delay gate can show what the race changes (once per pair). */
  if (ok && li.delay.n && !check && check_hook && strcmp(li.param_form, "unknown") &&
      !stream_capturing(li.stream)) {
    kc_guard_enter();
    li.signature = kc_policy_signature(&li);
    kc_guard_leave();
    check = 1;
  }
  if (!ok) {
    KC_INTERNAL_ERROR("could not capture a launch of %s", k->name);
    kc_capture_free(&li);
    return kc_app_launch(a);
  }
  if (kc_opt.trace) {
    char *stack = NULL;
    if (kc_opt.trace >= 2) {
      kc_guard_enter();
      json_t *st = kc_stack_json_fast(2);
      stack = st ? json_dumps(st, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
      json_decref(st);
      kc_guard_leave();
      kc_prof_lap(KC_PS_trace_stack, t);
    }
    kc_launch_emit(&li, stack);
    free(stack);
    t = kc_prof_now();
  }
  CUresult r;
  if (check) {
    r = checked_launch(&li);
    t = kc_prof_lap(KC_PS_check, t);
  } else {
    r = kc_app_launch(a);
    t = kc_prof_lap(KC_PS_app_launch, t);
  }
  kc_capture_free(&li);
  t = kc_prof_lap(KC_PS_free, t);
  if (kc_prof_on) kc_prof_add_ns(KC_PS_launch, t - t_in);
  return r;
}
