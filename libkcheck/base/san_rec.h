/* libkcheck/base/san_rec.h — what the Compute Sanitizer route's device
 * callbacks (libkcheck/exec/kernels/san_patches.cu) and the host
 * (libkcheck/exec/san_route.c) share: the configuration block the patched
 * copy reads and the records it writes; and the host's pure parts, unit
 * tested without a driver: conversion of records to the access check's
 * struct kc_access, and where libsanitizer-public.so is looked for.
 * Included by nvcc too: plain C, fixed-size types only. */
#ifndef KC_SAN_REC_H
#define KC_SAN_REC_H

#include <stdint.h>

/* The configuration in device memory, passed to every callback as
 * userdata (sanitizerSetCallbackData on kcheck's patched copy only). */
struct kc_san_cfg {
  uint32_t seed;      /* per-run seed */
  uint32_t pmem;      /* probability (of 256) of a delay before a memory access */
  uint32_t pbar;      /* probability (of 256) of a delay before a barrier */
  uint32_t mask;      /* delay in clock cycles: a random number AND this mask */
  uint32_t start;     /* warp start delay (cycles): random AND this mask */
  uint32_t bstart;    /* block start delay (cycles, one per block) */
  uint32_t log;       /* 1: the sampled blocks log their accesses */
  uint32_t stride;    /* blocks whose linear index is a multiple of this log (>= 1) */
  uint32_t cap;       /* records the log holds */
  uint32_t count;     /* records the run wanted to write (may exceed cap) */
  uint32_t tpb;       /* threads per block of the launch (epoch slots per block) */
  uint32_t slots;     /* logged blocks the epoch array holds */
  uint64_t buf;       /* struct kc_san_rec[cap] */
  uint64_t epochs;    /* uint32_t[slots * tpb]: bar count | syncwarp count << 16 */
  uint32_t unmodeled; /* KC_SAN_UNMODELED_* bits the run met (set by the callbacks) */
  /* The guard: a global access outside every range of ranges[] is not
   * made (the callback ends its warp) and counted, the first one kept, so
   * that a patched copy's wild access cannot fault the context. 0: no
   * guard. */
  uint32_t nranges;
  uint64_t ranges; /* uint64_t[2 * nranges]: sorted, disjoint [base, end) */
  uint32_t oob;    /* accesses the guard stopped (the first is described below) */
  uint32_t oob_flags;
  uint64_t oob_addr;
  uint64_t oob_pc;
  uint32_t oob_block;
  uint32_t oob_tid;
  uint32_t oob_size;
  uint32_t pad;
};

/* Synchronisation the access check does not model: a kernel that uses it
 * may order accesses kcheck sees as unordered, so its conflicts are not
 * reported (the entry says why). Named or partial barriers (bar.sync with
 * an id or a thread count: warp-specialised kernels), mbarriers (arrive/
 * wait, cp.async.mbarrier, tcgen05.commit), cluster barriers, and the
 * asynchronous copies and warpgroup MMAs that go with them. */
#define KC_SAN_UNMODELED_NAMED_BARRIER 0x1u
#define KC_SAN_UNMODELED_MBARRIER 0x2u
#define KC_SAN_UNMODELED_ASYNC_COPY 0x4u
#define KC_SAN_UNMODELED_CLUSTER 0x8u
#define KC_SAN_UNMODELED_WGMMA 0x10u

/* One logged access (32 bytes). pc: the callback's program counter
 * (absolute; the host subtracts the function's start); flags: the
 * Sanitizer API's memory flags (read 1, write 2, system-scope atomic 4,
 * prefetch 8; read|write = atomic); seq: the record's own slot, which
 * grows along each thread's program order. */
struct kc_san_rec {
  uint64_t addr;
  uint64_t pc;
  uint32_t tid;   /* linear in the block */
  uint32_t block; /* linear block index */
  uint32_t epoch; /* bar count | syncwarp count << 16, as the access saw it */
  uint16_t flags;
  uint8_t size;
  uint8_t global; /* 1 global, 0 shared */
};

