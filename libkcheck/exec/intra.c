/* libkcheck/exec/intra.c — the perturbed copies of kernels: made on the first
 * intra-block run of a kernel in a context, kept until exit or until the
 * kernel's image is unloaded (a later kernel may get the same handle). Two
 * routes make a copy: kcheck's rewrite of the kernel's PTX, JIT-compiled;
 * or, where the image carries no PTX, the Compute Sanitizer route
 * (san_route.h): the image's own SASS loaded again and patched with
 * kcheck's device callbacks. Both log struct kc_access records for the
 * same analysis (access.h). */
#include "intra.h"

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "allocmap.h"
#include "devmem.h"
#include "driver.h"
#include "image.h"
#include "kernel.h"
#include "log.h"
#include "policy.h"
#include "report.h"
#include "san_rec.h"
#include "san_route.h"
#include "sass_atomics.h"

#define MAX_VARS 64
/* Module variables copied before each run, at most (bytes). */
#define MAX_VAR_BYTES (64u << 20)

struct copy {
  void *handle; /* the launched CUfunction or CUkernel */
  void *image;  /* its module or library */
  CUcontext ctx;
  int state; /* 0 untried, 1 ready, 2 cannot perturb */
  const char *why;
  char why_buf[256];
  CUmodule mod;
  CUfunction fn;
  CUdeviceptr cfg;
  int nvars;
  CUdeviceptr var_src[MAX_VARS], var_dst[MAX_VARS];
  size_t var_size[MAX_VARS];
  char (*var_name)[128]; /* the variables' names (evidence) */
  int sites;
  double jit_ms;
  struct kc_ptx_sites logged; /* the accesses and fences the copy can log */
  uint64_t mod_bytes;         /* device memory the copy's module took (devmem.h) */
  /* what bounds it: the code the PTX route's JIT makes (KC_DEVMEM_CODE_FACTOR
   * times the text) and the copy's variables, or the Sanitizer route's
   * bound of its load (kc_san_module.device_bound) */
  uint64_t code_bytes, var_bytes, san_bound;
  unsigned stride; /* the last logged run's block stride */
  /* the kernel's atomics, for the nondeterminism gate */
  int atomics_state; /* 0 untried, 1 known, 2 unknown, 3 no PTX, its SASS not read yet */
  int atomics_sass;  /* known from the SASS: the kernel has no readable PTX */
  struct kc_ptx_atomics atomics;
  const char *atomics_why;
  char atomics_buf[256];
  /* the Sanitizer route (san): cfg is a struct kc_san_cfg; the epoch
   * array of the logged blocks; why the PTX route did not apply */
  int san;
  double san_load_ms, san_patch_ms;
  uint64_t fn_pc;
  CUdeviceptr epochs;
  size_t epochs_bytes;
  const char *no_ptx;
  char san_why[640]; /* why the Sanitizer route did not apply ("" if it did or was not tried) */
  /* the guard's table (kc_san_cfg.ranges) as uploaded, and the
   * allocation map's epoch it was built at */
  CUdeviceptr ranges;
  size_t ranges_bytes;
  uint32_t nranges;
  uint64_t ranges_epoch;
  struct copy *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct copy *copies;

/* The access log, one a context shared by every copy: checks run one at a
 * time and a log is read before the check ends, so a log a kernel (32 MiB
 * at the default access_records, kept as long as the image) would only
 * multiply kcheck's device memory. */
#define MAX_LOGS 16
static struct ctx_log {
  CUcontext ctx;
  CUdeviceptr p; /* cap records */
  unsigned cap;
} logs[MAX_LOGS];

static struct ctx_log *ctx_log(CUcontext ctx) {
  struct ctx_log *free_slot = NULL;
  for (int i = 0; i < MAX_LOGS; i++) {
    if (logs[i].ctx == ctx) return &logs[i];
    if (!logs[i].ctx && !free_slot) free_slot = &logs[i];
  }
  if (free_slot) free_slot->ctx = ctx;
  return free_slot;
}

static struct copy *find(void *handle, void *image, CUcontext ctx) {
  for (struct copy *c = copies; c; c = c->next)
    if (c->handle == handle && c->ctx == ctx) return c;
  struct copy *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->handle = handle;
  c->image = image;
  c->ctx = ctx;
  c->next = copies;
  copies = c;
  return c;
}

static int fail(struct copy *c, const char *why) {
  c->state = 2;
  c->why = why;
  return 1;
}

/* The application module's variable name, for the copy. */
static int app_var(const struct kc_kernel *k, const char *name, CUdeviceptr *d, size_t *size) {
  if (!k->image_handle) return -1;
  if (k->is_cukernel)
    return kc_drv.cuLibraryGetGlobal &&
                   kc_drv.cuLibraryGetGlobal(d, size, (CUlibrary)k->image_handle, name) ==
                       CUDA_SUCCESS
               ? 0
               : -1;
  return kc_drv.cuModuleGetGlobal_v2 &&
                 kc_drv.cuModuleGetGlobal_v2(d, size, (CUmodule)k->image_handle, name) ==
                     CUDA_SUCCESS
             ? 0
             : -1;
}

/* The copy's module variables names[0..nvars) paired with the
 * application's (names: malloc'd, taken). 0, or fail()'s 1. */
static int pair_vars(struct copy *c, const struct kc_kernel *k, char (*names)[128], int nvars) {
  uint64_t total = 0;
  for (int i = 0; i < nvars; i++) {
    size_t ssrc = 0, sdst = 0;
    if (app_var(k, names[i], &c->var_src[i], &ssrc) ||
        kc_drv.cuModuleGetGlobal_v2(&c->var_dst[i], &sdst, c->mod, names[i]) != CUDA_SUCCESS) {
      snprintf(c->why_buf, sizeof c->why_buf, "module variable %s cannot be copied", names[i]);
      free(names);
      return fail(c, c->why_buf);
    }
    c->var_size[i] = ssrc < sdst ? ssrc : sdst;
    c->var_bytes += sdst;
    total += c->var_size[i];
  }
  c->var_name = names;
  if (total > MAX_VAR_BYTES) {
    free(c->var_name);
    c->var_name = NULL;
    return fail(c, "the module's variables are too large to copy");
  }
  c->nvars = nvars;
  return 0;
}

/* The Sanitizer route's copy, for a kernel whose image has no PTX. */
static int build_san(struct copy *c, const struct kc_kernel *k, const char *no_ptx) {
  struct kc_san_module m;
  const char *why = NULL;
  c->no_ptx = no_ptx;
  int rc = kc_san_load(k, &m, &why);
  c->san_bound = m.device_bound;
  if (rc) {
    /* the strategies' status stays the PTX route's reason; the route's
     * own is recorded beside it (kc_intra_route_why) */
    snprintf(c->san_why, sizeof c->san_why, "%s", why ? why : "unavailable");
    return fail(c, no_ptx);
  }
  c->san = 1;
  c->mod = m.mod;
  c->fn = m.fn;
  c->fn_pc = m.fn_pc;
  c->jit_ms = m.load_ms + m.patch_ms;
  c->san_load_ms = m.load_ms;
  c->san_patch_ms = m.patch_ms;
  if (kc_devmem_alloc(KC_DM_access_log, &c->cfg, sizeof(struct kc_san_cfg)) != CUDA_SUCCESS) {
    c->cfg = 0;
    free(m.names);
    return fail(c, kc_devmem_refused() ? kc_devmem_refused()
                                       : "no device memory for the Sanitizer route's settings");
  }
  if (pair_vars(c, k, m.names, m.nvars)) return 1;
  c->state = 1;
  return 0;
}

static int build(struct copy *c, const struct kc_kernel *k) {
  const char *why = NULL;
  char *ptx = k->image_handle ? kc_image_ptx(k->image_handle, k->name, &why) : NULL;
  if (!ptx && k->image_handle) return build_san(c, k, why ? why : "the image has no PTX");
  if (!ptx) return fail(c, why ? why : "the kernel's image is unknown");
  char(*names)[128] = calloc(MAX_VARS, sizeof *names);
  int nvars = names ? kc_ptx_module_vars(ptx, names, MAX_VARS) : -1;
  if (nvars < 0) {
    free(ptx);
    free(names);
    return fail(c, names ? "the module uses texture, surface or sampler references"
                         : "out of host memory");
  }
  int sites = 0;
  char *copy = kc_ptx_perturbed_copy(ptx, k->name, &sites, &c->logged, &why);
  free(ptx);
  if (!copy) {
    free(names);
    return fail(c, why);
  }
  c->code_bytes = (uint64_t)KC_DEVMEM_CODE_FACTOR * strlen(copy);
  char log[1024] = "";
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {log, (void *)(uintptr_t)sizeof log};
  double t0 = kc_now_s();
  CUresult r = kc_drv.cuModuleLoadDataEx ? kc_drv.cuModuleLoadDataEx(&c->mod, copy, 2, opts, vals)
                                         : CUDA_ERROR_NOT_SUPPORTED;
  c->jit_ms = 1e3 * (kc_now_s() - t0);
  free(copy);
  if (r != CUDA_SUCCESS) {
    free(names);
    char *nl = strchr(log, '\n');
    if (nl) *nl = 0;
    snprintf(c->why_buf, sizeof c->why_buf, "JIT-compiling the perturbed copy failed: %s",
             log[0] ? log : "no log");
    return fail(c, c->why_buf);
  }
  size_t cfg_size = 0;
  if (kc_drv.cuModuleGetFunction(&c->fn, c->mod, k->name) != CUDA_SUCCESS ||
      !kc_drv.cuModuleGetGlobal_v2 ||
      kc_drv.cuModuleGetGlobal_v2(&c->cfg, &cfg_size, c->mod, KC_PTX_CFG) != CUDA_SUCCESS ||
      cfg_size < 4 * KC_CFG_WORDS) {
    free(names);
    return fail(c, "the perturbed copy lacks its kernel or configuration");
  }
  if (pair_vars(c, k, names, nvars)) return 1;
  c->sites = sites;
  c->state = 1;
  return 0;
}

/* The most the copy's module can take (devmem.h): a fall of free memory
 * beyond it while the copy was made is another process's. */
static uint64_t mod_bound(const struct copy *c) {
  return c->san_bound ? c->san_bound : kc_devmem_module_bound(c->code_bytes + c->var_bytes);
}

/* The kernel's copy in the current context, built at first use, when the
 * route applies to it (and, with log, when it has accesses to log); else
 * NULL and why. Called with the lock held. */
static struct copy *usable_locked(struct kc_launch_info *li, int log, const char **why) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  struct copy *c = find(li->k->handle, li->k->image_handle, ctx);
  if (!c) {
    *why = "out of host memory";
    return NULL;
  }
  if (c->state == 0) {
    /* the module and the variables its globals hold; kept until the
     * image goes, so never refused by the budget (the access log is) */
    size_t free_before;
    (void)kc_devmem_begin(KC_DM_modules, 0, &free_before);
    build(c, li->k);
    c->mod_bytes = kc_devmem_end(KC_DM_modules, free_before, mod_bound(c));
  }
  if (c->state != 1) {
    *why = c->why;
    return NULL;
  }
  /* the patched SASS is the costly route: a signature's first check only
   * (later checks keep the strategies that need no copy) */
  if (c->san && kc_policy_checks_of(li->signature) > 1) {
    *why = "the Sanitizer route runs on a signature's first check only";
    return NULL;
  }
  if (log && !c->san && !c->logged.n) {
    *why = "the kernel has no memory access kcheck can log";
    return NULL;
  }
  return c;
}

