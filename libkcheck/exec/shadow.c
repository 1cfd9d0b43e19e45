/* libkcheck/exec/shadow.c — snapshot, re-launch, compare and restore around one
 * application launch. Pre-state and post-state A both stay on the device;
 * comparisons run there (kc_compare) and only the first differing word is
 * copied back, so a check costs a few passes over the saved bytes. */
#include "shadow.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "allocmap.h"
#include "devmem.h"
#include "driver.h"
#include "intra.h"
#include "log.h"
#include "options.h"
#include "own.h"
#include "perturb.h"
#include "prof.h"
#include "report.h"
#include "staging.h"

/* Synchronizing while another thread captures a stream in global mode would
 * invalidate that capture; relaxed mode makes kcheck's sync legal. */
CUresult kc_sync_device(void) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  int swapped = kc_drv.cuThreadExchangeStreamCaptureMode &&
                kc_drv.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  CUresult r = kc_drv.cuCtxSynchronize ? kc_drv.cuCtxSynchronize() : CUDA_ERROR_NOT_SUPPORTED;
  if (swapped) kc_drv.cuThreadExchangeStreamCaptureMode(&mode);
  return r;
}

int kc_capture_mode_relax(CUstreamCaptureMode *saved) {
  *saved = CU_STREAM_CAPTURE_MODE_RELAXED;
  return kc_drv.cuThreadExchangeStreamCaptureMode &&
         kc_drv.cuThreadExchangeStreamCaptureMode(saved) == CUDA_SUCCESS;
}

void kc_capture_mode_restore(CUstreamCaptureMode saved) {
  kc_drv.cuThreadExchangeStreamCaptureMode(&saved);
}

static int add_region(struct kc_shadow *s, uint64_t base, uint64_t size, int *cap) {
  for (int i = 0; i < s->nregions; i++)
    if (s->regions[i].base == base) return 0;
  if (s->nregions == *cap) {
    int ncap = *cap ? 2 * *cap : 8;
    struct kc_region *n = realloc(s->regions, (size_t)ncap * sizeof *n);
    if (!n) return -1;
    s->regions = n;
    *cap = ncap;
  }
  s->regions[s->nregions++] = (struct kc_region){.base = base, .size = size};
  s->saved_bytes += size;
  return 0;
}

static void free_regions(struct kc_shadow *s) {
  free(s->regions);
  s->regions = NULL;
  s->nregions = 0;
  if (s->staging) kc_staging_put();
  s->staging = 0;
}

/* Managed memory (cuMemAllocManaged) is written by CPU threads with plain
 * stores: no driver call, so the world lock does not hold them off. A
 * check that saved, compared and restored such an allocation would put
 * back bytes another thread wrote meanwhile (and report its stores as the
 * kernel's). Allocations kcheck saw made are in its map with their kind;
 * others are asked of the driver. */
static int is_managed(const struct kc_ptr *p) {
  struct kc_alloc a;
  if (kc_allocmap_find(p->base, &a) == 0) return a.kind == KC_ALLOC_MANAGED;
  unsigned managed = 0;
  return kc_drv.cuPointerGetAttribute &&
         kc_drv.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      (CUdeviceptr)p->base) == CUDA_SUCCESS &&
         managed;
}

/* 1: the launch's parameters point into managed memory (not checked);
 * -1: out of memory. */
static int collect(struct kc_shadow *s, struct kc_launch_info *li) {
  int cap = 0;
  for (int i = 0; i < li->nptrs; i++)
    if (is_managed(&li->ptrs[i])) return 1;
  if (kc_opt.save_all) {
    /* For kernels that reach memory through pointers stored in device
     * memory; managed allocations are left out (counted in the record). */
    size_t n = kc_allocmap_count();
    struct kc_alloc *all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return -1;
    n = kc_allocmap_snapshot(all, n);
    for (size_t i = 0; i < n; i++) {
      if (all[i].kind == KC_ALLOC_MANAGED) {
        s->managed_left_out++;
        s->managed_left_out_bytes += all[i].size;
        continue;
      }
      if (add_region(s, all[i].base, all[i].size, &cap)) {
        free(all);
        return -1;
      }
    }
    free(all);
  }
  for (int i = 0; i < li->nptrs; i++)
    if (add_region(s, li->ptrs[i].base, li->ptrs[i].size, &cap)) return -1;
  return 0;
}

static int fail(struct kc_shadow *s, const char **why, const char *msg) {
  *why = msg;
  free_regions(s);
  return -1;
}

/* Device-event timing of one stretch of a stream's work, for the check's
 * floor. Any failure only leaves the time unknown. A check times two
 * stretches (the save, then the application's launch), read together
 * after the launch's wait, so each thread keeps two pairs of events for
 * its context instead of creating and destroying them per stretch. */
struct ev_timer {
  CUevent e[2];
  int ok;
};

enum { TIMER_SAVE, TIMER_LAUNCH, TIMERS };

static __thread struct {
  CUcontext ctx;
  CUevent e[2 * TIMERS];
  int n; /* events created for ctx */
} ev_pool;

/* The pre-state's timer: read after the application's launch (a thread
 * makes one check at a time). */
static __thread struct ev_timer save_timer;

