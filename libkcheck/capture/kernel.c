/* libkcheck/capture/kernel.c — the kernel registry. Lookups by handle happen on
 * every launch, so a small per-thread cache sits in front of the shared
 * hash table; a generation counter invalidates caches on module unload. */
#include "kernel.h"

#include <ctype.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "driver.h"
#include "image.h"
#include "log.h"
#include "options.h"
#include "prof.h"
#include "regex_guard.h"
#include "report.h"

/* From the C++ ABI runtime (libstdc++): the maintained demangler. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct kernel_node {
  void *handle;
  struct kc_kernel *k;
  UT_hash_handle hh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct kernel_node *by_handle;
static int next_id;
static atomic_uint generation;

#define TLS_CACHE 16 /* small: static TLS is scarce when loaded with dlopen (kcheck front end) */
struct cache_slot {
  void *handle;
  struct kc_kernel *k;
  unsigned gen;
};
/* initial-exec: one TLS access on the launch path (libkcheck is preloaded). */
static __thread struct cache_slot cache[TLS_CACHE] __attribute__((tls_model("initial-exec")));

/* Behind the per-thread cache, a shared read-mostly table: a training step
 * cycles through more kernels than the per-thread cache holds, and the
 * mutex and hash lookup behind it cost ~0.5 us a launch on the real
 * workload. Open addressing, written under `lock`, read without it: a
 * slot's kernel is stored before its handle (release), and a reader
 * accepts a slot only when the kernel record names the same handle. */
#define FAST_SLOTS 4096
#define FAST_PROBES 8
#define FAST_GONE ((void *)1)
static struct {
  _Atomic(void *) handle;
  _Atomic(struct kc_kernel *) k;
} fast[FAST_SLOTS];

static unsigned fast_slot(const void *h) {
  return (unsigned)(((uintptr_t)h * 0x9e3779b97f4a7c15ull) >> 52) & (FAST_SLOTS - 1);
}

static struct kc_kernel *fast_find(void *h) {
  unsigned i = fast_slot(h);
  for (int p = 0; p < FAST_PROBES; p++, i = (i + 1) & (FAST_SLOTS - 1)) {
    void *sh = atomic_load_explicit(&fast[i].handle, memory_order_acquire);
    if (!sh) return NULL;
    if (sh != h) continue;
    struct kc_kernel *k = atomic_load_explicit(&fast[i].k, memory_order_relaxed);
    return k && k->handle == h ? k : NULL;
  }
  return NULL;
}

/* Called with `lock` held. Full neighbourhood: the slow path serves it. */
static void fast_insert(void *h, struct kc_kernel *k) {
  unsigned i = fast_slot(h);
  for (int p = 0; p < FAST_PROBES; p++, i = (i + 1) & (FAST_SLOTS - 1)) {
    void *sh = atomic_load_explicit(&fast[i].handle, memory_order_relaxed);
    if (sh && sh != FAST_GONE && sh != h) continue;
    atomic_store_explicit(&fast[i].k, k, memory_order_relaxed);
    atomic_store_explicit(&fast[i].handle, h, memory_order_release);
    return;
  }
}

/* Called with `lock` held: the slot stays taken (probe chains go on). */
static void fast_remove(void *h) {
  unsigned i = fast_slot(h);
  for (int p = 0; p < FAST_PROBES; p++, i = (i + 1) & (FAST_SLOTS - 1)) {
    if (atomic_load_explicit(&fast[i].handle, memory_order_relaxed) != h) continue;
    atomic_store_explicit(&fast[i].k, NULL, memory_order_relaxed);
    atomic_store_explicit(&fast[i].handle, FAST_GONE, memory_order_release);
  }
}

void kc_kernel_reset_lock(void) { pthread_mutex_init(&lock, NULL); }

char *kc_demangle(const char *mangled) {
  int status = 0;
  char *d = __cxa_demangle(mangled, NULL, NULL, &status);
  if (d && status == 0) return d;
  free(d);
  return strdup(mangled); /* C names and Triton names are not mangled */
}

static int contains_any(const char *hay, const char *list) {
  if (!list || !*list) return 0;
  const char *p = list;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);
    if (n) {
      char needle[256];
      if (n >= sizeof needle) n = sizeof needle - 1;
      memcpy(needle, p, n);
      needle[n] = 0;
      if (strstr(hay, needle)) return 1;
    }
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
}

static int regex_match(const char *pattern, const char *s) {
  regex_t re;
  char why[200];
  /* Options checked the pattern already: a refused one ended the process. */
  if (kc_regex_compile(&re, pattern, why, sizeof why)) return 0;
  int m = regexec(&re, s, 0, NULL, 0) == 0;
  regfree(&re);
  return m;
}