/* The guard's table for a run of the copy: every allocation kcheck knows
 * (its allocation hooks' map) and the module variables of the
 * application's module and of the copy, rebuilt when the map changed.
 * 0, or 1 (a skip: *why). */
static int san_guard(struct copy *c, struct kc_san_cfg *s, const char **why) {
  uint64_t epoch = kc_allocmap_epoch();
  if (!c->ranges || c->ranges_epoch != epoch) {
    size_t n = kc_allocmap_count() + 64; /* room for allocations made meanwhile */
    struct kc_alloc *all = malloc(n * sizeof *all);
    uint64_t *r = malloc(2 * (n + 2 * MAX_VARS) * sizeof *r);
    if (!all || !r) {
      free(all);
      free(r);
      *why = "out of host memory";
      return 1;
    }
    size_t got = kc_allocmap_snapshot(all, n), m = 0;
    for (size_t i = 0; i < got; i++, m++)
      r[2 * m] = all[i].base, r[2 * m + 1] = all[i].base + all[i].size;
    for (int i = 0; i < c->nvars; i++) {
      r[2 * m] = c->var_src[i], r[2 * m + 1] = c->var_src[i] + c->var_size[i], m++;
      r[2 * m] = c->var_dst[i], r[2 * m + 1] = c->var_dst[i] + c->var_size[i], m++;
    }
    free(all);
    m = kc_san_ranges_build(r, m);
    size_t bytes = 2 * m * sizeof *r;
    if (!m) {
      free(r);
      *why = "the Sanitizer route's guard knows no allocation the copy may access";
      return 1;
    }
    if (bytes > c->ranges_bytes) {
      kc_devmem_free(c->ranges);
      c->ranges = 0, c->ranges_bytes = 0;
      if (kc_devmem_alloc(KC_DM_san_guard, &c->ranges, bytes) != CUDA_SUCCESS) {
        c->ranges = 0;
        free(r);
        *why = kc_devmem_refused() ? kc_devmem_refused() : "no device memory for the guard";
        return 1;
      }
      c->ranges_bytes = bytes;
    }
    CUresult cr = kc_drv.cuMemcpyHtoD_v2(c->ranges, r, bytes);
    free(r);
    if (cr != CUDA_SUCCESS) {
      *why = "writing the guard's table failed";
      return 1;
    }
    c->nranges = (uint32_t)m;
    c->ranges_epoch = epoch;
  }
  s->nranges = c->nranges;
  s->ranges = c->ranges;
  return 0;
}

