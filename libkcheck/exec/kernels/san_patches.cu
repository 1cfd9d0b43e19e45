/* libkcheck/exec/kernels/san_patches.cu — the Compute Sanitizer route's
 * device callbacks, patched by the Sanitizer API into kcheck's own copy of
 * a SASS-only kernel (libkcheck/exec/san_route.c), never into the
 * application's module. userdata is the copy's struct kc_san_cfg
 * (libkcheck/base/san_rec.h). Each callback runs before its instruction, in
 * the thread that executes it. Built with nvcc --compile-as-tools-patch
 * (`make san-patches`); the fatbin is committed beside this file. */
#include <sanitizer_patching.h>
#include <stdint.h>

#include "../../base/san_rec.h"

static __device__ __forceinline__ uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

static __device__ __forceinline__ uint32_t linear_block(void) {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
static __device__ __forceinline__ uint32_t linear_thread(void) {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

/* Spins about `cycles` clock cycles (a clock-based wait: nanosleep's
 * granularity is too coarse for a few hundred cycles). */
static __device__ __forceinline__ void spin(uint32_t cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < (long long)cycles) {
  }
}

/* A per-warp seeded delay: lanes of a warp draw the same number (delays
 * change the order of warps, not of a warp's lanes, which run together). */
static __device__ __forceinline__ void maybe_delay(const kc_san_cfg *c, uint32_t p, uint64_t pc) {
  if (!p) return;
  uint32_t r = mix(c->seed ^ mix(linear_block() * 64u + linear_thread() / 32u) ^
                   mix((uint32_t)pc ^ (uint32_t)(clock64() >> 8)));
  if ((r & 0xff) < p) spin((r >> 8) & c->mask);
}

/* The thread's epoch slot, or NULL when its block is not logged. */
static __device__ __forceinline__ uint32_t *epoch_slot(const kc_san_cfg *c) {
  uint32_t b = linear_block();
  if (!c->log || b % c->stride) return NULL;
  uint32_t slot = b / c->stride, t = linear_thread();
  if (slot >= c->slots || t >= c->tpb) return NULL;
  return (uint32_t *)(uintptr_t)c->epochs + (size_t)slot * c->tpb + t;
}

static __device__ __forceinline__ void record(kc_san_cfg *c, uint64_t pc, void *ptr, uint32_t size,
                                              uint32_t flags, int global) {
  uint32_t *ep = epoch_slot(c);
  if (!ep) return;
  uint32_t i = atomicAdd(&c->count, 1u);
  if (i >= c->cap) return; /* over capacity: the host sees count > cap */
  kc_san_rec *r = (kc_san_rec *)(uintptr_t)c->buf + i;
  r->addr = (uint64_t)(uintptr_t)ptr;
  r->pc = pc;
  r->tid = linear_thread();
  r->block = linear_block();
  r->epoch = *ep;
  r->flags = (uint16_t)flags;
  r->size = (uint8_t)size;
  r->global = (uint8_t)global;
}

/* Marks synchronisation the access check does not model (san_rec.h); one
 * write per kind and warp is enough, and repeats are cheap. */
static __device__ __forceinline__ void unmodeled(kc_san_cfg *c, uint32_t bit) {
  if (!(*(volatile uint32_t *)&c->unmodeled & bit)) atomicOr(&c->unmodeled, bit);
}

/* The guard (kc_san_cfg.ranges; no table: no guard). */
static __device__ __forceinline__ int outside(const kc_san_cfg *c, uint64_t a, uint32_t size) {
  return c->nranges && kc_san_outside((const uint64_t *)(uintptr_t)c->ranges, c->nranges, a, size);
}

/* An access the guard stops: counted, the first described for the host.
 * The caller returns SANITIZER_PATCH_ERROR: the warp ends before the
 * access is made, so the copy's run cannot fault the context. */
static __device__ __forceinline__ void stopped(kc_san_cfg *c, uint64_t pc, uint64_t a,
                                               uint32_t size, uint32_t flags) {
  if (atomicAdd(&c->oob, 1u)) return;
  c->oob_addr = a;
  c->oob_pc = pc;
  c->oob_size = size;
  c->oob_flags = flags;
  c->oob_block = linear_block();
  c->oob_tid = linear_thread();
}

extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_global(void *ud, uint64_t pc,
                                                                      void *ptr, uint32_t size,
                                                                      uint32_t flags,
                                                                      const void *data) {
  kc_san_cfg *c = (kc_san_cfg *)ud;
  (void)data;
  if (!c) return SANITIZER_PATCH_SUCCESS; /* no configuration: nothing to read or write */
  maybe_delay(c, c->pmem, pc);
  /* Should a generic access to shared or local memory come here with
   * its generic address, it must not read as global: every block's shared
   * window has the same generic addresses. */
  if (__isShared(ptr)) {
    record(c, pc, (void *)(uintptr_t)__cvta_generic_to_shared(ptr), size, flags, 0);
  } else if (!__isLocal(ptr)) {
    if (outside(c, (uint64_t)(uintptr_t)ptr, size)) {
      stopped(c, pc, (uint64_t)(uintptr_t)ptr, size, flags);
      return SANITIZER_PATCH_ERROR;
    }
    record(c, pc, ptr, size, flags, 1);
  }
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_shared(void *ud, uint64_t pc,
                                                                      void *ptr, uint32_t size,
                                                                      uint32_t flags,
                                                                      const void *data) {
  kc_san_cfg *c = (kc_san_cfg *)ud;
  if (!c) return SANITIZER_PATCH_SUCCESS;
  (void)data;
  maybe_delay(c, c->pmem, pc);
  record(c, pc, ptr, size, flags, 0);
  return SANITIZER_PATCH_SUCCESS;
}

/* Before a barrier: the thread's later accesses are in the next epoch
 * (mirrors kc_san_epoch_bar, san_rec.c). */
extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_barrier(void *ud, uint64_t pc,
                                                                       uint32_t bar,
                                                                       uint32_t count,
                                                                       uint32_t flags) {
  kc_san_cfg *c = (kc_san_cfg *)ud;
  if (!c) return SANITIZER_PATCH_SUCCESS;
  (void)bar, (void)count, (void)flags;
  maybe_delay(c, c->pbar, pc);
  uint32_t tpb = blockDim.x * blockDim.y * blockDim.z;
  if (bar != 0 || (count != 0 && count != tpb)) unmodeled(c, KC_SAN_UNMODELED_NAMED_BARRIER);
  uint32_t *ep = epoch_slot(c);
  if (ep && (*ep & 0xffff) != 0xffff) *ep += 1;
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_syncwarp(void *ud, uint64_t pc,
                                                                        uint32_t mask) {
  kc_san_cfg *c = (kc_san_cfg *)ud;
  if (!c) return SANITIZER_PATCH_SUCCESS;
  (void)pc, (void)mask;
  uint32_t *ep = epoch_slot(c);
  if (ep && (*ep >> 16) != 0xffff) *ep += 0x10000;
  return SANITIZER_PATCH_SUCCESS;
}

/* Block entry: the epoch starts at 0, and the seeded start delays (a
 * block's, then each warp's). */
extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_enter(void *ud, uint64_t pc) {
  kc_san_cfg *c = (kc_san_cfg *)ud;
  if (!c) return SANITIZER_PATCH_SUCCESS;
  (void)pc;
  uint32_t *ep = epoch_slot(c);
  if (ep) *ep = 0;
  if (c->bstart) spin(mix(c->seed ^ mix(linear_block())) & c->bstart);
  if (c->start) spin(mix(c->seed ^ mix(linear_block() * 64u + linear_thread() / 32u + 1)) & c->start);
  return SANITIZER_PATCH_SUCCESS;
}

/* Synchronisation and asynchronous operations the access check does not
 * model: each only marks the run (kc_san_cfg.unmodeled). */
extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_mbarrier(void *ud, uint64_t pc,
                                                                        void *bar, uint32_t kind,
                                                                        uint32_t data) {
  (void)pc, (void)bar, (void)kind, (void)data;
  if (ud) unmodeled((kc_san_cfg *)ud, KC_SAN_UNMODELED_MBARRIER);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_memcpy_async(void *ud, uint64_t pc,
                                                                            void *src, uint32_t dst,
                                                                            uint32_t size) {
  kc_san_cfg *c = (kc_san_cfg *)ud;
  (void)dst;
  if (!c) return SANITIZER_PATCH_SUCCESS;
  if (outside(c, (uint64_t)(uintptr_t)src, size)) {
    stopped(c, pc, (uint64_t)(uintptr_t)src, size, KC_SAN_READ);
    return SANITIZER_PATCH_ERROR;
  }
  unmodeled(c, KC_SAN_UNMODELED_ASYNC_COPY);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult kc_san_cluster(void *ud, uint64_t pc) {
  (void)pc;
  if (ud) unmodeled((kc_san_cfg *)ud, KC_SAN_UNMODELED_CLUSTER);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult
kc_san_wgmma(void *ud, uint64_t pc, uint32_t a, uint32_t sa, uint32_t b, uint32_t sb,
             uint32_t flags, uint32_t mask) {
  (void)pc, (void)a, (void)sa, (void)b, (void)sb, (void)flags, (void)mask;
  if (ud) unmodeled((kc_san_cfg *)ud, KC_SAN_UNMODELED_WGMMA);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult
kc_san_bulk_copy(void *ud, uint64_t pc, uint64_t src, uint32_t dst, uint32_t bar, uint32_t data,
                 uint32_t multicast) {
  kc_san_cfg *c = (kc_san_cfg *)ud;
  (void)dst, (void)bar, (void)data, (void)multicast;
  if (!c) return SANITIZER_PATCH_SUCCESS;
  /* the copy's size is the tensor map's: its first byte is checked */
  if (outside(c, src, 1)) {
    stopped(c, pc, src, 1, KC_SAN_READ);
    return SANITIZER_PATCH_ERROR;
  }
  unmodeled(c, KC_SAN_UNMODELED_ASYNC_COPY);
  return SANITIZER_PATCH_SUCCESS;
}
