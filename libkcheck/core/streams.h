/* libkcheck/core/streams.h — cross-stream ordering races (stream_races=1). From
 * the ordering calls the shim hooks (event record/wait, stream, event and
 * context synchronisation and successful queries, the legacy default
 * stream's implicit joins with blocking streams) kcheck keeps a vector
 * clock per stream; every tracked operation (kernel launch, copy, memset)
 * gets an epoch on its stream, and the addresses it touches are compared
 * with the last accesses of those addresses: two operations on different
 * streams, unordered, touching the same address with at least one known
 * write, are a `stream_order` violation naming both, with both stacks.
 *
 * Known writes: copy and memset destinations; kernel pointer parameters a
 * check of the same kernel saw change their allocation (and only when no
 * other parameter points into it). Other kernel pointers count as reads,
 * so two kernels whose writes are unknown are never reported against each
 * other, and correct code is never reported. Addresses are compared
 * exactly (a tensor's start), not by allocation: the caching allocator
 * puts unrelated tensors into one allocation. kcheck's own syncs (checks)
 * order nothing here: only the application's ordering counts. */
#ifndef KC_STREAMS_H
#define KC_STREAMS_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "launch.h"

/* A CUDA array is one object to the model, keyed by its handle with this
 * bit set (device addresses and host handles stay below 2^63). */
#define KC_ACCESS_ARRAY (1ull << 63)
#define KC_ARRAY_KEY(a) ((uint64_t)(uintptr_t)(a) | KC_ACCESS_ARRAY)

/* One memory access of an operation. */
struct kc_access {
  uint64_t addr, size; /* size 1 for a kernel's pointer (extent unknown) */
  int write;
};

/* A kernel launch about to run (pointers resolved). Sets li->delay to the
 * unordered earlier writes it races with, the first time each pair of
 * operations races (a check of the launch then shows the result "as if
 * the write had not landed yet": gates/stream_delay.c). */
void kc_streams_launch(struct kc_launch_info *li);
/* A copy or memset on stream s (sync: a synchronous call the host waits
 * for); what names the entry. */
void kc_streams_op(CUstream s, int ptsz, int sync, const char *what, const struct kc_access *acc,
                   int nacc);
void kc_streams_event_record(CUevent ev, CUstream s, int ptsz);
void kc_streams_wait_event(CUstream s, int ptsz, CUevent ev);
/* The host waited for stream s / event ev / the whole context. */
void kc_streams_stream_synced(CUstream s, int ptsz);
void kc_streams_event_synced(CUevent ev);
void kc_streams_ctx_synced(void);
/* A check saw these parameter words of k's launch change their memory. */
void kc_streams_learn_writes(const struct kc_kernel *k, const uint32_t *offsets, int n);

#endif