/* The largest epoch array (bytes): beyond it, fewer blocks are logged. */
#define MAX_EPOCH_BYTES (64u << 20)

/* The Sanitizer route's settings from the PTX route's words: delays in
 * clock cycles (twice the PTX route's ns: ~2 cycles a ns), the log in
 * kc_san_rec records (the size of a struct kc_access), and the epoch
 * array of the logged blocks. 0, 1 (a skip: *why), -1 (*why). */
static int san_config(struct copy *c, const struct kc_launch_info *li,
                      const uint32_t cfg[KC_CFG_WORDS], CUdeviceptr log, const char **why) {
  _Static_assert(sizeof(struct kc_san_rec) == sizeof(struct kc_access), "one log for both routes");
  struct kc_san_cfg s;
  memset(&s, 0, sizeof s);
  s.seed = cfg[KC_CFG_SEED];
  s.pmem = cfg[KC_CFG_PMEM];
  s.pbar = cfg[KC_CFG_PBAR];
  s.mask = cfg[KC_CFG_MASK] << 1 | 1;
  s.start = cfg[KC_CFG_START] ? cfg[KC_CFG_START] << 1 | 1 : 0;
  s.bstart = cfg[KC_CFG_BSTART] ? cfg[KC_CFG_BSTART] << 1 | 1 : 0;
  s.stride = cfg[KC_CFG_STRIDE] ? cfg[KC_CFG_STRIDE] : 1;
  if (cfg[KC_CFG_LOG] && log) {
    uint64_t blocks = (uint64_t)li->grid[0] * li->grid[1] * li->grid[2];
    uint64_t tpb = (uint64_t)li->block[0] * li->block[1] * li->block[2];
    uint64_t slots = (blocks + s.stride - 1) / s.stride;
    uint64_t bytes = slots * tpb * 4;
    if (bytes > MAX_EPOCH_BYTES) {
      /* fewer logged blocks, as many as the epochs' budget holds */
      uint64_t stride = (uint64_t)s.stride * ((bytes + MAX_EPOCH_BYTES - 1) / MAX_EPOCH_BYTES);
      if (stride > 0xffffffffu) {
        *why = "over budget: one logged block's barrier epochs need more than 64 MiB";
        return 1;
      }
      s.stride = (uint32_t)stride;
      c->stride = s.stride;
      slots = (blocks + s.stride - 1) / s.stride;
      bytes = slots * tpb * 4;
    }
    if (bytes > c->epochs_bytes) {
      kc_devmem_free(c->epochs);
      c->epochs = 0, c->epochs_bytes = 0;
      if (kc_devmem_alloc(KC_DM_access_log, &c->epochs, bytes) != CUDA_SUCCESS) {
        c->epochs = 0;
        *why = kc_devmem_refused() ? kc_devmem_refused() : "no device memory for the epochs";
        return 1;
      }
      c->epochs_bytes = bytes;
    }
    s.log = 1;
    s.cap = cfg[KC_CFG_CAP];
    s.tpb = (uint32_t)tpb;
    s.slots = (uint32_t)slots;
    s.buf = log;
    s.epochs = c->epochs;
  }
  int g = san_guard(c, &s, why);
  if (g) return g;
  if (kc_drv.cuMemcpyHtoD_v2(c->cfg, &s, sizeof s) != CUDA_SUCCESS) {
    *why = "writing the perturbation's configuration failed";
    return -1;
  }
  /* before every run, not once: with lazy loading (CUDA's default) the
   * copy's function may not be loaded when the copy is made */
  return kc_san_set_data(c->fn, c->cfg, why) ? 1 : 0;
}

