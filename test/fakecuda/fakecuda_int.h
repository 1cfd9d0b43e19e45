/* test/fakecuda/fakecuda_int.h — internals shared by the stand-in driver's
 * files: handle objects, device memory, the scheduler and entry bookkeeping.
 * Nothing here is exported (libcuda.map exports cu* and fakecuda_*). */
#ifndef FAKECUDA_INT_H
#define FAKECUDA_INT_H

/* Declares every entry under its exact exported name (legacy, _v2, _ptsz)
 * and drops the renaming macros, the way the driver itself is built. */
#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "fakecuda.h"

#define FK_SM_SHARED_BYTES 233472u  /* 228 KiB of shared memory per SM */
#define FK_MAX_SHARED_OPTIN 232448u /* per block, opt-in */
#define FK_DEFAULT_SHARED 49152u    /* per block without opt-in */
#define FK_MAX_SMS 1024u

/* Distinct magics let every entry reject a handle of the wrong kind, the
 * way the real driver rejects a CUkernel passed to cuFuncGetName. */
enum {
  FK_MAGIC_NODE = 0x4e4f4445,
  FK_MAGIC_CTX = 0x43545831,
  FK_MAGIC_STREAM = 0x5354524d,
  FK_MAGIC_EVENT = 0x45564e54,
  FK_MAGIC_MODULE = 0x4d4f444c,
  FK_MAGIC_FUNC = 0x46554e43,
  FK_MAGIC_LIBRARY = 0x4c494252,
  FK_MAGIC_KERNEL = 0x4b45524e,
  FK_MAGIC_GRAPH = 0x47525048,
  FK_MAGIC_GEXEC = 0x47455843,
  FK_MAGIC_GREEN = 0x4752454e,
  FK_MAGIC_DEAD = 0x44454144,
};

struct fk_ctx {
  unsigned magic;
  int primary;       /* the device's primary context */
  int green;         /* created by cuGreenCtxCreate */
  unsigned sm_first; /* SMs [sm_first, sm_first + nsm) belong to it */
  unsigned nsm;
  unsigned flags;
  struct fk_greenctx *gctx; /* owning green context, if green */
};

struct fk_greenctx {
  unsigned magic;
  struct fk_ctx ctx; /* what cuCtxFromGreenCtx returns */
};

struct fk_stream {
  unsigned magic;
  struct fk_ctx *ctx;
  unsigned flags;
  int priority;
  unsigned long long id;
  /* capture state */
  CUstreamCaptureStatus cap_status;
  CUstreamCaptureMode cap_mode;
  pthread_t cap_thread; /* the thread that began the capture */
  struct fk_graph *cap_graph;
  unsigned long long cap_id;
};

struct fk_event {
  unsigned magic;
  unsigned flags;
  unsigned long long stamp; /* launch counter at record time; 0 = never recorded */
};

struct fk_module {
  unsigned magic;
  char *image; /* own copy of the text image */
  size_t image_size;
  unsigned nfuncs;
  struct fk_func **funcs;
  struct fk_library *lib; /* set for a library's module */
  /* Module-scope variables (".global ... name[n];" lines of the image),
   * allocated on first cuModuleGetGlobal. */
  struct fk_global {
    char name[64];
    CUdeviceptr ptr;
    size_t size;
  } globals[8];
  unsigned nglobals;
};

struct fk_func {
  unsigned magic;
  const struct fk_kernel_def *def;
  struct fk_module *mod;
  int max_dyn_shared; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  int carveout;
  int cluster_nonportable;
};

struct fk_library {
  unsigned magic;
  struct fk_module *mod;
  unsigned nkerns;
  struct fk_kernel **kerns;
};

struct fk_kernel {
  unsigned magic;
  struct fk_library *lib;
  struct fk_func *func; /* launches and attributes go through it */
};

/* A recorded launch: everything copied at record time. */
#define FK_MAX_DEPS 16
struct fk_node {
  int kind; /* enum below */
  struct fk_func *func;
  unsigned grid[3], block[3];
  unsigned shmem;
  unsigned char *args; /* packed parameter bytes (owned) */
  size_t args_size;
  /* memset/memcpy */
  CUdeviceptr dst, src;
  unsigned value, elem;
  size_t count;
  const void *host_src;
  void *host_dst;
  /* explicit construction (fakecuda_graph.c) */
  unsigned deps[FK_MAX_DEPS]; /* indices of the nodes this one depends on */
  unsigned ndeps;
  struct fk_nodeh *h; /* the node's handle in its graph (NULL until asked for) */
  void **argv;        /* kernelParams view of args (owned, made on request) */
  CUhostFn host_fn;   /* host node */
  void *host_data;
  struct fk_event *event; /* event record / wait node */
  struct fk_graph *child; /* child graph node: an owned copy */
};
enum {
  FK_NODE_KERNEL = 1,
  FK_NODE_MEMSET,
  FK_NODE_MEMCPY,
  FK_NODE_HOST,
  FK_NODE_EMPTY,
  FK_NODE_EVENT_RECORD,
  FK_NODE_EVENT_WAIT,
  FK_NODE_CHILD
};

struct fk_graph {
  unsigned magic;
  unsigned nnodes, cap;
  struct fk_node *nodes;
  struct fk_graph *origin; /* the graph this one was cloned from (cuGraphNodeFindInClone) */
};

/* A CUgraphNode: a graph and an index, stable while the graph grows. */
struct fk_nodeh {
  unsigned magic;
  struct fk_graph *g;
  unsigned index;
};

struct fk_gexec {
  unsigned magic;
  struct fk_graph copy; /* instantiated copy: later edits of the graph do not reach it */
};