static void timer_start(struct ev_timer *t, int which, CUstream st) {
  memset(t, 0, sizeof *t);
  if (!kc_drv.cuEventCreate || !kc_drv.cuEventRecord || !kc_drv.cuEventElapsedTime_v2 ||
      !kc_drv.cuEventDestroy_v2 || !kc_drv.cuCtxGetCurrent)
    return;
  CUcontext ctx = NULL;
  if (kc_drv.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return;
  if (ev_pool.ctx != ctx) {
    /* Events belong to a context: another one needs its own. */
    for (int i = 0; i < ev_pool.n; i++)
      kc_drv.cuEventDestroy_v2(ev_pool.e[i]);
    ev_pool.n = 0;
    ev_pool.ctx = ctx;
  }
  for (; ev_pool.n < 2 * TIMERS; ev_pool.n++)
    if (kc_drv.cuEventCreate(&ev_pool.e[ev_pool.n], CU_EVENT_DEFAULT) != CUDA_SUCCESS) return;
  t->e[0] = ev_pool.e[2 * which];
  t->e[1] = ev_pool.e[2 * which + 1];
  t->ok = kc_drv.cuEventRecord(t->e[0], st) == CUDA_SUCCESS;
  if (!t->ok) ev_pool.n = 0, ev_pool.ctx = NULL; /* e.g. a destroyed context's: made anew */
}

static void timer_stop(struct ev_timer *t, CUstream st) {
  if (t->ok) t->ok = kc_drv.cuEventRecord(t->e[1], st) == CUDA_SUCCESS;
}

/* After the stream's wait: the time in ms (-1 unknown). */
static double timer_ms(struct ev_timer *t) {
  float ms = -1;
  if (!t->ok || kc_drv.cuEventElapsedTime_v2(&ms, t->e[0], t->e[1]) != CUDA_SUCCESS) ms = -1;
  t->ok = 0;
  return (double)ms;
}

#define SLOT_ALIGN 256u
/* Zeroed sets of slots a check holds: the save's and the application's
 * hashes, one for each run's (a check usually makes 2-8) and the hash
 * after the gates; later hashes zero their own. */
#define ZEROED_SETS 10
static uint64_t aligned(uint64_t n) { return (n + SLOT_ALIGN - 1) & ~(uint64_t)(SLOT_ALIGN - 1); }

static CUresult copy_async(CUdeviceptr dst, CUdeviceptr src, uint64_t n, CUstream st) {
  return kc_drv.cuMemcpyDtoDAsync_v2 ? kc_drv.cuMemcpyDtoDAsync_v2(dst, src, n, st)
                                     : kc_drv.cuMemcpyDtoD_v2(dst, src, n);
}

static CUresult stream_sync(CUstream st) {
  return kc_drv.cuStreamSynchronize ? kc_drv.cuStreamSynchronize(st) : kc_sync_device();
}

static int shadow_begin(struct kc_shadow *s, struct kc_launch_info *li, const char **why);
static uint64_t hash_key(void);

/* Slots for a hash (32 bytes a region): a zeroed set while there is
 * one (*zeroed 1), else the check's own slots, which the hash zeroes. */
static CUdeviceptr hash_slots(struct kc_shadow *s, int *zeroed) {
  *zeroed = s->zeroed_left > 0;
  if (!*zeroed) return s->slots;
  s->zeroed_left--;
  return s->zeroed_sets +
         32u * (uint64_t)s->nregions * (uint64_t)(ZEROED_SETS - 1 - s->zeroed_left);
}

/* The pre-state saved and hashed in one launch (one for every 64
 * regions), queued on the check's stream; -1 when a region has bytes past
 * its last whole word or the kernel is unavailable (the caller copies). */
static int save_hashed(struct kc_shadow *s) {
  int n = s->nregions, rc = -1;
  CUdeviceptr *a = malloc(sizeof *a * (size_t)(n ? n : 1));
  CUdeviceptr *b = malloc(sizeof *b * (size_t)(n ? n : 1));
  uint64_t *w = malloc(sizeof *w * (size_t)(n ? n : 1));
  if (a && b && w && n) {
    rc = 0;
    for (int i = 0; !rc && i < n; i++) {
      if (s->regions[i].size % 4) rc = -1;
      a[i] = s->regions[i].base;
      b[i] = s->regions[i].pre;
      w[i] = s->regions[i].size / 4;
    }
    int zeroed = 0;
    s->pre_slots = hash_slots(s, &zeroed);
    if (!rc)
      rc = kc_perturb_copy_hash_queue(a, b, w, n, s->hash_seed, s->pre_slots, zeroed, s->stream,
                                      &s->pre_published);
  }
  free(a);
  free(b);
  free(w);
  return rc;
}

/* After the application's launch, with the pre-state hashed: each
 * region's hash now (into hash[2i], hash[2i+1]) and whether it differs
 * from the pre-state's (res[2i] 1 or 0, as a comparison's count). */
static int changed_by_hash(struct kc_shadow *s, uint64_t *res, uint64_t *hash) {
  int n = s->nregions, rc = -1;
  CUdeviceptr *a = malloc(sizeof *a * (size_t)(n ? n : 1));
  uint64_t *w = malloc(sizeof *w * (size_t)(n ? n : 1));
  uint64_t *h = malloc(32u * (size_t)(n ? n : 1));
  if (a && w && h) {
    for (int i = 0; i < n; i++) {
      a[i] = s->regions[i].base;
      w[i] = s->regions[i].size / 4;
    }
    /* the set the save's hashes went to: its second half is zeroed too
     * when the first was */
    rc = kc_perturb_hash_after_copy(a, w, n, s->hash_seed, s->pre_slots, s->pre_slots != s->slots,
                                    s->pre_published, s->stream, h);
  }
  for (int i = 0; !rc && i < n; i++) {
    const uint64_t *pre = &h[2 * i], *now = &h[2 * n + 2 * i];
    res[2 * i] = pre[0] != now[0] || pre[1] != now[1];
    res[2 * i + 1] = 0;
    hash[2 * i] = now[0];
    hash[2 * i + 1] = now[1];
  }
  free(a);
  free(w);
  free(h);
  return rc;
}

int kc_shadow_begin(struct kc_shadow *s, struct kc_launch_info *li, const char **why) {
  uint64_t t = kc_prof_now();
  int rc = shadow_begin(s, li, why);
  kc_prof_lap(KC_PS_chk_begin, t);
  return rc;
}

/* The regions of li's pointers and the device memory their check needs;
 * -1 (why set, regions freed) when the check cannot run: managed memory,
 * or more memory than mem_budget, device_mem_budget or the device's free
 * memory allow (memory_refused). *staged: the staging bytes. */
static int collect_and_fit(struct kc_shadow *s, struct kc_launch_info *li, const char **why,
                           uint64_t *staged) {
  int c = collect(s, li);
  if (c > 0)
    return fail(s, why,
                "the launch reaches managed memory (cuMemAllocManaged): CPU threads write it "
                "without a driver call, so a check could not save, compare or restore it "
                "without reverting their stores; launched unchanged");
  if (c < 0) return fail(s, why, "out of host memory");
  /* Two device copies: the pre-state and post-state A. */
  uint64_t need = 2 * s->saved_bytes;
  if (need > kc_opt.mem_budget) {
    s->memory_refused = 1;
    return fail(s, why, "snapshot larger than mem_budget");
  }
  /* result slots: 16 bytes a region, 16 more for its hash */
  *staged = 32u * (1 + ZEROED_SETS) * (uint64_t)s->nregions + SLOT_ALIGN;
  for (int i = 0; i < s->nregions; i++)
    *staged += 2 * aligned(s->regions[i].size);
  /* A staging buffer kept from an earlier check is reused when it is large
   * enough, else given back before a larger one is made. */
  uint64_t have = kc_staging_size();
  size_t free_b = 0, total_b = 0;
  if (*staged > have && kc_drv.cuMemGetInfo_v2 &&
      kc_drv.cuMemGetInfo_v2(&free_b, &total_b) == CUDA_SUCCESS &&
      *staged + (256u << 20) > free_b + have) {
    /* Never make the application run out of memory because of a check. */
    s->memory_refused = 1;
    return fail(s, why, "not enough free device memory for the snapshot");
  }
  if (!kc_staging_fits(*staged)) {
    s->memory_refused = 1;
    return fail(s, why, kc_devmem_refused());
  }
  return 0;
}

/* Pointers the check resolves itself (li->ptrs_pending, under the world
 * lock): first from kcheck's map alone. When those allocations already
 * cannot be checked, neither can the launch (more pointers only add
 * regions), and the driver is never asked about the other address-like
 * words: a kernel with a per-step scalar is a new signature at every step,
 * and an optimizer's multi-tensor struct has ~90 such words (int pairs),
 * about 0.4 ms of driver queries per refused check on the H200. */
static int resolve_pending(struct kc_shadow *s, struct kc_launch_info *li, const char **why) {
  if (!li->ptrs_pending) return 0;
  li->ptrs_pending = 0;
  KC_ASSERT(!li->ptrs && !li->nptrs);
  kc_capture_pointers(li, KC_PTRS_MAP_ONLY);
  /* a shadow of its own: the check's starts from nothing once all are known */
  struct kc_shadow probe = {.li = li};
  uint64_t staged = 0;
  int refused = collect_and_fit(&probe, li, why, &staged);
  s->memory_refused = probe.memory_refused;
  free_regions(&probe);
  if (refused) return -1;
  free(li->ptrs);
  li->ptrs = NULL;
  li->nptrs = 0;
  kc_capture_pointers(li, KC_PTRS_ASK_DRIVER);
  return 0;
}

static int shadow_begin(struct kc_shadow *s, struct kc_launch_info *li, const char **why) {
  memset(s, 0, sizeof *s);
  s->li = li;
  s->stream = li->stream;
  s->t_start = kc_now_s();
  s->snapshot_ms = s->kernel_ms = -1;
  if (resolve_pending(s, li, why)) return -1;
  uint64_t staged = 0;
  if (collect_and_fit(s, li, why, &staged)) return -1;
  double w0 = kc_now_s();
  CUresult synced = kc_sync_device();
  s->wait_ms = 1e3 * (kc_now_s() - w0);
  if (synced != CUDA_SUCCESS)
    return fail(s, why, "device synchronization failed before the launch");
  s->staging = kc_staging_get(staged);
  if (!s->staging)
    return fail(s, why,
                kc_devmem_refused() ? kc_devmem_refused()
                                    : "device memory for the snapshot unavailable");
  /* Pre-states first, then the comparison slots; post-states are placed
   * after the application's launch, only for what it changed. */
  CUdeviceptr at = s->staging;
  for (int i = 0; i < s->nregions; i++) {
    s->regions[i].pre = at;
    at += aligned(s->regions[i].size);
  }
  s->slots = at;
  s->hash_seed = hash_key() ^ 0x9e3779b97f4a7c15ull * ((uint64_t)li->seq + 1);
  timer_start(&save_timer, TIMER_SAVE, s->stream);
  s->zeroed_sets = s->slots + 32u * (uint64_t)s->nregions;
  s->zeroed_left = 0;
  /* Hashes that publish their sums bring zeroed slots of their own. */
  if (kc_opt.hash_compare && !kc_perturb_publishes(s->nregions) && kc_drv.cuMemsetD8Async &&
      kc_drv.cuMemsetD8Async(s->zeroed_sets, 0, 32u * ZEROED_SETS * (size_t)s->nregions,
                             s->stream) == CUDA_SUCCESS)
    s->zeroed_left = ZEROED_SETS;
  s->pre_hashed = kc_opt.hash_compare && save_hashed(s) == 0;
  for (int i = 0; !s->pre_hashed && i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    if (copy_async(r->pre, r->base, r->size, s->stream) != CUDA_SUCCESS) {
      timer_ms(&save_timer);
      /* copies already queued read the memory the launch may change */
      stream_sync(s->stream);
      return fail(s, why, "saving the pre-state failed");
    }
  }
  timer_stop(&save_timer, s->stream);
  /* No wait: the application's launch is queued behind the copies on the
   * same stream, and the comparison after it waits for both (a fault in
   * a copy fails that wait). One round trip less a check. */
  return 0;
}

/* Host comparison, for when kcheck's compare kernel is unavailable. */
static int host_compare(CUdeviceptr a, CUdeviceptr b, uint64_t words, uint64_t *count,
                        uint64_t *first) {
  enum { CHUNK = 1 << 22 }; /* words per pass: 16 MiB of each buffer */
  uint32_t *x = malloc(4u * CHUNK), *y = malloc(4u * CHUNK);
  int rc = (x && y) ? 0 : -1;
  *count = 0;
  *first = ~0ull;
  for (uint64_t at = 0; !rc && at < words; at += CHUNK) {
    uint64_t n = words - at < CHUNK ? words - at : CHUNK;
    if (kc_drv.cuMemcpyDtoH_v2(x, a + 4 * at, 4 * n) != CUDA_SUCCESS ||
        kc_drv.cuMemcpyDtoH_v2(y, b + 4 * at, 4 * n) != CUDA_SUCCESS) {
      rc = -1;
      break;
    }
    if (!memcmp(x, y, 4 * n)) continue;
    for (uint64_t i = 0; i < n; i++)
      if (x[i] != y[i]) {
        if (*first == ~0ull) *first = at + i;
        (*count)++;
      }
  }
  free(x);
  free(y);
  return rc;
}

/* Compares every region's memory (only those with only[i] set, when only
 * is not NULL; the others count as equal) with its pre-state (against_pre)
 * or its post-state A: res[2i] differing words, res[2i+1] the first one.
 * All regions in one pass on the check's stream (one copy back), else on
 * the host. Bytes past the last whole word are compared on the host. With
 * hash (2 words a region), the same pass hashes every region's memory with
 * s->hash_seed; *hashed says whether it did (not on the host's path). */
static int compare_all(struct kc_shadow *s, int against_pre, const unsigned char *only,
                       uint64_t *res, uint64_t *hash, int *hashed) {
  int n = s->nregions;
  CUdeviceptr *a = malloc(sizeof *a * (size_t)(n ? n : 1));
  CUdeviceptr *b = malloc(sizeof *b * (size_t)(n ? n : 1));
  uint64_t *w = malloc(sizeof *w * (size_t)(n ? n : 1));
  int rc = (a && b && w) ? 0 : -1;
  for (int i = 0; !rc && i < n; i++) {
    a[i] = s->regions[i].base;
    b[i] = against_pre ? s->regions[i].pre : s->regions[i].post;
    /* a region left out is compared with itself: no chunk, no difference */
    if (only && !only[i]) b[i] = a[i];
    w[i] = s->regions[i].size / 4;
  }
  if (hashed) *hashed = 0;
  if (!rc && n &&
      kc_perturb_compare_many(a, b, w, n, s->slots, s->stream, res, s->hash_seed, hash)) {
    if (stream_sync(s->stream) != CUDA_SUCCESS) rc = -1;
    for (int i = 0; !rc && i < n; i++)
      if (host_compare(a[i], b[i], w[i], &res[2 * i], &res[2 * i + 1])) rc = -1;
  } else if (!rc && hashed)
    *hashed = hash != NULL;
  for (int i = 0; !rc && i < n; i++) {
    unsigned tail = (unsigned)(s->regions[i].size % 4);
    if (!tail || a[i] == b[i]) continue;
    unsigned char x[4], y[4];
    if (kc_drv.cuMemcpyDtoH_v2(x, a[i] + 4 * w[i], tail) != CUDA_SUCCESS ||
        kc_drv.cuMemcpyDtoH_v2(y, b[i] + 4 * w[i], tail) != CUDA_SUCCESS) {
      rc = -1;
      break;
    }
    if (memcmp(x, y, tail)) {
      if (!res[2 * i]) res[2 * i + 1] = w[i];
      res[2 * i]++;
    }
  }
  free(a);
  free(b);
  free(w);
  return rc;
}

/* The hash of each region with only[i] set (every region when only is
 * NULL) into h[2i], h[2i+1] (kc_perturb_hash_many over the application's
 * memory as it is now); -1 when the kernel is unavailable, a region has
 * bytes past its last whole word (those are compared on the host), or a
 * call failed. */
static int hash_all(struct kc_shadow *s, const unsigned char *only, uint64_t *h) {
  int n = s->nregions, m = 0, rc = -1;
  CUdeviceptr *a = malloc(sizeof *a * (size_t)(n ? n : 1));
  uint64_t *w = malloc(sizeof *w * (size_t)(n ? n : 1));
  uint64_t *hm = malloc(2 * sizeof *hm * (size_t)(n ? n : 1));
  int *at = malloc(sizeof *at * (size_t)(n ? n : 1));
  if (a && w && hm && at) {
    rc = 0;
    for (int i = 0; !rc && i < n; i++) {
      if (only && !only[i]) continue;
      if (s->regions[i].size % 4) rc = -1;
      a[m] = s->regions[i].base;
      w[m] = s->regions[i].size / 4;
      at[m++] = i;
    }
    int zeroed = 0;
    CUdeviceptr slots = m ? hash_slots(s, &zeroed) : s->slots;
    if (!rc && m) rc = kc_perturb_hash_many(a, w, m, s->hash_seed, slots, zeroed, s->stream, hm);
    for (int j = 0; !rc && j < m; j++) {
      h[2 * at[j]] = hm[2 * j];
      h[2 * at[j] + 1] = hm[2 * j + 1];
      s->hashed_bytes += 4 * w[j];
    }
  }
  free(a);
  free(w);
  free(hm);
  free(at);
  return rc;
}

/* Per process, drawn once: the hash seeds of its checks come from it, so
 * which contents collide is not knowable in advance. */
static uint64_t hash_key(void) {
  static _Atomic uint64_t key;
  uint64_t k = atomic_load(&key);
  if (k) return k;
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k)
    k = (uint64_t)kc_prof_now() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
  k |= 1; /* never 0: 0 means not drawn yet */
  uint64_t none = 0;
  return atomic_compare_exchange_strong(&key, &none, k) ? k : none;
}