/* 1 when [a, a + size) is not inside one range of r[0..2n) (sorted,
 * disjoint [base, end) pairs: the guard's table): the last range whose
 * base is at or below a must hold the whole access. The device callbacks'
 * test and the host's, one definition. */
#ifdef __CUDACC__
#define KC_SAN_HOST_DEVICE __host__ __device__
#else
#define KC_SAN_HOST_DEVICE
#endif
static inline KC_SAN_HOST_DEVICE int kc_san_outside(const uint64_t *r, uint32_t n, uint64_t a,
                                                    uint32_t size) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (r[2 * mid] <= a)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (!lo) return 1;
  uint64_t end = r[2 * (lo - 1) + 1];
  return a >= end || size > end - a;
}

#define KC_SAN_READ 0x1u
#define KC_SAN_WRITE 0x2u
#define KC_SAN_ATOMSYS 0x4u
#define KC_SAN_PREFETCH 0x8u

#ifndef __CUDACC__
#include <stddef.h>

#include "ptx.h"

/* What a log holds beside the accesses, for the check's evidence and its
 * choice of what to judge. */
struct kc_san_stats {
  size_t global_atomics; /* atomic accesses to global memory */
  size_t shared_atomics;
  size_t skipped; /* prefetches and records with no read/write flag */
};

/* Converts rec[0..n) to out[] (room for n): kind from the flags, size,
 * space, barrier and warp epochs, and the SASS offset (pc - fn_pc) in
 * site. Returns how many were written (skipped records are counted in
 * *st). A pc below fn_pc (a callee outside the kernel's range) keeps
 * site = 0xffffffff. out may be (struct kc_access *)rec: in place. */
size_t kc_san_convert(const struct kc_san_rec *rec, size_t n, uint64_t fn_pc, struct kc_access *out,
                      struct kc_san_stats *st);

/* The guard's table (struct kc_san_cfg.ranges) from n [base, end)
 * ranges in any order, overlapping or empty ones allowed: sorted by base,
 * empty ones dropped, overlapping and touching ones merged, in place.
 * Returns how many remain. */
size_t kc_san_ranges_build(uint64_t *r, size_t n);

/* Epoch counters after a barrier (callback before the instruction: the
 * barrier's later accesses see the new count) or a __syncwarp; the count
 * saturates rather than carrying into the other half. */
uint32_t kc_san_epoch_bar(uint32_t e);
uint32_t kc_san_epoch_warp(uint32_t e);
/* What unmodeled (KC_SAN_UNMODELED_* bits) names, for the entry: "" for
 * none; else a static text. */
const char *kc_san_unmodeled_text(uint32_t unmodeled);

/* The files tried for libsanitizer-public.so, in order: the option's path
 * (a file, or a folder holding it), $CUDA_HOME/compute-sanitizer, the
 * toolkit's default /usr/local/cuda/compute-sanitizer, and the pip
 * package's lib folder next to the Python packages named by pip_dir
 * (nvidia/cu13/lib). Returns how many were written into out (max of size
 * len each). NULL or "" arguments are left out. */
int kc_san_lib_candidates(const char *opt, const char *cuda_home, const char *pip_dir,
                          char (*out)[512], int max);
/* dlopen of the first candidate that loads: the handle, state = its path;
 * NULL with state = why (what was tried). */
void *kc_san_lib_open(const char *opt, const char *cuda_home, const char *pip_dir, char *state,
                      size_t state_len);
/* 1 when the process runs under compute-sanitizer (its injection in the
 * environment, or its collection library loaded): the Sanitizer API
 * takes one client per process. */
int kc_san_under_tool(void);
/* After a logged run whose blocks (1 in stride) wanted count records of a
 * log of cap: the block stride whose run may fit, or 0 when none would
 * (both routes: a recorded skip, never an out-of-memory). */
unsigned kc_log_retry_stride(uint64_t count, unsigned cap, unsigned stride, uint64_t blocks);
#endif

#endif
