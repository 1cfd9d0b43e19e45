/* libkcheck/exec/perturb.c — perturbation mechanisms. kcheck's kernels
 * (kernels/perturb_kernels.cu) come from its own fatbin (SASS, no JIT) or,
 * where the driver refuses it, its PTX, loaded once per context; green
 * contexts and helper buffers are made once per device and kept. */
#include "perturb.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "devmem.h"
#include "driver.h"
#include "guard.h"
#include "intra.h"
#include "kernels/cmp_table.h"
#include "log.h"
#include "options.h"
#include "prof.h"
#include "report.h"
#include "staging.h"

extern const char kc_perturb_ptx[];
extern const unsigned char kc_perturb_fatbin[];
extern const unsigned long kc_perturb_fatbin_size;

#define MAX_DEV 16

struct dev_state {
  CUcontext ctx;
  CUmodule module;
  CUfunction scrub, hammer, flush, compare;
  CUfunction compare_table;   /* NULL: one kc_compare launch per region */
  CUfunction hash_table;      /* NULL: re-runs are compared word by word */
  CUfunction copy_hash_table; /* NULL: the pre-state is saved by copies */
  CUdeviceptr compare_out;
  /* Host memory the comparisons' results are copied into, page-locked: a
   * copy to pageable memory is staged by the driver on the host. */
  uint64_t *host_slots;
  size_t host_slots_n; /* uint64_t words */
  /* host_slots mapped for the device (0: not mapped) in context
   * host_slots_ctx, where the hash kernels publish their sums
   * (publish_sums in perturb_kernels.cu); publish_done is their counter
   * of finished blocks, 0 between launches. */
  CUdeviceptr host_slots_dev, publish_done;
  CUcontext host_slots_ctx;
  /* The device slots of the hashes that publish (16 bytes a region),
   * zeroed when made and left zeroed by every such hash: no memset a
   * check. */
  CUdeviceptr clean_slots;
  size_t clean_slots_n; /* regions */
  /* The green strategy's contexts, one per SM count it used (the option's
   * and the wider one of kc_perturb_green_sms); never destroyed: a run on
   * one may still be queued. */
  struct {
    CUgreenCtx ctx;
    CUstream stream;
    int sms;
  } green[2];
  /* device memory the module and green contexts took (devmem.h) */
  uint64_t module_bytes;
  CUstream side; /* for the hammer */
  CUdeviceptr hammer_buf, flush_buf;
  size_t hammer_words, flush_words;
  int sms, l2, smem_optin;
  int tried_module;
  int setup_done; /* kc_perturb_setup ran in this context */
  /* kc_perturb_device_costs: measured once (1), failed (-1). */
  int costs_state;
  double copy_ms_per_byte, sync_ms;
};
static struct dev_state devs[MAX_DEV];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Per-run state for restoring function attributes. */
static __thread struct {
  CUfunction fn;
  int old_max_dyn;
  int changed;
} attr_undo;

