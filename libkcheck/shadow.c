/* libkcheck/shadow.c — snapshot, re-launch, compare and restore around one
 * application launch. Pre-state and post-state A both stay on the device;
 * comparisons run there (kc_compare) and only the first differing word is
 * copied back, so a check costs a few passes over the saved bytes. */
#include "shadow.h"

#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "driver.h"
#include "log.h"
#include "options.h"
#include "own.h"
#include "perturb.h"
#include "report.h"

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
  s->regions[s->nregions++] = (struct kc_region){base, size, 0, 0};
  s->saved_bytes += size;
  return 0;
}

static void free_dev(CUdeviceptr *p) {
  if (!*p) return;
  kc_own_remove(*p);
  kc_drv.cuMemFree_v2(*p);
  *p = 0;
}

static int alloc_dev(CUdeviceptr *p, uint64_t size) {
  if (kc_drv.cuMemAlloc_v2(p, size ? size : 4) != CUDA_SUCCESS) {
    *p = 0;
    return -1;
  }
  kc_own_add(*p, size ? size : 4);
  return 0;
}

static void free_regions(struct kc_shadow *s) {
  for (int i = 0; i < s->nregions; i++) {
    free_dev(&s->regions[i].pre);
    free_dev(&s->regions[i].post);
  }
  free(s->regions);
  s->regions = NULL;
  s->nregions = 0;
}

static int collect(struct kc_shadow *s, struct kc_launch_info *li) {
  int cap = 0;
  if (kc_opt.save_all) {
    /* For kernels that reach memory through pointers stored in device memory. */
    size_t n = kc_allocmap_count();
    struct kc_alloc *all = malloc((n ? n : 1) * sizeof *all);
    if (!all) return -1;
    n = kc_allocmap_snapshot(all, n);
    for (size_t i = 0; i < n; i++)
      if (add_region(s, all[i].base, all[i].size, &cap)) {
        free(all);
        return -1;
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
 * floor. Any failure only leaves the time unknown. */
struct ev_timer {
  CUevent e[2];
  int n; /* events created */
  int ok;
};

static void timer_start(struct ev_timer *t, CUstream st) {
  memset(t, 0, sizeof *t);
  if (!kc_drv.cuEventCreate || !kc_drv.cuEventRecord || !kc_drv.cuEventElapsedTime_v2 ||
      !kc_drv.cuEventDestroy_v2)
    return;
  for (; t->n < 2; t->n++)
    if (kc_drv.cuEventCreate(&t->e[t->n], CU_EVENT_DEFAULT) != CUDA_SUCCESS) return;
  t->ok = kc_drv.cuEventRecord(t->e[0], st) == CUDA_SUCCESS;
}

static void timer_stop(struct ev_timer *t, CUstream st) {
  if (t->ok) t->ok = kc_drv.cuEventRecord(t->e[1], st) == CUDA_SUCCESS;
}

/* After a sync: the time in ms (-1 unknown); frees the events. */
static double timer_ms(struct ev_timer *t) {
  float ms = -1;
  if (!t->ok || kc_drv.cuEventElapsedTime_v2(&ms, t->e[0], t->e[1]) != CUDA_SUCCESS) ms = -1;
  for (int i = 0; i < t->n; i++)
    kc_drv.cuEventDestroy_v2(t->e[i]);
  t->n = t->ok = 0;
  return (double)ms;
}

int kc_shadow_begin(struct kc_shadow *s, struct kc_launch_info *li, const char **why) {
  memset(s, 0, sizeof *s);
  s->li = li;
  s->t_start = kc_now_s();
  s->snapshot_ms = s->kernel_ms = -1;
  if (collect(s, li)) return fail(s, why, "out of host memory");
  /* Two device copies: the pre-state and post-state A. */
  uint64_t need = 2 * s->saved_bytes;
  if (need > kc_opt.mem_budget) return fail(s, why, "snapshot larger than mem_budget");
  size_t free_b = 0, total_b = 0;
  if (kc_drv.cuMemGetInfo_v2 && kc_drv.cuMemGetInfo_v2(&free_b, &total_b) == CUDA_SUCCESS &&
      need + (256u << 20) > free_b)
    /* Never make the application run out of memory because of a check. */
    return fail(s, why, "not enough free device memory for the snapshot");
  if (kc_sync_device() != CUDA_SUCCESS)
    return fail(s, why, "device synchronization failed before the launch");
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    if (alloc_dev(&r->pre, r->size) || alloc_dev(&r->post, r->size))
      return fail(s, why, "device memory for the snapshot unavailable");
  }
  /* The copies go to the legacy stream, where the timer's events go too. */
  struct ev_timer t;
  timer_start(&t, NULL);
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    if (kc_drv.cuMemcpyDtoD_v2(r->pre, r->base, r->size) != CUDA_SUCCESS) {
      timer_ms(&t);
      return fail(s, why, "saving the pre-state failed");
    }
  }
  timer_stop(&t, NULL);
  CUresult sr = kc_sync_device();
  s->snapshot_ms = timer_ms(&t);
  if (sr != CUDA_SUCCESS) return fail(s, why, "saving the pre-state failed");
  return 0;
}

static int copy_all(struct kc_shadow *s, int to_post) {
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    CUresult c = to_post ? kc_drv.cuMemcpyDtoD_v2(r->post, r->base, r->size)
                         : kc_drv.cuMemcpyDtoD_v2(r->base, r->pre, r->size);
    if (c != CUDA_SUCCESS) return -1;
  }
  return kc_sync_device() == CUDA_SUCCESS ? 0 : -1;
}

