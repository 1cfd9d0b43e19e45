/* test/fakecuda/fakecuda.c — entry points of the CPU stand-in driver that
 * are not about code or launches: initialisation, fault injection, devices,
 * contexts (primary, created, green), streams and capture, events, copies,
 * memsets and error strings. See fakecuda.h for the model and the knobs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakecuda_int.h"

struct fk_state fk_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Handle objects are never freed: destroying one marks it dead, so a stale
 * handle is rejected instead of read after free. They stay listed here so
 * that leak checkers of sanitized test programs see them as reachable. */
struct keep_chunk {
  struct keep_chunk *next;
  unsigned n;
  void *p[254];
};
static struct keep_chunk *keep_head;
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;

void *fk_new(size_t n) {
  void *p = calloc(1, n);
  if (p == NULL) return NULL;
  pthread_mutex_lock(&keep_lock);
  if (keep_head == NULL || keep_head->n == sizeof keep_head->p / sizeof keep_head->p[0]) {
    struct keep_chunk *c = calloc(1, sizeof *c);
    if (c == NULL) {
      pthread_mutex_unlock(&keep_lock);
      free(p);
      return NULL;
    }
    c->next = keep_head;
    keep_head = c;
  }
  keep_head->p[keep_head->n++] = p;
  pthread_mutex_unlock(&keep_lock);
  return p;
}

/* ------------------------------------------------------- fault injection */

#define FI_MAX_NAMES 512

static struct {
  long long fail_at; /* 0: never fail */
  CUresult fail_code;
  int fail_silent;   /* the failing call returns success without its work */
  int fail_sticky;   /* after the failure every call needing the context returns it (a
                      * device fault ends the context: the driver's sticky error) */
  const char *entry; /* count only this entry (prefix when star) */
  size_t entry_len;
  int entry_star;
  const char *calls_out;
  int trace;
  atomic_llong seq;
  atomic_llong failed_seq;
  const char *_Atomic failed_name;
  pthread_mutex_t lock; /* per-entry counts */
  const char *names[FI_MAX_NAMES];
  long long counts[FI_MAX_NAMES];
  int forked_after_init;
} fi = {.lock = PTHREAD_MUTEX_INITIALIZER, .fail_code = CUDA_ERROR_UNKNOWN};

static void count_entry(const char *name) {
  pthread_mutex_lock(&fi.lock);
  /* Entry names are string literals: compare pointers first, then text. */
  for (int i = 0; i < FI_MAX_NAMES; i++) {
    if (fi.names[i] == NULL) {
      fi.names[i] = name;
      fi.counts[i] = 1;
      break;
    }
    if (fi.names[i] == name || strcmp(fi.names[i], name) == 0) {
      fi.counts[i]++;
      break;
    }
  }
  pthread_mutex_unlock(&fi.lock);
}

static int entry_matches(const char *name) {
  if (fi.entry == NULL) return 1;
  if (fi.entry_star) return strncmp(name, fi.entry, fi.entry_len) == 0;
  return strcmp(name, fi.entry) == 0;
}

CUresult fk_enter(const char *name, int needs_init) {
  if (fi.trace) fprintf(stderr, "fakecuda: %s\n", name);
  if (fi.fail_sticky && needs_init && atomic_load(&fi.failed_seq)) return fi.fail_code;
  if (entry_matches(name)) {
    long long n = atomic_fetch_add(&fi.seq, 1) + 1;
    if (fi.calls_out) count_entry(name);
    if (n == fi.fail_at) {
      atomic_store(&fi.failed_seq, n);
      atomic_store(&fi.failed_name, name);
      if (fi.trace)
        fprintf(stderr, "fakecuda: injected failure %d at call %lld (%s)\n", (int)fi.fail_code, n,
                name);
      return fi.fail_silent ? FK_SILENT_FAILURE : fi.fail_code;
    }
  }
  if (needs_init && (fi.forked_after_init || !atomic_load(&fk_g.initialized)))
    return CUDA_ERROR_NOT_INITIALIZED;
  return CUDA_SUCCESS;
}

static void write_calls_out(void) {
  if (fi.calls_out == NULL) return;
  char path[4096];
  size_t o = 0;
  for (const char *p = fi.calls_out; *p && o + 24 < sizeof path; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      o += (size_t)snprintf(path + o, sizeof path - o, "%ld", (long)getpid());
      p++;
    } else {
      path[o++] = *p;
    }
  }
  path[o] = 0;
  FILE *f = fopen(path, "w");
  if (f == NULL) return;
  fprintf(f, "calls %lld\n", (long long)atomic_load(&fi.seq));
  long long fs = atomic_load(&fi.failed_seq);
  if (fs)
    fprintf(f, "failed %lld %s\n", fs, atomic_load(&fi.failed_name));
  else
    fprintf(f, "failed none\n");
  pthread_mutex_lock(&fi.lock);
  for (int i = 0; i < FI_MAX_NAMES && fi.names[i]; i++)
    fprintf(f, "entry %s %lld\n", fi.names[i], fi.counts[i]);
  pthread_mutex_unlock(&fi.lock);
  unsigned long long allocs, alloc_bytes;
  fk_mem_counts(&allocs, &alloc_bytes);
  fprintf(f, "allocated %llu %llu\n", allocs, alloc_bytes);
  fclose(f);
}

static void at_fork_child(void) {
  /* The device state belongs to the parent: like the real driver, a child
   * of an initialised process cannot use it. */
  if (atomic_load(&fk_g.initialized)) fi.forked_after_init = 1;
  pthread_mutex_init(&fi.lock, NULL);
}

__attribute__((constructor)) static void fk_load(void) {
  const char *e;
  if ((e = getenv("FAKECUDA_FAIL_AT")) && *e) fi.fail_at = atoll(e);
  if ((e = getenv("FAKECUDA_FAIL_CODE")) && *e) fi.fail_code = (CUresult)atoi(e);
  if ((e = getenv("FAKECUDA_FAIL_SILENT")) && *e && *e != '0') fi.fail_silent = 1;
  if ((e = getenv("FAKECUDA_FAIL_STICKY")) && *e && *e != '0') fi.fail_sticky = 1;
  if ((e = getenv("FAKECUDA_FAIL_ENTRY")) && *e) {
    fi.entry = e;
    fi.entry_len = strlen(e);
    if (e[fi.entry_len - 1] == '*') {
      fi.entry_star = 1;
      fi.entry_len--;
    }
  }
  if ((e = getenv("FAKECUDA_CALLS_OUT")) && *e) fi.calls_out = e;
  if ((e = getenv("FAKECUDA_TRACE")) && *e && *e != '0') fi.trace = 1;
  pthread_atfork(NULL, NULL, at_fork_child);
}

__attribute__((destructor)) static void fk_unload(void) { write_calls_out(); }

/* ----------------------------------------------------------- init, device */

static unsigned env_uint(const char *name, unsigned def, unsigned lo, unsigned hi) {
  const char *e = getenv(name);
  if (e == NULL || *e == 0) return def;
  unsigned long v = strtoul(e, NULL, 0);
  return v < lo || v > hi ? def : (unsigned)v;
}