int kc_kernel_name_eligible(const char *demangled) {
  if (*kc_opt.kernel_include && !contains_any(demangled, kc_opt.kernel_include)) return 0;
  if (*kc_opt.kernel_include_regex && !regex_match(kc_opt.kernel_include_regex, demangled))
    return 0;
  if (contains_any(demangled, kc_opt.kernel_exclude)) return 0;
  if (*kc_opt.kernel_exclude_regex && regex_match(kc_opt.kernel_exclude_regex, demangled)) return 0;
  return 1;
}

int kc_kernel_is_communication(const char *demangled) {
  /* Re-running one rank's collective alone deadlocks or corrupts peers. */
  static const char *const marks[] = {"nccl",           "nvshmem",   "rccl",       "cross_device",
                                      "all_reduce",     "allreduce", "all_gather", "allgather",
                                      "reduce_scatter", "alltoall",  NULL};
  char lower[512];
  size_t i;
  for (i = 0; i < sizeof lower - 1 && demangled[i]; i++)
    lower[i] = (char)tolower((unsigned char)demangled[i]);
  lower[i] = 0;
  for (const char *const *m = marks; *m; m++)
    if (strstr(lower, *m)) return 1;
  return 0;
}

/* Queries the layout; leaves nparams = -1 when the driver cannot tell yet
 * (cuKernelGetParamInfo on a never-launched kernel reports size 0). */
static void query_layout(struct kc_kernel *k) {
  CUfunction fn = (CUfunction)k->handle;
  int use_kernel_api = 0;
  if (k->is_cukernel) {
    CUfunction loaded = NULL;
    KC_PROF_CALL(cuKernelGetFunction);
    if (kc_drv.cuKernelGetFunction &&
        kc_drv.cuKernelGetFunction(&loaded, (CUkernel)k->handle) == CUDA_SUCCESS && loaded)
      fn = loaded;
    else
      use_kernel_api = 1;
  }
  uint32_t off[KC_MAX_PARAMS], sz[KC_MAX_PARAMS];
  int n = 0, unknown = 0;
  for (; n < KC_MAX_PARAMS; n++) {
    size_t o = 0, s = 0;
    CUresult r;
    if (use_kernel_api)
      KC_PROF_CALL(cuKernelGetParamInfo);
    else
      KC_PROF_CALL(cuFuncGetParamInfo);
    if (use_kernel_api)
      r = kc_drv.cuKernelGetParamInfo
              ? kc_drv.cuKernelGetParamInfo((CUkernel)k->handle, (size_t)n, &o, &s)
              : CUDA_ERROR_NOT_SUPPORTED;
    else
      r = kc_drv.cuFuncGetParamInfo ? kc_drv.cuFuncGetParamInfo(fn, (size_t)n, &o, &s)
                                    : CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_ERROR_INVALID_VALUE) break; /* past the last parameter */
    if (r != CUDA_SUCCESS || s == 0) {
      unknown = 1;
      break;
    }
    off[n] = (uint32_t)o;
    sz[n] = (uint32_t)s;
  }
  k->layout_tries++;
  if (unknown) return;
  uint32_t *po = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
  uint32_t *ps = malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
  if (!po || !ps) {
    free(po);
    free(ps);
    return;
  }
  size_t end = 0;
  for (int i = 0; i < n; i++) {
    po[i] = off[i];
    ps[i] = sz[i];
    if (off[i] + sz[i] > end) end = off[i] + sz[i];
  }
  k->param_offset = po;
  k->param_size = ps;
  k->param_bytes = end;
  k->nparams = n;
}

void kc_kernel_refresh_layout(struct kc_kernel *k) {
  if (k->nparams < 0 && k->layout_tries < 4) query_layout(k);
}

/* What the layers above add to a kernel record (the contract's contract). */
static kc_kernel_record_fn record_hook;

static json_t *kernel_json(const struct kc_kernel *k, const struct kc_image_info *img) {
  json_t *params = json_null();
  if (k->nparams >= 0) {
    params = json_array();
    for (int i = 0; i < k->nparams; i++)
      json_array_append_new(params, json_pack("{s:i, s:i}", "offset", (int)k->param_offset[i],
                                              "size", (int)k->param_size[i]));
  }
  json_t *image = json_null();
  if (img) {
    image = json_pack("{s:i, s:s, s:o}", "id", img->id, "kind",
                      img->is_library ? "library" : "module", "hash", kc_json_hash(img->hash));
  }
  json_t *rec = json_pack("{s:i, s:s, s:s, s:s, s:o, s:o, s:I, s:b, s:b}", "id", k->id, "name",
                          k->name, "demangled", k->demangled, "handle_kind",
                          k->is_cukernel ? "CUkernel" : "CUfunction", "image", image, "params",
                          params, "param_bytes", (json_int_t)k->param_bytes, "eligible",
                          k->eligible, "communication", k->communication);
  if (rec && record_hook) record_hook(k, rec);
  return rec;
}

void kc_kernel_set_record_hook(kc_kernel_record_fn fn) { record_hook = fn; }

static void destroy(struct kc_kernel *k) {
  free((void *)k->name);
  free((void *)k->demangled);
  free(k->param_offset);
  free(k->param_size);
  free(k);
}