CUresult kc_shadow_app_launch(struct kc_shadow *s, int *ok) {
  *ok = 0;
  struct ev_timer t;
  timer_start(&t, s->li->stream);
  CUresult r = kc_app_launch(s->li->args);
  timer_stop(&t, s->li->stream);
  if (r != CUDA_SUCCESS) {
    timer_ms(&t);
    return r;
  }
  CUresult sr = kc_sync_device();
  s->kernel_ms = timer_ms(&t);
  if (sr != CUDA_SUCCESS) return r; /* the kernel faulted: nothing to compare */
  if (copy_all(s, 1)) return r;
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
  if (copy_all(s, 0)) {
    *why = "restoring the pre-state failed";
    return -1;
  }
  CUstream stream = li->stream;
  unsigned shmem = li->shmem;
  CUfunction fn = li->args->f;
  int rc = kc_perturb_before(p, li, &stream, &shmem, &fn, why);
  if (rc) return rc;
  CUlaunchAttribute attrs[KC_MAX_ATTRS + 1];
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = li->grid[0], cfg.gridDimY = li->grid[1], cfg.gridDimZ = li->grid[2];
  cfg.blockDimX = li->block[0], cfg.blockDimY = li->block[1], cfg.blockDimZ = li->block[2];
  cfg.sharedMemBytes = shmem;
  cfg.hStream = stream;
  cfg.numAttrs = (unsigned)relaunch_attrs(li, attrs);
  cfg.attrs = cfg.numAttrs ? attrs : NULL;
  CUresult r = kc_drv.cuLaunchKernelEx
                   ? kc_drv.cuLaunchKernelEx(&cfg, fn, li->args->params, li->args->extra)
                   : CUDA_ERROR_NOT_SUPPORTED;
  /* A green-context stream belongs to another context: the context-wide
   * sync below does not wait for it. */
  CUresult sr = CUDA_SUCCESS;
  if (stream != li->stream && kc_drv.cuStreamSynchronize) sr = kc_drv.cuStreamSynchronize(stream);
  CUresult cr = kc_sync_device();
  kc_perturb_after(p, li);
  s->runs++;
  if (r != CUDA_SUCCESS) {
    *why = "the shadow launch failed";
    return -1;
  }
  if (sr != CUDA_SUCCESS || cr != CUDA_SUCCESS) {
    *why = "the shadow run faulted";
    return -1;
  }
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

static int compare_region(const struct kc_region *r, uint64_t *count, uint64_t *first) {
  uint64_t words = r->size / 4;
  if (kc_perturb_compare(r->base, r->post, words, count, first) &&
      host_compare(r->base, r->post, words, count, first))
    return -1;
  /* A size that is not a multiple of 4 leaves a few bytes for the host. */
  unsigned tail = (unsigned)(r->size % 4);
  if (tail) {
    unsigned char x[4], y[4];
    if (kc_drv.cuMemcpyDtoH_v2(x, r->base + 4 * words, tail) != CUDA_SUCCESS ||
        kc_drv.cuMemcpyDtoH_v2(y, r->post + 4 * words, tail) != CUDA_SUCCESS)
      return -1;
    if (memcmp(x, y, tail)) {
      if (!*count) *first = words;
      (*count)++;
    }
  }
  return 0;
}

int kc_shadow_diff(struct kc_shadow *s, struct kc_diff *d) {
  memset(d, 0, sizeof *d);
  d->region = -1;
  for (int i = 0; i < s->nregions; i++) {
    uint64_t count = 0, first = ~0ull;
    if (compare_region(&s->regions[i], &count, &first)) return -1;
    if (!count) continue;
    d->words += count;
    if (d->region < 0) {
      const struct kc_region *r = &s->regions[i];
      d->region = i;
      d->offset = 4 * first;
      d->nbytes = r->size - d->offset < 4 ? (int)(r->size - d->offset) : 4;
      if (kc_drv.cuMemcpyDtoH_v2(d->expected, r->post + d->offset, (size_t)d->nbytes) !=
              CUDA_SUCCESS ||
          kc_drv.cuMemcpyDtoH_v2(d->got, r->base + d->offset, (size_t)d->nbytes) != CUDA_SUCCESS)
        return -1;
    }
  }
  return 0;
}

int kc_shadow_end(struct kc_shadow *s) {
  int rc = 0;
  /* Without a shadow run the memory already is post-state A. A failed copy
   * is tried once more: leaving a shadow result in the application's memory
   * is the one failure kcheck must not accept quietly. */
  if (s->have_post && s->runs)
    for (int i = 0; i < s->nregions; i++) {
      struct kc_region *r = &s->regions[i];
      if (kc_drv.cuMemcpyDtoD_v2(r->base, r->post, r->size) != CUDA_SUCCESS &&
          kc_drv.cuMemcpyDtoD_v2(r->base, r->post, r->size) != CUDA_SUCCESS)
        rc = -1;
    }
  if (s->have_post && s->runs && kc_sync_device() != CUDA_SUCCESS &&
      kc_sync_device() != CUDA_SUCCESS)
    rc = -1;
  s->restored = rc == 0;
  free_regions(s);
  return rc;
}