CUresult cuInit(unsigned flags) {
  FK_ENTER_NOINIT("cuInit");
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (fi.forked_after_init) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fk_g.lock);
  if (!atomic_load(&fk_g.initialized)) {
    fk_g.nsm = env_uint("FAKECUDA_SMS", 132, 1, FK_MAX_SMS);
    const char *e = getenv("FAKECUDA_ORDER_SEED");
    fk_g.order_seed = e ? strtoull(e, NULL, 0) : 0;
    e = getenv("FAKECUDA_ORDER_JITTER");
    fk_g.order_jitter = e && *e && *e != '0';
    fk_g.primary = (struct fk_ctx){.magic = FK_MAGIC_CTX, .primary = 1, .nsm = fk_g.nsm};
    fk_g.init_pid = getpid();
    fk_mem_init();
    fk_kernels_init();
    atomic_store(&fk_g.initialized, 1);
  }
  pthread_mutex_unlock(&fk_g.lock);
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *v) {
  FK_ENTER_NOINIT("cuDriverGetVersion");
  if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

static CUresult check_dev(CUdevice d) { return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE; }

CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
  FK_ENTER("cuDeviceGet");
  if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
  FK_ENTER("cuDeviceGetCount");
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  FK_ENTER("cuDeviceGetName");
  if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", "kcheck CPU stand-in");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) {
  FK_ENTER("cuDeviceGetUuid_v2");
  if (uuid == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  memcpy(uuid->bytes, "kcheck-fakecuda!", 16);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  FK_ENTER("cuDeviceTotalMem_v2");
  if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = fk_mem_total();
  return CUDA_SUCCESS;
}

/* An H100/H200-like device of compute capability 9.0. */
static int attr_value(CUdevice_attribute a, int *ok) {
  *ok = 1;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return (int)FK_DEFAULT_SHARED;
  case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
  case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
  case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
  case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return (int)fk_g.nsm;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x19;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 62914560;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
  case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 3;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return 9;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return 0;
  case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return (int)FK_SM_SHARED_BYTES;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return (int)FK_MAX_SHARED_OPTIN;
  case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
  case CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH: return 1;
  case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024;
  case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE: return 47185920;
  case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE: return 134213632;
  default:
    if ((int)a <= 0 || a >= CU_DEVICE_ATTRIBUTE_MAX) *ok = 0;
    return 0;
  }
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  FK_ENTER("cuDeviceGetAttribute");
  if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  int ok;
  int v = attr_value(attrib, &ok);
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  *pi = v;
  return CUDA_SUCCESS;
}

/* -------------------------------------------------------------- contexts */

#define CTX_STACK 16
static __thread struct fk_ctx *tls_stack[CTX_STACK];
static __thread int tls_depth; /* tls_stack[tls_depth - 1] is current */

struct fk_ctx *fk_current_ctx(void) {
  if (tls_depth == 0) return NULL;
  struct fk_ctx *c = tls_stack[tls_depth - 1];
  return c && c->magic == FK_MAGIC_CTX ? c : NULL;
}

static void set_current(struct fk_ctx *c) {
  if (tls_depth == 0) tls_depth = 1;
  tls_stack[tls_depth - 1] = c;
}

