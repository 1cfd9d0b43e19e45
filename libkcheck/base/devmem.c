/* libkcheck/base/devmem.c — kcheck's own device memory by category and the
 * device_mem_budget cap (see devmem.h). The counters are atomics so the
 * summary can be written from a signal handler without a lock; the table
 * of live allocations (for the size and category a free gives back) and
 * the budget's test-and-add are under one mutex. */
#include "devmem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "driver.h"
#include "log.h"
#include "options.h"
#include "own.h"

#define MAX_LIVE 256 /* as own.c: kcheck holds a few dozen buffers at most */

static const char *const names[KC_DM_COUNT] = {
#define KC_DEVMEM(name, how, desc) [KC_DM_##name] = #name,
#include "devmem.def"
#undef KC_DEVMEM
};
static const char *const hows[KC_DM_COUNT] = {
#define KC_DEVMEM(name, how, desc) [KC_DM_##name] = #how,
#include "devmem.def"
#undef KC_DEVMEM
};

static struct {
  _Atomic uint64_t current, peak, allocated, count, refused, capped;
} cats[KC_DM_COUNT];
static _Atomic uint64_t total_current, total_peak, total_refused;

static struct {
  CUdeviceptr p;
  uint64_t bytes;
  enum kc_devmem_cat cat;
} live[MAX_LIVE];
static int nlive;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The refusals' texts, a ring under the lock (not thread-local: the
 * library's static TLS is small, and dlopen'ed libkcheck must fit it). A
 * check may be refused more than once (a strategy's buffer, then
 * another's) before its record is written, and checks run one at a time. */
#define WHY_RING 16
static char why_buf[WHY_RING][160];
static unsigned why_next;
static __thread const char *refused_last;

static void raise_peak(_Atomic uint64_t *peak, uint64_t now) {
  uint64_t old = atomic_load(peak);
  while (now > old && !atomic_compare_exchange_weak(peak, &old, now)) {
  }
}

/* bytes more held by cat; counted as one more allocation when count */
static void add_held(enum kc_devmem_cat cat, uint64_t bytes, int count) {
  raise_peak(&cats[cat].peak, atomic_fetch_add(&cats[cat].current, bytes) + bytes);
  raise_peak(&total_peak, atomic_fetch_add(&total_current, bytes) + bytes);
  atomic_fetch_add(&cats[cat].allocated, bytes);
  if (count) atomic_fetch_add(&cats[cat].count, 1);
}

static void add(enum kc_devmem_cat cat, uint64_t bytes) { add_held(cat, bytes, 1); }

static void sub(enum kc_devmem_cat cat, uint64_t bytes) {
  atomic_fetch_sub(&cats[cat].current, bytes);
  atomic_fetch_sub(&total_current, bytes);
}

/* Records a refusal of `need` bytes for cat; under lock. */
static void refuse(enum kc_devmem_cat cat, uint64_t need) {
  atomic_fetch_add(&cats[cat].refused, 1);
  atomic_fetch_add(&total_refused, 1);
  char *b = why_buf[why_next++ % WHY_RING];
  snprintf(b, sizeof why_buf[0], "device_mem_budget: %s needs %llu bytes, %llu in use of %llu",
           names[cat], (unsigned long long)need, (unsigned long long)atomic_load(&total_current),
           (unsigned long long)kc_opt.device_mem_budget);
  refused_last = b;
}

uint64_t kc_devmem_room(void) {
  if (!kc_opt.device_mem_budget) return UINT64_MAX;
  uint64_t cur = atomic_load(&total_current);
  return cur >= kc_opt.device_mem_budget ? 0 : kc_opt.device_mem_budget - cur;
}

uint64_t kc_devmem_current(void) { return atomic_load(&total_current); }

const char *kc_devmem_refused(void) { return refused_last; }

CUresult kc_devmem_alloc(enum kc_devmem_cat cat, CUdeviceptr *p, size_t bytes) {
  *p = 0;
  refused_last = NULL;
  pthread_mutex_lock(&lock);
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  if (bytes > kc_devmem_room()) {
    refuse(cat, bytes);
  } else if (nlive == MAX_LIVE) {
    KC_INTERNAL_ERROR("too many of kcheck's device allocations to account");
  } else if ((r = kc_drv.cuMemAlloc_v2(p, bytes)) == CUDA_SUCCESS) {
    live[nlive].p = *p, live[nlive].bytes = bytes, live[nlive].cat = cat, nlive++;
    add(cat, bytes);
    kc_own_add(*p, bytes);
  } else {
    *p = 0;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

int kc_devmem_fits(enum kc_devmem_cat cat, uint64_t bytes, uint64_t held) {
  refused_last = NULL;
  uint64_t room = kc_devmem_room();
  if (room == UINT64_MAX || bytes <= room || bytes - room <= held) return 1;
  pthread_mutex_lock(&lock);
  refuse(cat, bytes);
  pthread_mutex_unlock(&lock);
  return 0;
}

CUresult kc_devmem_free(CUdeviceptr p) {
  if (!p) return CUDA_SUCCESS;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nlive; i++)
    if (live[i].p == p) {
      sub(live[i].cat, live[i].bytes);
      live[i] = live[--nlive];
      break;
    }
  pthread_mutex_unlock(&lock);
  kc_own_remove(p);
  return kc_drv.cuMemFree_v2(p);
}

int kc_devmem_begin(enum kc_devmem_cat cat, int may_refuse, size_t *free_before) {
  refused_last = NULL;
  *free_before = 0;
  if (may_refuse && !kc_devmem_room()) {
    pthread_mutex_lock(&lock);
    refuse(cat, 0);
    pthread_mutex_unlock(&lock);
    return 0;
  }
  size_t total = 0;
  if (!kc_drv.cuMemGetInfo_v2 || kc_drv.cuMemGetInfo_v2(free_before, &total) != CUDA_SUCCESS)
    *free_before = 0;
  return 1;
}

uint64_t kc_devmem_module_bound(uint64_t image_bytes) {
  /* past the outer cap the bound changes nothing (and cannot overflow) */
  if (image_bytes >= KC_DEVMEM_MEASURED_CAP) return KC_DEVMEM_MEASURED_CAP;
  uint64_t pages = (image_bytes + KC_DEVMEM_GRANULE - 1) / KC_DEVMEM_GRANULE;
  return pages * KC_DEVMEM_GRANULE + KC_DEVMEM_MODULE_ALLOWANCE;
}

uint64_t kc_devmem_end(enum kc_devmem_cat cat, size_t free_before, uint64_t bound) {
  size_t free_after = 0, total = 0;
  /* Another thread's allocation or free in between is counted here too:
   * the figure is the driver's, not exact (devmem.def). */
  if (!free_before || !kc_drv.cuMemGetInfo_v2 ||
      kc_drv.cuMemGetInfo_v2(&free_after, &total) != CUDA_SUCCESS || free_after >= free_before) {
    atomic_fetch_add(&cats[cat].count, 1);
    return 0;
  }
  uint64_t bytes = free_before - free_after;
  /* cuMemGetInfo is device-wide: another process's allocation in between
   * falls into the figure too (devmem.h). A fall larger than the object
   * can take counts as its bound, and the summary says how often. */
  uint64_t most = bound && bound < KC_DEVMEM_MEASURED_CAP ? bound : KC_DEVMEM_MEASURED_CAP;
  if (bytes > most) {
    bytes = most;
    atomic_fetch_add(&cats[cat].capped, 1);
  }
  add(cat, bytes);
  return bytes;
}

void kc_devmem_drop(enum kc_devmem_cat cat, uint64_t bytes) {
  if (bytes) sub(cat, bytes);
}

int kc_devmem_hold(enum kc_devmem_cat cat, uint64_t bytes, int check) {
  if (check) return kc_devmem_fits(cat, bytes, 0);
  pthread_mutex_lock(&lock); /* one set at a time: current moves by the difference */
  uint64_t held = atomic_load(&cats[cat].current);
  if (bytes > held)
    add_held(cat, bytes - held, !held); /* count: times it went from none to some */
  else
    sub(cat, held - bytes);
  pthread_mutex_unlock(&lock);
  return 1;
}

json_t *kc_devmem_summary_json(void) {
  json_t *by = json_object();
  for (int i = 0; by && i < KC_DM_COUNT; i++)
    json_object_set_new(by, names[i],
                        json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "how", hows[i], "current",
                                  (json_int_t)atomic_load(&cats[i].current), "peak",
                                  (json_int_t)atomic_load(&cats[i].peak), "allocated",
                                  (json_int_t)atomic_load(&cats[i].allocated), "count",
                                  (json_int_t)atomic_load(&cats[i].count), "refused",
                                  (json_int_t)atomic_load(&cats[i].refused), "capped",
                                  (json_int_t)atomic_load(&cats[i].capped)));
  return json_pack("{s:I, s:I, s:I, s:I, s:o*}", "budget", (json_int_t)kc_opt.device_mem_budget,
                   "current", (json_int_t)atomic_load(&total_current), "peak",
                   (json_int_t)atomic_load(&total_peak), "refused",
                   (json_int_t)atomic_load(&total_refused), "categories", by);
}