static struct kc_kernel *create(CUfunction f) {
  struct kc_kernel *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  k->handle = f;
  k->nparams = -1;
  k->image_id = -1;
  const char *name = NULL;
  /* A CUkernel is told apart by cuFuncGetName refusing it. */
  KC_PROF_CALL(cuFuncGetName);
  CUresult r = kc_drv.cuFuncGetName ? kc_drv.cuFuncGetName(&name, f) : CUDA_ERROR_NOT_SUPPORTED;
  if (r != CUDA_SUCCESS || !name) {
    name = NULL;
    KC_PROF_CALL(cuKernelGetName);
    if (kc_drv.cuKernelGetName && kc_drv.cuKernelGetName(&name, (CUkernel)f) == CUDA_SUCCESS &&
        name)
      k->is_cukernel = 1;
  }
  k->name = strdup(name ? name : "<unknown>");
  k->demangled = kc_demangle(k->name);
  if (!k->is_cukernel) {
    CUmodule m = NULL;
    KC_PROF_CALL(cuFuncGetModule);
    if (kc_drv.cuFuncGetModule && kc_drv.cuFuncGetModule(&m, f) == CUDA_SUCCESS)
      k->image_handle = m;
  } else {
    CUlibrary l = NULL;
    KC_PROF_CALL(cuKernelGetLibrary);
    if (kc_drv.cuKernelGetLibrary && kc_drv.cuKernelGetLibrary(&l, (CUkernel)f) == CUDA_SUCCESS)
      k->image_handle = l;
  }
  struct kc_image_info img;
  int have_img = k->image_handle && kc_image_lookup(k->image_handle, &img) == 0;
  if (have_img) {
    k->image_id = img.id;
    k->image_hash = img.hash;
  }
  query_layout(k);
  k->eligible = kc_kernel_name_eligible(k->demangled);
  k->communication = kc_kernel_is_communication(k->demangled);
  return k;
}

struct kc_kernel *kc_kernel_get(CUfunction f) {
  unsigned gen = atomic_load_explicit(&generation, memory_order_acquire);
  /* A multiplicative hash of all the handle's bits: handles point to
   * aligned driver structures, whose low bits may all be alike. */
  struct cache_slot *slot = &cache[(((uintptr_t)f * 0x9e3779b97f4a7c15ull) >> 60) % TLS_CACHE];
  if (slot->handle == (void *)f && slot->gen == gen) return slot->k;

  struct kc_kernel *k = fast_find((void *)f);
  if (k) {
    slot->handle = f;
    slot->k = k;
    slot->gen = gen;
    return k;
  }
  struct kernel_node *n = NULL;
  pthread_mutex_lock(&lock);
  HASH_FIND_PTR(by_handle, &f, n);
  if (n) fast_insert((void *)f, n->k);
  pthread_mutex_unlock(&lock);
  k = n ? n->k : NULL;
  if (!k) {
    /* Built outside the lock: the driver queries may be slow. Two threads
     * racing on the same new kernel: the first insert wins. */
    struct kc_kernel *fresh = create(f);
    if (!fresh) return NULL;
    struct kernel_node *node = calloc(1, sizeof *node);
    if (!node) {
      destroy(fresh);
      return NULL;
    }
    pthread_mutex_lock(&lock);
    HASH_FIND_PTR(by_handle, &f, n);
    if (n) {
      /* Another thread published this kernel first; ours was never seen. */
      k = n->k;
      free(node);
      destroy(fresh);
    } else {
      fresh->id = next_id++;
      node->handle = f;
      node->k = fresh;
      HASH_ADD_PTR(by_handle, handle, node);
      fast_insert((void *)f, fresh);
      k = fresh;
    }
    pthread_mutex_unlock(&lock);
    if (k == fresh) {
      atomic_fetch_add(&kc_count.kernels, 1);
      struct kc_image_info img;
      int have = k->image_handle && kc_image_lookup(k->image_handle, &img) == 0;
      kc_report_emit("kernel", kernel_json(k, have ? &img : NULL));
    }
    /* Published records are never freed: other threads may hold them. */
  }
  slot->handle = f;
  slot->k = k;
  slot->gen = gen;
  return k;
}

void kc_kernel_forget_image(void *image_handle) {
  pthread_mutex_lock(&lock);
  /* The next node is read before the current one may be deleted. */
  for (struct kernel_node *n = by_handle, *next; n; n = next) {
    next = n->hh.next;
    if (n->k->image_handle != image_handle) continue;
    // uthash frees its bucket table with the last node; the analyzer then
    // follows a path where the loop reads it again, which cannot happen.
    fast_remove(n->handle);
    HASH_DEL(by_handle, n); // NOLINT(clang-analyzer-unix.Malloc)
    free(n);
  }
  pthread_mutex_unlock(&lock);
  atomic_fetch_add_explicit(&generation, 1, memory_order_release);
}
