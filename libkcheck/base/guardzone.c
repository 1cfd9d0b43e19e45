/* libkcheck/base/guardzone.c — the guard-zone allocator behind the audit's
 * bounds gate: one driver allocation per tensor, zones of KC_GZ_FILL
 * around its data, a table of the live ones (uthash, by data address)
 * and the check that reads their zones back. */
#include "guardzone.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "allocmap.h"
#include "driver.h"
#include "log.h"

struct gz {
  uint64_t data;  /* what the caller got: base + KC_GZ_FRONT */
  uint64_t base;  /* the driver's allocation */
  uint64_t size;  /* bytes asked for */
  uint64_t total; /* bytes allocated: front zone, data rounded up, back zone */
  UT_hash_handle hh;
};

/* Damage found when an allocation was freed, kept for the next check. */
#define FREED_MAX 16

static struct gz *live;
static struct kc_gz_damage freed[FREED_MAX];
static size_t nfreed; /* may exceed FREED_MAX: counted, not kept */
static int fill = -1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t back_len(const struct gz *g) { return g->total - KC_GZ_FRONT - g->size; }

/* The allocating thread may have no context yet (PyTorch asks for memory
 * before the runtime made one current): the device's primary context, as
 * the runtime would use. */
static int ensure_ctx(int device) {
  CUcontext ctx = NULL;
  if (kc_drv.cuCtxGetCurrent && kc_drv.cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx) return 0;
  CUdevice dev;
  if (!kc_drv.cuDeviceGet || !kc_drv.cuDevicePrimaryCtxRetain || !kc_drv.cuCtxSetCurrent) return -1;
  if (kc_drv.cuDeviceGet(&dev, device) != CUDA_SUCCESS ||
      kc_drv.cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
    return -1;
  return kc_drv.cuCtxSetCurrent(ctx) == CUDA_SUCCESS ? 0 : -1;
}

void *kc_gz_alloc(size_t size, int device, CUstream stream) {
  if (size == 0) return NULL; /* as PyTorch's own allocator: no memory for no bytes */
  if (!kc_drv.cuMemAlloc_v2 || !kc_drv.cuMemsetD8Async || ensure_ctx(device)) {
    KC_LOG(KC_LOG_ERROR, "guard-zone allocator: no driver or context for device %d", device);
    return NULL;
  }
  if (size > SIZE_MAX / 2) return NULL;
  uint64_t rounded = (size + KC_GZ_ALIGN - 1) / KC_GZ_ALIGN * KC_GZ_ALIGN;
  struct gz *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->size = size;
  g->total = KC_GZ_FRONT + rounded + KC_GZ_BACK;
  CUdeviceptr base = 0;
  CUresult r = kc_drv.cuMemAlloc_v2(&base, g->total);
  if (r != CUDA_SUCCESS) {
    KC_LOG(KC_LOG_ERROR, "guard-zone allocator: cuMemAlloc of %llu bytes failed (%d)",
           (unsigned long long)g->total, (int)r);
    free(g);
    return NULL;
  }
  g->base = base;
  g->data = base + KC_GZ_FRONT;
  pthread_mutex_lock(&lock);
  int poison = fill;
  pthread_mutex_unlock(&lock);
  /* On the stream the memory is first used on: ordered before its use. */
  if (poison >= 0) r = kc_drv.cuMemsetD8Async(g->data, (unsigned char)poison, size, stream);
  if (r == CUDA_SUCCESS) r = kc_drv.cuMemsetD8Async(g->base, KC_GZ_FILL, KC_GZ_FRONT, stream);
  if (r == CUDA_SUCCESS)
    r = kc_drv.cuMemsetD8Async(g->data + size, KC_GZ_FILL, back_len(g), stream);
  if (r != CUDA_SUCCESS) {
    KC_LOG(KC_LOG_ERROR, "guard-zone allocator: filling the zones failed (%d)", (int)r);
    if (kc_drv.cuMemFree_v2) kc_drv.cuMemFree_v2(base);
    free(g);
    return NULL;
  }
  pthread_mutex_lock(&lock);
  HASH_ADD(hh, live, data, sizeof g->data, g);
  pthread_mutex_unlock(&lock);
  /* The application's memory, as the allocation hooks would record it. */
  kc_allocmap_insert(g->base, g->total, KC_ALLOC_PLAIN);
  return (void *)(uintptr_t)g->data;
}

/* Bytes of z[0, n) that are not the fill; the first one's index in *first
 * (-1: none). */
static uint64_t not_fill(const unsigned char *z, size_t n, long *first) {
  uint64_t count = 0;
  *first = -1;
  for (size_t i = 0; i < n; i++)
    if (z[i] != KC_GZ_FILL) {
      if (*first < 0) *first = (long)i;
      count++;
    }
  return count;
}

/* Reads g's zones (the device idle): 1 and *d filled when a guard byte
 * changed, the zones then filled again; 0 when intact; -1 with *err. */
static int inspect(const struct gz *g, struct kc_gz_damage *d, CUresult *err) {
  unsigned char front[KC_GZ_FRONT], back[KC_GZ_ALIGN + KC_GZ_BACK];
  uint64_t nback = back_len(g);
  CUresult r = kc_drv.cuMemcpyDtoH_v2(front, g->base, KC_GZ_FRONT);
  if (r == CUDA_SUCCESS) r = kc_drv.cuMemcpyDtoH_v2(back, g->data + g->size, nback);
  if (r != CUDA_SUCCESS) {
    *err = r;
    return -1;
  }
  long fb, fa;
  uint64_t nb = not_fill(front, KC_GZ_FRONT, &fb), na = not_fill(back, nback, &fa);
  if (!nb && !na) return 0;
  memset(d, 0, sizeof *d);
  d->data = g->data;
  d->size = g->size;
  d->changed_before = nb;
  d->changed_after = na;
  /* Past the end first: the common off-by-one. */
  d->after = na != 0;
  const unsigned char *z = d->after ? back + fa : front + fb;
  size_t left = d->after ? nback - (uint64_t)fa : KC_GZ_FRONT - (uint64_t)fb;
  d->distance = d->after ? (uint64_t)fa : KC_GZ_FRONT - (uint64_t)fb;
  d->nshown = left < KC_GZ_SHOWN ? (unsigned)left : KC_GZ_SHOWN;
  memcpy(d->shown, z, d->nshown);
  /* Armed again: a later check reports only new stores. */
  r = CUDA_SUCCESS;
  if (nb) r = kc_drv.cuMemsetD8_v2(g->base, KC_GZ_FILL, KC_GZ_FRONT);
  if (na && r == CUDA_SUCCESS) r = kc_drv.cuMemsetD8_v2(g->data + g->size, KC_GZ_FILL, nback);
  if (r != CUDA_SUCCESS) {
    *err = r;
    return -1;
  }
  return 1;
}

/* Everything queued on the device done, so the zones hold the kernels'
 * stores; not while the stream is captured into a graph (no sync then). */
static int device_idle(CUstream stream) {
  if (kc_drv.cuStreamIsCapturing) {
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (kc_drv.cuStreamIsCapturing(stream, &st) == CUDA_SUCCESS &&
        st != CU_STREAM_CAPTURE_STATUS_NONE)
      return 0;
  }
  return kc_drv.cuCtxSynchronize && kc_drv.cuCtxSynchronize() == CUDA_SUCCESS;
}

void kc_gz_free(void *data, int device, CUstream stream) {
  if (!data) return;
  uint64_t key = (uint64_t)(uintptr_t)data;
  pthread_mutex_lock(&lock);
  struct gz *g = NULL;
  HASH_FIND(hh, live, &key, sizeof key, g);
  if (g) HASH_DEL(live, g);
  pthread_mutex_unlock(&lock);
  if (!g) {
    KC_INTERNAL_ERROR("guard-zone allocator: free of %p, which it did not allocate", data);
    return;
  }
  /* A temporary's zones are read before they go: its damage is reported
   * at the next check. */
  struct kc_gz_damage d;
  CUresult err = CUDA_SUCCESS;
  int ctx = ensure_ctx(device) == 0;
  if (ctx && kc_drv.cuMemcpyDtoH_v2 && device_idle(stream) && inspect(g, &d, &err) == 1) {
    d.freed = 1;
    pthread_mutex_lock(&lock);
    if (nfreed < FREED_MAX) freed[nfreed] = d;
    nfreed++;
    pthread_mutex_unlock(&lock);
  }
  kc_allocmap_remove(g->base);
  if (kc_drv.cuMemFree_v2) kc_drv.cuMemFree_v2(g->base);
  free(g);
}

int kc_gz_fill(int byte) {
  pthread_mutex_lock(&lock);
  int old = fill;
  fill = byte < 0 ? -1 : byte & 0xff;
  pthread_mutex_unlock(&lock);
  return old;
}

size_t kc_gz_live(void) {
  pthread_mutex_lock(&lock);
  size_t n = HASH_COUNT(live);
  pthread_mutex_unlock(&lock);
  return n;
}

long kc_gz_check(struct kc_gz_damage *out, size_t max, CUresult *err) {
  *err = CUDA_SUCCESS;
  if (!kc_drv.cuCtxSynchronize || !kc_drv.cuMemcpyDtoH_v2 || !kc_drv.cuMemsetD8_v2) {
    *err = CUDA_ERROR_NOT_INITIALIZED;
    return -1;
  }
  pthread_mutex_lock(&lock);
  long n = 0;
  CUresult r = live ? kc_drv.cuCtxSynchronize() : CUDA_SUCCESS;
  for (struct gz *g = live; g && r == CUDA_SUCCESS; g = (struct gz *)g->hh.next) {
    struct kc_gz_damage d;
    int k = inspect(g, &d, &r);
    if (k < 0) break;
    if (k == 1) {
      if ((size_t)n < max) out[n] = d;
      n++;
    }
  }
  /* Then the freed ones: after the live, which name the tensors held. */
  for (size_t i = 0; i < nfreed; i++, n++)
    if (i < FREED_MAX && (size_t)n < max) out[n] = freed[i];
  nfreed = 0;
  pthread_mutex_unlock(&lock);
  if (r != CUDA_SUCCESS) {
    *err = r;
    return -1;
  }
  return n;
}

json_t *kc_gz_damage_json(const struct kc_gz_damage *d) {
  char hex[2 * KC_GZ_SHOWN + 1];
  for (unsigned i = 0; i < d->nshown; i++)
    snprintf(hex + 2 * i, 3, "%02x", d->shown[i]);
  hex[2 * d->nshown] = 0;
  return json_pack("{s:I, s:I, s:s, s:I, s:I, s:I, s:s, s:b}", "ptr", (json_int_t)d->data, "size",
                   (json_int_t)d->size, "side", d->after ? "after_end" : "before_start",
                   d->after ? "bytes_past_end" : "bytes_before_start", (json_int_t)d->distance,
                   "changed_bytes_before", (json_int_t)d->changed_before, "changed_bytes_after",
                   (json_int_t)d->changed_after, "written", hex, "freed", d->freed);
}