static struct dev_state *state(void) {
  CUdevice dev;
  CUcontext ctx = NULL;
  if (kc_drv.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0 || dev >= MAX_DEV) return NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  struct dev_state *d = &devs[dev];
  if (!d->sms) {
    kc_drv.cuDeviceGetAttribute(&d->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    kc_drv.cuDeviceGetAttribute(&d->l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev);
    kc_drv.cuDeviceGetAttribute(&d->smem_optin,
                                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
  }
  if (d->ctx != ctx) {
    /* A new context on this device (or the first): kernels are per context. */
    d->ctx = ctx;
    kc_devmem_drop(KC_DM_modules, d->module_bytes);
    d->module_bytes = 0;
    d->tried_module = 0;
    d->module = NULL;
    d->setup_done = 0;
  }
  return d;
}

/* How kcheck's kernels were last loaded, for the summary record. */
static const char *module_form = "not loaded";
static double module_load_ms = -1;
static double setup_ms = -1; /* kc_perturb_setup's first, for the summary */

static int load_module(struct dev_state *d) {
  if (d->tried_module) return d->module ? 0 : -1;
  d->tried_module = 1;
  uint64_t tp = kc_prof_now();
  double t0 = kc_now_s();
  /* The fatbin's SASS loads without JIT; its own PTX (compute_80) is
   * JIT-compiled by the driver on a newer architecture; the PTX text is
   * the fallback where the fatbin is refused. */
  module_form = "fatbin";
  /* never refused by the budget: the checks cannot do without it */
  size_t free_before;
  (void)kc_devmem_begin(KC_DM_modules, 0, &free_before);
  if (!kc_perturb_fatbin_size ||
      kc_drv.cuModuleLoadData(&d->module, kc_perturb_fatbin) != CUDA_SUCCESS) {
    module_form = "ptx";
    if (kc_drv.cuModuleLoadData(&d->module, kc_perturb_ptx) != CUDA_SUCCESS) {
      d->module = NULL;
      module_form = "failed";
      KC_INTERNAL_ERROR("loading kcheck's perturbation kernels failed");
      return -1;
    }
  }
  /* bounded by the image: each architecture's cubin in the fatbin is
   * stored whole (only its PTX is compressed), so the fatbin's bytes hold
   * the one loaded, and more than four times the PTX a JIT would compile;
   * the PTX text alone is JIT-compiled (devmem.h) */
  uint64_t image_bytes = strcmp(module_form, "ptx")
                             ? (uint64_t)kc_perturb_fatbin_size
                             : (uint64_t)KC_DEVMEM_CODE_FACTOR * strlen(kc_perturb_ptx);
  d->module_bytes = kc_devmem_end(KC_DM_modules, free_before, kc_devmem_module_bound(image_bytes));
  module_load_ms = 1e3 * (kc_now_s() - t0);
  kc_prof_lap(KC_PS_chk_setup, tp);
  if (kc_drv.cuModuleGetFunction(&d->scrub, d->module, "kc_scrub_shared") != CUDA_SUCCESS ||
      kc_drv.cuModuleGetFunction(&d->hammer, d->module, "kc_hammer") != CUDA_SUCCESS ||
      kc_drv.cuModuleGetFunction(&d->flush, d->module, "kc_flush_l2") != CUDA_SUCCESS ||
      kc_drv.cuModuleGetFunction(&d->compare, d->module, "kc_compare") != CUDA_SUCCESS) {
    d->module = NULL;
    KC_INTERNAL_ERROR("kcheck's perturbation kernels are incomplete");
    return -1;
  }
  if (kc_drv.cuModuleGetFunction(&d->compare_table, d->module, "kc_compare_table") != CUDA_SUCCESS)
    d->compare_table = NULL;
  if (!d->compare_table ||
      kc_drv.cuModuleGetFunction(&d->hash_table, d->module, "kc_hash_table") != CUDA_SUCCESS)
    d->hash_table = NULL;
  if (!d->hash_table || kc_drv.cuModuleGetFunction(&d->copy_hash_table, d->module,
                                                   "kc_copy_hash_table") != CUDA_SUCCESS)
    d->copy_hash_table = NULL;
  /* The scrub covers the largest shared memory a block can have. */
  kc_drv.cuFuncSetAttribute(d->scrub, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            d->smem_optin);
  return 0;
}

/* kcheck's own kernels run guarded wherever they are called from (the
 * comparison after the application's launch runs outside the check's
 * guarded sections), so the CUPTI audit never counts them as missed. */
static CUresult launch(CUfunction f, unsigned grid, unsigned block, unsigned shmem, CUstream s,
                       void **params) {
  kc_guard_enter();
  CUresult r = kc_drv.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shmem, s, params, NULL);
  kc_guard_leave();
  return r;
}

static int scrub(struct dev_state *d, CUstream stream, uint64_t seed) {
  void *params[] = {&seed};
  /* Two blocks per SM at the largest shared size: every SM's shared memory
   * is overwritten whatever the block scheduler does. */
  return launch(d->scrub, 2u * (unsigned)d->sms, 1024, (unsigned)d->smem_optin, stream, params) ==
                 CUDA_SUCCESS
             ? 0
             : -1;
}

static int ensure_buf(enum kc_devmem_cat cat, CUdeviceptr *buf, size_t *words, size_t want_bytes) {
  if (*buf) return 0;
  uint64_t tp = kc_prof_now();
  if (kc_devmem_alloc(cat, buf, want_bytes) != CUDA_SUCCESS) {
    *buf = 0;
    return -1;
  }
  kc_drv.cuMemsetD8_v2(*buf, 0, want_bytes);
  *words = want_bytes / 4;
  kc_prof_lap(KC_PS_chk_setup, tp);
  return 0;
}

/* What the l2flush strategy writes: as many bytes as the L2 holds. On the
 * H200 a read of 24 MiB just read took 0.0066 ms, 0.0125 ms after writes of
 * 2 x L2 (0.0325 ms of writing) and 0.0122 ms after writes of 1 x L2
 * (0.0172 ms); reads of 1-2 x L2 instead left it at 0.0096 ms
 * (bench/own_kernels, test/gpu/results/2026-12-02-s10). */
static size_t flush_bytes(const struct dev_state *d) {
  return (size_t)(d->l2 > 0 ? d->l2 : (64 << 20));
}

static int green_stream(struct dev_state *d, int sms, CUstream *out, const char **why) {
  int slot = -1;
  for (int i = 0; i < (int)(sizeof d->green / sizeof d->green[0]); i++) {
    if (d->green[i].ctx && d->green[i].sms == sms) {
      *out = d->green[i].stream;
      return 0;
    }
    if (!d->green[i].ctx && slot < 0) slot = i;
  }
  if (slot < 0) {
    *why = "green contexts of two other SM counts exist already";
    return 1;
  }
  if (!kc_drv.cuGreenCtxCreate || !kc_drv.cuDeviceGetDevResource) {
    *why = "green contexts unsupported by the driver";
    return 1;
  }
  size_t free_before;
  if (!kc_devmem_begin(KC_DM_green_ctx, 1, &free_before)) {
    *why = kc_devmem_refused();
    return 1;
  }
  CUdevice dev;
  kc_drv.cuCtxGetDevice(&dev);
  CUdevResource all, part[1], rest;
  unsigned n = 1;
  CUdevResourceDesc desc;
  CUgreenCtx g = NULL;
  CUstream st = NULL;
  memset(&rest, 0, sizeof rest);
  if (kc_drv.cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM) != CUDA_SUCCESS ||
      kc_drv.cuDevSmResourceSplitByCount(part, &n, &all, &rest, 0, (unsigned)sms) != CUDA_SUCCESS ||
      n < 1 || kc_drv.cuDevResourceGenerateDesc(&desc, part, 1) != CUDA_SUCCESS ||
      kc_drv.cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM) != CUDA_SUCCESS) {
    *why = "creating a green context failed";
    return 1;
  }
  if (kc_drv.cuGreenCtxStreamCreate(&st, g, CU_STREAM_NON_BLOCKING, 0) != CUDA_SUCCESS) {
    kc_drv.cuGreenCtxDestroy(g);
    *why = "creating a green-context stream failed";
    return 1;
  }
  kc_devmem_end(KC_DM_green_ctx, free_before, KC_DEVMEM_GREEN_CTX_BOUND);
  d->green[slot].sms = sms;
  d->green[slot].ctx = g;
  d->green[slot].stream = st;
  *out = st;
  return 0;
}