int kc_intra_prepare(struct kc_launch_info *li, const uint32_t cfg_in[KC_CFG_WORDS], CUfunction *fn,
                     const char **why) {
  uint32_t cfg[KC_CFG_WORDS];
  memcpy(cfg, cfg_in, sizeof cfg);
  pthread_mutex_lock(&lock);
  int rc = 1;
  struct copy *c = usable_locked(li, cfg[KC_CFG_LOG] != 0, why);
  if (!c) goto out;
  if (cfg[KC_CFG_LOG]) {
    /* The access log, allocated at the first run that asks for it. */
    struct ctx_log *L = ctx_log(c->ctx);
    if (!L) {
      *why = "too many contexts for an access log";
      goto out;
    }
    if (L->p && L->cap < cfg[KC_CFG_CAP]) {
      kc_devmem_free(L->p);
      L->p = 0;
    }
    if (!L->p) {
      if (kc_devmem_alloc(KC_DM_access_log, &L->p,
                          (size_t)cfg[KC_CFG_CAP] * sizeof(struct kc_access)) != CUDA_SUCCESS) {
        L->p = 0;
        *why = kc_devmem_refused() ? kc_devmem_refused() : "no device memory for the access log";
        goto out;
      }
      L->cap = cfg[KC_CFG_CAP];
    }
    cfg[KC_CFG_BUF_LO] = (uint32_t)L->p;
    cfg[KC_CFG_BUF_HI] = (uint32_t)((uint64_t)L->p >> 32);
    cfg[KC_CFG_COUNT] = 0;
    if (!cfg[KC_CFG_STRIDE]) cfg[KC_CFG_STRIDE] = 1;
    c->stride = cfg[KC_CFG_STRIDE];
  }
  rc = -1;
  if (c->san) {
    struct ctx_log *L = cfg[KC_CFG_LOG] ? ctx_log(c->ctx) : NULL;
    const char *w = NULL;
    int r = san_config(c, li, cfg, L ? L->p : 0, &w);
    if (r) {
      *why = w;
      rc = r;
      goto out;
    }
  } else if (kc_drv.cuMemcpyHtoD_v2(c->cfg, cfg, 4 * KC_CFG_WORDS) != CUDA_SUCCESS) {
    *why = "writing the perturbation's configuration failed";
    goto out;
  }
  /* The application module's variables as they are now: what a re-run of
   * the kernel itself would see. */
  for (int i = 0; i < c->nvars; i++)
    if (c->var_size[i] &&
        kc_drv.cuMemcpyDtoD_v2(c->var_dst[i], c->var_src[i], c->var_size[i]) != CUDA_SUCCESS) {
      *why = "copying the module's variables failed";
      goto out;
    }
  /* The application may have raised the kernel's dynamic shared memory
   * limit; the copy needs the same for this launch. */
  if (li->shmem > 48u * 1024 &&
      kc_drv.cuFuncSetAttribute(c->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                (int)li->shmem) != CUDA_SUCCESS) {
    *why = "the copy cannot get the launch's dynamic shared memory";
    rc = 1;
    goto out;
  }
  *fn = c->fn;
  rc = 0;
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

int kc_intra_usable(struct kc_launch_info *li, int log, const char **why) {
  pthread_mutex_lock(&lock);
  int rc = usable_locked(li, log, why) ? 0 : 1;
  pthread_mutex_unlock(&lock);
  return rc;
}

int kc_intra_info(struct kc_launch_info *li, int *sites, double *jit_ms, const char **route) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  int rc = -1;
  pthread_mutex_lock(&lock);
  for (struct copy *c = copies; c; c = c->next)
    if (c->handle == li->k->handle && c->ctx == ctx && c->state == 1) {
      *sites = c->sites;
      *jit_ms = c->jit_ms;
      *route = c->san ? "sanitizer" : "ptx";
      rc = 0;
    }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* No PTX: the atomics from the kernel's SASS. Float additions name the
 * kernel's differences atomic-order; integer atomics that return a value
 * may be worklist slots, which SASS does not tell: then unknown, as
 * before, unless float additions are there too. */
static void sass_atomics(struct copy *c, const struct kc_kernel *k) {
  size_t len = 0;
  const char *why = NULL;
  int returning = 0;
  char *elf = kc_san_cubin(k, &len, &why);
  if (!elf) {
    snprintf(c->atomics_buf, sizeof c->atomics_buf, "%s; its SASS: %s", c->atomics_why, why);
    c->atomics_why = c->atomics_buf;
    return;
  }
  struct kc_ptx_atomics a;
  /* the PTX route's reason first: what is missing is the PTX */
  if (kc_sass_atomics(elf, len, k->name, &a, &returning, &why)) {
    snprintf(c->atomics_buf, sizeof c->atomics_buf, "%s; %s", c->atomics_why, why);
    c->atomics_why = c->atomics_buf;
  } else if (!a.float_adds && returning) {
    snprintf(c->atomics_buf, sizeof c->atomics_buf,
             "%s; its SASS has integer atomics that return a value (a worklist slot or a "
             "counter: SASS does not tell)",
             c->atomics_why);
    c->atomics_why = c->atomics_buf;
  } else {
    c->atomics = a;
    c->atomics_state = 1;
    c->atomics_sass = 1;
  }
  free(elf);
}

int kc_intra_san_times(struct kc_launch_info *li, double *load_ms, double *patch_ms) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  int rc = -1;
  pthread_mutex_lock(&lock);
  for (struct copy *c = copies; c; c = c->next)
    if (c->handle == li->k->handle && c->ctx == ctx && c->san && c->state == 1) {
      *load_ms = c->san_load_ms;
      *patch_ms = c->san_patch_ms;
      rc = 0;
    }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* What the driver says about an address the guard stopped: whether some
 * allocation holds it that kcheck's map lacks. */
static void driver_view(uint64_t addr, char *out, size_t len) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (kc_drv.cuMemGetAddressRange_v2 &&
      kc_drv.cuMemGetAddressRange_v2(&base, &size, (CUdeviceptr)addr) == CUDA_SUCCESS)
    snprintf(out, len,
             "the driver has an allocation there that kcheck did not see (0x%llx, %zu bytes)",
             (unsigned long long)base, size);
  else
    snprintf(out, len, "the driver knows no allocation there");
}