/* Right after the application's launch the memory is post-state A: with
 * hash_compare, the comparison with the pre-state that finds what the
 * launch changed hashes every region in the same pass, so that each
 * re-run reads every region once, not twice, and A's hashes cost no read
 * of their own. */
static void keep_post_hash(struct kc_shadow *s, const uint64_t *hash, int hashed) {
  s->have_hash = 0;
  if (!hash || !hashed) return;
  for (int i = 0; i < s->nregions; i++) {
    if (s->regions[i].size % 4) return; /* such a region is compared word by word */
    s->regions[i].hash_post[0] = hash[2 * i];
    s->regions[i].hash_post[1] = hash[2 * i + 1];
  }
  s->have_hash = 1;
}

static void all_unknown(struct kc_shadow *s) {
  for (int i = 0; i < s->nregions; i++)
    s->regions[i].dirty_pre = s->regions[i].dirty_post = 1;
}

void kc_shadow_touched(struct kc_shadow *s) {
  all_unknown(s);
  s->settled = 0;
}

static CUresult shadow_app_launch(struct kc_shadow *s, int *ok);

CUresult kc_shadow_app_launch(struct kc_shadow *s, int *ok) {
  uint64_t t = kc_prof_now();
  CUresult r = shadow_app_launch(s, ok);
  kc_prof_lap(KC_PS_chk_app, t);
  return r;
}

