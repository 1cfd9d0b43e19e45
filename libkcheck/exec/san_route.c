/* libkcheck/exec/san_route.c — loading, initialising and patching through the
 * Compute Sanitizer API (san_route.h). What the API's documentation and
 * NVIDIA's samples (compute-sanitizer-samples) say and what this file does
 * about it:
 *   - the samples subscribe from a library constructor and patch modules in
 *     the RESOURCE_MODULE_LOADED callback; the reference also lets
 *     sanitizerPatchInstructions/sanitizerPatchModule take any CUmodule, and
 *     sanitizerAddPatches* take a context. kcheck subscribes (no domain
 *     enabled: no callback on the application's API calls) at the first
 *     SASS-only check, or at start-up with sanitizer=2, and patches only
 *     modules it loaded itself, right after loading them;
 *   - the patching calls must be serialised by the caller: one lock here;
 *   - patches are valid in the context they were added to: added once per
 *     context;
 *   - one client of the API per process: under compute-sanitizer (its
 *     injection is in the environment or already loaded) the route stands
 *     down. CUPTI is a separate interface (kcheck's cupti_audit); whether
 *     both can be active at once in one process is measured on the GPU by
 *     test/gpu/run_gpu_sanitizer.sh, not assumed. */
#include "san_route.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubin_cache.h"
#include "cubin_vars.h"
#include "devmem.h"
#include "driver.h"
#include "image.h"
#include "log.h"
#include "options.h"
#include "ptx_source.h"
#include "report.h"
#include "san_rec.h"

#ifdef KC_HAVE_SANITIZER
#include <sanitizer.h>
#endif

#ifndef KC_SAN_PIP_LIB
#define KC_SAN_PIP_LIB ""
#endif

extern const unsigned char kc_san_patches_fatbin[];
extern const unsigned long kc_san_patches_fatbin_size;

#define MAX_CTX 16
#define MAX_VARS 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int tried;
static const char *unavailable = "";
static char state[640];

#ifdef KC_HAVE_SANITIZER
static CUcontext patched_ctx[MAX_CTX]; /* contexts kcheck's callbacks were added to */
/* The entry points used, from the library's own header types. */
#define KC_SAN_FNS(X)                                                                              \
  X(sanitizerSubscribe)                                                                            \
  X(sanitizerAddPatches)                                                                           \
  X(sanitizerPatchInstructions)                                                                    \
  X(sanitizerPatchModule)                                                                          \
  X(sanitizerSetCallbackData)                                                                      \
  X(sanitizerGetFunctionPcAndSize)                                                                 \
  X(sanitizerGetResultString)
static struct {
#define X(f) __typeof__(f) *f;
  KC_SAN_FNS(X)
#undef X
} san;
static Sanitizer_SubscriberHandle subscriber;
/* the last patching failure, with the API's own words (under the lock) */
static char failure[256];

static void SANITIZERAPI on_event(void *u, Sanitizer_CallbackDomain d, Sanitizer_CallbackId id,
                                  const void *data) {
  (void)u, (void)d, (void)id, (void)data; /* no domain is enabled */
}

static const char *result(SanitizerResult r) {
  const char *s = NULL;
  if (san.sanitizerGetResultString && san.sanitizerGetResultString(r, &s) == SANITIZER_SUCCESS && s)
    return s;
  return "unknown error";
}
#endif