/* ---- graphs (fakecuda_graph.c) ---- */
/* Appends a captured node: it depends on the node captured before it. */
void fk_graph_add(struct fk_graph *g, const struct fk_node *n);
/* Frees what a graph owns (its nodes' buffers and child graphs). */
void fk_graph_free(struct fk_graph *g);
/* Deep copy of src's nodes into the empty graph dst. */
CUresult fk_graph_copy(struct fk_graph *dst, const struct fk_graph *src);
/* Runs (or, cap non-NULL: captures into cap) every node in index order, a
 * topological order: a node can only depend on nodes added before it. */
CUresult fk_graph_run(const struct fk_graph *g, struct fk_ctx *ctx, struct fk_graph *cap);

/* ---- global state (fakecuda.c) ---- */
struct fk_state {
  atomic_int initialized;
  pid_t init_pid;
  unsigned nsm;
  unsigned long long order_seed;
  int order_jitter;
  atomic_ullong launch_counter;
  atomic_ullong next_stream_id;
  struct fk_ctx primary;
  int primary_refs;
  pthread_mutex_t lock; /* graphs, module lists, occupier state */
};
extern struct fk_state fk_g;

/* Entry bookkeeping: counts the call for fault injection and checks cuInit.
 * Returns CUDA_SUCCESS or the error the entry must return at once. */
CUresult fk_enter(const char *name, int needs_init);
/* What fk_enter returns for FAKECUDA_FAIL_SILENT's call: the entry
 * returns CUDA_SUCCESS at once, its work not done. */
#define FK_SILENT_FAILURE ((CUresult)-1)
#define FK_ENTER(name)                                                                             \
  do {                                                                                             \
    CUresult fk_rc_ = fk_enter((name), 1);                                                         \
    if (fk_rc_ == FK_SILENT_FAILURE) return CUDA_SUCCESS;                                          \
    if (fk_rc_ != CUDA_SUCCESS) return fk_rc_;                                                     \
  } while (0)
#define FK_ENTER_NOINIT(name)                                                                      \
  do {                                                                                             \
    CUresult fk_rc_ = fk_enter((name), 0);                                                         \
    if (fk_rc_ == FK_SILENT_FAILURE) return CUDA_SUCCESS;                                          \
    if (fk_rc_ != CUDA_SUCCESS) return fk_rc_;                                                     \
  } while (0)

/* A zeroed handle object that lives until exit (see fakecuda.c). */
void *fk_new(size_t n);

/* Context of the calling thread (NULL when none). */
struct fk_ctx *fk_current_ctx(void);
/* Resolves a stream handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD or
 * an fk_stream) to its context; *s gets the fk_stream or NULL. */
CUresult fk_resolve_stream(CUstream h, struct fk_stream **s, struct fk_ctx **ctx);
/* Whether an op on this stream must be recorded instead of run; sets
 * *err when the op is illegal under an active capture. */
int fk_capturing(CUstream h, struct fk_stream *s, CUresult *err);
/* Records an event now (an event record node, cuEventRecord). */
void fk_event_mark(struct fk_event *e);
/* Advances the simulated device clock that events read. */
void fk_clock_advance(unsigned long long ns);
/* Runs a copy or memset node. */
CUresult fk_run_memop(const struct fk_node *n);
/* A copy/memset node issued synchronously (legacy or, ptds, per-thread
 * stream) or on stream h (captured when h is capturing). */
CUresult fk_memop_sync(const struct fk_node *n, int ptds);
CUresult fk_memop_async(const struct fk_node *n, CUstream h);

/* ---- memory (fakecuda_mem.c) ---- */
void fk_mem_init(void);
CUresult fk_mem_alloc(CUdeviceptr *p, size_t bytes, int kind);
CUresult fk_mem_free(CUdeviceptr p);
/* Whether [p, p+n) lies inside accessible device memory. */
int fk_mem_valid(CUdeviceptr p, size_t n);
/* Whether p is inside the device reservation at all. */
int fk_mem_is_device(CUdeviceptr p);
/* Size of the device memory. */
size_t fk_mem_total(void);
/* Successful allocations so far and the bytes they asked for (module
 * globals included), for FAKECUDA_CALLS_OUT: a test can tell what a
 * process allocated from what it would without kcheck. */
void fk_mem_counts(unsigned long long *count, unsigned long long *bytes);
enum { FK_MEM_DEVICE = 0, FK_MEM_MANAGED = 1, FK_MEM_ASYNC = 2 };

/* ---- launches (fakecuda_launch.c) ---- */
struct fk_func *fk_func_of(CUfunction f);
/* Packs parameters from kernelParams or extra into a fresh buffer. */
CUresult fk_pack_params(const struct fk_kernel_def *def, void **params, void **extra,
                        unsigned char **out, size_t *out_size);
CUresult fk_launch(struct fk_func *fn, const unsigned grid[3], const unsigned block[3],
                   unsigned shmem, CUstream hstream, void **params, void **extra);
CUresult fk_run_node(const struct fk_node *n, struct fk_ctx *ctx);
/* The occupier: set by the kc_occupier kernel, cleared by syncs. */
void fk_occupier_take(unsigned smid, volatile unsigned *release, unsigned long long seed);
void fk_occupier_check(void);
void fk_occupier_release_stream(CUstream h);
void fk_occupier_release_all(void);
/* Parameter offsets at natural alignment. */
size_t fk_param_offset(const struct fk_kernel_def *def, unsigned i);
size_t fk_param_total(const struct fk_kernel_def *def);

/* ---- kernels (fakecuda_kernels.c) ---- */
void fk_kernels_init(void);

/* ---- module images ---- */
CUresult fk_module_from_image(const void *image, struct fk_module **out);
void fk_module_free(struct fk_module *m);

#endif