static CUresult shadow_app_launch(struct kc_shadow *s, int *ok) {
  *ok = 0;
  struct ev_timer t;
  timer_start(&t, TIMER_LAUNCH, s->li->stream);
  CUresult r = kc_app_launch(s->li->args);
  timer_stop(&t, s->li->stream);
  if (r != CUDA_SUCCESS) {
    timer_ms(&t);
    timer_ms(&save_timer);
    stream_sync(s->stream); /* the pre-state's copies, before the staging is given back */
    return r;
  }
  /* Post-state A: only what the launch changed needs a copy of its own;
   * an unchanged allocation's post-state is its pre-state. The comparison
   * is queued behind the launch on its stream (the world is held: nothing
   * else runs), so its wait is the launch's; a fault of the kernel fails
   * that wait, and the device-wide sync then says so. */
  size_t nr = (size_t)(s->nregions ? s->nregions : 1);
  uint64_t *res = calloc(2 * nr, sizeof *res); /* zeroed: every region unchanged until said */
  uint64_t *hash = kc_opt.hash_compare ? malloc(16u * nr) : NULL;
  int hashed = 0, cmp = -1;
  /* With the pre-state hashed, a region whose hash is unchanged counts as
   * unchanged: a changed region taken for unchanged (probability about
   * 2^-64 a region, the seed drawn at random) would get the pre-state
   * back at the end instead of the application's result. */
  if (res && hash && s->pre_hashed && changed_by_hash(s, res, hash) == 0)
    cmp = 0, hashed = 1;
  else if (res)
    cmp = compare_all(s, 1, NULL, res, hash, &hashed);
  if (cmp && kc_sync_device() != CUDA_SUCCESS) {
    timer_ms(&t);
    timer_ms(&save_timer);
    free(res);
    free(hash);
    return r; /* the kernel faulted: nothing to compare */
  }
  s->kernel_ms = timer_ms(&t);
  s->snapshot_ms = timer_ms(&save_timer);
  if (!res) {
    free(hash);
    return r;
  }
  keep_post_hash(s, hash, !cmp && hashed);
  free(hash);
  CUdeviceptr at = s->slots + 32u * (1 + ZEROED_SETS) * (uint64_t)s->nregions;
  at = (at + SLOT_ALIGN - 1) & ~(CUdeviceptr)(SLOT_ALIGN - 1);
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *reg = &s->regions[i];
    reg->changed = cmp || res[2 * i] != 0;
    reg->dirty_pre = reg->changed;
    reg->dirty_post = 0;
    reg->post = reg->pre;
    if (!reg->changed) continue;
    reg->post = at;
    at += aligned(reg->size);
    if (copy_async(reg->post, reg->base, reg->size, s->stream) != CUDA_SUCCESS) {
      free(res);
      return r;
    }
  }
  free(res);
  uint64_t unchanged = 0;
  for (int i = 0; i < s->nregions; i++)
    if (!s->regions[i].changed) unchanged += s->regions[i].size;
  if (unchanged < kc_opt.unwatched_min) s->hash_every_region = 1;
  /* No wait for the copies: whatever reads post-state A next (a run's
   * restore, a comparison, the end's restore) is queued behind them on
   * the same stream, and every host read of it follows a wait there. */
  s->have_post = 1;
  *ok = 1;
  return r;
}

