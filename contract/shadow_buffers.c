/* contract/shadow_buffers.c — guarded shadow tensors for a contracted
 * launch: allocation, parameter relocation (pointers inside struct
 * parameters too), input copies, output poison, relaunch and read-back.
 * Every device write goes to kcheck's own buffers. */
#include "shadow_buffers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "devmem.h"
#include "driver.h"
#include "options.h"
#include "own.h"

static int fail(char *err, size_t n, const char *msg) {
  snprintf(err, n, "%s", msg);
  return -1;
}

/* Highest element offset + 1 over the logical index space (0: empty).
 * Negative strides are refused: a tensor then starts before its pointer. */
static int extent_elems(const struct kc_contract_tensor_val *t, uint64_t *out) {
  uint64_t hi = 0;
  for (int r = 0; r < t->rank; r++) {
    if (t->shape[r] <= 0) {
      *out = 0;
      return 0;
    }
    if (t->strides[r] < 0) return -1;
    uint64_t step;
    if (__builtin_mul_overflow((uint64_t)(t->shape[r] - 1), (uint64_t)t->strides[r], &step) ||
        __builtin_add_overflow(hi, step, &hi))
      return -1;
  }
  *out = hi + 1;
  return 0;
}

/* Byte offsets of every bound tensor's pointer, in binding order (the order
 * kc_contract_bind visits parameters and fields). */
static int tensor_offsets(const struct kc_contract *c, const struct kc_kernel *k, uint32_t *off,
                          int max) {
  int nt = 0;
  for (int i = 0; i < c->nparams && i < k->nparams; i++) {
    const struct kc_contract_param *p = &c->params[i];
    if (p->v.kind == KC_PK_STRUCT) {
      for (int j = 0; j < p->nfields; j++)
        if (p->fields[j].kind == KC_PK_TENSOR && nt < max)
          off[nt++] = k->param_offset[i] + p->fields[j].offset;
    } else if (p->v.kind == KC_PK_TENSOR && nt < max) {
      off[nt++] = k->param_offset[i];
    }
  }
  return nt;
}

/* The application's allocation behind a tensor pointer: kcheck's map, else
 * the pointers the capture resolved with the driver. 0 when found. */
static int allocation_of(const struct kc_launch_info *li, uint64_t ptr, uint64_t *base,
                         uint64_t *size) {
  struct kc_alloc a;
  if (kc_allocmap_find(ptr, &a) == 0) {
    *base = a.base, *size = a.size;
    return 0;
  }
  for (int i = 0; i < li->nptrs; i++)
    if (ptr >= li->ptrs[i].base && ptr - li->ptrs[i].base < li->ptrs[i].size) {
      *base = li->ptrs[i].base, *size = li->ptrs[i].size;
      return 0;
    }
  return -1;
}

/* Threads of a launch shape (grid x block), at least 1. */
static double threads(const unsigned *grid, const unsigned *block) {
  double t = 1;
  for (int d = 0; d < 3; d++)
    t *= (double)(grid[d] ? grid[d] : 1) * (double)(block[d] ? block[d] : 1);
  return t;
}

/* Bytes past the pointer a relaunch at another shape gets as its own
 * memory. There the contract's extent is all kcheck has, and lint cannot
 * tell whether it understates what the kernel touches at that shape (the
 * shapes gate's calibration run proves it at the application's shape
 * only). So the reach is sized from what does not depend on the contract:
 * the application's allocation behind the pointer (an upper bound of what
 * the kernel touched in the application's launch) scaled by how many more
 * threads the relaunch has, twice over for rounding slack (at most
 * KC_CONTRACT_SB_RESHAPED_MAX), and never less than
 * KC_CONTRACT_SB_RESHAPED_GUARD past the extent. */
static uint64_t reshaped_reach(const struct kc_contract_sb_tensor *t,
                               const struct kc_launch_info *li, const unsigned *grid,
                               const unsigned *block) {
  uint64_t want = t->bytes + KC_CONTRACT_SB_RESHAPED_GUARD, base, size;
  if (want < t->bytes) return t->bytes; /* no room: cover() refuses it */
  if (t->t->ptr && allocation_of(li, t->t->ptr, &base, &size) == 0) {
    double ratio = threads(grid, block) / threads(li->grid, li->block);
    double reach = 2.0 * (double)(base + size - t->t->ptr) * (ratio > 1 ? ratio : 1);
    if (reach > (double)KC_CONTRACT_SB_RESHAPED_MAX) reach = (double)KC_CONTRACT_SB_RESHAPED_MAX;
    if ((uint64_t)reach > want) want = (uint64_t)reach;
  }
  return want;
}

