/* libkcheck/base/driver.h — the table of real driver entry points (filled by the
 * shim from dlopen("libcuda.so.1")) and the prototypes of each hooked family.
 * Everything kcheck calls on the driver goes through kc_drv. */
#ifndef KC_DRIVER_H
#define KC_DRIVER_H

#include <cuda.h>

/* cuda.h renames cuGetProcAddress to _v2; kcheck needs both real symbols
 * (the runtime asks for the legacy one by name). */
#undef cuGetProcAddress
/* The same for graph entries whose legacy and newer forms are both hooked. */
#undef cuStreamBeginCapture
#undef cuGraphInstantiate
#undef cuGraphExecUpdate
#undef cuGraphExecKernelNodeSetParams

/* One prototype per family of hooked entries; _ptsz variants share it. */
typedef CUresult (*kc_fam_LAUNCH_KERNEL)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                         CUstream stream, void **params, void **extra);
typedef CUresult (*kc_fam_LAUNCH_KERNEL_EX)(const CUlaunchConfig *config, CUfunction f,
                                            void **params, void **extra);
typedef CUresult (*kc_fam_LAUNCH_COOPERATIVE)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                              unsigned bx, unsigned by, unsigned bz, unsigned shmem,
                                              CUstream stream, void **params);
typedef CUresult (*kc_fam_GRAPH_LAUNCH)(CUgraphExec exec, CUstream stream);
/* Graph entries: KC_FP_/KC_FA_ as for copies (shim/entries.c). */
#define KC_FP_BEGIN_CAPTURE_V1 (CUstream stream)
#define KC_FA_BEGIN_CAPTURE_V1 (stream)
typedef CUresult(*kc_fam_BEGIN_CAPTURE_V1) KC_FP_BEGIN_CAPTURE_V1;
#define KC_FP_BEGIN_CAPTURE (CUstream stream, CUstreamCaptureMode mode)
#define KC_FA_BEGIN_CAPTURE (stream, mode)
typedef CUresult(*kc_fam_BEGIN_CAPTURE) KC_FP_BEGIN_CAPTURE;
#define KC_FP_BEGIN_CAPTURE_TO_GRAPH                                                               \
  (CUstream stream, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges, size_t n,    \
   CUstreamCaptureMode mode)
#define KC_FA_BEGIN_CAPTURE_TO_GRAPH (stream, g, deps, edges, n, mode)
typedef CUresult(*kc_fam_BEGIN_CAPTURE_TO_GRAPH) KC_FP_BEGIN_CAPTURE_TO_GRAPH;
typedef CUresult (*kc_fam_END_CAPTURE)(CUstream stream, CUgraph *graph);
typedef CUresult (*kc_fam_GRAPH_INSTANTIATE_LOG)(CUgraphExec *exec, CUgraph g, CUgraphNode *err,
                                                 char *log, size_t log_size);
typedef CUresult (*kc_fam_GRAPH_INSTANTIATE_FLAGS)(CUgraphExec *exec, CUgraph g,
                                                   unsigned long long flags);
typedef CUresult (*kc_fam_GRAPH_INSTANTIATE_PARAMS)(CUgraphExec *exec, CUgraph g,
                                                    CUDA_GRAPH_INSTANTIATE_PARAMS *params);
typedef CUresult (*kc_fam_GRAPH_EXEC_DESTROY)(CUgraphExec exec);
typedef CUresult (*kc_fam_GRAPH_EXEC_UPDATE_V1)(CUgraphExec exec, CUgraph g, CUgraphNode *err,
                                                CUgraphExecUpdateResult *result);
typedef CUresult (*kc_fam_GRAPH_EXEC_UPDATE)(CUgraphExec exec, CUgraph g,
                                             CUgraphExecUpdateResultInfo *info);
typedef CUresult (*kc_fam_GRAPH_EXEC_KERNEL_SET_V1)(CUgraphExec exec, CUgraphNode node,
                                                    const CUDA_KERNEL_NODE_PARAMS_v1 *p);
