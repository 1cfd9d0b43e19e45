/* libkcheck/launch.c — the core's launch path: count, identify, and only
 * when tracing or checking, capture parameters and pointers. The pass-
 * through path does no driver calls after a kernel's first sight. */
#include "launch.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "core.h"
#include "driver.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "policy.h"
#include "report.h"
#include "stack.h"
#include "world.h"

static kc_check_fn check_hook;

void kc_set_check_hook(kc_check_fn fn) { check_hook = fn; }

/* The application's launch, inside the world lock (a no-op when this
 * thread already holds it, e.g. inside its own check). */
CUresult kc_app_launch(const struct kc_launch_args *a) {
  if (kc_opt.check_lock) kc_world_enter();
  CUresult r;
  if (!kc_audit_active) {
    r = a->call_real(a);
  } else {
    kc_audit_expect_begin();
    r = a->call_real(a);
    kc_audit_expect_end();
  }
  if (kc_opt.check_lock) kc_world_leave();
  return r;
}

/* A check, with every other thread's GPU work held off for its duration. */
static CUresult checked_launch(struct kc_launch_info *li) {
  const char *why = NULL;
  if (kc_opt.check_lock && kc_world_lock((unsigned)kc_opt.check_lock_ms, &why)) {
    kc_guard_enter();
    kc_report_skip(li, why);
    kc_guard_leave();
    return kc_app_launch(li->args);
  }
  if (kc_opt.check_lock) {
    /* Another thread may have freed an allocation between the capture and
     * the lock (a false pointer's, or save_all's): resolve the pointers
     * again now that no one can free anything until the check is over. */
    kc_guard_enter();
    free(li->ptrs);
    li->ptrs = NULL;
    li->nptrs = 0;
    kc_capture_pointers(li);
    kc_guard_leave();
  }
  CUresult r = check_hook(li);
  if (kc_opt.check_lock) kc_world_unlock();
  return r;
}

/* Stream capture: no sync is legal, so a launch there is never checked. */
static int stream_capturing(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!kc_drv.cuStreamIsCapturing) return 1;
  if (kc_drv.cuStreamIsCapturing(s, &st) != CUDA_SUCCESS) return 1;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

void kc_report_skip(const struct kc_launch_info *li, const char *why) {
  atomic_fetch_add(&kc_count.skips, 1);
  kc_report_emit("skip", json_pack("{s:I, s:i, s:s, s:o, s:s}", "launch", (json_int_t)li->seq,
                                   "kernel", li->k->id, "kernel_name", li->k->demangled,
                                   "signature", kc_json_hash(li->signature), "reason", why));
}

CUresult kc_on_launch(const struct kc_launch_args *a) {
  uint64_t seq = (uint64_t)atomic_fetch_add_explicit(&kc_count.launches, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&kc_count.launches_by_entry[a->entry], 1, memory_order_relaxed);
  kc_guard_enter();
  struct kc_kernel *k = kc_kernel_get(a->f);
  kc_guard_leave();
  if (KC_NEVER(!k)) {
    KC_INTERNAL_ERROR("could not record kernel %p", (void *)a->f);
    return kc_app_launch(a);
  }

  int check = check_hook && kc_policy_prefilter(k, seq) == NULL;
  if (!check && !kc_opt.trace) return kc_app_launch(a);

  struct kc_launch_info li = {0};
  li.seq = seq;
  kc_guard_enter();
  int ok = kc_capture(&li, k, a) == 0;
  if (ok) kc_capture_pointers(&li);
  if (ok && check && !strcmp(li.param_form, "unknown")) {
    /* Without the layout kcheck cannot know what memory the kernel can
     * reach, so it cannot save it: re-running would corrupt it. */
    check = 0;
    kc_report_skip(&li, "parameter layout unknown");
  }
  if (ok && check) {
    int first = 0;
    li.signature = kc_policy_signature(&li);
    const char *why = kc_policy_decide(li.signature, k->id, seq, &first);
    if (why) {
      check = 0;
      if (first) kc_report_skip(&li, why);
    } else if (stream_capturing(li.stream)) {
      check = 0;
      kc_report_skip(&li, "stream capture in progress");
    }
  }
  kc_guard_leave();
  if (!ok) {
    KC_INTERNAL_ERROR("could not capture a launch of %s", k->name);
    kc_capture_free(&li);
    return kc_app_launch(a);
  }
  if (kc_opt.trace) {
    json_t *rec = kc_launch_json(&li);
    if (kc_opt.trace >= 2 && rec) {
      kc_guard_enter();
      json_object_set_new(rec, "stack", kc_stack_json(2));
      kc_guard_leave();
    }
    kc_report_emit("launch", rec);
  }
  CUresult r = check ? checked_launch(&li) : kc_app_launch(a);
  kc_capture_free(&li);
  return r;
}