/* Sets t->tail so the shadow buffer covers what the kernel could touch:
 * a contract (or annotation) that understates a tensor must never make the
 * kernel write past kcheck's buffer. At the application's shape that is
 * the application's allocation behind the pointer; at other shapes
 * (reshaped) reshaped_reach. */
static int cover(struct kc_contract_sb_tensor *t, const struct kc_contract_sb *s,
                 const struct kc_launch_info *li, uint64_t *budget, char *err, size_t n) {
  t->tail = KC_CONTRACT_SB_GUARD;
  uint64_t ptr = t->t->ptr;
  if (s->reshaped) {
    uint64_t reach = reshaped_reach(t, li, s->grid, s->block);
    if (reach > t->bytes && reach - t->bytes > t->tail) t->tail = reach - t->bytes;
  } else if (ptr) {
    uint64_t base, size;
    if (allocation_of(li, ptr, &base, &size)) {
      snprintf(err, n,
               "tensor '%s' points at 0x%llx, in no allocation kcheck knows: the kernel's reach "
               "cannot be bounded, so the contract is not run at this launch",
               t->t->v->name, (unsigned long long)ptr);
      return -1;
    }
    uint64_t reach = base + size - ptr; /* bytes from the pointer to the allocation's end */
    if (reach > t->bytes && reach - t->bytes > t->tail) t->tail = reach - t->bytes;
    /* At the application's own shape the kernel ran on that allocation: a
     * shape that declares far more (a 4 GB extent on a 4 KB buffer) only
     * makes kcheck allocate, fill and compare gigabytes the kernel never
     * touches (108 s and 15.7 GB for one check). Overstating by up to the
     * slack still runs: coverage reports the part never written. */
    if (t->bytes > reach && t->bytes - reach > KC_CONTRACT_SB_OVERSTATED_SLACK) {
      snprintf(err, n,
               "tensor '%s': the contract's shape declares %llu bytes, the allocation behind its "
               "pointer holds %llu from there: the shape overstates it (by more than %llu "
               "bytes), so the contract is not run at this launch",
               t->t->v->name, (unsigned long long)t->bytes, (unsigned long long)reach,
               (unsigned long long)KC_CONTRACT_SB_OVERSTATED_SLACK);
      return 1;
    }
  }
  uint64_t total = KC_CONTRACT_SB_GUARD + t->bytes + t->tail;
  if (total < t->bytes || total > *budget) {
    snprintf(err, n,
             "tensor '%s': a shadow buffer covering its allocation needs %llu bytes, over what "
             "is left of mem_budget (%llu)",
             t->t->v->name, (unsigned long long)total, (unsigned long long)*budget);
    return 1;
  }
  *budget -= total;
  return 0;
}

void kc_contract_sb_free(struct kc_contract_sb *s) {
  for (int i = 0; i < s->n; i++) {
    struct kc_contract_sb_tensor *t = &s->t[i];
    if (t->alloc) {
      kc_devmem_free(t->alloc);
      t->alloc = 0;
    }
    free(t->before);
    free(t->after);
    free(t->owned_input);
    t->before = t->after = NULL;
    t->owned_input = NULL;
    t->host_input = NULL;
  }
  free(s->params);
  s->params = NULL;
  s->n = 0;
}

int kc_contract_sb_create(struct kc_contract_sb *s, const struct kc_launch_info *li,
                          const struct kc_contract *c, char *err, size_t n) {
  return kc_contract_sb_create_at(s, li, c, NULL, err, n);
}