/* Launch attributes that tie the launch to the application's stream order or
 * events are dropped; cooperative launches stay cooperative. */
static int relaunch_attrs(const struct kc_launch_info *li, CUlaunchAttribute *out) {
  int n = 0;
  for (int i = 0; i < li->nattrs; i++) {
    switch (li->attrs[i].id) {
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: continue;
    default: out[n++] = li->attrs[i];
    }
  }
  if (li->args->entry == KC_LE_COOPERATIVE && n < KC_MAX_ATTRS + 1) {
    memset(&out[n], 0, sizeof out[n]);
    out[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    out[n].value.cooperative = 1;
    n++;
  }
  return n;
}

int kc_shadow_run(struct kc_shadow *s, const struct kc_perturb *p, const char **why) {
  struct kc_launch_info *li = s->li;
  uint64_t t = kc_prof_now();
  int defer = s->defer_sync;
  s->defer_sync = 0;
  if (s->run_pending) {
    s->run_pending = 0;
    if (stream_sync(s->stream) != CUDA_SUCCESS) {
      s->run_faulted = 1;
      *why = KC_SHADOW_FAULTED;
      return -1;
    }
  }
  /* A kernel the intra-block route cannot perturb costs no restore: the
   * memory stays as the last comparison left it. */
  if (p->intra && kc_intra_usable(li, p->intra_log != 0, why)) return 1;
  /* nor does a perturbation that cannot change this launch's run */
  if (kc_perturb_inapplicable(p, li, why)) return 1;
  s->settled = 0;
  /* Back to the pre-state: only what may differ from it, on the launch's
   * stream, so the re-run below is ordered after the copies. What the
   * application's launch left alone and no run was seen to touch is the
   * pre-state already: the run's comparison need not look there. */
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    r->watch = r->changed || r->dirty_pre;
    if (!r->dirty_pre) continue;
    if (copy_async(r->base, r->pre, r->size, s->stream) != CUDA_SUCCESS) {
      all_unknown(s);
      *why = "restoring the pre-state failed";
      return -1;
    }
    s->copied_back += r->size;
    r->dirty_pre = 0;
    r->dirty_post = r->changed;
  }
  CUstream stream = li->stream;
  unsigned shmem = li->shmem;
  /* The hammer runs on a stream of its own: it must overlap the re-run,
   * not the restore. */
  if (p->hammer && stream_sync(s->stream) != CUDA_SUCCESS) {
    all_unknown(s);
    *why = "restoring the pre-state failed";
    return -1;
  }
  t = kc_prof_lap(KC_PS_chk_restore, t);
  for (int i = 0; i < p->npoison; i++) {
    const struct kc_poison *q = &p->poison[i];
    if (q->region < 0 || q->region >= s->nregions) continue;
    struct kc_region *r = &s->regions[q->region];
    uint64_t off = q->offset < r->size ? q->offset : r->size;
    uint64_t n = q->size < r->size - off ? q->size : r->size - off;
    CUdeviceptr at = r->base + off;
    CUresult pr = CUDA_SUCCESS;
    if (!n) continue;
    if (!kc_drv.cuMemsetD32Async || !kc_drv.cuMemsetD8Async)
      pr = CUDA_ERROR_NOT_SUPPORTED;
    else if (at % 4 == 0 && n % 4 == 0)
      pr = kc_drv.cuMemsetD32Async(at, p->poison_word, n / 4, s->stream);
    else
      pr = kc_drv.cuMemsetD8Async(at, (unsigned char)p->poison_word, n, s->stream);
    r->dirty_pre = r->dirty_post = 1;
    r->watch = 1;
    if (pr != CUDA_SUCCESS) {
      all_unknown(s);
      *why = "poison-filling an allocation failed";
      return -1;
    }
  }
  CUfunction fn = li->args->f; /* the intra-block strategies run kcheck's copy */
  s->side_work |= p->hammer || p->green_sms || p->intra || p->extra_shmem;
  int rc = kc_perturb_before(p, li, &stream, &shmem, &fn, why);
  t = kc_prof_lap(KC_PS_chk_perturb, t);
  if (rc) return rc;
  /* A run on another stream (a green context's) must not start before
   * the restore is done. */
  if (stream != s->stream && stream_sync(s->stream) != CUDA_SUCCESS) {
    kc_perturb_after(p, li);
    all_unknown(s);
    *why = "restoring the pre-state failed";
    return -1;
  }
  CUlaunchAttribute attrs[KC_MAX_ATTRS + 1];
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = li->grid[0], cfg.gridDimY = li->grid[1], cfg.gridDimZ = li->grid[2];
  cfg.blockDimX = li->block[0], cfg.blockDimY = li->block[1], cfg.blockDimZ = li->block[2];
  cfg.sharedMemBytes = shmem;
  cfg.hStream = stream;
  cfg.numAttrs = (unsigned)relaunch_attrs(li, attrs);
  cfg.attrs = cfg.numAttrs ? attrs : NULL;
  s->side_work |= stream != s->stream;
  CUresult r = kc_drv.cuLaunchKernelEx
                   ? kc_drv.cuLaunchKernelEx(&cfg, fn, li->args->params, li->args->extra)
                   : CUDA_ERROR_NOT_SUPPORTED;
  /* On the check's stream, with nothing to undo or wait for after it (no
   * helper stream, function attribute or access log): the comparison that
   * follows is ordered after the run and its wait is the run's. */
  if (defer && r == CUDA_SUCCESS && stream == s->stream && !p->hammer && !p->extra_shmem &&
      !p->green_sms && !p->intra) {
    kc_perturb_after(p, li);
    kc_prof_lap(KC_PS_chk_run, t);
    all_unknown(s);
    s->runs++;
    s->run_pending = 1;
    return 0;
  }
  /* A green-context stream belongs to another context: the context-wide
   * sync below does not wait for it. */
  CUresult sr = CUDA_SUCCESS;
  if (stream != li->stream && kc_drv.cuStreamSynchronize) sr = kc_drv.cuStreamSynchronize(stream);
  CUresult cr = stream_sync(s->stream);
  kc_perturb_after(p, li);
  kc_prof_lap(KC_PS_chk_run, t);
  all_unknown(s); /* until compared */
  s->runs++;
  if (r != CUDA_SUCCESS) {
    *why = "the shadow launch failed";
    return -1;
  }
  if (sr != CUDA_SUCCESS || cr != CUDA_SUCCESS) {
    s->run_faulted = 1;
    *why = KC_SHADOW_FAULTED;
    return -1;
  }
  /* The Sanitizer route's guard ended warps of this run: its results are
   * not the kernel's (a skip; the memory is restored as after any run). */
  if (p->intra && kc_intra_guard_stopped(li, why)) return 1;
  return 0;
}