int kc_intra_guard_stopped(struct kc_launch_info *li, const char **why) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  int rc = 0;
  pthread_mutex_lock(&lock);
  struct copy *c = NULL;
  for (struct copy *x = copies; x; x = x->next)
    if (x->handle == li->k->handle && x->ctx == ctx && x->state == 1 && x->san) c = x;
  struct kc_san_cfg s;
  if (!c || !c->cfg || kc_drv.cuMemcpyDtoH_v2(&s, c->cfg, sizeof s) != CUDA_SUCCESS || !s.oob)
    goto out;
  char drv[160];
  driver_view(s.oob_addr, drv, sizeof drv);
  uint64_t site = c->fn_pc && s.oob_pc >= c->fn_pc ? s.oob_pc - c->fn_pc : 0;
  snprintf(c->san_why, sizeof c->san_why,
           "the guard stopped %u global access%s of kcheck's patched copy outside every "
           "allocation kcheck knows (the first: a %u-byte %s at 0x%llx, SASS +0x%llx, block %u "
           "thread %u; %s): the access was not made, and the Sanitizer route stands down for "
           "this kernel",
           s.oob, s.oob == 1 ? "" : "es", s.oob_size,
           (s.oob_flags & KC_SAN_WRITE) ? ((s.oob_flags & KC_SAN_READ) ? "atomic" : "write")
                                        : "read",
           (unsigned long long)s.oob_addr, (unsigned long long)site, s.oob_block, s.oob_tid, drv);
  KC_LOG(KC_LOG_INFO, "%s: %s", li->k->name, c->san_why);
  /* as a copy that could not be made: the kernel's strategies are those
   * of a kernel with no code kcheck can instrument */
  c->state = 2;
  c->why = c->no_ptx;
  *why = c->san_why;
  rc = 1;
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