int kc_contract_sb_create_at(struct kc_contract_sb *s, const struct kc_launch_info *li,
                             const struct kc_contract *c, const int64_t *ivals, char *err,
                             size_t n) {
  memset(s, 0, sizeof *s);
  s->li = li;
  s->c = c;
  const struct kc_kernel *k = li->k;
  /* Relocation writes pointers at the kernel's own offsets: without the
   * driver's layout kcheck cannot know where they lie. */
  if (!k || k->nparams < 0) return fail(err, n, "the kernel's parameter layout is unknown");
  s->params = malloc(li->param_size ? li->param_size : 1);
  if (!s->params) return fail(err, n, "out of host memory");
  memcpy(s->params, li->param_buf, li->param_size);
  for (int d = 0; d < 3; d++)
    s->grid[d] = li->grid[d], s->block[d] = li->block[d];
  s->shmem = li->shmem;
  if (ivals) {
    s->reshaped = 1;
    int r = kc_contract_bind_at(c, li, ivals, s->params, &s->b, err, n);
    if (r) {
      kc_contract_sb_free(s);
      return r;
    }
    if (kc_contract_launch_dims(c, &s->b, s->grid, s->block, &s->shmem, err, n)) {
      kc_contract_sb_free(s);
      return -1;
    }
  } else if (kc_contract_bind_launch(c, li, &s->b, err, n)) {
    kc_contract_sb_free(s);
    return -1;
  }
  uint64_t budget = kc_opt.mem_budget;
  uint32_t off[64] = {0};
  if (tensor_offsets(c, k, off, 64) != s->b.ntensors) {
    kc_contract_sb_free(s);
    return fail(err, n, "the contract's tensors do not match the kernel's parameters");
  }
  /* Every tensor sized and bounded before anything is allocated: a shape
   * over the budgets costs nothing but this arithmetic. */
  uint64_t need = 0;
  for (int i = 0; i < s->b.ntensors; i++) {
    struct kc_contract_sb_tensor *t = &s->t[s->n++];
    t->t = &s->b.tensors[i];
    t->role = t->t->v->tensor.role;
    t->esize = kc_contract_format_bytes(t->t->v->tensor.format);
    t->param_offset = off[i];
    uint64_t elems = 0;
    if (t->esize <= 0 || extent_elems(t->t, &elems) ||
        __builtin_mul_overflow(elems, (uint64_t)t->esize, &t->bytes)) {
      kc_contract_sb_free(s);
      snprintf(err, n, "tensor '%s' has no usable extent", t->t->v->name);
      return -1;
    }
    int r = cover(t, s, li, &budget, err, n);
    if (r) {
      kc_contract_sb_free(s);
      return r;
    }
    need += KC_CONTRACT_SB_GUARD + t->bytes + t->tail; /* <= mem_budget: no overflow */
  }
  if (need > kc_devmem_room()) {
    snprintf(err, n,
             "the shadow tensors need %llu bytes of device memory, over the %llu "
             "device_mem_budget leaves: the contract is not run at this launch",
             (unsigned long long)need, (unsigned long long)kc_devmem_room());
    kc_contract_sb_free(s);
    return 1;
  }
  for (int i = 0; i < s->n; i++) {
    struct kc_contract_sb_tensor *t = &s->t[i];
    uint64_t total = KC_CONTRACT_SB_GUARD + t->bytes + t->tail;
    if (kc_devmem_alloc(KC_DM_contract_shadow, &t->alloc, total) != CUDA_SUCCESS) {
      t->alloc = 0;
      kc_contract_sb_free(s);
      return fail(err, n,
                  kc_devmem_refused() ? kc_devmem_refused()
                                      : "device memory for the shadow tensors unavailable");
    }
    t->dev = t->alloc + KC_CONTRACT_SB_GUARD;
    t->before = malloc(total);
    t->after = malloc(total);
    if (!t->before || !t->after) {
      kc_contract_sb_free(s);
      return fail(err, n, "out of host memory");
    }
    if (off[i] + 8 > li->param_size) {
      kc_contract_sb_free(s);
      return fail(err, n, "a tensor pointer lies past the parameter bytes");
    }
    uint64_t p = t->dev;
    memcpy(s->params + off[i], &p, 8);
    for (int a = 0; a < t->t->v->nalias && a < 4; a++) { /* copies of the same pointer */
      if (t->t->v->alias_at[a] + 8 > li->param_size) {
        kc_contract_sb_free(s);
        return fail(err, n, "a tensor pointer lies past the parameter bytes");
      }
      memcpy(s->params + t->t->v->alias_at[a], &p, 8);
    }
  }
  return 0;
}

/* Where the launch's input bytes for [ptr, ptr+bytes) can be read: the
 * snapshot's pre-state copy when the shadow saved that allocation, else the
 * application's buffer itself (read only). *avail: bytes readable there. */
static CUdeviceptr input_source(struct kc_shadow *sh, uint64_t ptr, uint64_t bytes,
                                uint64_t *avail) {
  *avail = 0;
  for (int i = 0; sh && i < sh->nregions; i++) {
    const struct kc_region *r = &sh->regions[i];
    if (r->pre && ptr >= r->base && ptr < r->base + r->size) {
      uint64_t left = r->base + r->size - ptr;
      *avail = left < bytes ? left : bytes;
      return r->pre + (ptr - r->base);
    }
  }
  struct kc_alloc a;
  if (ptr && kc_allocmap_find(ptr, &a)) {
    uint64_t left = a.base + a.size - ptr;
    *avail = left < bytes ? left : bytes;
    return ptr;
  }
  return 0;
}

