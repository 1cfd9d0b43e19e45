/* shim/entries.c — one exported wrapper per KC_HOOK row of driver.def,
 * generated per family. The fast path is: guard or inactive → real call. */
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "core.h"
#include "dispatch.h"
#include "graph.h"
#include "guard.h"
#include "log.h"
#include "options.h"
#include "serving.h"
#include "shim.h"
#include "streams.h"
#include "uninit.h"
#include "world.h"

/* Activation on first use; kcheck's own calls (guarded) never activate. */
#define KC_ENSURE_READY()                                                                          \
  do {                                                                                             \
    if (KC_NEVER(!atomic_load_explicit(&kc_shim_ready, memory_order_acquire)) && !kc_guarded())    \
      kc_shim_activate();                                                                          \
  } while (0)

#define KC_REAL_OR_FAIL(sym)                                                                       \
  __typeof__(kc_drv.sym) real = kc_drv.sym;                                                        \
  if (KC_NEVER(!real)) return kc_shim_missing(KC_E_##sym)

#define KC_PASSTHROUGH() (kc_guarded() || kc_disabled)

/* Whether this call of the application holds the world lock (world.h):
 * decided once per call, so enter and leave always pair. */
#define KC_FENCE_BEGIN()                                                                           \
  int fenced_ = !KC_PASSTHROUGH() && kc_opt.check_lock;                                            \
  if (fenced_) kc_world_enter()
#define KC_FENCE_END()                                                                             \
  if (fenced_) kc_world_leave()

static int name_is_ptsz(const char *s, size_t n) {
  return n > 5 && !memcmp(s + (n - 5), "_ptsz", 5);
}

/* ---- launches ---------------------------------------------------------- */

static CUresult call_LAUNCH_KERNEL(const struct kc_launch_args *a) {
  return ((kc_fam_LAUNCH_KERNEL)a->real)(a->f, a->grid[0], a->grid[1], a->grid[2], a->block[0],
                                         a->block[1], a->block[2], a->shmem, a->stream, a->params,
                                         a->extra);
}
static CUresult call_LAUNCH_KERNEL_EX(const struct kc_launch_args *a) {
  return ((kc_fam_LAUNCH_KERNEL_EX)a->real)(a->config, a->f, a->params, a->extra);
}
static CUresult call_LAUNCH_COOPERATIVE(const struct kc_launch_args *a) {
  return ((kc_fam_LAUNCH_COOPERATIVE)a->real)(a->f, a->grid[0], a->grid[1], a->grid[2], a->block[0],
                                              a->block[1], a->block[2], a->shmem, a->stream,
                                              a->params);
}

#define DEF_LAUNCH_KERNEL(sym)                                                                     \
  KC_EXPORT CUresult sym(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,         \
                         unsigned by, unsigned bz, unsigned shmem, CUstream stream, void **params, \
                         void **extra) {                                                           \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    if (KC_PASSTHROUGH()) return real(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);    \
    struct kc_launch_args a = {KC_LE_KERNEL,                                                       \
                               name_is_ptsz(#sym, sizeof #sym - 1),                                \
                               f,                                                                  \
                               {gx, gy, gz},                                                       \
                               {bx, by, bz},                                                       \
                               shmem,                                                              \
                               stream,                                                             \
                               params,                                                             \
                               extra,                                                              \
                               NULL,                                                               \
                               call_LAUNCH_KERNEL,                                                 \
                               (void *)real};                                                      \
    return kc_on_launch(&a);                                                                       \
  }

#define DEF_LAUNCH_KERNEL_EX(sym)                                                                  \
  KC_EXPORT CUresult sym(const CUlaunchConfig *config, CUfunction f, void **params,                \
                         void **extra) {                                                           \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    if (KC_PASSTHROUGH() || !config) return real(config, f, params, extra);                        \
    struct kc_launch_args a = {KC_LE_KERNEL_EX,                                                    \
                               name_is_ptsz(#sym, sizeof #sym - 1),                                \
                               f,                                                                  \
                               {0},                                                                \
                               {0},                                                                \
                               0,                                                                  \
                               config->hStream,                                                    \
                               params,                                                             \
                               extra,                                                              \
                               config,                                                             \
                               call_LAUNCH_KERNEL_EX,                                              \
                               (void *)real};                                                      \
    return kc_on_launch(&a);                                                                       \
  }

#define DEF_LAUNCH_COOPERATIVE(sym)                                                                \
  KC_EXPORT CUresult sym(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,         \
                         unsigned by, unsigned bz, unsigned shmem, CUstream stream,                \
                         void **params) {                                                          \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    if (KC_PASSTHROUGH()) return real(f, gx, gy, gz, bx, by, bz, shmem, stream, params);           \
    struct kc_launch_args a = {KC_LE_COOPERATIVE,                                                  \
                               name_is_ptsz(#sym, sizeof #sym - 1),                                \
                               f,                                                                  \
                               {gx, gy, gz},                                                       \
                               {bx, by, bz},                                                       \
                               shmem,                                                              \
                               stream,                                                             \
                               params,                                                             \
                               NULL,                                                               \
                               NULL,                                                               \
                               call_LAUNCH_COOPERATIVE,                                            \
                               (void *)real};                                                      \
    return kc_on_launch(&a);                                                                       \
  }

/* ---- graphs (libkcheck/core/graph.c) ----------------------------------------- */

/* A graph launch: counted, and when chosen replayed node by node with the
 * kernel nodes checked; the core holds the world lock around it. */
#define DEF_GRAPH_LAUNCH(sym)                                                                      \
  KC_EXPORT CUresult sym(CUgraphExec exec, CUstream stream) {                                      \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    if (KC_PASSTHROUGH()) return real(exec, stream);                                               \
    return kc_on_graph_launch(exec, stream, name_is_ptsz(#sym, sizeof #sym - 1), real);            \
  }

/* Fenced: a capture never begins during a check, whose device-wide syncs
 * would break it (checks wait until no capture is active). */
#define DEF_CAPTURE_BEGIN(sym, params, args)                                                       \
  KC_EXPORT CUresult sym params {                                                                  \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    KC_FENCE_BEGIN();                                                                              \
    CUresult r = real args;                                                                        \
    if (r == CUDA_SUCCESS && !KC_PASSTHROUGH()) kc_on_capture_begin();                             \
    KC_FENCE_END();                                                                                \
    return r;                                                                                      \
  }
#define DEF_BEGIN_CAPTURE_V1(sym)                                                                  \
  DEF_CAPTURE_BEGIN(sym, KC_FP_BEGIN_CAPTURE_V1, KC_FA_BEGIN_CAPTURE_V1)
#define DEF_BEGIN_CAPTURE(sym) DEF_CAPTURE_BEGIN(sym, KC_FP_BEGIN_CAPTURE, KC_FA_BEGIN_CAPTURE)
#define DEF_BEGIN_CAPTURE_TO_GRAPH(sym)                                                            \
  DEF_CAPTURE_BEGIN(sym, KC_FP_BEGIN_CAPTURE_TO_GRAPH, KC_FA_BEGIN_CAPTURE_TO_GRAPH)

#define DEF_END_CAPTURE(sym)                                                                       \
  KC_EXPORT CUresult sym(CUstream stream, CUgraph *graph) {                                        \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(stream, graph);                                                              \
    if (!KC_PASSTHROUGH()) kc_on_capture_end(r);                                                   \
    return r;                                                                                      \
  }

#define DEF_GRAPH_INSTANTIATE(sym, params, call, exec, g)                                          \
  KC_EXPORT CUresult sym params {                                                                  \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real call;                                                                        \
    if (r == CUDA_SUCCESS && (exec) && !KC_PASSTHROUGH()) kc_on_graph_instantiate(*(exec), g);     \
    return r;                                                                                      \
  }
#define DEF_GRAPH_INSTANTIATE_LOG(sym)                                                             \
  DEF_GRAPH_INSTANTIATE(sym, (CUgraphExec * e, CUgraph g, CUgraphNode * err, char *log, size_t n), \
                        (e, g, err, log, n), e, g)
#define DEF_GRAPH_INSTANTIATE_FLAGS(sym)                                                           \
  DEF_GRAPH_INSTANTIATE(sym, (CUgraphExec * e, CUgraph g, unsigned long long flags),               \
                        (e, g, flags), e, g)
#define DEF_GRAPH_INSTANTIATE_PARAMS(sym)                                                          \
  DEF_GRAPH_INSTANTIATE(sym, (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS * p),      \
                        (e, g, p), e, g)

/* Destruction and edits wait for a check in progress (which may be
 * replaying this very graph). */
#define DEF_GRAPH_EXEC_DESTROY(sym)                                                                \
  KC_EXPORT CUresult sym(CUgraphExec exec) {                                                       \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    KC_FENCE_BEGIN();                                                                              \
    if (!KC_PASSTHROUGH()) kc_on_graph_exec_destroy(exec);                                         \
    CUresult r = real(exec);                                                                       \
    KC_FENCE_END();                                                                                \
    return r;                                                                                      \
  }

#define DEF_GRAPH_EDIT_WITH(sym, params, args, exec, on_success)                                   \
  KC_EXPORT CUresult sym params {                                                                  \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    KC_FENCE_BEGIN();                                                                              \
    CUresult r = real args;                                                                        \
    if (r == CUDA_SUCCESS && !KC_PASSTHROUGH()) on_success;                                        \
    KC_FENCE_END();                                                                                \
    return r;                                                                                      \
  }
#define DEF_GRAPH_EXEC_UPDATE_V1(sym)                                                              \
  DEF_GRAPH_EDIT_WITH(                                                                             \
      sym, (CUgraphExec e, CUgraph g, CUgraphNode * err, CUgraphExecUpdateResult * res),           \
      (e, g, err, res), e, kc_on_graph_exec_update(e, g))
#define DEF_GRAPH_EXEC_UPDATE(sym)                                                                 \
  DEF_GRAPH_EDIT_WITH(sym, (CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo * info),         \
                      (e, g, info), e, kc_on_graph_exec_update(e, g))
#define DEF_GRAPH_EXEC_KERNEL_SET(sym)                                                             \
  DEF_GRAPH_EDIT_WITH(sym, (CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS *p),       \
                      (e, n, p), e, kc_on_graph_exec_kernel_set(e, n, p))
#define DEF_GRAPH_EXEC_KERNEL_SET_V1(sym)                                                          \
  DEF_GRAPH_EDIT_WITH(sym, (CUgraphExec e, CUgraphNode n, const CUDA_KERNEL_NODE_PARAMS_v1 *p),    \
                      (e, n, p), e, kc_on_graph_exec_kernel_set_v1(e, n, p))
#define DEF_GRAPH_EDIT(sym, params, args)                                                          \
  DEF_GRAPH_EDIT_WITH(sym, params, args, exec, kc_on_graph_exec_edit(exec, #sym))
#define DEF_GRAPH_EXEC_MEMCPY_SET(sym)                                                             \
  DEF_GRAPH_EDIT(sym, KC_FP_GRAPH_EXEC_MEMCPY_SET, KC_FA_GRAPH_EXEC_MEMCPY_SET)
#define DEF_GRAPH_EXEC_MEMSET_SET(sym)                                                             \
  DEF_GRAPH_EDIT(sym, KC_FP_GRAPH_EXEC_MEMSET_SET, KC_FA_GRAPH_EXEC_MEMSET_SET)
#define DEF_GRAPH_EXEC_HOST_SET(sym)                                                               \
  DEF_GRAPH_EDIT(sym, KC_FP_GRAPH_EXEC_HOST_SET, KC_FA_GRAPH_EXEC_HOST_SET)
#define DEF_GRAPH_EXEC_CHILD_SET(sym)                                                              \
  DEF_GRAPH_EDIT(sym, KC_FP_GRAPH_EXEC_CHILD_SET, KC_FA_GRAPH_EXEC_CHILD_SET)
#define DEF_GRAPH_EXEC_EVENT_SET(sym)                                                              \
  DEF_GRAPH_EDIT(sym, KC_FP_GRAPH_EXEC_EVENT_SET, KC_FA_GRAPH_EXEC_EVENT_SET)
#define DEF_GRAPH_EXEC_NODE_SET(sym)                                                               \
  DEF_GRAPH_EDIT(sym, KC_FP_GRAPH_EXEC_NODE_SET, KC_FA_GRAPH_EXEC_NODE_SET)
#define DEF_GRAPH_EXEC_ENABLE(sym)                                                                 \
  DEF_GRAPH_EDIT(sym, KC_FP_GRAPH_EXEC_ENABLE, KC_FA_GRAPH_EXEC_ENABLE)

/* ---- ordering calls (libkcheck/core/streams.c) -------------------------------- */

static int name_is_pt(const char *s, size_t n) {
  return n > 5 && (!memcmp(s + (n - 5), "_ptsz", 5) || !memcmp(s + (n - 5), "_ptds", 5));
}
#define KC_PT(sym) name_is_pt(#sym, sizeof #sym - 1)
#define KC_TRACKING() (!KC_PASSTHROUGH() && kc_opt.stream_races)
/* Copies and memsets also feed graph_uninit's touched allocations. */
#define KC_TRACK_WRITES() (!KC_PASSTHROUGH() && (kc_opt.stream_races || kc_opt.graph_uninit))

#define DEF_ORDERING(sym, params, args, on_success)                                                \
  KC_EXPORT CUresult sym params {                                                                  \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real args;                                                                        \
    if (r == CUDA_SUCCESS && KC_TRACKING()) {                                                      \
      kc_cost_enter(); /* the stream model's time counts against time_budget */                    \
      on_success;                                                                                  \
      kc_cost_leave();                                                                             \
    }                                                                                              \
    return r;                                                                                      \
  }
#define DEF_EVENT_RECORD(sym)                                                                      \
  DEF_ORDERING(sym, (CUevent ev, CUstream s), (ev, s), kc_streams_event_record(ev, s, KC_PT(sym)))
#define DEF_EVENT_RECORD_FLAGS(sym)                                                                \
  DEF_ORDERING(sym, (CUevent ev, CUstream s, unsigned f), (ev, s, f),                              \
               kc_streams_event_record(ev, s, KC_PT(sym)))
#define DEF_STREAM_WAIT_EVENT(sym)                                                                 \
  DEF_ORDERING(sym, (CUstream s, CUevent ev, unsigned f), (s, ev, f),                              \
               kc_streams_wait_event(s, KC_PT(sym), ev))
/* A query that says complete orders the host after the work as a sync does. */
#define DEF_STREAM_SYNC(sym)                                                                       \
  DEF_ORDERING(sym, (CUstream s), (s), kc_streams_stream_synced(s, KC_PT(sym)))
#define DEF_EVENT_SYNC(sym) DEF_ORDERING(sym, (CUevent ev), (ev), kc_streams_event_synced(ev))
#define DEF_CTX_SYNC(sym) DEF_ORDERING(sym, (void), (), kc_streams_ctx_synced())
#define DEF_CTX_SYNC_V2(sym) DEF_ORDERING(sym, (CUcontext c), (c), kc_streams_ctx_synced())

/* ---- copies and memsets (held off during another thread's check) --------- */
/* ---- copies and memsets (held off during another thread's check): linear,
 * pitched, 3D, peer, batch and CUDA-array copies, 1D and 2D memsets ------ */

#define DEF_FENCED_T(sym, params, args, track)                                                     \
  KC_EXPORT CUresult sym params {                                                                  \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    KC_FENCE_BEGIN();                                                                              \
    CUresult r = real args;                                                                        \
    KC_FENCE_END();                                                                                \
    if (r == CUDA_SUCCESS && KC_TRACK_WRITES()) {                                                  \
      kc_cost_enter(); /* tracking's time counts against time_budget */                            \
      track;                                                                                       \
      kc_cost_leave();                                                                             \
    }                                                                                              \
    return r;                                                                                      \
  }
/* What these write is not attributed: for graph_uninit they touch everything. */
#define DEF_FENCED(sym, params, args)                                                              \
  DEF_FENCED_T(sym, params, args, if (kc_opt.graph_uninit) kc_uninit_touch_all())
/* What a copy or memset touches: its device writes count as touched for
 * graph_uninit, and it is an operation of its stream for stream_races
 * (recorded into a capture, it runs later as a graph node: tracked then). */
static void track_ops(const char *sym, int pt, CUstream st, int sync, const struct kc_access *acc,
                      int n) {
  for (int i = 0; kc_opt.graph_uninit && i < n; i++)
    if (acc[i].write && !(acc[i].addr & KC_ACCESS_ARRAY)) kc_uninit_touch_addr(acc[i].addr);
  if (kc_opt.stream_races && n && !kc_graph_stream_capturing(st, pt))
    kc_streams_op(st, pt, sync, sym, acc, n);
}
/* 1D entries: the accesses listed. */
#define KC_TRACK(sym, stream, sync, ...)                                                           \
  do {                                                                                             \
    struct kc_access acc_[] = {__VA_ARGS__};                                                       \
    track_ops(#sym, KC_PT(sym), stream, sync, acc_, (int)(sizeof acc_ / sizeof acc_[0]));          \
  } while (0)
#define DEF_COPY(sym)                                                                              \
  DEF_FENCED_T(sym, KC_FP_COPY, KC_FA_COPY, KC_TRACK(sym, NULL, 1, {dst, n, 1}, {src, n, 0}))
#define DEF_COPY_ASYNC(sym)                                                                        \
  DEF_FENCED_T(sym, KC_FP_COPY_ASYNC, KC_FA_COPY_ASYNC,                                            \
               KC_TRACK(sym, stream, 0, {dst, n, 1}, {src, n, 0}))
#define DEF_COPY_HTOD(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_COPY_HTOD, KC_FA_COPY_HTOD, KC_TRACK(sym, NULL, 1, {dst, n, 1}))
#define DEF_COPY_HTOD_ASYNC(sym)                                                                   \
  DEF_FENCED_T(sym, KC_FP_COPY_HTOD_ASYNC, KC_FA_COPY_HTOD_ASYNC,                                  \
               KC_TRACK(sym, stream, 0, {dst, n, 1}))
#define DEF_COPY_DTOH(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_COPY_DTOH, KC_FA_COPY_DTOH, KC_TRACK(sym, NULL, 1, {src, n, 0}))
#define DEF_COPY_DTOH_ASYNC(sym)                                                                   \
  DEF_FENCED_T(sym, KC_FP_COPY_DTOH_ASYNC, KC_FA_COPY_DTOH_ASYNC,                                  \
               KC_TRACK(sym, stream, 0, {src, n, 0}))
#define DEF_MEMSET_D8(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_MEMSET_D8, KC_FA_MEMSET_D8, KC_TRACK(sym, NULL, 1, {dst, n, 1}))
#define DEF_MEMSET_D16(sym)                                                                        \
  DEF_FENCED_T(sym, KC_FP_MEMSET_D16, KC_FA_MEMSET_D16, KC_TRACK(sym, NULL, 1, {dst, 2 * n, 1}))
#define DEF_MEMSET_D32(sym)                                                                        \
  DEF_FENCED_T(sym, KC_FP_MEMSET_D32, KC_FA_MEMSET_D32, KC_TRACK(sym, NULL, 1, {dst, 4 * n, 1}))
#define DEF_MEMSET_D8_ASYNC(sym)                                                                   \
  DEF_FENCED_T(sym, KC_FP_MEMSET_D8_ASYNC, KC_FA_MEMSET_D8_ASYNC,                                  \
               KC_TRACK(sym, stream, 0, {dst, n, 1}))
#define DEF_MEMSET_D16_ASYNC(sym)                                                                  \
  DEF_FENCED_T(sym, KC_FP_MEMSET_D16_ASYNC, KC_FA_MEMSET_D16_ASYNC,                                \
               KC_TRACK(sym, stream, 0, {dst, 2 * n, 1}))
#define DEF_MEMSET_D32_ASYNC(sym)                                                                  \
  DEF_FENCED_T(sym, KC_FP_MEMSET_D32_ASYNC, KC_FA_MEMSET_D32_ASYNC,                                \
               KC_TRACK(sym, stream, 0, {dst, 4 * n, 1}))
/* Pitched copies: each device side's first byte and span (addresses are
 * compared by their start, like the 1D entries'). */
static int on_device(CUmemorytype t) {
  return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
}
static void track_pitched(const char *sym, int pt, CUstream st, int sync, int dst_dev,
                          CUdeviceptr dst, int src_dev, CUdeviceptr src, uint64_t span) {
  struct kc_access acc[2];
  int n = 0;
  if (dst_dev && dst) acc[n++] = (struct kc_access){dst, span, 1};
  if (src_dev && src) acc[n++] = (struct kc_access){src, span, 0};
  track_ops(sym, pt, st, sync, acc, n);
}
#define KC_TRACK_2D(sym, p, st, sync)                                                              \
  track_pitched(#sym, KC_PT(sym), st, sync, on_device((p)->dstMemoryType),                         \
                (p)->dstDevice + (p)->dstY * (p)->dstPitch + (p)->dstXInBytes,                     \
                on_device((p)->srcMemoryType),                                                     \
                (p)->srcDevice + (p)->srcY * (p)->srcPitch + (p)->srcXInBytes,                     \
                (uint64_t)(p)->dstPitch * ((p)->Height ? (p)->Height - 1 : 0) + (p)->WidthInBytes)
#define KC_TRACK_3D(sym, p, st, sync)                                                              \
  track_pitched(#sym, KC_PT(sym), st, sync, on_device((p)->dstMemoryType),                         \
                (p)->dstDevice + ((p)->dstZ * (p)->dstHeight + (p)->dstY) * (p)->dstPitch +        \
                    (p)->dstXInBytes,                                                              \
                on_device((p)->srcMemoryType),                                                     \
                (p)->srcDevice + ((p)->srcZ * (p)->srcHeight + (p)->srcY) * (p)->srcPitch +        \
                    (p)->srcXInBytes,                                                              \
                (uint64_t)(p)->dstPitch * (p)->dstHeight * ((p)->Depth ? (p)->Depth - 1 : 0) +     \
                    (uint64_t)(p)->dstPitch * ((p)->Height ? (p)->Height - 1 : 0) +                \
                    (p)->WidthInBytes)
#define DEF_COPY_2D(sym)                                                                           \
  DEF_FENCED_T(sym, KC_FP_COPY_2D, KC_FA_COPY_2D, if (p) KC_TRACK_2D(sym, p, NULL, 1))
#define DEF_COPY_2D_ASYNC(sym)                                                                     \
  DEF_FENCED_T(sym, KC_FP_COPY_2D_ASYNC, KC_FA_COPY_2D_ASYNC, if (p) KC_TRACK_2D(sym, p, stream, 0))
#define DEF_COPY_3D(sym)                                                                           \
  DEF_FENCED_T(sym, KC_FP_COPY_3D, KC_FA_COPY_3D, if (p) KC_TRACK_3D(sym, p, NULL, 1))
#define DEF_COPY_3D_ASYNC(sym)                                                                     \
  DEF_FENCED_T(sym, KC_FP_COPY_3D_ASYNC, KC_FA_COPY_3D_ASYNC, if (p) KC_TRACK_3D(sym, p, stream, 0))
#define DEF_COPY_3D_PEER(sym) DEF_FENCED(sym, KC_FP_COPY_3D_PEER, KC_FA_COPY_3D_PEER)
#define DEF_COPY_3D_PEER_ASYNC(sym)                                                                \
  DEF_FENCED(sym, KC_FP_COPY_3D_PEER_ASYNC, KC_FA_COPY_3D_PEER_ASYNC)
#define DEF_COPY_PEER(sym) DEF_FENCED(sym, KC_FP_COPY_PEER, KC_FA_COPY_PEER)
#define DEF_COPY_PEER_ASYNC(sym) DEF_FENCED(sym, KC_FP_COPY_PEER_ASYNC, KC_FA_COPY_PEER_ASYNC)
#define DEF_MEMSET_D2D8(sym) DEF_FENCED(sym, KC_FP_MEMSET_D2D8, KC_FA_MEMSET_D2D8)
#define DEF_MEMSET_D2D16(sym) DEF_FENCED(sym, KC_FP_MEMSET_D2D16, KC_FA_MEMSET_D2D16)
#define DEF_MEMSET_D2D32(sym) DEF_FENCED(sym, KC_FP_MEMSET_D2D32, KC_FA_MEMSET_D2D32)
#define DEF_MEMSET_D2D8_ASYNC(sym) DEF_FENCED(sym, KC_FP_MEMSET_D2D8_ASYNC, KC_FA_MEMSET_D2D8_ASYNC)
#define DEF_MEMSET_D2D16_ASYNC(sym)                                                                \
  DEF_FENCED(sym, KC_FP_MEMSET_D2D16_ASYNC, KC_FA_MEMSET_D2D16_ASYNC)
#define DEF_MEMSET_D2D32_ASYNC(sym)                                                                \
  DEF_FENCED(sym, KC_FP_MEMSET_D2D32_ASYNC, KC_FA_MEMSET_D2D32_ASYNC)

/* Batch copies: one operation of the stream, with each entry's device
 * sides (an address inside a device allocation, or a CUDA array). */
static int in_device_memory(CUdeviceptr p) {
  struct kc_alloc a;
  return p && kc_allocmap_find(p, &a) == 0;
}
#define KC_BATCH_MAX 1024 /* entries tracked per batch; the rest only lose reports */
static void track_batch_1d(const char *sym, int pt, CUstream st, const CUdeviceptr *dsts,
                           const CUdeviceptr *srcs, const size_t *sizes, size_t count) {
  size_t m = count < KC_BATCH_MAX ? count : KC_BATCH_MAX;
  struct kc_access *acc = dsts && srcs && sizes ? malloc(2 * (m ? m : 1) * sizeof *acc) : NULL;
  if (!acc) return;
  int n = 0;
  for (size_t i = 0; i < m; i++) {
    if (in_device_memory(dsts[i])) acc[n++] = (struct kc_access){dsts[i], sizes[i], 1};
    if (in_device_memory(srcs[i])) acc[n++] = (struct kc_access){srcs[i], sizes[i], 0};
  }
  track_ops(sym, pt, st, 0, acc, n);
  free(acc);
}
static int operand(const CUmemcpy3DOperand *o, uint64_t span, int write, struct kc_access *out) {
  if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY && o->op.array.array) {
    *out = (struct kc_access){KC_ARRAY_KEY(o->op.array.array), span, write};
    return 1;
  }
  if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER || !in_device_memory(o->op.ptr.ptr)) return 0;
  *out = (struct kc_access){o->op.ptr.ptr, span, write};
  return 1;
}
static void track_batch_3d(const char *sym, int pt, CUstream st, const CUDA_MEMCPY3D_BATCH_OP *ops,
                           size_t nops) {
  size_t m = nops < KC_BATCH_MAX ? nops : KC_BATCH_MAX;
  struct kc_access *acc = ops ? malloc(2 * (m ? m : 1) * sizeof *acc) : NULL;
  if (!acc) return;
  int n = 0;
  for (size_t i = 0; i < m; i++) {
    /* Elements, not bytes: only the start is compared; the span is a hint. */
    uint64_t span = (uint64_t)ops[i].extent.width * ops[i].extent.height * ops[i].extent.depth;
    n += operand(&ops[i].dst, span, 1, &acc[n]);
    n += operand(&ops[i].src, span, 0, &acc[n]);
  }
  track_ops(sym, pt, st, 0, acc, n);
  free(acc);
}
#define DEF_COPY_BATCH_V1(sym)                                                                     \
  DEF_FENCED_T(sym, KC_FP_COPY_BATCH_V1, KC_FA_COPY_BATCH_V1,                                      \
               track_batch_1d(#sym, KC_PT(sym), stream, dsts, srcs, sizes, count))
#define DEF_COPY_BATCH(sym)                                                                        \
  DEF_FENCED_T(sym, KC_FP_COPY_BATCH, KC_FA_COPY_BATCH,                                            \
               track_batch_1d(#sym, KC_PT(sym), stream, dsts, srcs, sizes, count))
#define DEF_COPY_3D_BATCH_V1(sym)                                                                  \
  DEF_FENCED_T(sym, KC_FP_COPY_3D_BATCH_V1, KC_FA_COPY_3D_BATCH_V1,                                \
               track_batch_3d(#sym, KC_PT(sym), stream, ops, nops))
#define DEF_COPY_3D_BATCH(sym)                                                                     \
  DEF_FENCED_T(sym, KC_FP_COPY_3D_BATCH, KC_FA_COPY_3D_BATCH,                                      \
               track_batch_3d(#sym, KC_PT(sym), stream, ops, nops))
/* CUDA-array copies: an array is one object (KC_ARRAY_KEY). The entries
 * without a stream run on the default stream; of those, the ones with a
 * host side (HtoA, AtoH) return once done, the device-to-device ones
 * (DtoA, AtoD, AtoA) before: the host does not wait for them. */
#define DEF_COPY_DTOA(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_COPY_DTOA, KC_FA_COPY_DTOA,                                              \
               KC_TRACK(sym, NULL, 0, {KC_ARRAY_KEY(dst), n, 1}, {src, n, 0}))
#define DEF_COPY_ATOD(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_COPY_ATOD, KC_FA_COPY_ATOD,                                              \
               KC_TRACK(sym, NULL, 0, {dst, n, 1}, {KC_ARRAY_KEY(src), n, 0}))
#define DEF_COPY_HTOA(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_COPY_HTOA, KC_FA_COPY_HTOA,                                              \
               KC_TRACK(sym, NULL, 1, {KC_ARRAY_KEY(dst), n, 1}))
#define DEF_COPY_ATOH(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_COPY_ATOH, KC_FA_COPY_ATOH,                                              \
               KC_TRACK(sym, NULL, 1, {KC_ARRAY_KEY(src), n, 0}))
#define DEF_COPY_ATOA(sym)                                                                         \
  DEF_FENCED_T(sym, KC_FP_COPY_ATOA, KC_FA_COPY_ATOA,                                              \
               KC_TRACK(sym, NULL, 0, {KC_ARRAY_KEY(dst), n, 1}, {KC_ARRAY_KEY(src), n, 0}))
#define DEF_COPY_HTOA_ASYNC(sym)                                                                   \
  DEF_FENCED_T(sym, KC_FP_COPY_HTOA_ASYNC, KC_FA_COPY_HTOA_ASYNC,                                  \
               KC_TRACK(sym, stream, 0, {KC_ARRAY_KEY(dst), n, 1}))
#define DEF_COPY_ATOH_ASYNC(sym)                                                                   \
  DEF_FENCED_T(sym, KC_FP_COPY_ATOH_ASYNC, KC_FA_COPY_ATOH_ASYNC,                                  \
               KC_TRACK(sym, stream, 0, {KC_ARRAY_KEY(src), n, 0}))

/* ---- code loading ------------------------------------------------------- */

#define DEF_MODULE_LOAD(sym)                                                                       \
  KC_EXPORT CUresult sym(CUmodule *module, const char *fname) {                                    \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(module, fname);                                                              \
    if (r == CUDA_SUCCESS && module && !KC_PASSTHROUGH())                                          \
      kc_on_image_load(*module, 0, NULL, fname);                                                   \
    return r;                                                                                      \
  }

#define DEF_MODULE_LOAD_DATA(sym)                                                                  \
  KC_EXPORT CUresult sym(CUmodule *module, const void *image) {                                    \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(module, image);                                                              \
    if (r == CUDA_SUCCESS && module && image && !KC_PASSTHROUGH())                                 \
      kc_on_image_load(*module, 0, image, NULL);                                                   \
    return r;                                                                                      \
  }

#define DEF_MODULE_LOAD_DATA_EX(sym)                                                               \
  KC_EXPORT CUresult sym(CUmodule *module, const void *image, unsigned n, CUjit_option *opts,      \
                         void **vals) {                                                            \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(module, image, n, opts, vals);                                               \
    if (r == CUDA_SUCCESS && module && image && !KC_PASSTHROUGH())                                 \
      kc_on_image_load(*module, 0, image, NULL);                                                   \
    return r;                                                                                      \
  }

#define DEF_LIBRARY_LOAD_DATA(sym)                                                                 \
  KC_EXPORT CUresult sym(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,            \
                         unsigned nj, CUlibraryOption *lo, void **lv, unsigned nl) {               \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(lib, code, jo, jv, nj, lo, lv, nl);                                          \
    if (r == CUDA_SUCCESS && lib && code && !KC_PASSTHROUGH())                                     \
      kc_on_image_load(*lib, 1, code, NULL);                                                       \
    return r;                                                                                      \
  }

#define DEF_LIBRARY_LOAD_FROM_FILE(sym)                                                            \
  KC_EXPORT CUresult sym(CUlibrary *lib, const char *fname, CUjit_option *jo, void **jv,           \
                         unsigned nj, CUlibraryOption *lo, void **lv, unsigned nl) {               \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(lib, fname, jo, jv, nj, lo, lv, nl);                                         \
    if (r == CUDA_SUCCESS && lib && fname && !KC_PASSTHROUGH())                                    \
      kc_on_image_load(*lib, 1, NULL, fname);                                                      \
    return r;                                                                                      \
  }

#define DEF_MODULE_UNLOAD(sym)                                                                     \
  KC_EXPORT CUresult sym(CUmodule module) {                                                        \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    if (!KC_PASSTHROUGH()) kc_on_image_unload(module);                                             \
    return real(module);                                                                           \
  }

#define DEF_LIBRARY_UNLOAD(sym)                                                                    \
  KC_EXPORT CUresult sym(CUlibrary lib) {                                                          \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    if (!KC_PASSTHROUGH()) kc_on_image_unload(lib);                                                \
    return real(lib);                                                                              \
  }

/* ---- allocations -------------------------------------------------------- */

/* An application allocation that failed for lack of memory is tried once
 * more after kcheck gave back the staging buffer it keeps between checks. */
#define KC_RETRY_OOM(r)                                                                            \
  ((r) == CUDA_ERROR_OUT_OF_MEMORY && !KC_PASSTHROUGH() && kc_on_alloc_failed())

#define DEF_MEM_ALLOC(sym)                                                                         \
  KC_EXPORT CUresult sym(CUdeviceptr *dptr, size_t bytes) {                                        \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(dptr, bytes);                                                                \
    if (KC_RETRY_OOM(r)) r = real(dptr, bytes);                                                    \
    if (r == CUDA_SUCCESS && dptr && !KC_PASSTHROUGH()) kc_on_alloc(*dptr, bytes, KC_ALLOC_PLAIN); \
    return r;                                                                                      \
  }

#define DEF_MEM_ALLOC_PITCH(sym)                                                                   \
  KC_EXPORT CUresult sym(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,            \
                         unsigned elem) {                                                          \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(dptr, pitch, width, height, elem);                                           \
    if (KC_RETRY_OOM(r)) r = real(dptr, pitch, width, height, elem);                               \
    if (r == CUDA_SUCCESS && dptr && pitch && !KC_PASSTHROUGH())                                   \
      kc_on_alloc(*dptr, *pitch *height, KC_ALLOC_PITCH);                                          \
    return r;                                                                                      \
  }

#define DEF_MEM_ALLOC_MANAGED(sym)                                                                 \
  KC_EXPORT CUresult sym(CUdeviceptr *dptr, size_t bytes, unsigned flags) {                        \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(dptr, bytes, flags);                                                         \
    if (r == CUDA_SUCCESS && dptr && !KC_PASSTHROUGH())                                            \
      kc_on_alloc(*dptr, bytes, KC_ALLOC_MANAGED);                                                 \
    return r;                                                                                      \
  }

#define DEF_MEM_FREE(sym)                                                                          \
  KC_EXPORT CUresult sym(CUdeviceptr dptr) {                                                       \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    /* Never while a check holds memory this may be. */                                            \
    KC_FENCE_BEGIN();                                                                              \
    CUresult r = real(dptr);                                                                       \
    if (r == CUDA_SUCCESS && !KC_PASSTHROUGH()) kc_on_free(dptr);                                  \
    KC_FENCE_END();                                                                                \
    return r;                                                                                      \
  }

#define DEF_MEM_ALLOC_ASYNC(sym)                                                                   \
  KC_EXPORT CUresult sym(CUdeviceptr *dptr, size_t bytes, CUstream stream) {                       \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(dptr, bytes, stream);                                                        \
    if (KC_RETRY_OOM(r)) r = real(dptr, bytes, stream);                                            \
    if (r == CUDA_SUCCESS && dptr && !KC_PASSTHROUGH()) kc_on_alloc(*dptr, bytes, KC_ALLOC_ASYNC); \
    return r;                                                                                      \
  }

#define DEF_MEM_ALLOC_FROM_POOL_ASYNC(sym)                                                         \
  KC_EXPORT CUresult sym(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream stream) {    \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(dptr, bytes, pool, stream);                                                  \
    if (KC_RETRY_OOM(r)) r = real(dptr, bytes, pool, stream);                                      \
    if (r == CUDA_SUCCESS && dptr && !KC_PASSTHROUGH()) kc_on_alloc(*dptr, bytes, KC_ALLOC_ASYNC); \
    return r;                                                                                      \
  }

#define DEF_MEM_FREE_ASYNC(sym)                                                                    \
  KC_EXPORT CUresult sym(CUdeviceptr dptr, CUstream stream) {                                      \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    KC_FENCE_BEGIN();                                                                              \
    CUresult r = real(dptr, stream);                                                               \
    if (r == CUDA_SUCCESS && !KC_PASSTHROUGH()) kc_on_free(dptr);                                  \
    KC_FENCE_END();                                                                                \
    return r;                                                                                      \
  }

#define DEF_MEM_MAP(sym)                                                                           \
  KC_EXPORT CUresult sym(CUdeviceptr ptr, size_t size, size_t offset,                              \
                         CUmemGenericAllocationHandle handle, unsigned long long flags) {          \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(ptr, size, offset, handle, flags);                                           \
    if (r == CUDA_SUCCESS && !KC_PASSTHROUGH()) kc_on_map(ptr, size);                              \
    return r;                                                                                      \
  }

#define DEF_MEM_UNMAP(sym)                                                                         \
  KC_EXPORT CUresult sym(CUdeviceptr ptr, size_t size) {                                           \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    KC_FENCE_BEGIN();                                                                              \
    CUresult r = real(ptr, size);                                                                  \
    if (r == CUDA_SUCCESS && !KC_PASSTHROUGH()) kc_on_unmap(ptr, size);                            \
    KC_FENCE_END();                                                                                \
    return r;                                                                                      \
  }

/* ---- entry-point lookup ------------------------------------------------- */

#define DEF_GET_PROC_ADDRESS_V1(sym)                                                               \
  KC_EXPORT CUresult sym(const char *symbol, void **pfn, int version, cuuint64_t flags) {          \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(symbol, pfn, version, flags);                                                \
    if (r == CUDA_SUCCESS && pfn && *pfn && symbol) *pfn = kc_shim_wrap_proc(symbol, *pfn);        \
    return r;                                                                                      \
  }

#define DEF_GET_PROC_ADDRESS_V2(sym)                                                               \
  KC_EXPORT CUresult sym(const char *symbol, void **pfn, int version, cuuint64_t flags,            \
                         CUdriverProcAddressQueryResult *status) {                                 \
    KC_ENSURE_READY();                                                                             \
    KC_REAL_OR_FAIL(sym);                                                                          \
    CUresult r = real(symbol, pfn, version, flags, status);                                        \
    if (r == CUDA_SUCCESS && pfn && *pfn && symbol) *pfn = kc_shim_wrap_proc(symbol, *pfn);        \
    return r;                                                                                      \
  }

/* Prototypes for names cuda.h does not declare (_ptsz, legacy). */
#define KC_HOOK(sym, fam) KC_EXPORT __typeof__(*(kc_fam_##fam)0) sym;
#define KC_CALL(sym)
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL

#define KC_HOOK(sym, fam) DEF_##fam(sym)
#define KC_CALL(sym)
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL

void *const kc_shim_wrappers[KC_E_COUNT] = {
#define KC_HOOK(sym, fam) [KC_E_##sym] = (void *)sym,
#define KC_CALL(sym)
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL
};
