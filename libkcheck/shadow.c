/* libkcheck/shadow.c — snapshot, re-launch and restore around one
 * application launch. The pre-state stays on the device (fast restores);
 * post-state A and each run's result are copied to the host for the gates
 * to compare and for the final byte-exact restore. */
#include "shadow.h"

#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "driver.h"
#include "log.h"
#include "options.h"
#include "perturb.h"
#include "report.h"

/* Synchronizing while another thread captures a stream in global mode would
 * invalidate that capture; relaxed mode makes kcheck's sync legal. */
static CUresult sync_device(void) {
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
  s->regions[s->nregions++] = (struct kc_region){base, size, 0, NULL, NULL};
  s->saved_bytes += size;
  return 0;
}

static void free_regions(struct kc_shadow *s) {
  for (int i = 0; i < s->nregions; i++) {
    if (s->regions[i].pre && kc_drv.cuMemFree_v2) kc_drv.cuMemFree_v2(s->regions[i].pre);
    free(s->regions[i].post);
    free(s->regions[i].result);
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

int kc_shadow_begin(struct kc_shadow *s, struct kc_launch_info *li, const char **why) {
  memset(s, 0, sizeof *s);
  s->li = li;
  s->t_start = kc_now_s();
  if (collect(s, li)) {
    *why = "out of host memory";
    free_regions(s);
    return -1;
  }
  /* Device: the pre-state; host: post-state A and one result. */
  if (s->saved_bytes > kc_opt.mem_budget) {
    *why = "snapshot larger than mem_budget";
    free_regions(s);
    return -1;
  }
  size_t free_b = 0, total_b = 0;
  if (kc_drv.cuMemGetInfo_v2 && kc_drv.cuMemGetInfo_v2(&free_b, &total_b) == CUDA_SUCCESS &&
      s->saved_bytes + (256u << 20) > free_b) {
    /* Never make the application run out of memory because of a check. */
    *why = "not enough free device memory for the snapshot";
    free_regions(s);
    return -1;
  }
  if (sync_device() != CUDA_SUCCESS) {
    *why = "device synchronization failed before the launch";
    free_regions(s);
    return -1;
  }
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    r->post = malloc(r->size ? r->size : 1);
    r->result = malloc(r->size ? r->size : 1);
    if (!r->post || !r->result) {
      *why = "out of host memory for the snapshot";
      free_regions(s);
      return -1;
    }
    if (kc_drv.cuMemAlloc_v2(&r->pre, r->size) != CUDA_SUCCESS) {
      r->pre = 0;
      *why = "device memory for the snapshot unavailable";
      free_regions(s);
      return -1;
    }
    if (kc_drv.cuMemcpyDtoD_v2(r->pre, r->base, r->size) != CUDA_SUCCESS) {
      *why = "saving the pre-state failed";
      free_regions(s);
      return -1;
    }
  }
  if (sync_device() != CUDA_SUCCESS) {
    *why = "saving the pre-state failed";
    free_regions(s);
    return -1;
  }
  return 0;
}

static int copy_out(struct kc_shadow *s, int post) {
  for (int i = 0; i < s->nregions; i++) {
    struct kc_region *r = &s->regions[i];
    if (kc_drv.cuMemcpyDtoH_v2(post ? r->post : r->result, r->base, r->size) != CUDA_SUCCESS)
      return -1;
  }
  return 0;
}

CUresult kc_shadow_app_launch(struct kc_shadow *s, int *ok) {
  *ok = 0;
  CUresult r = kc_app_launch(s->li->args);
  if (r != CUDA_SUCCESS) return r;
  if (sync_device() != CUDA_SUCCESS) return r; /* the kernel faulted: nothing to compare */
  if (copy_out(s, 1)) return r;
  s->have_post = 1;
  *ok = 1;
  return r;
}

static int restore_pre(struct kc_shadow *s) {
  for (int i = 0; i < s->nregions; i++)
    if (kc_drv.cuMemcpyDtoD_v2(s->regions[i].base, s->regions[i].pre, s->regions[i].size) !=
        CUDA_SUCCESS)
      return -1;
  return sync_device() == CUDA_SUCCESS ? 0 : -1;
}

/* Launch attributes that tie the launch to the application's stream order or
 * events are dropped; cooperative launches stay cooperative. */
static int relaunch_attrs(const struct kc_launch_info *li, CUlaunchAttribute *out) {
  int n = 0;
  for (int i = 0; i < li->nattrs; i++) {
    switch (li->attrs[i].id) {
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
      continue;
    default:
      out[n++] = li->attrs[i];
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
  if (restore_pre(s)) {
    *why = "restoring the pre-state failed";
    return -1;
  }
  CUstream stream = li->stream;
  unsigned shmem = li->shmem;
  int rc = kc_perturb_before(p, li, &stream, &shmem, why);
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
                   ? kc_drv.cuLaunchKernelEx(&cfg, li->args->f, li->args->params, li->args->extra)
                   : CUDA_ERROR_NOT_SUPPORTED;
  CUresult sr = sync_device();
  kc_perturb_after(p, li);
  s->runs++;
  if (r != CUDA_SUCCESS) {
    *why = "the shadow launch failed";
    return -1;
  }
  if (sr != CUDA_SUCCESS) {
    *why = "the shadow run faulted";
    return -1;
  }
  if (copy_out(s, 0)) {
    *why = "reading the shadow result failed";
    return -1;
  }
  return 0;
}

/* One copy of post-state A back into the application's memory. */
static int restore_one(const struct kc_region *r) {
  return kc_drv.cuMemcpyHtoD_v2(r->base, r->post, r->size) == CUDA_SUCCESS ? 0 : -1;
}

int kc_shadow_end(struct kc_shadow *s) {
  int rc = 0;
  /* Without a shadow run the memory already is post-state A. A failed copy
   * is tried once more: leaving a shadow result in the application's memory
   * is the one failure kcheck must not accept quietly. */
  for (int i = 0; s->have_post && s->runs && i < s->nregions; i++)
    if (restore_one(&s->regions[i]) && restore_one(&s->regions[i])) rc = -1;
  if (s->have_post && s->runs && sync_device() != CUDA_SUCCESS && sync_device() != CUDA_SUCCESS)
    rc = -1;
  s->restored = rc == 0;
  free_regions(s);
  return rc;
}
