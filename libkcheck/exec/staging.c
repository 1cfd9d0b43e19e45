/* libkcheck/exec/staging.c — one device buffer for the snapshots of checks,
 * reused from check to check (see staging.h). */
#include "staging.h"

#include <pthread.h>

#include "devmem.h"
#include "driver.h"
#include "log.h"
#include "options.h"
#include "own.h"
#include "prof.h"

#define ALIGN (2ull << 20) /* sizes rounded to 2 MiB: fewer re-allocations */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr buf;
static uint64_t buf_size;
static int held;

static void free_buf(void) {
  if (!buf) return;
  kc_devmem_free(buf);
  buf = 0;
  buf_size = 0;
}

/* At most 1/32 of the device's memory (and never more than mem_budget) is
 * kept between checks: the application may need the rest. */
static uint64_t keep_limit(void) {
  static uint64_t limit;
  if (!limit) {
    size_t free_b = 0, total_b = 0;
    if (kc_drv.cuMemGetInfo_v2 && kc_drv.cuMemGetInfo_v2(&free_b, &total_b) == CUDA_SUCCESS)
      limit = total_b / 32;
    else
      limit = 256ull << 20;
    if (limit > kc_opt.mem_budget) limit = kc_opt.mem_budget;
    if (!limit) limit = 1;
  }
  return limit;
}

/* What may be free for kcheck: a quarter of what is free and what it
 * holds (the application may need the rest); 0 when unknown. */
static uint64_t quarter_free(void) {
  size_t free_b = 0, total_b = 0;
  if (!kc_drv.cuMemGetInfo_v2 || kc_drv.cuMemGetInfo_v2(&free_b, &total_b) != CUDA_SUCCESS)
    return 0;
  return (buf_size + free_b) / 4;
}

/* Makes the buffer at least bytes long: the old one is given back first (a
 * re-allocation keeps nothing). -1 when none could be made. Under lock. */
static int grow(uint64_t bytes) {
  if (bytes <= buf_size) return 0;
  uint64_t tp = kc_prof_now();
  /* At least twice the last size, up to what is kept between checks and a
   * quarter of what is free: a run of checks of growing size re-allocates
   * a few times, not at each step (a growth cost checks of 100-300 MiB
   * 0.35-0.6 ms on the H200: profile=1's chk_setup). */
  uint64_t grown = 2 * buf_size < keep_limit() ? 2 * buf_size : keep_limit();
  uint64_t room = quarter_free();
  if (grown > room) grown = room;
  /* nor past device_mem_budget: only what is needed may be refused */
  uint64_t capped = kc_devmem_room();
  capped = capped == UINT64_MAX ? capped : capped + buf_size;
  if (grown > capped) grown = capped;
  /* refused (and recorded) by the budget without losing the buffer */
  if (!kc_devmem_fits(KC_DM_staging, bytes, buf_size)) return -1;
  free_buf();
  uint64_t want = ((bytes > grown ? bytes : grown) + ALIGN - 1) & ~(ALIGN - 1);
  if (want > capped) want = bytes;
  if (kc_devmem_alloc(KC_DM_staging, &buf, want) != CUDA_SUCCESS) {
    /* The rounding may be what does not fit. */
    want = bytes;
    if (kc_devmem_alloc(KC_DM_staging, &buf, want) != CUDA_SUCCESS) buf = 0;
  }
  if (!buf) return -1;
  buf_size = want;
  kc_prof_lap(KC_PS_chk_setup, tp);
  return 0;
}

CUdeviceptr kc_staging_get(uint64_t bytes) {
  pthread_mutex_lock(&lock);
  CUdeviceptr r = 0;
  if (!KC_NEVER(held) /* one check at a time (world lock) */ && !grow(bytes)) {
    held = 1;
    r = buf;
  }
  pthread_mutex_unlock(&lock);
  return r;
}

void kc_staging_reserve(uint64_t bytes) {
  pthread_mutex_lock(&lock);
  if (bytes > keep_limit()) bytes = keep_limit();
  if (bytes > quarter_free()) bytes = quarter_free();
  /* a reservation is not a check: it stays inside device_mem_budget
   * rather than being refused by it */
  uint64_t capped = kc_devmem_room();
  if (capped != UINT64_MAX && bytes > capped + buf_size) bytes = capped + buf_size;
  if (!held) (void)grow(bytes);
  pthread_mutex_unlock(&lock);
}

void kc_staging_put(void) {
  pthread_mutex_lock(&lock);
  held = 0;
  if (buf_size > keep_limit()) free_buf();
  pthread_mutex_unlock(&lock);
}

int kc_staging_fits(uint64_t bytes) {
  pthread_mutex_lock(&lock);
  int ok = bytes <= buf_size || kc_devmem_fits(KC_DM_staging, bytes, buf_size);
  pthread_mutex_unlock(&lock);
  return ok;
}

uint64_t kc_staging_size(void) {
  pthread_mutex_lock(&lock);
  uint64_t n = buf_size;
  pthread_mutex_unlock(&lock);
  return n;
}

int kc_staging_release(void) {
  pthread_mutex_lock(&lock);
  int freed = 0;
  if (buf && !held) {
    free_buf();
    freed = 1;
  }
  pthread_mutex_unlock(&lock);
  return freed;
}