int kc_perturb_green_sms(const struct kc_launch_info *li, int green_sms) {
  enum { kWaveFactor = 4 };
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  int sms = d ? d->sms : 0;
  pthread_mutex_unlock(&lock);
  /* a quarter of the device, in the groups of 8 SMs green contexts take */
  int wide = sms / 4 / 8 * 8;
  if (green_sms <= 0 || wide <= green_sms || !kc_drv.cuOccupancyMaxActiveBlocksPerMultiprocessor)
    return green_sms;
  if (!li->args) return green_sms;
  CUfunction fn = li->args->f;
  if (li->k->is_cukernel &&
      (!kc_drv.cuKernelGetFunction ||
       kc_drv.cuKernelGetFunction(&fn, (CUkernel)li->args->f) != CUDA_SUCCESS || !fn))
    return green_sms;
  int per_sm = 0;
  const unsigned threads = li->block[0] * li->block[1] * li->block[2];
  if (kc_drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (int)threads, li->shmem) !=
          CUDA_SUCCESS ||
      per_sm <= 0)
    return green_sms;
  const double blocks = (double)li->grid[0] * li->grid[1] * li->grid[2];
  const double waves_app = ceil(blocks / ((double)per_sm * sms));
  const double waves_green = ceil(blocks / ((double)per_sm * green_sms));
  return waves_green > kWaveFactor * waves_app ? wide : green_sms;
}

static int add_shmem(struct kc_launch_info *li, struct dev_state *d, unsigned extra,
                     unsigned *shmem, const char **why) {
  CUfunction fn = li->args->f;
  if (li->k->is_cukernel) {
    CUfunction loaded = NULL;
    if (kc_drv.cuKernelGetFunction(&loaded, (CUkernel)li->args->f) != CUDA_SUCCESS || !loaded) {
      *why = "no function for this CUkernel in the current context";
      return 1;
    }
    fn = loaded;
  }
  int static_smem = 0, max_dyn = 0;
  if (kc_drv.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn) !=
          CUDA_SUCCESS ||
      kc_drv.cuFuncGetAttribute(&max_dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn) !=
          CUDA_SUCCESS) {
    *why = "function attributes unavailable";
    return 1;
  }
  long room = (long)d->smem_optin - static_smem - (long)*shmem;
  if (room < 4096) {
    *why = "the kernel already uses (nearly) all shared memory";
    return 1;
  }
  unsigned add = extra < (unsigned long)room ? extra : (unsigned)room;
  unsigned want = *shmem + add;
  if ((int)want > max_dyn) {
    if (kc_drv.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)want) !=
        CUDA_SUCCESS) {
      *why = "raising the dynamic shared memory limit failed";
      return 1;
    }
    /* The application's own attribute value is put back after the run. */
    attr_undo.fn = fn;
    attr_undo.old_max_dyn = max_dyn;
    attr_undo.changed = 1;
  }
  *shmem = want;
  return 0;
}