const char *kc_intra_no_ptx(struct kc_launch_info *li) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  const char *why = NULL;
  pthread_mutex_lock(&lock);
  for (struct copy *c = copies; c; c = c->next)
    if (c->handle == li->k->handle && c->ctx == ctx && c->san && c->state == 1) why = c->no_ptx;
  pthread_mutex_unlock(&lock);
  return why;
}

const char *kc_intra_route_why(struct kc_launch_info *li) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  const char *why = NULL;
  pthread_mutex_lock(&lock);
  for (struct copy *c = copies; c; c = c->next)
    if (c->handle == li->k->handle && c->ctx == ctx && c->san_why[0]) why = c->san_why;
  pthread_mutex_unlock(&lock);
  return why;
}

/* Locked. The kernel's atomics from its PTX (state 1), or why not (state
 * 2); a kernel with no PTX but an image waits in state 3 until read_sass
 * asks for its SASS (read once: the first check of a SASS-only kernel
 * inflates its image's cubin, 15-22 ms for ATen's compressed fatbins). */
static int atomics_locked(struct copy *c, const struct kc_kernel *k, int read_sass) {
  if (c->atomics_state == 0) {
    const char *w = NULL;
    char *ptx = k->image_handle ? kc_image_ptx(k->image_handle, k->name, &w) : NULL;
    struct kc_ptx_span sp;
    c->atomics_state = 2;
    c->atomics_why = w ? w : "the kernel's image is unknown";
    if (ptx && kc_ptx_find_entry(ptx, k->name, &sp) == 0) {
      kc_ptx_scan_atomics(ptx, &sp, &c->atomics);
      c->atomics_state = 1;
    } else if (ptx) {
      c->atomics_why = "the kernel is not defined in the image's PTX";
    } else if (k->image_handle) {
      c->atomics_state = 3;
    }
    free(ptx);
  }
  if (c->atomics_state == 3 && read_sass) {
    c->atomics_state = 2;
    sass_atomics(c, k); /* 1 with the atomics, or 2 with atomics_why */
  }
  return c->atomics_state;
}

