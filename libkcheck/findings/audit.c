/* libkcheck/findings/audit.c — CUPTI coverage audit (cupti_audit=1). A process may
 * hold only one CUPTI subscriber (profilers, nsys and compute-sanitizer use
 * it too), so this is never on by default and backs off cleanly. */
#include "audit.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "guard.h"
#include "log.h"
#include "report.h"

int kc_audit_active;

static struct {
  __typeof__(cuptiSubscribe) *subscribe;
  __typeof__(cuptiSubscribe_v2) *subscribe_v2;
  __typeof__(cuptiUnsubscribe) *unsubscribe;
  __typeof__(cuptiEnableCallback) *enable;
  __typeof__(cuptiGetResultString) *result_string;
} cupti;
static CUpti_SubscriberHandle subscriber;

/* Per thread: the shim is inside the application's launch call and CUPTI
 * has not yet reported it. */
static __thread int expecting __attribute__((tls_model("initial-exec")));
static __thread int seen_by_cupti __attribute__((tls_model("initial-exec")));

static atomic_long matched, cupti_only, shim_only;

struct missed {
  char name[256];
  long count;
  UT_hash_handle hh;
};
static struct missed *missed_by_name;
static pthread_mutex_t missed_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_missed(const char *name) {
  struct missed *m = NULL;
  if (!name) name = "<unknown>";
  pthread_mutex_lock(&missed_lock);
  HASH_FIND_STR(missed_by_name, name, m);
  if (!m && (m = calloc(1, sizeof *m))) {
    snprintf(m->name, sizeof m->name, "%s", name);
    HASH_ADD_STR(missed_by_name, name, m);
  }
  if (m) m->count++;
  pthread_mutex_unlock(&missed_lock);
}

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)userdata;
  (void)cbid;
  const CUpti_CallbackData *cb = data;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cb->callbackSite != CUPTI_API_ENTER) return;
  if (kc_guarded()) return; /* kcheck's own launch */
  if (expecting && !seen_by_cupti) {
    seen_by_cupti = 1;
    atomic_fetch_add(&matched, 1);
    return;
  }
  atomic_fetch_add(&cupti_only, 1);
  note_missed(cb->symbolName);
}

void kc_audit_expect_begin(void) {
  expecting = 1;
  seen_by_cupti = 0;
}

void kc_audit_expect_end(void) {
  if (!seen_by_cupti) atomic_fetch_add(&shim_only, 1);
  expecting = 0;
}

static void *open_cupti(void) {
  static const char *const names[] = {"libcupti.so.13",
                                      "libcupti.so",
                                      "/usr/local/cuda/lib64/libcupti.so.13",
                                      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
                                      NULL};
  for (const char *const *n = names; *n; n++) {
    void *h = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  return NULL;
}

void kc_audit_start(void) {
  kc_guard_enter();
  void *h = open_cupti();
  if (!h) {
    kc_log_printf(KC_LOG_WARN,
                  "cupti_audit=1: CUPTI (libcupti.so) not found; continuing without the audit");
    goto out;
  }
  cupti.subscribe = (__typeof__(cupti.subscribe))dlsym(h, "cuptiSubscribe");
  cupti.subscribe_v2 = (__typeof__(cupti.subscribe_v2))dlsym(h, "cuptiSubscribe_v2");
  cupti.unsubscribe = (__typeof__(cupti.unsubscribe))dlsym(h, "cuptiUnsubscribe");
  cupti.enable = (__typeof__(cupti.enable))dlsym(h, "cuptiEnableCallback");
  cupti.result_string = (__typeof__(cupti.result_string))dlsym(h, "cuptiGetResultString");
  if (!cupti.subscribe || !cupti.unsubscribe || !cupti.enable) {
    kc_log_printf(KC_LOG_WARN,
                  "cupti_audit=1: CUPTI lacks the callback API; continuing without it");
    goto out;
  }
  char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";
  CUptiResult r;
  if (cupti.subscribe_v2) {
    CUpti_SubscriberParams p = {0};
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    p.subscriberName = "kcheck";
    p.oldSubscriberName = old_name;
    p.oldSubscriberSize = sizeof old_name - 1;
    r = cupti.subscribe_v2(&subscriber, (CUpti_CallbackFunc)on_callback, NULL, &p);
  } else {
    r = cupti.subscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL);
  }
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    kc_log_printf(KC_LOG_WARN,
                  "cupti_audit=1: another CUPTI subscriber is active (%s); only one is allowed per "
                  "process, so kcheck continues without the CUPTI audit",
                  old_name[0]
                      ? old_name
                      : "a profiler, Nsight Systems/Compute, compute-sanitizer or cuda-gdb");
    kc_report_emit("audit", json_pack("{s:s, s:s}", "status", "unavailable", "reason",
                                      old_name[0] ? old_name : "another CUPTI subscriber"));
    goto out;
  }
  if (r != CUPTI_SUCCESS) {
    const char *msg = "?";
    if (cupti.result_string) cupti.result_string(r, &msg);
    kc_log_printf(KC_LOG_WARN, "cupti_audit=1: cuptiSubscribe failed (%s); continuing without it",
                  msg);
    goto out;
  }
  static const CUpti_CallbackId ids[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
  };
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
    if (cupti.enable(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]) != CUPTI_SUCCESS) {
      kc_log_printf(KC_LOG_WARN, "cupti_audit=1: cannot enable callback %u", (unsigned)ids[i]);
      cupti.unsubscribe(subscriber);
      goto out;
    }
  kc_audit_active = 1;
  KC_LOG(KC_LOG_INFO, "CUPTI coverage audit active");
out:
  kc_guard_leave();
}

void kc_audit_finish(void) {
  if (!kc_audit_active) return;
  kc_audit_active = 0;
  long m = atomic_load(&matched), c = atomic_load(&cupti_only), s = atomic_load(&shim_only);
  json_t *missed = json_array();
  pthread_mutex_lock(&missed_lock);
  struct missed *e, *tmp;
  HASH_ITER(hh, missed_by_name, e, tmp) {
    json_array_append_new(
        missed, json_pack("{s:s, s:I}", "kernel", e->name, "count", (json_int_t)e->count));
  }
  pthread_mutex_unlock(&missed_lock);
  kc_report_emit("audit", json_pack("{s:s, s:I, s:I, s:I, s:o}", "status", "done", "matched",
                                    (json_int_t)m, "missed_by_shim", (json_int_t)c,
                                    "missed_by_cupti", (json_int_t)s, "missed_kernels", missed));
  kc_log_printf(
      KC_LOG_WARN,
      "CUPTI audit: %ld launches seen by both, %ld seen by CUPTI only (missed by kcheck), "
      "%ld seen by kcheck only",
      m, c, s);
  kc_guard_enter();
  cupti.unsubscribe(subscriber);
  kc_guard_leave();
}