static int shadow_diff(struct kc_shadow *s, struct kc_diff *d);

/* res as compare_all(s, 0, NULL, res) gives it: the watched regions
 * hashed, the ones whose hash is post-state A's count as equal, the others
 * compared word by word (that comparison decides: a differing hash with
 * equal words counts as equal). A region not watched counts as equal and
 * is left unverified. -1 when hashing failed (the caller compares all). */
static int diff_by_hash(struct kc_shadow *s, uint64_t *res, int *waited) {
  int n = s->nregions, rc = -1, differ = 0;
  *waited = 0;
  uint64_t *h = calloc(2u * (size_t)(n ? n : 1), sizeof *h);
  unsigned char *watched = calloc((size_t)(n ? n : 1), 1);
  unsigned char *only = calloc((size_t)(n ? n : 1), 1);
  if (h && watched && only) {
    for (int i = 0; i < n; i++) {
      watched[i] = s->hash_every_region || s->regions[i].watch;
      *waited |= watched[i]; /* the hash's copy back waits for the run */
    }
    rc = hash_all(s, watched, h);
  }
  if (!rc) {
    for (int i = 0; i < n; i++) {
      only[i] = watched[i] && (h[2 * i] != s->regions[i].hash_post[0] ||
                               h[2 * i + 1] != s->regions[i].hash_post[1]);
      differ |= only[i];
      s->hash_differed += only[i];
      res[2 * i] = 0;
      res[2 * i + 1] = ~0ull;
    }
    rc = differ ? compare_all(s, 0, only, res, NULL, NULL) : 0;
  }
  for (int i = 0; !rc && i < n; i++)
    if (!watched[i]) s->regions[i].unverified = 1;
  free(h);
  free(watched);
  free(only);
  return rc;
}