static int fill(struct kc_contract_sb_tensor *t, struct kc_shadow *sh, unsigned char poison,
                int reshaped) {
  if (kc_drv.cuMemsetD8_v2(t->alloc, KC_CONTRACT_SB_GUARD_BYTE, KC_CONTRACT_SB_GUARD) !=
          CUDA_SUCCESS ||
      kc_drv.cuMemsetD8_v2(t->dev + t->bytes, KC_CONTRACT_SB_GUARD_BYTE, t->tail) != CUDA_SUCCESS)
    return -1;
  if (!t->bytes) return 0;
  if (t->role == KC_ROLE_OUT) return kc_drv.cuMemsetD8_v2(t->dev, poison, t->bytes) ? -1 : 0;
  if (t->host_input) return kc_drv.cuMemcpyHtoD_v2(t->dev, t->host_input, t->bytes) ? -1 : 0;
  /* At another shape the application's bytes mean nothing: poison. */
  if (reshaped) return kc_drv.cuMemsetD8_v2(t->dev, poison, t->bytes) ? -1 : 0;
  /* Bytes the application's allocation does not have (a contract larger
   * than the buffer) get the poison too. */
  uint64_t avail = 0;
  CUdeviceptr src = input_source(sh, t->t->ptr, t->bytes, &avail);
  if (avail < t->bytes && kc_drv.cuMemsetD8_v2(t->dev, poison, t->bytes) != CUDA_SUCCESS) return -1;
  if (avail && kc_drv.cuMemcpyDtoD_v2(t->dev, src, avail) != CUDA_SUCCESS) return -1;
  return 0;
}

int kc_contract_sb_run(struct kc_contract_sb *s, struct kc_shadow *sh, unsigned char poison,
                       char *err, size_t n) {
  const struct kc_launch_info *li = s->li;
  const struct kc_kernel *k = li->k;
  for (int i = 0; i < s->n; i++)
    if (fill(&s->t[i], sh, poison, s->reshaped))
      return fail(err, n, "filling the shadow tensors failed");
  if (kc_sync_device() != CUDA_SUCCESS) return fail(err, n, "filling the shadow tensors failed");
  for (int i = 0; i < s->n; i++) {
    struct kc_contract_sb_tensor *t = &s->t[i];
    if (kc_drv.cuMemcpyDtoH_v2(t->before, t->alloc, KC_CONTRACT_SB_GUARD + t->bytes + t->tail) !=
        CUDA_SUCCESS)
      return fail(err, n, "reading the shadow tensors failed");
  }
  /* A fresh kernelParams array into the relocated copy: the application's
   * own array and bytes stay as they are. */
  void **kp = calloc((size_t)(k->nparams ? k->nparams : 1), sizeof *kp);
  if (!kp) return fail(err, n, "out of host memory");
  for (int i = 0; i < k->nparams; i++)
    kp[i] = k->param_offset[i] < li->param_size ? s->params + k->param_offset[i] : s->params;
  CUlaunchAttribute attr;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = s->grid[0], cfg.gridDimY = s->grid[1], cfg.gridDimZ = s->grid[2];
  cfg.blockDimX = s->block[0], cfg.blockDimY = s->block[1], cfg.blockDimZ = s->block[2];
  cfg.sharedMemBytes = s->shmem;
  cfg.hStream = li->stream;
  if (li->args->entry == KC_LE_COOPERATIVE) {
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  CUresult r = kc_drv.cuLaunchKernelEx ? kc_drv.cuLaunchKernelEx(&cfg, li->args->f, kp, NULL)
                                       : CUDA_ERROR_NOT_SUPPORTED;
  free(kp);
  CUresult sr = kc_sync_device();
  s->runs++;
  if (r != CUDA_SUCCESS) return fail(err, n, "the launch on the shadow tensors failed");
  if (sr != CUDA_SUCCESS) return fail(err, n, "the launch on the shadow tensors faulted");
  for (int i = 0; i < s->n; i++) {
    struct kc_contract_sb_tensor *t = &s->t[i];
    if (kc_drv.cuMemcpyDtoH_v2(t->after, t->alloc, KC_CONTRACT_SB_GUARD + t->bytes + t->tail) !=
        CUDA_SUCCESS)
      return fail(err, n, "reading the shadow tensors failed");
  }
  return 0;
}

void kc_contract_sb_each_element(const struct kc_contract_sb_tensor *t, kc_contract_sb_elem_fn fn,
                                 void *ctx) {
  const struct kc_contract_tensor_val *v = t->t;
  int64_t idx[KC_CONTRACT_MAX_RANK] = {0};
  for (int r = 0; r < v->rank; r++)
    if (v->shape[r] <= 0) return;
  for (;;) {
    uint64_t off = 0;
    for (int r = 0; r < v->rank; r++)
      off += (uint64_t)idx[r] * (uint64_t)v->strides[r];
    if (fn(ctx, idx, v->rank, off * (uint64_t)t->esize)) return;
    int r = v->rank - 1;
    while (r >= 0 && ++idx[r] == v->shape[r])
      idx[r--] = 0;
    if (r < 0) return;
  }
}