int kc_perturb_before(const struct kc_perturb *p, struct kc_launch_info *li, CUstream *stream,
                      unsigned *shmem, CUfunction *fn, const char **why) {
  attr_undo.changed = 0;
  if (p->intra) {
    uint32_t cfg[KC_CFG_WORDS] = {0};
    cfg[KC_CFG_SEED] = (uint32_t)(p->seed ^ (p->seed >> 32));
    cfg[KC_CFG_PMEM] = p->intra_pmem;
    cfg[KC_CFG_PBAR] = p->intra_pbar;
    cfg[KC_CFG_MASK] = p->intra_mask;
    cfg[KC_CFG_START] = p->intra_start;
    cfg[KC_CFG_BSTART] = p->intra_bstart;
    cfg[KC_CFG_LOG] = p->intra_log != 0;
    cfg[KC_CFG_CAP] = p->intra_log;
    cfg[KC_CFG_STRIDE] = p->intra_stride ? p->intra_stride : 1;
    return kc_intra_prepare(li, cfg, fn, why);
  }
  if (!p->green_sms && !p->extra_shmem && !p->scrub && !p->hammer && !p->l2flush) return 0;
  pthread_mutex_lock(&lock);
  int rc = 0;
  struct dev_state *d = state();
  if (!d) {
    *why = "no current device";
    rc = -1;
    goto out;
  }
  if ((p->scrub || p->hammer || p->l2flush) && load_module(d)) {
    *why = "kcheck's perturbation kernels are unavailable";
    rc = 1;
    goto out;
  }
  if (p->green_sms) {
    if (p->green_sms >= d->sms) {
      *why = "green context would not have fewer SMs than the device";
      rc = 1;
      goto out;
    }
    if ((rc = green_stream(d, p->green_sms, stream, why))) goto out;
  }
  if (p->extra_shmem && (rc = add_shmem(li, d, p->extra_shmem, shmem, why))) goto out;
  if (p->l2flush) {
    size_t bytes = flush_bytes(d);
    if (ensure_buf(KC_DM_l2flush, &d->flush_buf, &d->flush_words, bytes)) {
      *why = kc_devmem_refused() ? kc_devmem_refused() : "no device memory for the L2 flush buffer";
      rc = 1;
      goto out;
    }
    unsigned long long words = d->flush_words;
    void *params[] = {&d->flush_buf, &words};
    if (launch(d->flush, 4u * (unsigned)d->sms, 1024, 0, *stream, params) != CUDA_SUCCESS) {
      *why = "the L2 flush kernel failed";
      rc = -1;
      goto out;
    }
  }
  if (p->scrub && scrub(d, *stream, p->seed)) {
    *why = "the shared-memory scrub kernel failed";
    rc = -1;
    goto out;
  }
  if (p->hammer) {
    if (!d->side && kc_drv.cuStreamCreate(&d->side, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
      d->side = NULL;
      *why = "no stream for the memory hammer";
      rc = 1;
      goto out;
    }
    if (ensure_buf(KC_DM_hammer, &d->hammer_buf, &d->hammer_words, 64u << 20)) {
      *why = kc_devmem_refused() ? kc_devmem_refused() : "no device memory for the memory hammer";
      rc = 1;
      goto out;
    }
    unsigned long long words = d->hammer_words, iters = 16;
    void *params[] = {&d->hammer_buf, &words, &iters};
    /* Launched just before the kernel under test, on another stream, so the
     * two run at the same time. */
    if (launch(d->hammer, 2u * (unsigned)d->sms, 512, 0, d->side, params) != CUDA_SUCCESS) {
      *why = "the memory hammer kernel failed";
      rc = -1;
      goto out;
    }
  }
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

int kc_perturb_compare(CUdeviceptr a, CUdeviceptr b, uint64_t words, uint64_t *count,
                       uint64_t *first) {
  int rc = -1;
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  if (!d || load_module(d)) goto out;
  if (!d->compare_out) {
    size_t w;
    if (ensure_buf(KC_DM_hash_slots, &d->compare_out, &w, 16)) goto out;
  }
  uint64_t init[2] = {0, 0}, res[2];
  if (kc_drv.cuMemcpyHtoD_v2(d->compare_out, init, sizeof init) != CUDA_SUCCESS) goto out;
  if (words) {
    unsigned long long n = words;
    void *params[] = {&a, &b, &n, &d->compare_out};
    uint64_t blocks = (words + 255) / 256;
    unsigned grid = blocks < 8u * (unsigned)d->sms ? (unsigned)blocks : 8u * (unsigned)d->sms;
    if (launch(d->compare, grid ? grid : 1, 256, 0, NULL, params) != CUDA_SUCCESS) goto out;
  }
  if (kc_drv.cuMemcpyDtoH_v2(res, d->compare_out, sizeof res) != CUDA_SUCCESS) goto out;
  *count = res[0];
  *first = ~res[1]; /* kept as ~index (kc_compare) */
  rc = 0;
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

/* Regions first.. of a, b (b NULL: kc_hash_table's, which reads a only)
 * into *t, KC_CMP_MAX at most: region first + r is the table's region r, its
 * result slot too; a region compared with itself (or empty) has no chunk.
 * The chunk size follows the words the launch reads (cmp_table.h).
 * Returns the table's chunks. */
static uint64_t table_fill(struct kc_cmp_table *t, const CUdeviceptr *a, const CUdeviceptr *b,
                           const uint64_t *words, int first, int n, int hashing, int sms) {
  memset(t, 0, sizeof *t);
  uint64_t total = 0;
  for (int i = first; i < n && t->n < KC_CMP_MAX; i++) {
    unsigned r = (unsigned)t->n++;
    int skip = !words[i] || (b && a[i] == b[i] && !hashing);
    t->a[r] = a[i];
    t->b[r] = b ? b[i] : 0;
    t->words[r] = skip ? 0 : words[i];
    total += t->words[r];
  }
  t->chunk = total >= KC_CMP_CHUNK_LARGE * KC_CMP_LARGE_PER_SM * (uint64_t)(sms > 0 ? sms : 1)
                 ? KC_CMP_CHUNK_LARGE
                 : KC_CMP_CHUNK_SMALL;
  for (unsigned r = 0; r < t->n; r++)
    t->start[r + 1] = t->start[r] + (t->words[r] + t->chunk - 1) / t->chunk;
  return t->start[t->n];
}

/* Every region in as few launches as KC_CMP_MAX allows (one for a check's
 * usual few dozen): a launch per region cost each small one a launch and
 * left the SMs idle between them. b NULL: kc_hash_table into 16-byte
 * slots (seeded); copy: kc_copy_hash_table (b = a's copy) into 16-byte
 * slots; else kc_compare_table into 16-byte ones at `slots`, hashing a
 * too into the 16-byte slots at hslots when that is not 0. */
static int table_launches(struct dev_state *d, const CUdeviceptr *a, const CUdeviceptr *b,
                          const uint64_t *words, int n, unsigned long long seed, CUdeviceptr slots,
                          CUdeviceptr hslots, int copy, uint64_t *pub, CUstream stream) {
  static struct kc_cmp_table t; /* under `lock`, like every caller here; 2 KiB */
  KC_ASSERT(!copy || (b && d->copy_hash_table));
  KC_ASSERT(!pub || (!(b && !copy) && d->host_slots_dev && pub >= d->host_slots &&
                     pub + 2 * (size_t)n <= d->host_slots + d->host_slots_n));
  for (int first = 0; first < n; first += KC_CMP_MAX) {
    uint64_t chunks = table_fill(&t, a, b, words, first, n, !b || hslots || copy, d->sms);
    if (!chunks) {
      /* no launch to publish these sums: they are the zeroed slots' */
      if (pub) memset(pub + 2 * first, 0, 16u * t.n);
      continue;
    }
    CUdeviceptr o = slots + 16u * (unsigned)first;
    CUdeviceptr h = hslots ? hslots + 16u * (unsigned)first : 0;
    CUdeviceptr p =
        pub ? d->host_slots_dev + 8u * (CUdeviceptr)(pub - d->host_slots + 2 * first) : 0;
    unsigned grid = chunks < 8u * (unsigned)d->sms ? (unsigned)chunks : 8u * (unsigned)d->sms;
    void *cmp_params[] = {&t, &o, &seed, &h},
         *hash_params[] = {&t, &seed, &o, &d->publish_done, &p};
    CUfunction f = copy ? d->copy_hash_table : b ? d->compare_table : d->hash_table;
    if (launch(f, grid, 256, 0, stream, b && !copy ? cmp_params : hash_params) != CUDA_SUCCESS)
      return -1;
  }
  return 0;
}

/* Room for `words` results (kept, grown as needed; under `lock`), made
 * page-locked for every context where the driver allows: kcheck's own
 * host memory, so a destroyed context can only take the page-locking
 * away, never the memory. NULL when out of host memory (the caller's
 * memory serves). */
static uint64_t *host_slots(struct dev_state *d, size_t words) {
  if (d->host_slots_n >= words) return d->host_slots;
  if (d->host_slots) {
    /* a hash kernel may still be publishing into the old memory */
    if (d->host_slots_dev && kc_drv.cuCtxSynchronize) kc_drv.cuCtxSynchronize();
    if (kc_drv.cuMemHostUnregister) kc_drv.cuMemHostUnregister(d->host_slots);
    free(d->host_slots);
  }
  d->host_slots = NULL;
  d->host_slots_n = 0;
  d->host_slots_dev = 0;
  d->host_slots_ctx = NULL;
  size_t want = words < 512 ? 512 : words; /* 4 KiB: one page */
  void *p = NULL;
  if (posix_memalign(&p, 4096, want * sizeof(uint64_t))) return NULL;
  /* mapped for the device where the driver allows (the hashes publish
   * there), else page-locked alone */
  size_t bytes = want * sizeof(uint64_t);
  if (kc_drv.cuMemHostRegister_v2 &&
      kc_drv.cuMemHostRegister_v2(
          p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP) == CUDA_SUCCESS)
    d->host_slots_ctx = d->ctx;
  else if (kc_drv.cuMemHostRegister_v2)
    kc_drv.cuMemHostRegister_v2(p, bytes, CU_MEMHOSTREGISTER_PORTABLE);
  d->host_slots = p;
  d->host_slots_n = want;
  return d->host_slots;
}

/* Zeroed device slots for n regions' hashes (clean_slots); -1 when no
 * device memory. */
static int clean_slots(struct dev_state *d, size_t n) {
  if (d->clean_slots_n >= n) return 0;
  if (d->clean_slots) {
    /* a hash may still be adding into the old ones */
    if (kc_drv.cuCtxSynchronize) kc_drv.cuCtxSynchronize();
    kc_devmem_free(d->clean_slots);
    d->clean_slots = 0;
    d->clean_slots_n = 0;
  }
  size_t want = n < 256 ? 256 : n, unused;
  if (ensure_buf(KC_DM_hash_slots, &d->clean_slots, &unused, 16u * want)) return -1;
  d->clean_slots_n = want;
  return 0;
}

/* host_slots (room for `words` results) where the hash kernels can
 * publish the sums of n regions in the current context, with the counter
 * and the zeroed device slots they need; NULL when the memory cannot be
 * mapped (the sums are copied back). */
static uint64_t *publish_slots(struct dev_state *d, size_t words, size_t n) {
  size_t unused;
  if (!kc_opt.hash_publish || !kc_drv.cuMemHostGetDevicePointer_v2 ||
      ensure_buf(KC_DM_hash_slots, &d->publish_done, &unused, 16) || clean_slots(d, n) ||
      !host_slots(d, words) || !d->host_slots_ctx)
    return NULL;
  if (!d->host_slots_dev || d->host_slots_ctx != d->ctx) {
    CUdeviceptr dp = 0;
    if (kc_drv.cuMemHostGetDevicePointer_v2(&dp, d->host_slots, 0) != CUDA_SUCCESS || !dp) {
      d->host_slots_ctx = NULL; /* not mapped here: copied back from now on */
      return NULL;
    }
    d->host_slots_dev = dp;
    d->host_slots_ctx = d->ctx;
  }
  return d->host_slots;
}

/* After the slots' memset and the kernels that fill them (queued on
 * `stream`): copies `bytes` of slots back into out and waits, the one
 * round trip of a comparison. */
static int slots_round_trip(struct dev_state *d, CUdeviceptr slots, size_t bytes, CUstream stream,
                            uint64_t *out) {
  uint64_t *pinned = host_slots(d, bytes / sizeof(uint64_t));
  if (kc_drv.cuMemcpyDtoHAsync_v2(pinned ? pinned : out, slots, bytes, stream) != CUDA_SUCCESS ||
      kc_drv.cuStreamSynchronize(stream) != CUDA_SUCCESS)
    return -1;
  if (pinned) memcpy(out, pinned, bytes);
  return 0;
}

/* The wait for kernels that published `bytes` of sums at pub
 * (publish_slots): the round trip without the copy. */
static int published_round_trip(const uint64_t *pub, size_t bytes, CUstream stream, uint64_t *out) {
  if (kc_drv.cuStreamSynchronize(stream) != CUDA_SUCCESS) return -1;
  memcpy(out, pub, bytes);
  return 0;
}

static int slots_ready(void) {
  return kc_drv.cuMemsetD8Async && kc_drv.cuMemcpyDtoHAsync_v2 && kc_drv.cuStreamSynchronize;
}

/* kc_perturb_hash_many into slots + 16n, reading back `slots` .. + 32n
 * when prior (the copy and hash queued before), else slots + 16n alone.
 * zeroed: the slots are zeros already (no memset). Where the sums can be
 * published, into the zeroed clean_slots instead, no memset, no copy
 * back; prior 2: the copy published its sums, and the hash must too. */
static int hash_many(const CUdeviceptr *a, const uint64_t *words, int n, uint64_t seed,
                     CUdeviceptr slots, int prior, int zeroed, CUstream stream, uint64_t *out) {
  int rc = -1;
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  if (!d || load_module(d) || !d->hash_table || !slots_ready()) goto out;
  size_t bytes = 16u * (size_t)n;
  CUdeviceptr mine = prior ? slots + bytes : slots;
  /* published only where the prior sums were too: the wait then reads both */
  uint64_t *pub = prior == 1 ? NULL : publish_slots(d, (prior ? 4u : 2u) * (size_t)n, (size_t)n);
  if (prior == 2 && !pub) goto out; /* the copy's sums are in host memory alone */
  if (pub) mine = d->clean_slots, zeroed = 1;
  if ((!zeroed && kc_drv.cuMemsetD8Async(mine, 0, bytes, stream) != CUDA_SUCCESS) ||
      table_launches(d, a, NULL, words, n, (unsigned long long)seed, mine, 0, 0,
                     pub ? pub + (prior ? 2 * n : 0) : NULL, stream))
    goto out;
  rc = pub ? published_round_trip(pub, prior ? 2 * bytes : bytes, stream, out)
           : slots_round_trip(d, slots, prior ? 2 * bytes : bytes, stream, out);
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

int kc_perturb_hash_many(const CUdeviceptr *a, const uint64_t *words, int n, uint64_t seed,
                         CUdeviceptr slots, int zeroed, CUstream stream, uint64_t *out) {
  return hash_many(a, words, n, seed, slots, 0, zeroed, stream, out);
}

int kc_perturb_copy_hash_queue(const CUdeviceptr *a, const CUdeviceptr *b, const uint64_t *words,
                               int n, uint64_t seed, CUdeviceptr slots, int zeroed, CUstream stream,
                               int *published) {
  int rc = -1;
  *published = 0;
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  if (!d || load_module(d) || !d->copy_hash_table || !slots_ready()) goto out;
  /* room for the hash after the launch too: host_slots must not move
   * while this kernel may still publish into it */
  uint64_t *pub = publish_slots(d, 4u * (size_t)n, (size_t)n);
  if (pub) slots = d->clean_slots, zeroed = 1;
  if ((!zeroed && kc_drv.cuMemsetD8Async(slots, 0, 16u * (size_t)n, stream) != CUDA_SUCCESS) ||
      table_launches(d, a, b, words, n, (unsigned long long)seed, slots, 0, 1, pub, stream))
    goto out;
  *published = pub != NULL;
  rc = 0;
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

static int measure_costs(struct dev_state *d, CUstream s);

double kc_perturb_setup(int l2flush, CUstream stream) {
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  double ms = 0;
  if (d && !d->setup_done) {
    double t0 = kc_now_s();
    d->setup_done = 1;
    /* each part is made where it is needed, should it fail here */
    if (!load_module(d)) {
      if (l2flush) ensure_buf(KC_DM_l2flush, &d->flush_buf, &d->flush_words, flush_bytes(d));
      /* room for a save's and a hash's sums of 256 regions, as
       * kc_perturb_copy_hash_queue asks */
      if (kc_opt.hash_compare && d->hash_table && slots_ready()) publish_slots(d, 4u * 256, 256);
    }
    /* the checks' staging buffer, at a size most checks fit in (it grows
     * by doubling from there): the first checks neither make nor grow it */
    if (kc_opt.staging_reserve) kc_staging_reserve(kc_opt.staging_reserve);
    /* the floor's device costs (copy bandwidth, a round trip), which every
     * check record needs */
    if (!d->costs_state) d->costs_state = measure_costs(d, stream) ? -1 : 1;
    ms = 1e3 * (kc_now_s() - t0);
    if (setup_ms < 0) setup_ms = ms;
  }
  pthread_mutex_unlock(&lock);
  return ms;
}

int kc_perturb_publishes(int n) {
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  int yes = d && !load_module(d) && d->hash_table && d->copy_hash_table && slots_ready() &&
            publish_slots(d, 4u * (size_t)n, (size_t)n);
  pthread_mutex_unlock(&lock);
  return yes;
}

int kc_perturb_hash_after_copy(const CUdeviceptr *a, const uint64_t *words, int n, uint64_t seed,
                               CUdeviceptr slots, int zeroed, int published, CUstream stream,
                               uint64_t *out) {
  return hash_many(a, words, n, seed, slots, published ? 2 : 1, zeroed, stream, out);
}

int kc_perturb_compare_many(const CUdeviceptr *a, const CUdeviceptr *b, const uint64_t *words,
                            int n, CUdeviceptr slots, CUstream stream, uint64_t *out, uint64_t seed,
                            uint64_t *hout) {
  int rc = -1;
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  if (!d || load_module(d) || !slots_ready() || (hout && !d->hash_table)) goto out;
  /* Slots start as zeros (a count of 0, ~first of 0: no difference), so a
   * device memset prepares them, not a copy from the host. */
  size_t bytes = (hout ? 32u : 16u) * (size_t)n;
  if (kc_drv.cuMemsetD8Async(slots, 0, bytes, stream) != CUDA_SUCCESS) goto out;
  int failed = 0; /* queuing the comparison kernels */
  if (d->compare_table) {
    failed = table_launches(d, a, b, words, n, (unsigned long long)seed, slots,
                            hout ? slots + 16u * (size_t)n : 0, 0, NULL, stream);
  } else {
    for (int i = 0; !failed && i < n; i++) {
      if (!words[i] || a[i] == b[i]) continue;
      unsigned long long nw = words[i];
      CUdeviceptr ai = a[i], bi = b[i], oi = slots + 16u * (unsigned)i;
      void *params[] = {&ai, &bi, &nw, &oi};
      uint64_t blocks = (words[i] + 255) / 256;
      unsigned grid = blocks < 8u * (unsigned)d->sms ? (unsigned)blocks : 8u * (unsigned)d->sms;
      failed = launch(d->compare, grid ? grid : 1, 256, 0, stream, params) != CUDA_SUCCESS;
    }
  }
  uint64_t *all = hout ? malloc(bytes) : out;
  if (!all || failed || slots_round_trip(d, slots, bytes, stream, all)) {
    if (all != out) free(all);
    goto out;
  }
  for (int i = 0; i < n; i++)
    out[2 * i] = all[2 * i], out[2 * i + 1] = ~all[2 * i + 1]; /* kept as ~index */
  if (hout) memcpy(hout, all + 2 * n, 16u * (size_t)n);
  if (all != out) free(all);
  rc = 0;
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

void kc_perturb_after(const struct kc_perturb *p, struct kc_launch_info *li) {
  (void)p;
  (void)li;
  if (attr_undo.changed) {
    kc_drv.cuFuncSetAttribute(attr_undo.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              attr_undo.old_max_dyn);
    attr_undo.changed = 0;
  }
}

int kc_perturb_inapplicable(const struct kc_perturb *p, const struct kc_launch_info *li,
                            const char **why) {
  if (!p->scrub || li->shmem || !kc_drv.cuFuncGetAttribute) return 0;
  CUfunction fn = li->args->f;
  if (li->k->is_cukernel &&
      (!kc_drv.cuKernelGetFunction ||
       kc_drv.cuKernelGetFunction(&fn, (CUkernel)li->args->f) != CUDA_SUCCESS || !fn))
    return 0;
  int static_smem = -1;
  if (kc_drv.cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn) !=
          CUDA_SUCCESS ||
      static_smem != 0)
    return 0;
  /* Neither static nor dynamic shared memory: nothing the kernel can read
   * was scrubbed, and the run would be an identical one. */
  *why = "the kernel uses no shared memory";
  return 1;
}

static double median5(double *v) {
  for (int i = 1; i < 5; i++)
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
  return v[2];
}

/* A 32 MiB device-to-device copy timed with events (best of three) and the
 * host's round trip of an empty launch of kcheck's own kernel and its wait
 * (median of five). */
static int measure_costs(struct dev_state *d, CUstream s) {
  enum { BYTES = 32 << 20 };
  if (load_module(d) || !kc_drv.cuEventCreate || !kc_drv.cuEventElapsedTime_v2 ||
      !kc_drv.cuMemcpyDtoDAsync_v2 || !kc_drv.cuStreamSynchronize)
    return -1;
  if (!d->compare_out) {
    size_t w;
    if (ensure_buf(KC_DM_hash_slots, &d->compare_out, &w, 16)) return -1;
  }
  CUdeviceptr buf = 0;
  CUevent e[2] = {NULL, NULL};
  int rc = -1;
  if (kc_devmem_alloc(KC_DM_probe, &buf, 2 * (size_t)BYTES) != CUDA_SUCCESS) return -1;
  if (kc_drv.cuEventCreate(&e[0], CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      kc_drv.cuEventCreate(&e[1], CU_EVENT_DEFAULT) != CUDA_SUCCESS)
    goto out;
  double best = -1;
  for (int i = 0; i < 3; i++) {
    float ms = -1;
    if (kc_drv.cuEventRecord(e[0], s) != CUDA_SUCCESS ||
        kc_drv.cuMemcpyDtoDAsync_v2(buf + BYTES, buf, BYTES, s) != CUDA_SUCCESS ||
        kc_drv.cuEventRecord(e[1], s) != CUDA_SUCCESS ||
        kc_drv.cuStreamSynchronize(s) != CUDA_SUCCESS ||
        kc_drv.cuEventElapsedTime_v2(&ms, e[0], e[1]) != CUDA_SUCCESS)
      goto out;
    if (ms > 0 && (best < 0 || ms < best)) best = ms;
  }
  double rt[5];
  for (int i = 0; i < 5; i++) {
    CUdeviceptr none = 0;
    unsigned long long zero = 0;
    void *params[] = {&none, &none, &zero, &d->compare_out};
    double t0 = kc_now_s();
    if (launch(d->compare, 1, 32, 0, s, params) != CUDA_SUCCESS ||
        kc_drv.cuStreamSynchronize(s) != CUDA_SUCCESS)
      goto out;
    rt[i] = 1e3 * (kc_now_s() - t0);
  }
  if (best <= 0) goto out;
  d->copy_ms_per_byte = best / BYTES;
  d->sync_ms = median5(rt);
  rc = 0;
out:
  for (int i = 0; i < 2; i++)
    if (e[i]) kc_drv.cuEventDestroy_v2(e[i]);
  kc_devmem_free(buf);
  return rc;
}

int kc_perturb_device_costs(CUstream s, double *copy_ms_per_byte, double *sync_ms) {
  pthread_mutex_lock(&lock);
  struct dev_state *d = state();
  int rc = -1;
  if (d && !d->costs_state) d->costs_state = measure_costs(d, s) ? -1 : 1;
  if (d && d->costs_state == 1) {
    *copy_ms_per_byte = d->copy_ms_per_byte;
    *sync_ms = d->sync_ms;
    rc = 0;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

json_t *kc_perturb_summary_json(void) {
  /* The summary may be written from a signal handler: never wait. */
  if (pthread_mutex_trylock(&lock)) return json_pack("{s:s}", "form", "unknown (busy)");
  json_t *o = json_pack("{s:s, s:f, s:f}", "form", module_form, "load_ms", module_load_ms,
                        "setup_ms", setup_ms);
  for (int i = 0; o && i < MAX_DEV; i++)
    if (devs[i].costs_state == 1) {
      json_object_set_new(o, "copy_gbps", json_real(1e-6 / devs[i].copy_ms_per_byte));
      json_object_set_new(o, "sync_us", json_real(1e3 * devs[i].sync_ms));
      /* the L2 and what the l2flush strategy writes, for the check-cost tables */
      json_object_set_new(o, "l2_bytes", json_integer(devs[i].l2));
      json_object_set_new(o, "l2flush_bytes", json_integer((json_int_t)flush_bytes(&devs[i])));
      break;
    }
  pthread_mutex_unlock(&lock);
  return o;
}

void kc_perturb_fini(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_DEV; i++) {
    struct dev_state *d = &devs[i];
    if (d->host_slots && kc_drv.cuMemHostUnregister) kc_drv.cuMemHostUnregister(d->host_slots);
    free(d->host_slots);
    d->host_slots = NULL;
    d->host_slots_n = 0;
    d->host_slots_dev = 0;
    d->host_slots_ctx = NULL;
    d->clean_slots_n = 0;
    CUdeviceptr *bufs[] = {&d->hammer_buf, &d->flush_buf, &d->compare_out, &d->clean_slots,
                           &d->publish_done};
    for (int b = 0; b < 5; b++)
      if (*bufs[b]) {
        kc_devmem_free(*bufs[b]);
        *bufs[b] = 0;
      }
  }
  pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------------------ strategies */

static const struct kc_strategy_info strategies[KC_STRAT_COUNT] = {
#define KC_PERTURB(name, on, cost, desc) [KC_STRAT_##name] = {#name, on, KC_COST_##cost, desc},
#include "perturb.def"
};

const struct kc_strategy_info *kc_strategy_info(enum kc_strategy s) {
  return (unsigned)s < KC_STRAT_COUNT ? &strategies[s] : NULL;
}

int kc_strategy_find(const char *name) {
  for (int i = 0; name && i < KC_STRAT_COUNT; i++)
    if (!strcmp(name, strategies[i].name)) return i;
  return -1;
}

void kc_strategy_perturb(enum kc_strategy s, int green_sms, unsigned extra_shmem, uint64_t seed,
                         struct kc_perturb *p) {
  memset(p, 0, sizeof *p);
  p->seed = seed;
  p->name = strategies[s].name;
  switch (s) {
  case KC_STRAT_scrub: p->scrub = 1; break;
  case KC_STRAT_green: p->green_sms = green_sms; break;
  case KC_STRAT_smem: p->extra_shmem = extra_shmem; break;
  case KC_STRAT_hammer: p->hammer = 1; break;
  case KC_STRAT_l2flush: p->l2flush = 1; break;
  /* Delays in ns (nanosleep takes them as a hint: [0, 2t]). jitter: a
   * quarter of the memory accesses and half of the barriers, up to ~1 us,
   * warps starting up to ~2 us apart. warporder: warps start up to ~16 us
   * apart, whole blocks up to ~32 us apart (a block's warps then reach
   * its neighbours' data in another order), and wait up to ~4 us at every
   * barrier; accesses are left alone. */
  case KC_STRAT_jitter:
    p->intra = 1, p->intra_pmem = 64, p->intra_pbar = 128, p->intra_mask = 0x3ff,
    p->intra_start = 0x7ff;
    break;
  /* accesses: no delays; every block logs its shared- and global-memory
   * accesses and fences (the capacity is the access_records option, set
   * by the race gate; over it, a run of fewer blocks). */
  case KC_STRAT_accesses: p->intra = 1, p->intra_log = 1; break;
  case KC_STRAT_warporder:
    p->intra = 1, p->intra_pmem = 0, p->intra_pbar = 256, p->intra_mask = 0xfff,
    p->intra_start = 0x3fff, p->intra_bstart = 0x7fff;
    break;
  case KC_STRAT_COUNT: break;
  }
}