static int init_locked(void) {
  tried = 1;
#ifndef KC_HAVE_SANITIZER
  unavailable = "kcheck was built without the Sanitizer API headers (scripts/install-deps "
                "installs them: pip nvidia-cuda-sanitizer-api)";
  snprintf(state, sizeof state, "%s", unavailable);
  return -1;
#else
  if (kc_san_under_tool()) {
    unavailable = "the process runs under compute-sanitizer (one Sanitizer API client per process)";
    snprintf(state, sizeof state, "%s", unavailable);
    return -1;
  }
  const char *home = getenv("CUDA_HOME");
  char path[512];
  double t0 = kc_now_s();
  void *h = kc_san_lib_open(kc_opt.sanitizer_lib, home ? home : "/usr/local/cuda", KC_SAN_PIP_LIB,
                            path, sizeof path);
  if (!h) {
    snprintf(state, sizeof state, "%s", path);
    unavailable = state;
    return -1;
  }
#define X(f)                                                                                       \
  if (!(*(void **)&san.f = dlsym(h, #f))) {                                                        \
    unavailable = "libsanitizer-public.so lacks " #f;                                              \
    snprintf(state, sizeof state, "%s (%s)", unavailable, path);                                   \
    return -1;                                                                                     \
  }
  KC_SAN_FNS(X)
#undef X
  SanitizerResult r = san.sanitizerSubscribe(&subscriber, on_event, NULL);
  if (r == SANITIZER_ERROR_MAX_LIMIT_REACHED) {
    /* the reference: one subscriber per process */
    snprintf(state, sizeof state,
             "another client of the Sanitizer API (compute-sanitizer, or a tool built on it) "
             "holds the process's one subscription (%s)",
             path);
    unavailable = state;
    return -1;
  }
  if (r != SANITIZER_SUCCESS) {
    snprintf(state, sizeof state, "sanitizerSubscribe failed: %s (%s)", result(r), path);
    unavailable = state;
    return -1;
  }
  snprintf(state, sizeof state, "initialised in %.1f ms from %s", 1e3 * (kc_now_s() - t0), path);
  KC_LOG(KC_LOG_INFO, "the Sanitizer route is %s", state);
  return 0;
#endif
}

int kc_san_available(const char **why) {
  pthread_mutex_lock(&lock);
  if (!kc_opt.sanitizer) {
    unavailable = "the Sanitizer route is off (sanitizer=0)";
  } else if (!tried) {
    init_locked();
  }
  int ok = kc_opt.sanitizer && tried && !unavailable[0];
  if (!ok) *why = unavailable;
  pthread_mutex_unlock(&lock);
  return ok ? 0 : -1;
}

const char *kc_san_state(void) { return state; }

/* The compute capability of the current context's device. */
static int device_cc(void) {
  CUdevice dev;
  int ma = 0, mi = 0;
  if (kc_drv.cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
      kc_drv.cuDeviceGetAttribute(&ma, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) !=
          CUDA_SUCCESS ||
      kc_drv.cuDeviceGetAttribute(&mi, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) !=
          CUDA_SUCCESS)
    return 0;
  return ma * 10 + mi;
}

char *kc_san_cubin(const struct kc_kernel *k, size_t *len, const char **why) {
  size_t size = 0;
  struct kc_image_info info;
  int cc = device_cc(), known = k->image_handle && !kc_image_lookup(k->image_handle, &info);
  char *elf = known ? kc_cubin_cache_get(info.id, cc, len) : NULL;
  if (elf) return elf;
  void *bytes = k->image_handle ? kc_image_copy(k->image_handle, &size, why) : NULL;
  if (!bytes) {
    if (!k->image_handle) *why = "the kernel's image is unknown";
    return NULL;
  }
  elf = kc_cubin_from_image(bytes, size, cc, len, why);
  free(bytes);
  if (elf && known) kc_cubin_cache_put(info.id, cc, elf, *len);
  return elf;
}

#ifdef KC_HAVE_SANITIZER
/* kcheck's callbacks, added once per context. */
static int patches_locked(CUcontext ctx, const char **why) {
  for (int i = 0; i < MAX_CTX; i++)
    if (patched_ctx[i] == ctx) return 0;
  int slot = -1;
  for (int i = 0; i < MAX_CTX && slot < 0; i++)
    if (!patched_ctx[i]) slot = i;
  if (slot < 0) {
    *why = "too many contexts for the Sanitizer route";
    return -1;
  }
  SanitizerResult r = san.sanitizerAddPatches(kc_san_patches_fatbin, ctx);
  if (r != SANITIZER_SUCCESS) {
    snprintf(failure, sizeof failure,
             "loading kcheck's device callbacks (sanitizerAddPatches) failed: %s", result(r));
    *why = failure;
    return -1;
  }
  patched_ctx[slot] = ctx;
  return 0;
}

static int patch_locked(CUmodule mod, const char **why) {
  static const struct {
    Sanitizer_InstructionId id;
    const char *cb;
  } rows[] = {
      {SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, "kc_san_global"},
      {SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, "kc_san_shared"},
      {SANITIZER_INSTRUCTION_BARRIER, "kc_san_barrier"},
      {SANITIZER_INSTRUCTION_SYNCWARP, "kc_san_syncwarp"},
      {SANITIZER_INSTRUCTION_BLOCK_ENTER, "kc_san_enter"},
      /* what the access check does not model: the run is marked */
      {SANITIZER_INSTRUCTION_CUDA_BARRIER, "kc_san_mbarrier"},
      {SANITIZER_INSTRUCTION_MEMCPY_ASYNC, "kc_san_memcpy_async"},
      {SANITIZER_INSTRUCTION_CLUSTER_BARRIER_ARRIVE, "kc_san_cluster"},
      {SANITIZER_INSTRUCTION_CLUSTER_BARRIER_WAIT, "kc_san_cluster"},
      {SANITIZER_INSTRUCTION_WARPGROUP_MMA_ASYNC, "kc_san_wgmma"},
      {SANITIZER_INSTRUCTION_BULK_COPY_GLOBAL_TO_SHARED, "kc_san_bulk_copy"},
  };
  SanitizerResult r;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if ((r = san.sanitizerPatchInstructions(rows[i].id, mod, rows[i].cb)) != SANITIZER_SUCCESS) {
      snprintf(failure, sizeof failure, "sanitizerPatchInstructions(%d, %s) failed: %s",
               (int)rows[i].id, rows[i].cb, result(r));
      *why = failure;
      return -1;
    }
  if ((r = san.sanitizerPatchModule(mod)) != SANITIZER_SUCCESS) {
    snprintf(failure, sizeof failure, "sanitizerPatchModule failed: %s", result(r));
    *why = failure;
    return -1;
  }
  return 0;
}
#endif

#ifdef KC_HAVE_SANITIZER
/* Whether ctx has kcheck's callbacks already (else the first patched copy
 * in it adds them, and initialises the Sanitizer where none was yet). */
static int ctx_patched(CUcontext ctx) {
  int found = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_CTX && !found; i++)
    found = patched_ctx[i] == ctx;
  pthread_mutex_unlock(&lock);
  return found;
}
#endif

int kc_san_load(const struct kc_kernel *k, struct kc_san_module *m, const char **why) {
  memset(m, 0, sizeof *m);
#ifdef KC_HAVE_SANITIZER
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  /* what the load may take whatever fails after this (devmem.h): the
   * callbacks and the Sanitizer's state of a context's first copy */
  uint64_t first = ctx_patched(ctx) ? 0 : KC_DEVMEM_SAN_CTX_ALLOWANCE;
  m->device_bound = first + kc_devmem_module_bound(0);
#endif
  if (kc_san_available(why)) return -1;
#ifndef KC_HAVE_SANITIZER
  (void)k;
  return -1;
#else
  size_t len = 0;
  char *elf = kc_san_cubin(k, &len, why);
  if (!elf) return -1;
  m->device_bound =
      first + kc_devmem_module_bound(KC_DEVMEM_CODE_FACTOR * kc_cubin_load_bytes(elf, len));
  m->names = calloc(MAX_VARS, sizeof *m->names);
  m->nvars = m->names ? kc_cubin_vars(elf, len, m->names, MAX_VARS) : -1;
  if (m->nvars < 0) {
    free(elf);
    free(m->names);
    m->names = NULL;
    *why = "the cubin's module variables cannot be listed";
    return -1;
  }
  double t0 = kc_now_s();
  CUresult cr =
      kc_drv.cuModuleLoadData ? kc_drv.cuModuleLoadData(&m->mod, elf) : CUDA_ERROR_NOT_SUPPORTED;
  free(elf);
  m->load_ms = 1e3 * (kc_now_s() - t0);
  if (cr != CUDA_SUCCESS) {
    *why = "loading kcheck's copy of the cubin failed";
    goto fail;
  }
  if (kc_drv.cuModuleGetFunction(&m->fn, m->mod, k->name) != CUDA_SUCCESS) {
    *why = "kcheck's copy of the cubin lacks the kernel";
    goto fail;
  }
  t0 = kc_now_s();
  pthread_mutex_lock(&lock);
  int rc = patches_locked(ctx, why);
  if (!rc) rc = patch_locked(m->mod, why);
  pthread_mutex_unlock(&lock);
  m->patch_ms = 1e3 * (kc_now_s() - t0);
  if (rc) goto fail;
  /* only on a module the API patched: asked about another one (its
   * patches refused), the library was seen to fault on the CPU stand-in */
  m->fn_pc = kc_san_fn_pc(m->mod, k->name);
  return 0;
fail:
  if (m->mod) kc_drv.cuModuleUnload(m->mod);
  free(m->names);
  uint64_t bound = m->device_bound;
  memset(m, 0, sizeof *m);
  m->device_bound = bound;
  return -1;
#endif
}

uint64_t kc_san_fn_pc(CUmodule mod, const char *name) {
#ifndef KC_HAVE_SANITIZER
  (void)mod, (void)name;
  return 0;
#else
  uint64_t pc = 0, size = 0;
  pthread_mutex_lock(&lock);
  if (!san.sanitizerGetFunctionPcAndSize ||
      san.sanitizerGetFunctionPcAndSize(mod, name, &pc, &size) != SANITIZER_SUCCESS)
    pc = 0;
  pthread_mutex_unlock(&lock);
  return pc;
#endif
}

int kc_san_set_data(CUfunction fn, CUdeviceptr cfg, const char **why) {
#ifndef KC_HAVE_SANITIZER
  (void)fn, (void)cfg;
  *why = "kcheck was built without the Sanitizer API headers";
  return -1;
#else
  pthread_mutex_lock(&lock);
  SanitizerResult r = san.sanitizerSetCallbackData(fn, (const void *)(uintptr_t)cfg);
  pthread_mutex_unlock(&lock);
  if (r != SANITIZER_SUCCESS) {
    *why = "sanitizerSetCallbackData failed";
    return -1;
  }
  return 0;
#endif
}

void kc_san_start_early(void) {
  if (kc_opt.sanitizer != 2) return;
  const char *why = NULL;
  if (kc_san_available(&why)) KC_LOG(KC_LOG_INFO, "Sanitizer route: %s", why);
}