int kc_shadow_diff(struct kc_shadow *s, struct kc_diff *d) {
  uint64_t t = kc_prof_now();
  int rc = shadow_diff(s, d);
  /* its waits drained the check's stream */
  if (rc == 0 && !s->side_work) s->settled = 1;
  kc_prof_lap(KC_PS_chk_compare, t);
  return rc;
}

static int shadow_diff(struct kc_shadow *s, struct kc_diff *d) {
  memset(d, 0, sizeof *d);
  d->region = -1;
  int pending = s->run_pending;
  s->run_pending = 0;
  /* zeroed: every region counts as equal until a comparison says not */
  uint64_t *res = calloc(2u * (size_t)(s->nregions ? s->nregions : 1), sizeof *res);
  int waited = 0;
  if (res && s->have_hash && diff_by_hash(s, res, &waited) == 0) {
    /* res filled: equal hashes, or the word-by-word comparison of the
     * regions whose hash differs; with nothing watched nothing waited for
     * the run yet */
    if (pending && !waited && stream_sync(s->stream) != CUDA_SUCCESS) {
      s->run_faulted = 1;
      free(res);
      return -1;
    }
  } else if (!res || compare_all(s, 0, NULL, res, NULL, NULL)) {
    /* The comparison's wait was the run's too: a fault there is the run's. */
    if (pending && stream_sync(s->stream) != CUDA_SUCCESS) s->run_faulted = 1;
    free(res);
    return -1;
  }
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    uint64_t count = res[2 * i], first = res[2 * i + 1];
    /* Equal to post-state A: equal to the pre-state exactly when the
     * application's launch did not change it. */
    r->dirty_post = count != 0;
    r->dirty_pre = count != 0 || r->changed;
    if (!count) continue;
    d->words += count;
    if (d->region < 0) {
      d->region = i;
      d->offset = 4 * first;
      d->nbytes = r->size - d->offset < 4 ? (int)(r->size - d->offset) : 4;
      if (kc_drv.cuMemcpyDtoH_v2(d->expected, r->post + d->offset, (size_t)d->nbytes) !=
              CUDA_SUCCESS ||
          kc_drv.cuMemcpyDtoH_v2(d->got, r->base + d->offset, (size_t)d->nbytes) != CUDA_SUCCESS) {
        free(res);
        return -1;
      }
    }
  }
  free(res);
  return 0;
}