static int ctx_ok(CUcontext c) { return c != NULL && ((struct fk_ctx *)c)->magic == FK_MAGIC_CTX; }

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  FK_ENTER("cuDevicePrimaryCtxRetain");
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&fk_g.lock);
  fk_g.primary_refs++;
  pthread_mutex_unlock(&fk_g.lock);
  *pctx = (CUcontext)&fk_g.primary;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  FK_ENTER("cuDevicePrimaryCtxRelease_v2");
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&fk_g.lock);
  if (fk_g.primary_refs > 0)
    fk_g.primary_refs--;
  else
    rc = CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_unlock(&fk_g.lock);
  return rc;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active) {
  FK_ENTER("cuDevicePrimaryCtxGetState");
  if (flags == NULL || active == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *flags = fk_g.primary.flags;
  *active = fk_g.primary_refs > 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned flags) {
  FK_ENTER("cuDevicePrimaryCtxSetFlags_v2");
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  fk_g.primary.flags = flags;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  FK_ENTER("cuDevicePrimaryCtxReset_v2");
  return check_dev(dev);
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev) {
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  struct fk_ctx *c = fk_new(sizeof *c);
  if (c == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (struct fk_ctx){.magic = FK_MAGIC_CTX, .nsm = fk_g.nsm, .flags = flags};
  /* A created context becomes current (pushed), as documented. */
  if (tls_depth < CTX_STACK) tls_stack[tls_depth++] = c;
  *pctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice dev) {
  FK_ENTER("cuCtxCreate_v2");
  return ctx_create(pctx, flags, dev);
}

/* Legacy exports whose prototypes did not change; kept because the real
 * library exports them and cuGetProcAddress hands them out for old versions. */
CUresult cuCtxCreate(CUcontext *pctx, unsigned flags, CUdevice dev) {
  FK_ENTER("cuCtxCreate");
  return ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n, unsigned flags,
                        CUdevice dev) {
  FK_ENTER("cuCtxCreate_v3");
  (void)params;
  (void)n;
  return ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned flags, CUdevice dev) {
  FK_ENTER("cuCtxCreate_v4");
  (void)params;
  return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx) {
  if (!ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  struct fk_ctx *c = (struct fk_ctx *)ctx;
  if (c->primary || c->green) return CUDA_ERROR_INVALID_CONTEXT;
  for (int i = 0; i < tls_depth; i++)
    if (tls_stack[i] == c) tls_stack[i] = NULL;
  while (tls_depth > 0 && tls_stack[tls_depth - 1] == NULL)
    tls_depth--;
  /* Kept allocated so a stale handle is rejected instead of read freed. */
  c->magic = FK_MAGIC_DEAD;
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  FK_ENTER("cuCtxDestroy_v2");
  return ctx_destroy(ctx);
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  FK_ENTER("cuCtxGetCurrent");
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pctx = (CUcontext)fk_current_ctx();
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  FK_ENTER("cuCtxSetCurrent");
  if (ctx != NULL && !ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  set_current((struct fk_ctx *)ctx);
  return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx) {
  if (!ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (tls_depth == CTX_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
  tls_stack[tls_depth++] = (struct fk_ctx *)ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  FK_ENTER("cuCtxPushCurrent_v2");
  return ctx_push(ctx);
}

static CUresult ctx_pop(CUcontext *pctx) {
  if (tls_depth == 0 || tls_stack[tls_depth - 1] == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  struct fk_ctx *c = tls_stack[--tls_depth];
  if (pctx) *pctx = (CUcontext)c;
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  FK_ENTER("cuCtxPopCurrent_v2");
  return ctx_pop(pctx);
}

CUresult cuCtxGetDevice(CUdevice *dev) {
  FK_ENTER("cuCtxGetDevice");
  if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice *dev, CUcontext ctx) {
  FK_ENTER("cuCtxGetDevice_v2");
  if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == NULL ? fk_current_ctx() == NULL : !ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned *version) {
  FK_ENTER("cuCtxGetApiVersion");
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != NULL && !ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  *version = 3020;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned *flags) {
  FK_ENTER("cuCtxGetFlags");
  struct fk_ctx *c = fk_current_ctx();
  if (flags == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (c == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *flags = c->flags;
  return CUDA_SUCCESS;
}

/* -------------------------------------------------- streams and capture */

#define MAX_CAPTURING 64
static struct fk_stream *capturing[MAX_CAPTURING]; /* under fk_g.lock */
static __thread CUstreamCaptureMode tls_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static atomic_ullong next_capture_id;

CUresult fk_resolve_stream(CUstream h, struct fk_stream **s, struct fk_ctx **ctx) {
  *s = NULL;
  if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
    *ctx = fk_current_ctx();
    return *ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
  }
  struct fk_stream *st = (struct fk_stream *)h;
  if (st->magic != FK_MAGIC_STREAM) return CUDA_ERROR_INVALID_HANDLE;
  if (st->ctx->magic != FK_MAGIC_CTX) return CUDA_ERROR_INVALID_CONTEXT;
  *s = st;
  *ctx = st->ctx;
  return CUDA_SUCCESS;
}

/* Marks every capture that an unsafe call from this thread breaks. Returns
 * whether any was broken. Relaxed captures are never broken. */
static int invalidate_unsafe(void) {
  int hit = 0;
  pthread_mutex_lock(&fk_g.lock);
  for (int i = 0; i < MAX_CAPTURING; i++) {
    struct fk_stream *s = capturing[i];
    if (s == NULL || s->cap_mode == CU_STREAM_CAPTURE_MODE_RELAXED) continue;
    /* A thread-local capture of another thread is not this thread's
     * concern, nor is any other thread's capture to a thread-local caller. */
    int own = pthread_equal(s->cap_thread, pthread_self());
    if (!own && (s->cap_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
                 tls_capture_mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
      continue;
    if (s->cap_status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
      s->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
      hit = 1;
    }
  }
  pthread_mutex_unlock(&fk_g.lock);
  return hit;
}

static int any_capture(void) {
  int hit = 0;
  pthread_mutex_lock(&fk_g.lock);
  for (int i = 0; i < MAX_CAPTURING; i++)
    if (capturing[i] && capturing[i]->cap_mode != CU_STREAM_CAPTURE_MODE_RELAXED) hit = 1;
  pthread_mutex_unlock(&fk_g.lock);
  return hit;
}

int fk_capturing(CUstream h, struct fk_stream *s, CUresult *err) {
  *err = CUDA_SUCCESS;
  if (s != NULL && s->cap_status == CU_STREAM_CAPTURE_STATUS_ACTIVE) return 1;
  if (s != NULL && s->cap_status == CU_STREAM_CAPTURE_STATUS_INVALIDATED) {
    *err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return 0;
  }
  /* Work on the legacy default stream joins every blocking stream, so it
   * may not run while one of them is capturing. */
  if (s == NULL && h != CU_STREAM_PER_THREAD &&
      tls_capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED && invalidate_unsafe())
    *err = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  return 0;
}

/* Synchronous copies, memsets and context syncs are unsafe during capture. */
static CUresult unsafe_during_capture(void) {
  if (tls_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  return invalidate_unsafe() ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static CUresult stream_create(CUstream *ph, struct fk_ctx *ctx, unsigned flags, int prio) {
  if (ph == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  struct fk_stream *s = fk_new(sizeof *s);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  s->magic = FK_MAGIC_STREAM;
  s->ctx = ctx;
  s->flags = flags;
  s->priority = prio;
  s->id = atomic_fetch_add(&fk_g.next_stream_id, 1) + 16;
  *ph = (CUstream)s;
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *ph, unsigned flags) {
  FK_ENTER("cuStreamCreate");
  if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  return stream_create(ph, fk_current_ctx(), flags, 0);
}

CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned flags, int priority) {
  FK_ENTER("cuStreamCreateWithPriority");
  if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  if (priority > 0) priority = 0;
  if (priority < -5) priority = -5;
  return stream_create(ph, fk_current_ctx(), flags, priority);
}

CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  FK_ENTER("cuCtxGetStreamPriorityRange");
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return CUDA_SUCCESS;
}

static CUresult stream_destroy(CUstream h) {
  struct fk_stream *s = (struct fk_stream *)h;
  if (s == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD ||
      s->magic != FK_MAGIC_STREAM)
    return CUDA_ERROR_INVALID_HANDLE;
  fk_occupier_release_stream(h);
  pthread_mutex_lock(&fk_g.lock);
  for (int i = 0; i < MAX_CAPTURING; i++)
    if (capturing[i] == s) capturing[i] = NULL;
  pthread_mutex_unlock(&fk_g.lock);
  /* Left allocated and marked dead so stale handles are rejected. */
  s->magic = FK_MAGIC_DEAD;
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream h) {
  FK_ENTER("cuStreamDestroy_v2");
  return stream_destroy(h);
}

static CUresult stream_sync(CUstream h) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (s != NULL && s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE) {
    s->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (s == NULL && h != CU_STREAM_PER_THREAD && (rc = unsafe_during_capture()) != CUDA_SUCCESS)
    return rc;
  fk_occupier_check();
  fk_occupier_release_stream(h);
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream h) {
  FK_ENTER("cuStreamSynchronize");
  return stream_sync(h);
}
CUresult cuStreamSynchronize_ptsz(CUstream h) {
  FK_ENTER("cuStreamSynchronize_ptsz");
  return stream_sync(h ? h : CU_STREAM_PER_THREAD);
}

static CUresult stream_query(CUstream h) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (s != NULL && s->cap_status == CU_STREAM_CAPTURE_STATUS_ACTIVE) {
    s->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  return CUDA_SUCCESS;
}
CUresult cuStreamQuery(CUstream h) {
  FK_ENTER("cuStreamQuery");
  return stream_query(h);
}
CUresult cuStreamQuery_ptsz(CUstream h) {
  FK_ENTER("cuStreamQuery_ptsz");
  return stream_query(h ? h : CU_STREAM_PER_THREAD);
}

static CUresult stream_get_ctx(CUstream h, CUcontext *pctx) {
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct fk_stream *s;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc == CUDA_SUCCESS) *pctx = (CUcontext)ctx;
  return rc;
}
CUresult cuStreamGetCtx(CUstream h, CUcontext *pctx) {
  FK_ENTER("cuStreamGetCtx");
  return stream_get_ctx(h, pctx);
}
CUresult cuStreamGetCtx_ptsz(CUstream h, CUcontext *pctx) {
  FK_ENTER("cuStreamGetCtx_ptsz");
  return stream_get_ctx(h ? h : CU_STREAM_PER_THREAD, pctx);
}

static CUresult stream_get_ctx2(CUstream h, CUcontext *pctx, CUgreenCtx *pg) {
  if (pctx == NULL || pg == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUcontext c;
  CUresult rc = stream_get_ctx(h, &c);
  if (rc != CUDA_SUCCESS) return rc;
  struct fk_ctx *fc = (struct fk_ctx *)c;
  *pctx = fc->green ? NULL : c;
  *pg = fc->green ? (CUgreenCtx)fc->gctx : NULL;
  return CUDA_SUCCESS;
}
CUresult cuStreamGetCtx_v2(CUstream h, CUcontext *pctx, CUgreenCtx *pg) {
  FK_ENTER("cuStreamGetCtx_v2");
  return stream_get_ctx2(h, pctx, pg);
}
CUresult cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext *pctx, CUgreenCtx *pg);
CUresult cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext *pctx, CUgreenCtx *pg) {
  FK_ENTER("cuStreamGetCtx_v2_ptsz");
  return stream_get_ctx2(h ? h : CU_STREAM_PER_THREAD, pctx, pg);
}

static CUresult stream_get_flags(CUstream h, unsigned *flags) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (flags == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc == CUDA_SUCCESS) *flags = s ? s->flags : 0;
  return rc;
}
CUresult cuStreamGetFlags(CUstream h, unsigned *flags) {
  FK_ENTER("cuStreamGetFlags");
  return stream_get_flags(h, flags);
}
CUresult cuStreamGetFlags_ptsz(CUstream h, unsigned *flags);
CUresult cuStreamGetFlags_ptsz(CUstream h, unsigned *flags) {
  FK_ENTER("cuStreamGetFlags_ptsz");
  return stream_get_flags(h ? h : CU_STREAM_PER_THREAD, flags);
}

CUresult cuStreamGetPriority(CUstream h, int *prio) {
  FK_ENTER("cuStreamGetPriority");
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (prio == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc == CUDA_SUCCESS) *prio = s ? s->priority : 0;
  return rc;
}

CUresult cuStreamGetId(CUstream h, unsigned long long *id) {
  FK_ENTER("cuStreamGetId");
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (id == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc == CUDA_SUCCESS) *id = s ? s->id : (h == CU_STREAM_PER_THREAD ? 2 : 1);
  return rc;
}

static CUresult stream_wait_event(CUstream h, CUevent ev, unsigned flags) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  (void)flags;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (ev == NULL || ((struct fk_event *)ev)->magic != FK_MAGIC_EVENT)
    return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}
CUresult cuStreamWaitEvent(CUstream h, CUevent ev, unsigned flags) {
  FK_ENTER("cuStreamWaitEvent");
  return stream_wait_event(h, ev, flags);
}
CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent ev, unsigned flags);
CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent ev, unsigned flags) {
  FK_ENTER("cuStreamWaitEvent_ptsz");
  return stream_wait_event(h ? h : CU_STREAM_PER_THREAD, ev, flags);
}

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (h == NULL || h == CU_STREAM_LEGACY) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (h == CU_STREAM_PER_THREAD) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (s->cap_status != CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_ERROR_ILLEGAL_STATE;
  struct fk_graph *g = fk_new(sizeof *g);
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = FK_MAGIC_GRAPH;
  pthread_mutex_lock(&fk_g.lock);
  int slot = -1;
  for (int i = 0; i < MAX_CAPTURING && slot < 0; i++)
    if (capturing[i] == NULL) slot = i;
  if (slot >= 0) capturing[slot] = s;
  pthread_mutex_unlock(&fk_g.lock);
  if (slot < 0) {
    g->magic = FK_MAGIC_DEAD;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s->cap_graph = g;
  s->cap_mode = mode;
  s->cap_thread = pthread_self();
  s->cap_id = atomic_fetch_add(&next_capture_id, 1) + 1;
  s->cap_status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  FK_ENTER("cuStreamBeginCapture_v2");
  return begin_capture(h, mode);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode) {
  FK_ENTER("cuStreamBeginCapture_v2_ptsz");
  return begin_capture(h, mode);
}
CUresult cuStreamBeginCapture(CUstream h) {
  FK_ENTER("cuStreamBeginCapture");
  return begin_capture(h, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
CUresult cuStreamBeginCapture_ptsz(CUstream h) {
  FK_ENTER("cuStreamBeginCapture_ptsz");
  return begin_capture(h, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

static CUresult end_capture(CUstream h, CUgraph *pg) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (pg == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (s == NULL || s->cap_status == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_ERROR_ILLEGAL_STATE;
  pthread_mutex_lock(&fk_g.lock);
  for (int i = 0; i < MAX_CAPTURING; i++)
    if (capturing[i] == s) capturing[i] = NULL;
  pthread_mutex_unlock(&fk_g.lock);
  struct fk_graph *g = s->cap_graph;
  int bad = s->cap_status == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  s->cap_graph = NULL;
  s->cap_status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (bad) {
    fk_graph_free(g);
    g->magic = FK_MAGIC_DEAD;
    *pg = NULL;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *pg = (CUgraph)g;
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream h, CUgraph *pg) {
  FK_ENTER("cuStreamEndCapture");
  return end_capture(h, pg);
}
CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *pg);
CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *pg) {
  FK_ENTER("cuStreamEndCapture_ptsz");
  return end_capture(h, pg);
}

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *st) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (st == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (s == NULL) {
    /* Asking about the legacy stream while another stream captures is
     * itself an implicit synchronisation. */
    if (h != CU_STREAM_PER_THREAD && any_capture()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *st = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  *st = s->cap_status;
  return CUDA_SUCCESS;
}
CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st) {
  FK_ENTER("cuStreamIsCapturing");
  return is_capturing(h, st);
}
CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *st);
CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *st) {
  FK_ENTER("cuStreamIsCapturing_ptsz");
  return is_capturing(h ? h : CU_STREAM_PER_THREAD, st);
}

static CUresult capture_info(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges,
                             size_t *ndeps) {
  CUresult rc = is_capturing(h, st);
  if (rc != CUDA_SUCCESS) return rc;
  struct fk_stream *s = (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
                            ? NULL
                            : (struct fk_stream *)h;
  int active = s != NULL && s->cap_status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id) *id = active ? s->cap_id : 0;
  if (g) *g = active ? (CUgraph)s->cap_graph : NULL;
  if (deps) *deps = NULL;
  if (edges) *edges = NULL;
  if (ndeps) *ndeps = 0;
  return CUDA_SUCCESS;
}
CUresult cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id,
                                   CUgraph *g, const CUgraphNode **deps,
                                   const CUgraphEdgeData **edges, size_t *ndeps) {
  FK_ENTER("cuStreamGetCaptureInfo_v3");
  return capture_info(h, st, id, g, deps, edges, ndeps);
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id,
                                        CUgraph *g, const CUgraphNode **deps,
                                        const CUgraphEdgeData **edges, size_t *ndeps);
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id,
                                        CUgraph *g, const CUgraphNode **deps,
                                        const CUgraphEdgeData **edges, size_t *ndeps) {
  FK_ENTER("cuStreamGetCaptureInfo_v3_ptsz");
  return capture_info(h ? h : CU_STREAM_PER_THREAD, st, id, g, deps, edges, ndeps);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  FK_ENTER("cuThreadExchangeStreamCaptureMode");
  if (mode == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = tls_capture_mode;
  tls_capture_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

/* A context-wide sync would wait for every stream, a capturing one too:
 * on the real driver (580) it fails while another thread captures, even
 * in relaxed mode, and that capture is lost. */
static CUresult ctx_sync_during_capture(void) {
  int hit = 0;
  pthread_mutex_lock(&fk_g.lock);
  for (int i = 0; i < MAX_CAPTURING; i++) {
    struct fk_stream *s = capturing[i];
    if (s && s->cap_status == CU_STREAM_CAPTURE_STATUS_ACTIVE &&
        !pthread_equal(s->cap_thread, pthread_self())) {
      s->cap_status = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
      hit = 1;
    }
  }
  pthread_mutex_unlock(&fk_g.lock);
  return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  FK_ENTER("cuCtxSynchronize");
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  CUresult rc = unsafe_during_capture();
  if (rc == CUDA_SUCCESS) rc = ctx_sync_during_capture();
  if (rc != CUDA_SUCCESS) return rc;
  fk_occupier_release_all();
  return CUDA_SUCCESS;
}

/* CUDA 13 forms taking the context explicitly (NULL: the current one). */
CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  FK_ENTER("cuCtxSynchronize_v2");
  if (ctx == NULL ? fk_current_ctx() == NULL : !ctx_ok(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  CUresult rc = unsafe_during_capture();
  if (rc == CUDA_SUCCESS) rc = ctx_sync_during_capture();
  if (rc != CUDA_SUCCESS) return rc;
  fk_occupier_release_all();
  return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- graphs */

CUresult cuGraphCreate(CUgraph *pg, unsigned flags) {
  FK_ENTER("cuGraphCreate");
  if (pg == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  struct fk_graph *g = fk_new(sizeof *g);
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = FK_MAGIC_GRAPH;
  *pg = (CUgraph)g;
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hg) {
  FK_ENTER("cuGraphDestroy");
  struct fk_graph *g = (struct fk_graph *)hg;
  if (g == NULL || g->magic != FK_MAGIC_GRAPH) return CUDA_ERROR_INVALID_VALUE;
  fk_graph_free(g);
  g->magic = FK_MAGIC_DEAD;
  return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *pe, CUgraph hg) {
  struct fk_graph *g = (struct fk_graph *)hg;
  if (pe == NULL || g == NULL || g->magic != FK_MAGIC_GRAPH) return CUDA_ERROR_INVALID_VALUE;
  struct fk_gexec *e = fk_new(sizeof *e);
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = FK_MAGIC_GEXEC;
  CUresult rc = fk_graph_copy(&e->copy, g);
  if (rc != CUDA_SUCCESS) {
    e->magic = FK_MAGIC_DEAD;
    return rc;
  }
  *pe = (CUgraphExec)e;
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags) {
  FK_ENTER("cuGraphInstantiateWithFlags");
  (void)flags;
  return instantiate(pe, g);
}

/* cuGraphInstantiate's form: no error node, an empty log. */
static CUresult instantiate_log(CUgraphExec *pe, CUgraph g, CUgraphNode *err_node, char *log,
                                size_t log_size) {
  if (err_node) *err_node = NULL;
  if (log && log_size) log[0] = 0;
  return instantiate(pe, g);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *pe, CUgraph g, CUgraphNode *err_node, char *log,
                               size_t log_size) {
  FK_ENTER("cuGraphInstantiate_v2");
  return instantiate_log(pe, g, err_node, log, log_size);
}

CUresult cuGraphInstantiateWithParams(CUgraphExec *pe, CUgraph g,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
  FK_ENTER("cuGraphInstantiateWithParams");
  CUresult rc = instantiate(pe, g);
  if (params)
    params->result_out =
        rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return rc;
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *pe, CUgraph g,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *params);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *pe, CUgraph g,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
  FK_ENTER("cuGraphInstantiateWithParams_ptsz");
  CUresult rc = instantiate(pe, g);
  if (params)
    params->result_out =
        rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return rc;
}

CUresult cuGraphExecDestroy(CUgraphExec he) {
  FK_ENTER("cuGraphExecDestroy");
  struct fk_gexec *e = (struct fk_gexec *)he;
  if (e == NULL || e->magic != FK_MAGIC_GEXEC) return CUDA_ERROR_INVALID_VALUE;
  fk_graph_free(&e->copy);
  e->magic = FK_MAGIC_DEAD;
  return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec he, CUstream h) {
  struct fk_gexec *e = (struct fk_gexec *)he;
  if (e == NULL || e->magic != FK_MAGIC_GEXEC) return CUDA_ERROR_INVALID_VALUE;
  struct fk_stream *s;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  int rec = fk_capturing(h, s, &rc);
  if (rc != CUDA_SUCCESS) return rc;
  return fk_graph_run(&e->copy, ctx, rec ? s->cap_graph : NULL);
}

CUresult cuGraphLaunch(CUgraphExec e, CUstream h) {
  FK_ENTER("cuGraphLaunch");
  return graph_launch(e, h);
}
CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream h) {
  FK_ENTER("cuGraphLaunch_ptsz");
  return graph_launch(e, h ? h : CU_STREAM_PER_THREAD);
}

static CUresult graph_upload(CUgraphExec he, CUstream h) {
  struct fk_gexec *e = (struct fk_gexec *)he;
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (e == NULL || e->magic != FK_MAGIC_GEXEC) return CUDA_ERROR_INVALID_VALUE;
  return fk_resolve_stream(h, &s, &ctx);
}
CUresult cuGraphUpload(CUgraphExec e, CUstream h) {
  FK_ENTER("cuGraphUpload");
  return graph_upload(e, h);
}
CUresult cuGraphUpload_ptsz(CUgraphExec e, CUstream h);
CUresult cuGraphUpload_ptsz(CUgraphExec e, CUstream h) {
  FK_ENTER("cuGraphUpload_ptsz");
  return graph_upload(e, h ? h : CU_STREAM_PER_THREAD);
}

/* ---------------------------------------------------------------- events */

/* A simulated device clock (ns) advanced by launches and copies, so event
 * timings are deterministic and grow with the work done. */
static atomic_ullong device_clock_ns;

void fk_clock_advance(unsigned long long ns) { atomic_fetch_add(&device_clock_ns, ns); }

CUresult cuEventCreate(CUevent *ph, unsigned flags) {
  FK_ENTER("cuEventCreate");
  if (ph == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  struct fk_event *e = fk_new(sizeof *e);
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = FK_MAGIC_EVENT;
  e->flags = flags;
  *ph = (CUevent)e;
  return CUDA_SUCCESS;
}

void fk_event_mark(struct fk_event *e) {
  /* +1 so a recorded event never reads as "never recorded". */
  e->stamp = atomic_fetch_add(&device_clock_ns, 1) + 1;
}

static struct fk_event *event_of(CUevent h) {
  struct fk_event *e = (struct fk_event *)h;
  return e && e->magic == FK_MAGIC_EVENT ? e : NULL;
}

static CUresult event_record(CUevent h, CUstream st) {
  struct fk_event *e = event_of(h);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  struct fk_stream *s;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(st, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  if (fk_capturing(st, s, &rc)) return CUDA_SUCCESS; /* an event node: nothing to replay */
  if (rc != CUDA_SUCCESS) return rc;
  fk_event_mark(e);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent h, CUstream s) {
  FK_ENTER("cuEventRecord");
  return event_record(h, s);
}
CUresult cuEventRecord_ptsz(CUevent h, CUstream s);
CUresult cuEventRecord_ptsz(CUevent h, CUstream s) {
  FK_ENTER("cuEventRecord_ptsz");
  return event_record(h, s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuEventRecordWithFlags(CUevent h, CUstream s, unsigned flags) {
  FK_ENTER("cuEventRecordWithFlags");
  (void)flags;
  return event_record(h, s);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent h, CUstream s, unsigned flags);
CUresult cuEventRecordWithFlags_ptsz(CUevent h, CUstream s, unsigned flags) {
  FK_ENTER("cuEventRecordWithFlags_ptsz");
  (void)flags;
  return event_record(h, s ? s : CU_STREAM_PER_THREAD);
}

CUresult cuEventSynchronize(CUevent h) {
  FK_ENTER("cuEventSynchronize");
  if (event_of(h) == NULL) return CUDA_ERROR_INVALID_HANDLE;
  fk_occupier_check();
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent h) {
  FK_ENTER("cuEventQuery");
  return event_of(h) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b) {
  struct fk_event *s = event_of(a), *e = event_of(b);
  if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (s == NULL || e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (s->stamp == 0 || e->stamp == 0) return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)((double)((long long)(e->stamp - s->stamp)) / 1e6);
  return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  FK_ENTER("cuEventElapsedTime_v2");
  return elapsed(ms, a, b);
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  FK_ENTER("cuEventElapsedTime");
  return elapsed(ms, a, b);
}

static CUresult event_destroy(CUevent h) {
  struct fk_event *e = event_of(h);
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  e->magic = FK_MAGIC_DEAD;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent h) {
  FK_ENTER("cuEventDestroy_v2");
  return event_destroy(h);
}

/* Page-locking: nothing to lock here; the arguments are checked as the
 * driver checks them. */
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
  FK_ENTER("cuMemHostRegister_v2");
  (void)flags;
  return p && n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemHostUnregister(void *p) {
  FK_ENTER("cuMemHostUnregister");
  return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
/* Device memory is host memory here: a mapped host address is its own
 * device address. */
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned flags) {
  FK_ENTER("cuMemHostGetDevicePointer_v2");
  if (!dptr || !p || flags) return CUDA_ERROR_INVALID_VALUE;
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------- copies, memsets */

/* Runs a copy/memset node (also used by graph replay). */
CUresult fk_run_memop(const struct fk_node *n) {
  if (n->kind == FK_NODE_MEMSET) {
    size_t bytes = n->count * n->elem;
    if (!fk_mem_valid(n->dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
    unsigned char *d = (unsigned char *)n->dst;
    if (n->elem == 1) {
      memset(d, (int)(n->value & 0xff), n->count);
    } else {
      for (size_t i = 0; i < n->count; i++)
        memcpy(d + i * n->elem, &n->value, n->elem);
    }
    fk_clock_advance(500 + bytes / 2000);
    return CUDA_SUCCESS;
  }
  /* memcpy: dst/src device when non-zero, else the host pointers. */
  void *d = n->dst ? (void *)n->dst : n->host_dst;
  const void *s = n->src ? (const void *)n->src : n->host_src;
  if (n->dst && !fk_mem_valid(n->dst, n->count)) return CUDA_ERROR_INVALID_VALUE;
  if (n->src && !fk_mem_valid(n->src, n->count)) return CUDA_ERROR_INVALID_VALUE;
  if (n->count && (d == NULL || s == NULL)) return CUDA_ERROR_INVALID_VALUE;
  if (n->count) memmove(d, s, n->count);
  fk_clock_advance(1000 + n->count / 1000);
  return CUDA_SUCCESS;
}

/* A synchronous op uses the legacy stream (or the per-thread one for _ptds
 * entries). */
CUresult fk_memop_sync(const struct fk_node *n, int ptds) {
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (!ptds) {
    CUresult rc = unsafe_during_capture();
    if (rc != CUDA_SUCCESS) return rc;
  }
  return fk_run_memop(n);
}

CUresult fk_memop_async(const struct fk_node *n, CUstream h) {
  struct fk_stream *s;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  int rec = fk_capturing(h, s, &rc);
  if (rc != CUDA_SUCCESS) return rc;
  if (rec) {
    /* Host pointers are kept as given: the replay reads/writes them then,
     * as a captured memcpy node of the real driver does. */
    fk_graph_add(s->cap_graph, n);
    return CUDA_SUCCESS;
  }
  return fk_run_memop(n);
}

#define NODE_H2D(d, s, c)                                                                          \
  ((struct fk_node){.kind = FK_NODE_MEMCPY, .dst = (d), .host_src = (s), .count = (c)})
#define NODE_D2H(d, s, c)                                                                          \
  ((struct fk_node){.kind = FK_NODE_MEMCPY, .host_dst = (d), .src = (s), .count = (c)})
#define NODE_D2D(d, s, c)                                                                          \
  ((struct fk_node){.kind = FK_NODE_MEMCPY, .dst = (d), .src = (s), .count = (c)})
#define NODE_SET(d, v, e, c)                                                                       \
  ((struct fk_node){.kind = FK_NODE_MEMSET, .dst = (d), .value = (v), .elem = (e), .count = (c)})

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  FK_ENTER("cuMemcpyHtoD_v2");
  return fk_memop_sync(&NODE_H2D(dst, src, n), 0);
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  FK_ENTER("cuMemcpyDtoH_v2");
  return fk_memop_sync(&NODE_D2H(dst, src, n), 0);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  FK_ENTER("cuMemcpyDtoD_v2");
  return fk_memop_sync(&NODE_D2D(dst, src, n), 0);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n) {
  FK_ENTER("cuMemcpyHtoD_v2_ptds");
  return fk_memop_sync(&NODE_H2D(dst, src, n), 1);
}
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n) {
  FK_ENTER("cuMemcpyDtoH_v2_ptds");
  return fk_memop_sync(&NODE_D2H(dst, src, n), 1);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  FK_ENTER("cuMemcpyDtoD_v2_ptds");
  return fk_memop_sync(&NODE_D2D(dst, src, n), 1);
}

/* cuMemcpy takes unified addresses: each side is device memory if it lies
 * in the device reservation, host memory otherwise. */
static struct fk_node unified(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  struct fk_node x = {.kind = FK_NODE_MEMCPY, .count = n};
  if (fk_mem_is_device(dst))
    x.dst = dst;
  else
    x.host_dst = (void *)dst;
  if (fk_mem_is_device(src))
    x.src = src;
  else
    x.host_src = (const void *)src;
  return x;
}
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  FK_ENTER("cuMemcpy");
  struct fk_node x = unified(dst, src, n);
  return fk_memop_sync(&x, 0);
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  FK_ENTER("cuMemcpy_ptds");
  struct fk_node x = unified(dst, src, n);
  return fk_memop_sync(&x, 1);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyAsync");
  struct fk_node x = unified(dst, src, n);
  return fk_memop_async(&x, s);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyAsync_ptsz");
  struct fk_node x = unified(dst, src, n);
  return fk_memop_async(&x, s ? s : CU_STREAM_PER_THREAD);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyHtoDAsync_v2");
  return fk_memop_async(&NODE_H2D(dst, src, n), s);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyDtoHAsync_v2");
  return fk_memop_async(&NODE_D2H(dst, src, n), s);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyDtoDAsync_v2");
  return fk_memop_async(&NODE_D2D(dst, src, n), s);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyHtoDAsync_v2_ptsz");
  return fk_memop_async(&NODE_H2D(dst, src, n), s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyDtoHAsync_v2_ptsz");
  return fk_memop_async(&NODE_D2H(dst, src, n), s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  FK_ENTER("cuMemcpyDtoDAsync_v2_ptsz");
  return fk_memop_async(&NODE_D2D(dst, src, n), s ? s : CU_STREAM_PER_THREAD);
}

CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  FK_ENTER("cuMemsetD8_v2");
  return fk_memop_sync(&NODE_SET(d, v, 1, n), 0);
}
CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  FK_ENTER("cuMemsetD16_v2");
  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_sync(&NODE_SET(d, v, 2, n), 0);
}
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
  FK_ENTER("cuMemsetD32_v2");
  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_sync(&NODE_SET(d, v, 4, n), 0);
}
CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) {
  FK_ENTER("cuMemsetD8_v2_ptds");
  return fk_memop_sync(&NODE_SET(d, v, 1, n), 1);
}
CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n);
CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) {
  FK_ENTER("cuMemsetD16_v2_ptds");
  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_sync(&NODE_SET(d, v, 2, n), 1);
}
CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned v, size_t n);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned v, size_t n) {
  FK_ENTER("cuMemsetD32_v2_ptds");
  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_sync(&NODE_SET(d, v, 4, n), 1);
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  FK_ENTER("cuMemsetD8Async");
  return fk_memop_async(&NODE_SET(d, v, 1, n), s);
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  FK_ENTER("cuMemsetD16Async");
  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_async(&NODE_SET(d, v, 2, n), s);
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) {
  FK_ENTER("cuMemsetD32Async");
  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_async(&NODE_SET(d, v, 4, n), s);
}
CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  FK_ENTER("cuMemsetD8Async_ptsz");
  return fk_memop_async(&NODE_SET(d, v, 1, n), s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s);
CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  FK_ENTER("cuMemsetD16Async_ptsz");
  if (d % 2) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_async(&NODE_SET(d, v, 2, n), s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned v, size_t n, CUstream s);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned v, size_t n, CUstream s) {
  FK_ENTER("cuMemsetD32Async_ptsz");
  if (d % 4) return CUDA_ERROR_INVALID_VALUE;
  return fk_memop_async(&NODE_SET(d, v, 4, n), s ? s : CU_STREAM_PER_THREAD);
}

/* -------------------------------------------------------- green contexts */

/* CUdevResource keeps the first SM of a resource in its internal padding,
 * tagged so a resource that did not come from here is rejected. */
#define RES_TAG 0x464b534du /* "FKSM" */
struct res_priv {
  unsigned tag;
  unsigned first;
};

static void res_set(CUdevResource *r, unsigned first, unsigned count) {
  memset(r, 0, sizeof *r);
  r->type = CU_DEV_RESOURCE_TYPE_SM;
  struct res_priv p = {RES_TAG, first};
  memcpy(r->_internal_padding, &p, sizeof p);
  r->sm.smCount = count;
  r->sm.minSmPartitionSize = fk_g.nsm >= 16 ? 8 : 1;
  r->sm.smCoscheduledAlignment = fk_g.nsm >= 16 ? 8 : 1;
}

static int res_get(const CUdevResource *r, unsigned *first, unsigned *count) {
  struct res_priv p;
  memcpy(&p, r->_internal_padding, sizeof p);
  if (r->type != CU_DEV_RESOURCE_TYPE_SM || p.tag != RES_TAG) return -1;
  *first = p.first;
  *count = r->sm.smCount;
  return 0;
}

struct fk_resdesc {
  unsigned tag, first, count;
};

CUresult cuDeviceGetDevResource(CUdevice dev, CUdevResource *res, CUdevResourceType type) {
  FK_ENTER("cuDeviceGetDevResource");
  if (res == NULL || type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  res_set(res, 0, fk_g.nsm);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevResource(CUcontext hctx, CUdevResource *res, CUdevResourceType type) {
  FK_ENTER("cuCtxGetDevResource");
  if (res == NULL || type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
  struct fk_ctx *c = hctx ? (struct fk_ctx *)hctx : fk_current_ctx();
  if (c == NULL || c->magic != FK_MAGIC_CTX) return CUDA_ERROR_INVALID_CONTEXT;
  res_set(res, c->sm_first, c->nsm);
  return CUDA_SUCCESS;
}

CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned *nbGroups,
                                     const CUdevResource *input, CUdevResource *remaining,
                                     unsigned useFlags, unsigned minCount) {
  FK_ENTER("cuDevSmResourceSplitByCount");
  unsigned first, total;
  if (nbGroups == NULL || input == NULL || res_get(input, &first, &total) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (useFlags & ~3u) return CUDA_ERROR_INVALID_VALUE;
  /* SMs come in groups of 8 on this architecture (1 on tiny test devices
   * or with IGNORE_SM_COSCHEDULING). */
  unsigned gran =
      (fk_g.nsm >= 16 && !(useFlags & CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING)) ? 8 : 1;
  unsigned count = minCount ? minCount : gran;
  count = (count + gran - 1) / gran * gran;
  unsigned groups = count <= total ? total / count : 0;
  if (result != NULL && *nbGroups < groups) groups = *nbGroups;
  if (result == NULL) {
    *nbGroups = groups;
    return CUDA_SUCCESS;
  }
  if (groups == 0) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  for (unsigned i = 0; i < groups; i++)
    res_set(&result[i], first + i * count, count);
  if (remaining) res_set(remaining, first + groups * count, total - groups * count);
  *nbGroups = groups;
  return CUDA_SUCCESS;
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *desc, CUdevResource *res, unsigned n) {
  FK_ENTER("cuDevResourceGenerateDesc");
  if (desc == NULL || res == NULL || n == 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned lo = ~0u, hi = 0, sum = 0;
  for (unsigned i = 0; i < n; i++) {
    unsigned f, c;
    if (res_get(&res[i], &f, &c) != 0 || c == 0) return CUDA_ERROR_INVALID_RESOURCE_TYPE;
    if (f < lo) lo = f;
    if (f + c > hi) hi = f + c;
    sum += c;
  }
  if (hi - lo != sum) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION; /* must be contiguous */
  struct fk_resdesc *d = fk_new(sizeof *d);
  if (d == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  *d = (struct fk_resdesc){RES_TAG, lo, sum};
  *desc = (CUdevResourceDesc)d;
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(CUgreenCtx *ph, CUdevResourceDesc desc, CUdevice dev, unsigned flags) {
  FK_ENTER("cuGreenCtxCreate");
  struct fk_resdesc *d = (struct fk_resdesc *)desc;
  if (ph == NULL || d == NULL || d->tag != RES_TAG) return CUDA_ERROR_INVALID_VALUE;
  if (flags != CU_GREEN_CTX_DEFAULT_STREAM) return CUDA_ERROR_INVALID_VALUE;
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  struct fk_greenctx *g = fk_new(sizeof *g);
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = FK_MAGIC_GREEN;
  g->ctx = (struct fk_ctx){
      .magic = FK_MAGIC_CTX, .green = 1, .sm_first = d->first, .nsm = d->count, .gctx = g};
  pthread_mutex_lock(&fk_g.lock);
  fk_g.primary_refs++; /* a green context retains the primary context */
  pthread_mutex_unlock(&fk_g.lock);
  *ph = (CUgreenCtx)g;
  return CUDA_SUCCESS;
}

static struct fk_greenctx *green_of(CUgreenCtx h) {
  struct fk_greenctx *g = (struct fk_greenctx *)h;
  return g && g->magic == FK_MAGIC_GREEN ? g : NULL;
}

CUresult cuGreenCtxDestroy(CUgreenCtx h) {
  FK_ENTER("cuGreenCtxDestroy");
  struct fk_greenctx *g = green_of(h);
  if (g == NULL) return CUDA_ERROR_INVALID_HANDLE;
  for (int i = 0; i < tls_depth; i++)
    if (tls_stack[i] == &g->ctx) tls_stack[i] = NULL;
  g->magic = FK_MAGIC_DEAD;
  g->ctx.magic = FK_MAGIC_DEAD;
  pthread_mutex_lock(&fk_g.lock);
  if (fk_g.primary_refs > 0) fk_g.primary_refs--;
  pthread_mutex_unlock(&fk_g.lock);
  return CUDA_SUCCESS;
}

CUresult cuCtxFromGreenCtx(CUcontext *pctx, CUgreenCtx h) {
  FK_ENTER("cuCtxFromGreenCtx");
  struct fk_greenctx *g = green_of(h);
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (g == NULL) return CUDA_ERROR_INVALID_HANDLE;
  *pctx = (CUcontext)&g->ctx;
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxGetDevResource(CUgreenCtx h, CUdevResource *res, CUdevResourceType type) {
  FK_ENTER("cuGreenCtxGetDevResource");
  struct fk_greenctx *g = green_of(h);
  if (g == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (res == NULL || type != CU_DEV_RESOURCE_TYPE_SM) return CUDA_ERROR_INVALID_VALUE;
  res_set(res, g->ctx.sm_first, g->ctx.nsm);
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxStreamCreate(CUstream *ph, CUgreenCtx h, unsigned flags, int priority) {
  FK_ENTER("cuGreenCtxStreamCreate");
  struct fk_greenctx *g = green_of(h);
  if (g == NULL) return CUDA_ERROR_INVALID_HANDLE;
  if (!(flags & CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  return stream_create(ph, &g->ctx, flags, priority);
}

CUresult cuStreamGetGreenCtx(CUstream h, CUgreenCtx *pg) {
  FK_ENTER("cuStreamGetGreenCtx");
  struct fk_stream *s;
  struct fk_ctx *ctx;
  if (pg == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = fk_resolve_stream(h, &s, &ctx);
  if (rc == CUDA_SUCCESS) *pg = ctx->green ? (CUgreenCtx)ctx->gctx : NULL;
  return rc;
}

/* ---------------------------------------------------------- error strings */

static const struct {
  CUresult code;
  const char *name;
} errors[] = {
#define FK_ERR(x) {x, #x},
#include "fakecuda_errors.inc"
#undef FK_ERR
};

/* Index of error in errors[], or -1 for a code it does not list. */
static int error_index(CUresult error) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == error) return (int)i;
  return -1;
}

CUresult cuGetErrorName(CUresult error, const char **pstr) {
  if (pstr == NULL) return CUDA_ERROR_INVALID_VALUE;
  int i = error_index(error);
  *pstr = i < 0 ? NULL : errors[i].name;
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* The description is the name turned into words ("invalid value"),
 * enough for messages in tests; built once at load so lookups only read. */
static char error_text[sizeof errors / sizeof errors[0]][64];

__attribute__((constructor)) static void fk_error_text(void) {
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
    const char *n = errors[i].name;
    if (strncmp(n, "CUDA_ERROR_", 11) == 0)
      n += 11;
    else if (strcmp(n, "CUDA_SUCCESS") == 0)
      n = "NO_ERROR";
    size_t k = 0;
    for (; n[k] && k + 1 < sizeof error_text[i]; k++)
      error_text[i][k] =
          n[k] == '_' ? ' ' : (char)(n[k] >= 'A' && n[k] <= 'Z' ? n[k] - 'A' + 'a' : n[k]);
    error_text[i][k] = 0;
  }
}

CUresult cuGetErrorString(CUresult error, const char **pstr) {
  if (pstr == NULL) return CUDA_ERROR_INVALID_VALUE;
  int i = error_index(error);
  *pstr = i < 0 ? NULL : error_text[i];
  return i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* ------------------------------------- legacy exports with same prototypes */

CUresult cuCtxDestroy(CUcontext ctx) {
  FK_ENTER("cuCtxDestroy");
  return ctx_destroy(ctx);
}

CUresult cuCtxPushCurrent(CUcontext ctx) {
  FK_ENTER("cuCtxPushCurrent");
  return ctx_push(ctx);
}

CUresult cuCtxPopCurrent(CUcontext *pctx) {
  FK_ENTER("cuCtxPopCurrent");
  return ctx_pop(pctx);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  FK_ENTER("cuDevicePrimaryCtxRelease");
  if (check_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&fk_g.lock);
  if (fk_g.primary_refs > 0) fk_g.primary_refs--;
  pthread_mutex_unlock(&fk_g.lock);
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy(CUstream h) {
  FK_ENTER("cuStreamDestroy");
  return stream_destroy(h);
}

CUresult cuEventDestroy(CUevent h) {
  FK_ENTER("cuEventDestroy");
  return event_destroy(h);
}

CUresult cuGraphInstantiate(CUgraphExec *pe, CUgraph g, CUgraphNode *err_node, char *log,
                            size_t log_size) {
  FK_ENTER("cuGraphInstantiate");
  return instantiate_log(pe, g, err_node, log, log_size);
}