typedef CUresult (*kc_fam_GRAPH_EXEC_KERNEL_SET)(CUgraphExec exec, CUgraphNode node,
                                                 const CUDA_KERNEL_NODE_PARAMS *p);
/* Edits kcheck does not mirror: the graph is then no longer checked. */
#define KC_FP_GRAPH_EXEC_MEMCPY_SET                                                                \
  (CUgraphExec exec, CUgraphNode node, const CUDA_MEMCPY3D *p, CUcontext ctx)
#define KC_FA_GRAPH_EXEC_MEMCPY_SET (exec, node, p, ctx)
typedef CUresult(*kc_fam_GRAPH_EXEC_MEMCPY_SET) KC_FP_GRAPH_EXEC_MEMCPY_SET;
#define KC_FP_GRAPH_EXEC_MEMSET_SET                                                                \
  (CUgraphExec exec, CUgraphNode node, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
#define KC_FA_GRAPH_EXEC_MEMSET_SET (exec, node, p, ctx)
typedef CUresult(*kc_fam_GRAPH_EXEC_MEMSET_SET) KC_FP_GRAPH_EXEC_MEMSET_SET;
#define KC_FP_GRAPH_EXEC_HOST_SET                                                                  \
  (CUgraphExec exec, CUgraphNode node, const CUDA_HOST_NODE_PARAMS *p)
#define KC_FA_GRAPH_EXEC_HOST_SET (exec, node, p)
typedef CUresult(*kc_fam_GRAPH_EXEC_HOST_SET) KC_FP_GRAPH_EXEC_HOST_SET;
#define KC_FP_GRAPH_EXEC_CHILD_SET (CUgraphExec exec, CUgraphNode node, CUgraph child)
#define KC_FA_GRAPH_EXEC_CHILD_SET (exec, node, child)
typedef CUresult(*kc_fam_GRAPH_EXEC_CHILD_SET) KC_FP_GRAPH_EXEC_CHILD_SET;
#define KC_FP_GRAPH_EXEC_EVENT_SET (CUgraphExec exec, CUgraphNode node, CUevent ev)
#define KC_FA_GRAPH_EXEC_EVENT_SET (exec, node, ev)
typedef CUresult(*kc_fam_GRAPH_EXEC_EVENT_SET) KC_FP_GRAPH_EXEC_EVENT_SET;
#define KC_FP_GRAPH_EXEC_NODE_SET (CUgraphExec exec, CUgraphNode node, CUgraphNodeParams * p)
#define KC_FA_GRAPH_EXEC_NODE_SET (exec, node, p)
typedef CUresult(*kc_fam_GRAPH_EXEC_NODE_SET) KC_FP_GRAPH_EXEC_NODE_SET;
#define KC_FP_GRAPH_EXEC_ENABLE (CUgraphExec exec, CUgraphNode node, unsigned enabled)
#define KC_FA_GRAPH_EXEC_ENABLE (exec, node, enabled)
typedef CUresult(*kc_fam_GRAPH_EXEC_ENABLE) KC_FP_GRAPH_EXEC_ENABLE;
/* Ordering calls (streams.c). */
typedef CUresult (*kc_fam_EVENT_RECORD)(CUevent ev, CUstream stream);
typedef CUresult (*kc_fam_EVENT_RECORD_FLAGS)(CUevent ev, CUstream stream, unsigned flags);
typedef CUresult (*kc_fam_STREAM_WAIT_EVENT)(CUstream stream, CUevent ev, unsigned flags);
typedef CUresult (*kc_fam_STREAM_SYNC)(CUstream stream);
typedef CUresult (*kc_fam_EVENT_SYNC)(CUevent ev);
typedef CUresult (*kc_fam_CTX_SYNC)(void);
typedef CUresult (*kc_fam_CTX_SYNC_V2)(CUcontext ctx);
typedef CUresult (*kc_fam_MODULE_LOAD)(CUmodule *module, const char *fname);
typedef CUresult (*kc_fam_MODULE_LOAD_DATA)(CUmodule *module, const void *image);
typedef CUresult (*kc_fam_MODULE_LOAD_DATA_EX)(CUmodule *module, const void *image, unsigned n,
                                               CUjit_option *opts, void **vals);
typedef CUresult (*kc_fam_LIBRARY_LOAD_DATA)(CUlibrary *lib, const void *code,
                                             CUjit_option *jit_opts, void **jit_vals,
                                             unsigned n_jit, CUlibraryOption *lib_opts,
                                             void **lib_vals, unsigned n_lib);
typedef CUresult (*kc_fam_LIBRARY_LOAD_FROM_FILE)(CUlibrary *lib, const char *fname,
                                                  CUjit_option *jit_opts, void **jit_vals,
                                                  unsigned n_jit, CUlibraryOption *lib_opts,
                                                  void **lib_vals, unsigned n_lib);
typedef CUresult (*kc_fam_MODULE_UNLOAD)(CUmodule module);
typedef CUresult (*kc_fam_LIBRARY_UNLOAD)(CUlibrary lib);
typedef CUresult (*kc_fam_MEM_ALLOC)(CUdeviceptr *dptr, size_t bytes);
typedef CUresult (*kc_fam_MEM_ALLOC_PITCH)(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                           size_t height, unsigned elem);
typedef CUresult (*kc_fam_MEM_ALLOC_MANAGED)(CUdeviceptr *dptr, size_t bytes, unsigned flags);
typedef CUresult (*kc_fam_MEM_FREE)(CUdeviceptr dptr);
typedef CUresult (*kc_fam_MEM_ALLOC_ASYNC)(CUdeviceptr *dptr, size_t bytes, CUstream stream);
typedef CUresult (*kc_fam_MEM_ALLOC_FROM_POOL_ASYNC)(CUdeviceptr *dptr, size_t bytes,
                                                     CUmemoryPool pool, CUstream stream);
typedef CUresult (*kc_fam_MEM_FREE_ASYNC)(CUdeviceptr dptr, CUstream stream);
typedef CUresult (*kc_fam_MEM_CREATE)(CUmemGenericAllocationHandle *handle, size_t size,
                                      const CUmemAllocationProp *prop, unsigned long long flags);
typedef CUresult (*kc_fam_MEM_RELEASE)(CUmemGenericAllocationHandle handle);
typedef CUresult (*kc_fam_MEM_MAP)(CUdeviceptr ptr, size_t size, size_t offset,
                                   CUmemGenericAllocationHandle handle, unsigned long long flags);
typedef CUresult (*kc_fam_MEM_UNMAP)(CUdeviceptr ptr, size_t size);
typedef CUresult (*kc_fam_GET_PROC_ADDRESS_V1)(const char *symbol, void **pfn, int version,
                                               cuuint64_t flags);
typedef CUresult (*kc_fam_GET_PROC_ADDRESS_V2)(const char *symbol, void **pfn, int version,
                                               cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *status);

/* Entries that move device memory: the shim only holds the world lock
 * (world.h) around the real call. KC_FP_<fam> is the parameter list,
 * KC_FA_<fam> the argument list; the wrappers in shim/entries.c use both. */
#define KC_FP_COPY (CUdeviceptr dst, CUdeviceptr src, size_t n)
#define KC_FA_COPY (dst, src, n)
typedef CUresult(*kc_fam_COPY) KC_FP_COPY;
#define KC_FP_COPY_ASYNC (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream)
#define KC_FA_COPY_ASYNC (dst, src, n, stream)
typedef CUresult(*kc_fam_COPY_ASYNC) KC_FP_COPY_ASYNC;
#define KC_FP_COPY_HTOD (CUdeviceptr dst, const void *src, size_t n)
#define KC_FA_COPY_HTOD (dst, src, n)
typedef CUresult(*kc_fam_COPY_HTOD) KC_FP_COPY_HTOD;
#define KC_FP_COPY_HTOD_ASYNC (CUdeviceptr dst, const void *src, size_t n, CUstream stream)
#define KC_FA_COPY_HTOD_ASYNC (dst, src, n, stream)
typedef CUresult(*kc_fam_COPY_HTOD_ASYNC) KC_FP_COPY_HTOD_ASYNC;
#define KC_FP_COPY_DTOH (void *dst, CUdeviceptr src, size_t n)
#define KC_FA_COPY_DTOH (dst, src, n)
typedef CUresult(*kc_fam_COPY_DTOH) KC_FP_COPY_DTOH;
#define KC_FP_COPY_DTOH_ASYNC (void *dst, CUdeviceptr src, size_t n, CUstream stream)
#define KC_FA_COPY_DTOH_ASYNC (dst, src, n, stream)
typedef CUresult(*kc_fam_COPY_DTOH_ASYNC) KC_FP_COPY_DTOH_ASYNC;
#define KC_FP_MEMSET_D8 (CUdeviceptr dst, unsigned char v, size_t n)
#define KC_FA_MEMSET_D8 (dst, v, n)
typedef CUresult(*kc_fam_MEMSET_D8) KC_FP_MEMSET_D8;
#define KC_FP_MEMSET_D16 (CUdeviceptr dst, unsigned short v, size_t n)
#define KC_FA_MEMSET_D16 (dst, v, n)
typedef CUresult(*kc_fam_MEMSET_D16) KC_FP_MEMSET_D16;
#define KC_FP_MEMSET_D32 (CUdeviceptr dst, unsigned int v, size_t n)
#define KC_FA_MEMSET_D32 (dst, v, n)
typedef CUresult(*kc_fam_MEMSET_D32) KC_FP_MEMSET_D32;
#define KC_FP_MEMSET_D8_ASYNC (CUdeviceptr dst, unsigned char v, size_t n, CUstream stream)
#define KC_FA_MEMSET_D8_ASYNC (dst, v, n, stream)
typedef CUresult(*kc_fam_MEMSET_D8_ASYNC) KC_FP_MEMSET_D8_ASYNC;
#define KC_FP_MEMSET_D16_ASYNC (CUdeviceptr dst, unsigned short v, size_t n, CUstream stream)
#define KC_FA_MEMSET_D16_ASYNC (dst, v, n, stream)
typedef CUresult(*kc_fam_MEMSET_D16_ASYNC) KC_FP_MEMSET_D16_ASYNC;
#define KC_FP_MEMSET_D32_ASYNC (CUdeviceptr dst, unsigned int v, size_t n, CUstream stream)
#define KC_FA_MEMSET_D32_ASYNC (dst, v, n, stream)
typedef CUresult(*kc_fam_MEMSET_D32_ASYNC) KC_FP_MEMSET_D32_ASYNC;

#define KC_FP_COPY_2D (const CUDA_MEMCPY2D *p)
#define KC_FA_COPY_2D (p)
typedef CUresult(*kc_fam_COPY_2D) KC_FP_COPY_2D;
#define KC_FP_COPY_2D_ASYNC (const CUDA_MEMCPY2D *p, CUstream stream)
#define KC_FA_COPY_2D_ASYNC (p, stream)
typedef CUresult(*kc_fam_COPY_2D_ASYNC) KC_FP_COPY_2D_ASYNC;
#define KC_FP_COPY_3D (const CUDA_MEMCPY3D *p)
#define KC_FA_COPY_3D (p)
typedef CUresult(*kc_fam_COPY_3D) KC_FP_COPY_3D;
#define KC_FP_COPY_3D_ASYNC (const CUDA_MEMCPY3D *p, CUstream stream)
#define KC_FA_COPY_3D_ASYNC (p, stream)
typedef CUresult(*kc_fam_COPY_3D_ASYNC) KC_FP_COPY_3D_ASYNC;
#define KC_FP_COPY_3D_PEER (const CUDA_MEMCPY3D_PEER *p)
#define KC_FA_COPY_3D_PEER (p)
typedef CUresult(*kc_fam_COPY_3D_PEER) KC_FP_COPY_3D_PEER;
#define KC_FP_COPY_3D_PEER_ASYNC (const CUDA_MEMCPY3D_PEER *p, CUstream stream)
#define KC_FA_COPY_3D_PEER_ASYNC (p, stream)
typedef CUresult(*kc_fam_COPY_3D_PEER_ASYNC) KC_FP_COPY_3D_PEER_ASYNC;
#define KC_FP_COPY_PEER (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
#define KC_FA_COPY_PEER (dst, dctx, src, sctx, n)
typedef CUresult(*kc_fam_COPY_PEER) KC_FP_COPY_PEER;
#define KC_FP_COPY_PEER_ASYNC                                                                      \
  (CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream stream)
#define KC_FA_COPY_PEER_ASYNC (dst, dctx, src, sctx, n, stream)
typedef CUresult(*kc_fam_COPY_PEER_ASYNC) KC_FP_COPY_PEER_ASYNC;
#define KC_FP_MEMSET_D2D8 (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h)
#define KC_FA_MEMSET_D2D8 (dst, pitch, v, w, h)
typedef CUresult(*kc_fam_MEMSET_D2D8) KC_FP_MEMSET_D2D8;
#define KC_FP_MEMSET_D2D16 (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h)
#define KC_FA_MEMSET_D2D16 (dst, pitch, v, w, h)
typedef CUresult(*kc_fam_MEMSET_D2D16) KC_FP_MEMSET_D2D16;
#define KC_FP_MEMSET_D2D32 (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h)
#define KC_FA_MEMSET_D2D32 (dst, pitch, v, w, h)
typedef CUresult(*kc_fam_MEMSET_D2D32) KC_FP_MEMSET_D2D32;
#define KC_FP_MEMSET_D2D8_ASYNC                                                                    \
  (CUdeviceptr dst, size_t pitch, unsigned char v, size_t w, size_t h, CUstream stream)
#define KC_FA_MEMSET_D2D8_ASYNC (dst, pitch, v, w, h, stream)
typedef CUresult(*kc_fam_MEMSET_D2D8_ASYNC) KC_FP_MEMSET_D2D8_ASYNC;
#define KC_FP_MEMSET_D2D16_ASYNC                                                                   \
  (CUdeviceptr dst, size_t pitch, unsigned short v, size_t w, size_t h, CUstream stream)
#define KC_FA_MEMSET_D2D16_ASYNC (dst, pitch, v, w, h, stream)
typedef CUresult(*kc_fam_MEMSET_D2D16_ASYNC) KC_FP_MEMSET_D2D16_ASYNC;
#define KC_FP_MEMSET_D2D32_ASYNC                                                                   \
  (CUdeviceptr dst, size_t pitch, unsigned int v, size_t w, size_t h, CUstream stream)
#define KC_FA_MEMSET_D2D32_ASYNC (dst, pitch, v, w, h, stream)
typedef CUresult(*kc_fam_MEMSET_D2D32_ASYNC) KC_FP_MEMSET_D2D32_ASYNC;

/* Batch copies: cuda.h maps the plain names onto the 13.0 entries (_v2),
 * but the driver still exports the 12.8 ones (with failIdx) under them. */
#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#define KC_FP_COPY_BATCH_V1                                                                        \
  (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count,                           \
   CUmemcpyAttributes * attrs, size_t * attr_idxs, size_t nattrs, size_t * fail_idx,               \
   CUstream stream)
#define KC_FA_COPY_BATCH_V1 (dsts, srcs, sizes, count, attrs, attr_idxs, nattrs, fail_idx, stream)
typedef CUresult(*kc_fam_COPY_BATCH_V1) KC_FP_COPY_BATCH_V1;
#define KC_FP_COPY_BATCH                                                                           \
  (CUdeviceptr * dsts, CUdeviceptr * srcs, size_t * sizes, size_t count,                           \
   CUmemcpyAttributes * attrs, size_t * attr_idxs, size_t nattrs, CUstream stream)
#define KC_FA_COPY_BATCH (dsts, srcs, sizes, count, attrs, attr_idxs, nattrs, stream)
typedef CUresult(*kc_fam_COPY_BATCH) KC_FP_COPY_BATCH;
#define KC_FP_COPY_3D_BATCH_V1                                                                     \
  (size_t nops, CUDA_MEMCPY3D_BATCH_OP * ops, size_t * fail_idx, unsigned long long flags,         \
   CUstream stream)
#define KC_FA_COPY_3D_BATCH_V1 (nops, ops, fail_idx, flags, stream)
typedef CUresult(*kc_fam_COPY_3D_BATCH_V1) KC_FP_COPY_3D_BATCH_V1;
#define KC_FP_COPY_3D_BATCH                                                                        \
  (size_t nops, CUDA_MEMCPY3D_BATCH_OP * ops, unsigned long long flags, CUstream stream)
#define KC_FA_COPY_3D_BATCH (nops, ops, flags, stream)
typedef CUresult(*kc_fam_COPY_3D_BATCH) KC_FP_COPY_3D_BATCH;
/* Copies to and from CUDA arrays. */
#define KC_FP_COPY_DTOA (CUarray dst, size_t doff, CUdeviceptr src, size_t n)
#define KC_FA_COPY_DTOA (dst, doff, src, n)
typedef CUresult(*kc_fam_COPY_DTOA) KC_FP_COPY_DTOA;
#define KC_FP_COPY_ATOD (CUdeviceptr dst, CUarray src, size_t soff, size_t n)
#define KC_FA_COPY_ATOD (dst, src, soff, n)
typedef CUresult(*kc_fam_COPY_ATOD) KC_FP_COPY_ATOD;
#define KC_FP_COPY_HTOA (CUarray dst, size_t doff, const void *src, size_t n)
#define KC_FA_COPY_HTOA (dst, doff, src, n)
typedef CUresult(*kc_fam_COPY_HTOA) KC_FP_COPY_HTOA;
#define KC_FP_COPY_ATOH (void *dst, CUarray src, size_t soff, size_t n)
#define KC_FA_COPY_ATOH (dst, src, soff, n)
typedef CUresult(*kc_fam_COPY_ATOH) KC_FP_COPY_ATOH;
#define KC_FP_COPY_ATOA (CUarray dst, size_t doff, CUarray src, size_t soff, size_t n)
#define KC_FA_COPY_ATOA (dst, doff, src, soff, n)
typedef CUresult(*kc_fam_COPY_ATOA) KC_FP_COPY_ATOA;
#define KC_FP_COPY_HTOA_ASYNC (CUarray dst, size_t doff, const void *src, size_t n, CUstream stream)
#define KC_FA_COPY_HTOA_ASYNC (dst, doff, src, n, stream)
typedef CUresult(*kc_fam_COPY_HTOA_ASYNC) KC_FP_COPY_HTOA_ASYNC;
#define KC_FP_COPY_ATOH_ASYNC (void *dst, CUarray src, size_t soff, size_t n, CUstream stream)
#define KC_FA_COPY_ATOH_ASYNC (dst, src, soff, n, stream)
typedef CUresult(*kc_fam_COPY_ATOH_ASYNC) KC_FP_COPY_ATOH_ASYNC;

/* Ids of every row, hooked or not. */
enum kc_entry {
#define KC_HOOK(sym, fam) KC_E_##sym,
#define KC_CALL(sym) KC_E_##sym,
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL
  KC_E_COUNT
};

struct kc_driver {
#define KC_HOOK(sym, fam) kc_fam_##fam sym;
#define KC_CALL(sym) __typeof__(sym) *sym;
#include "driver.def"
#undef KC_HOOK
#undef KC_CALL
};

/* Real entry points; a NULL member means the driver lacks it. */
extern struct kc_driver kc_drv;
/* Exported symbol name of each row, indexed by enum kc_entry. */
extern const char *const kc_entry_names[KC_E_COUNT];
/* Whether a row is hooked (1) or only called (0). */
extern const unsigned char kc_entry_hooked[KC_E_COUNT];

#endif