int kc_shadow_verify_unwatched(struct kc_shadow *s) {
  int n = s->nregions, any = 0, rc = 0;
  unsigned char *only = calloc((size_t)(n ? n : 1), 1);
  uint64_t *h = calloc(2u * (size_t)(n ? n : 1), sizeof *h);
  for (int i = 0; i < n; i++) {
    struct kc_region *r = &s->regions[i];
    /* a region that may differ from post-state A is restored anyway */
    if (only) only[i] = r->unverified && !r->dirty_post;
    any |= r->unverified && !r->dirty_post;
  }
  if (any && (!only || !h || !s->have_hash || hash_all(s, only, h))) rc = -1;
  for (int i = 0; any && i < n; i++) {
    struct kc_region *r = &s->regions[i];
    if (!r->unverified || r->dirty_post) continue;
    if (rc < 0 || h[2 * i] != r->hash_post[0] || h[2 * i + 1] != r->hash_post[1]) {
      r->dirty_pre = r->dirty_post = 1;
      if (!rc) rc = 1;
    }
  }
  for (int i = 0; i < n; i++)
    s->regions[i].unverified = 0;
  free(only);
  free(h);
  return rc;
}

int kc_shadow_region_reset(struct kc_shadow *s, int i) {
  if (!s->have_post || i < 0 || i >= s->nregions) return -1;
  s->settled = 0;
  struct kc_region *r = &s->regions[i];
  if (copy_async(r->base, r->post, r->size, s->stream) != CUDA_SUCCESS) {
    all_unknown(s);
    return -1;
  }
  s->copied_back += r->size;
  return 0;
}

int kc_shadow_region_changed(struct kc_shadow *s, int i) {
  if (!s->have_post || i < 0 || i >= s->nregions) return -1;
  return s->regions[i].changed; /* set when post-state A was saved */
}

/* restore_check=1: the memory as the check leaves it, compared word by
 * word with post-state A (never by hash). -1 when it differs. */
static int restore_check(struct kc_shadow *s) {
  uint64_t *res = calloc(2u * (size_t)(s->nregions ? s->nregions : 1), sizeof *res);
  int rc = res ? compare_all(s, 0, NULL, res, NULL, NULL) : -1;
  for (int i = 0; !rc && i < s->nregions; i++)
    if (res[2 * i]) rc = -1;
  free(res);
  atomic_fetch_add(&kc_count.restore_checks, 1);
  if (rc) atomic_fetch_add(&kc_count.restore_differed, 1);
  return rc;
}

int kc_shadow_end(struct kc_shadow *s) {
  uint64_t t = kc_prof_now();
  int rc = 0, copied = 0;
  /* Only what may differ from post-state A is copied back (a region the
   * last comparison found equal is left alone). A failed copy is tried
   * once more: leaving a shadow result in the application's memory is the
   * one failure kcheck must not accept quietly. */
  /* What runs may have written where no comparison looked: hashed now
   * (a caller that wanted the answer asked already); what differs, or
   * could not be hashed, is copied back with the rest. */
  if (s->have_post) kc_shadow_verify_unwatched(s);
  if (s->have_post)
    for (int i = 0; i < s->nregions; i++) {
      struct kc_region *r = &s->regions[i];
      if (!r->dirty_post) continue;
      copied = 1;
      s->copied_back += r->size;
      if (copy_async(r->base, r->post, r->size, s->stream) != CUDA_SUCCESS &&
          kc_drv.cuMemcpyDtoD_v2(r->base, r->post, r->size) != CUDA_SUCCESS)
        rc = -1;
    }
  /* The copies back, and whatever of the runs no wait covered (settled),
   * must be done before the application's other streams go on. */
  if (s->have_post && (copied || (s->runs && !s->settled)) && kc_sync_device() != CUDA_SUCCESS &&
      kc_sync_device() != CUDA_SUCCESS)
    rc = -1;
  if (!rc && s->have_post && kc_opt.restore_check) rc = restore_check(s);
  s->restored = rc == 0;
  free_regions(s);
  kc_prof_lap(KC_PS_chk_end, t);
  return rc;
}