static int atomics(const struct kc_kernel *k, struct kc_ptx_atomics *a, const char **why,
                   int read_sass) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  pthread_mutex_lock(&lock);
  struct copy *c = find(k->handle, k->image_handle, ctx);
  int rc = -1;
  if (!c) {
    *why = "out of host memory";
  } else {
    int state = atomics_locked(c, k, read_sass);
    if (state == 1)
      *a = c->atomics, rc = 0;
    else
      *why = c->atomics_why, rc = state == 3 ? 1 : -1;
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

int kc_intra_atomics(const struct kc_kernel *k, struct kc_ptx_atomics *a, const char **why) {
  return atomics(k, a, why, 1);
}

int kc_intra_atomics_unread(const struct kc_kernel *k, struct kc_ptx_atomics *a, const char **why) {
  return atomics(k, a, why, 0);
}

const char *kc_intra_ptx_missing(const struct kc_kernel *k) {
  struct kc_ptx_atomics a;
  const char *why = NULL;
  /* the PTX only: a SASS not read yet stays unread */
  if (kc_intra_atomics_unread(k, &a, &why)) return why ? why : "its code is unavailable";
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  pthread_mutex_lock(&lock);
  struct copy *c = find(k->handle, k->image_handle, ctx);
  /* atomics_why keeps the PTX route's reason when the SASS gave them */
  why = !c ? "out of host memory" : c->atomics_sass ? c->atomics_why : NULL;
  pthread_mutex_unlock(&lock);
  return why;
}

void kc_intra_forget_image(void *image) {
  pthread_mutex_lock(&lock);
  for (struct copy **pc = &copies; *pc;) {
    struct copy *c = *pc;
    if (c->image != image) {
      pc = &c->next;
      continue;
    }
    *pc = c->next;
    if (c->mod) kc_drv.cuModuleUnload(c->mod);
    if (c->san) kc_devmem_free(c->cfg);
    kc_devmem_free(c->epochs);
    kc_devmem_free(c->ranges);
    kc_devmem_drop(KC_DM_modules, c->mod_bytes);
    kc_ptx_sites_free(&c->logged);
    free(c->var_name);
    free(c);
  }
  pthread_mutex_unlock(&lock);
}

void kc_intra_fini(void) {
  pthread_mutex_lock(&lock);
  while (copies) {
    struct copy *c = copies;
    copies = c->next;
    /* Modules and the log die with their context; freeing them at exit
     * could touch a context the application already destroyed. */
    kc_ptx_sites_free(&c->logged);
    free(c->var_name);
    free(c);
  }
  pthread_mutex_unlock(&lock);
}

/* ------------------------------------------------- access-level check */

static json_t *xyz(unsigned linear, const unsigned dim[3]) {
  unsigned x = dim[0] ? dim[0] : 1, y = dim[1] ? dim[1] : 1;
  return json_pack("[i, i, i]", (int)(linear % x), (int)(linear / x % y), (int)(linear / x / y));
}

static json_t *access_json(const struct copy *c, const struct kc_launch_info *li,
                           const struct kc_access *t) {
  static const char *const kinds[] = {"read",        "write",        "atomic",
                                      "strong read", "strong write", "fence"};
  unsigned tid = t->who & 0xffff, kind = (t->who >> 16) & 0xf;
  char sass[48];
  snprintf(sass, sizeof sass, "SASS +0x%x", t->site);
  return json_pack("{s:s, s:i, s:o, s:i, s:o, s:i, s:i, s:i, s:s}", "kind",
                   kinds[kind < 6 ? kind : 0], "block", (int)t->block, "block_xyz",
                   xyz(t->block, li->grid), "thread", (int)tid, "thread_xyz", xyz(tid, li->block),
                   "warp", (int)(tid / 32), "lane", (int)(tid % 32), "barrier_epoch",
                   (int)(t->epoch & 0xffff), "instruction",
                   c->san                            ? sass
                   : t->site < (unsigned)c->logged.n ? c->logged.text[t->site]
                                                     : "?");
}

/* What a global address belongs to: its allocation, the kernel parameter
 * whose pointer reaches it (the nearest one below it in that allocation),
 * or one of the module's variables. */
static void attribute(const struct copy *c, const struct kc_launch_info *li, uint64_t addr,
                      json_t *ev) {
  struct kc_alloc a;
  if (kc_allocmap_find(addr, &a) == 0) {
    char base[32];
    snprintf(base, sizeof base, "0x%llx", (unsigned long long)a.base);
    json_object_set_new(ev, "allocation",
                        json_pack("{s:s, s:I, s:I}", "base", base, "size", (json_int_t)a.size,
                                  "offset", (json_int_t)(addr - a.base)));
  }
  const struct kc_ptr *best = NULL;
  for (int i = 0; i < li->nptrs; i++) {
    const struct kc_ptr *p = &li->ptrs[i];
    if (addr >= p->base && addr < p->base + p->size && p->value <= addr &&
        (!best || p->value > best->value))
      best = p;
  }
  if (best) {
    int index = -1;
    for (int i = 0; li->k->param_offset && i < li->k->nparams; i++)
      if (li->k->param_offset[i] == best->offset) index = i;
    json_object_set_new(ev, "parameter",
                        json_pack("{s:i, s:i, s:I}", "index", index, "param_offset",
                                  (int)best->offset, "pointer_offset",
                                  (json_int_t)(addr - best->value)));
  }
  for (int i = 0; i < c->nvars && c->var_name; i++)
    if (addr >= c->var_dst[i] && addr < c->var_dst[i] + c->var_size[i])
      json_object_set_new(ev, "module_variable",
                          json_pack("{s:s, s:I}", "name", c->var_name[i], "offset",
                                    (json_int_t)(addr - c->var_dst[i])));
}

int kc_intra_conflicts(struct kc_launch_info *li, json_t **ev, unsigned *retry_stride,
                       const char **why) {
  CUcontext ctx = NULL;
  kc_drv.cuCtxGetCurrent(&ctx);
  *ev = NULL;
  *retry_stride = 0;
  pthread_mutex_lock(&lock);
  struct copy *c = NULL;
  for (struct copy *x = copies; x; x = x->next)
    if (x->handle == li->k->handle && x->ctx == ctx && x->state == 1) c = x;
  int rc = -1;
  uint32_t count = 0;
  struct kc_access *rec = NULL;
  struct ctx_log *L = c ? ctx_log(c->ctx) : NULL;
  if (!L || !L->p) {
    *why = "no access log";
    goto out;
  }
  size_t count_at = c->san ? offsetof(struct kc_san_cfg, count) : 4 * KC_CFG_COUNT;
  uint32_t unmodeled = 0;
  if (c->san && kc_drv.cuMemcpyDtoH_v2(&unmodeled, c->cfg + offsetof(struct kc_san_cfg, unmodeled),
                                       4) != CUDA_SUCCESS) {
    *why = "reading the access log failed";
    goto out;
  }
  if (kc_drv.cuMemcpyDtoH_v2(&count, c->cfg + count_at, 4) != CUDA_SUCCESS) {
    *why = "reading the access log failed";
    goto out;
  }
  uint64_t blocks = (uint64_t)li->grid[0] * li->grid[1] * li->grid[2];
  if (count > L->cap) {
    *retry_stride = kc_log_retry_stride(count, L->cap, c->stride ? c->stride : 1, blocks);
    *why = "over budget: the logged blocks made more accesses than access_records";
    rc = -2;
    goto out;
  }
  rec = malloc((count ? count : 1) * sizeof *rec);
  if (!rec) {
    *why = "out of host memory";
    goto out;
  }
  if (count && kc_drv.cuMemcpyDtoH_v2(rec, L->p, count * sizeof *rec) != CUDA_SUCCESS) {
    *why = "reading the access log failed";
    goto out;
  }
  struct kc_san_stats st = {0};
  /* the function's start, once it has run (loaded lazily by then) */
  if (c->san && !c->fn_pc) c->fn_pc = kc_san_fn_pc(c->mod, li->k->name);
  if (c->san)
    count = (uint32_t)kc_san_convert((const struct kc_san_rec *)rec, count, c->fn_pc, rec, &st);
  struct kc_access_result res;
  /* The SASS route sees no fences: where the kernel has global atomics
   * (a hand-off between blocks may exist), pairs between blocks are not
   * judged; with none, no hand-off can order two blocks' plain accesses. */
  int cross = c->san ? st.global_atomics == 0 : c->logged.calls == 0;
  rc = kc_access_analyze(rec, count, cross, &res);
  if (rc < 0) {
    *why = "out of host memory";
    goto out;
  }
  if (rc > 0 && unmodeled) {
    /* an ordering kcheck cannot see may be what keeps these apart: not
     * reported (the entry says why) */
    rc = 0;
    *ev = json_pack("{s:s, s:i, s:s, s:s}", "verdict", "none", "accesses_logged", (int)count,
                    "route", "sanitizer", "not_judged", kc_san_unmodeled_text(unmodeled));
    goto out;
  }
  if (rc == 0)
    /* what was logged, for the entry: a log with no access at all tells
     * that the copy's callbacks did not run */
    *ev = json_pack("{s:s, s:i, s:s}", "verdict", "none", "accesses_logged", (int)count, "route",
                    c->san ? "sanitizer" : "ptx");
  if (rc > 0) {
    const struct kc_access *a = &res.pair[0];
    int global = (a->who & KC_ACC_GLOBAL) != 0;
    char addr[32];
    snprintf(addr, sizeof addr, "0x%llx", a->addr);
    char sampled[64];
    snprintf(sampled, sizeof sampled, c->stride > 1 ? "1 block in %u" : "every block", c->stride);
    *ev = json_pack("{s:s, s:s, s:s, s:I, s:i, s:s, s:I, s:o, s:o}", "verdict",
                    "conflicting_accesses", "space", global ? "global" : "shared", "address", addr,
                    "racing_words", (json_int_t)res.racing_words, "accesses_logged", (int)count,
                    "blocks_logged", sampled, "release_points", (json_int_t)res.release_points,
                    "first", access_json(c, li, &res.pair[0]), "second",
                    access_json(c, li, &res.pair[1]));
    if (!cross)
      json_object_set_new(*ev, "between_blocks",
                          json_string(c->san ? "not judged: the kernel has global atomics and the "
                                               "SASS route does not see fences"
                                             : "not judged: the kernel calls functions whose "
                                               "accesses and fences are not logged"));
    json_object_set_new(*ev, "route", json_string(c->san ? "sanitizer" : "ptx"));
    if (res.truncated)
      json_object_set_new(*ev, "truncated", json_string("the pair budget ran out"));
    if (global) attribute(c, li, a->addr, *ev);
  }
out:
  pthread_mutex_unlock(&lock);
  free(rec);
  return rc;
}
