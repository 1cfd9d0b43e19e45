/* libkcheck/capture.c — launch capture: configuration, packed parameter
 * bytes (kernelParams or the `extra` buffer), launch attributes, and device
 * pointers found by scanning the parameter bytes. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "driver.h"
#include "launch.h"
#include "log.h"

const char *const kc_launch_entry_names[KC_LE_COUNT] = {"cuLaunchKernel", "cuLaunchKernelEx",
                                                        "cuLaunchCooperativeKernel"};
#include "own.h"
#include "prof.h"
#include "report.h"

static void copy_config(struct kc_launch_info *li, const struct kc_launch_args *a) {
  if (a->entry == KC_LE_KERNEL_EX && a->config) {
    const CUlaunchConfig *c = a->config;
    li->grid[0] = c->gridDimX, li->grid[1] = c->gridDimY, li->grid[2] = c->gridDimZ;
    li->block[0] = c->blockDimX, li->block[1] = c->blockDimY, li->block[2] = c->blockDimZ;
    li->shmem = c->sharedMemBytes;
    li->stream = c->hStream;
    unsigned n = c->numAttrs < KC_MAX_ATTRS ? c->numAttrs : KC_MAX_ATTRS;
    if (c->attrs && n) memcpy(li->attrs, c->attrs, n * sizeof *li->attrs);
    li->nattrs = c->attrs ? (int)n : 0;
  } else {
    memcpy(li->grid, a->grid, sizeof li->grid);
    memcpy(li->block, a->block, sizeof li->block);
    li->shmem = a->shmem;
    li->stream = a->stream;
  }
}

/* The `extra` form: CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE pairs. */
static int pack_extra(struct kc_launch_info *li, void **extra) {
  void *buf = NULL;
  size_t size = 0;
  int have_size = 0;
  for (int i = 0; i < 64 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) {
      memcpy(&size, extra[i + 1], sizeof size);
      have_size = 1;
    }
  }
  if (!buf || !have_size) return -1;
  li->param_buf = malloc(size ? size : 1);
  if (!li->param_buf) return -1;
  memcpy(li->param_buf, buf, size);
  li->param_size = size;
  li->param_form = "extra";
  return 0;
}

static int pack_params(struct kc_launch_info *li, void **params) {
  struct kc_kernel *k = li->k;
  if (k->nparams < 0) {
    li->param_form = "unknown";
    return 0;
  }
  li->param_size = k->param_bytes;
  li->param_buf = calloc(1, k->param_bytes ? k->param_bytes : 1);
  if (!li->param_buf) return -1;
  for (int i = 0; i < k->nparams; i++)
    if (params && params[i])
      memcpy(li->param_buf + k->param_offset[i], params[i], k->param_size[i]);
  li->param_form = k->nparams ? "params" : "none";
  return 0;
}

int kc_capture(struct kc_launch_info *li, struct kc_kernel *k, const struct kc_launch_args *a) {
  li->k = k;
  li->args = a;
  copy_config(li, a);
  kc_kernel_refresh_layout(k);
  void **extra = a->extra;
  if (extra && a->params == NULL) return pack_extra(li, extra);
  return pack_params(li, a->params);
}

/* Words the driver said are in no allocation, for trace records: parameter
 * structs carry the same stale stack and heap words launch after launch, and
 * each driver query costs microseconds. Direct-mapped, racy by design (a
 * lost or torn slot only costs a query). Never consulted for checks. */
#define NOT_DEVICE_SLOTS 4096
static _Atomic uint64_t not_device[NOT_DEVICE_SLOTS];

static unsigned not_device_slot(uint64_t w) {
  return (unsigned)((w * 0x9e3779b97f4a7c15ull) >> 52) & (NOT_DEVICE_SLOTS - 1);
}

void kc_capture_pointers(struct kc_launch_info *li, int remember_misses) {
  size_t nwords = li->param_size / 8;
  if (!nwords) return;
  li->ptrs = calloc(nwords, sizeof *li->ptrs);
  uint64_t wstack[512];
  struct kc_alloc astack[512];
  uint64_t *words = nwords <= 512 ? wstack : malloc(nwords * sizeof *words);
  struct kc_alloc *found = nwords <= 512 ? astack : malloc(nwords * sizeof *found);
  if (!li->ptrs || !words || !found) goto out;
  for (size_t i = 0; i < nwords; i++)
    memcpy(&words[i], li->param_buf + 8 * i, 8);
  kc_allocmap_find_many(words, nwords, found);
  for (size_t i = 0; i < nwords; i++) {
    uint64_t w = words[i];
    /* Small integers (sizes, strides, flags) are never device addresses. */
    if (w < 0x10000) continue;
    struct kc_ptr *p = &li->ptrs[li->nptrs];
    if (found[i].size) {
      *p = (struct kc_ptr){(uint32_t)(8 * i), w, found[i].base, found[i].size, 0};
      li->nptrs++;
      continue;
    }
    /* Fallback for memory allocated before kcheck was loaded or through an
     * entry it does not hook: a driver query, so only for words that look
     * like addresses (a parameter struct holds many that do not). */
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!kc_addr_like(w) || !kc_drv.cuMemGetAddressRange_v2) continue;
    unsigned slot = not_device_slot(w);
    if (remember_misses && atomic_load_explicit(&not_device[slot], memory_order_relaxed) == w)
      continue;
    KC_PROF_CALL(cuMemGetAddressRange_v2);
    if (kc_drv.cuMemGetAddressRange_v2(&base, &size, (CUdeviceptr)w) == CUDA_SUCCESS && size) {
      if (kc_own_contains(base)) continue;
      *p = (struct kc_ptr){(uint32_t)(8 * i), w, base, size, 1};
      li->nptrs++;
    } else if (remember_misses) {
      atomic_store_explicit(&not_device[slot], w, memory_order_relaxed);
    }
  }
out:
  if (words != wstack) free(words);
  if (found != astack) free(found);
}

void kc_capture_free(struct kc_launch_info *li) {
  free(li->param_buf);
  free(li->ptrs);
  li->param_buf = NULL;
  li->ptrs = NULL;
}

json_t *kc_launch_json(const struct kc_launch_info *li) {
  json_t *ptrs = json_array();
  for (int i = 0; i < li->nptrs; i++) {
    const struct kc_ptr *p = &li->ptrs[i];
    json_array_append_new(ptrs, json_pack("{s:i, s:o, s:o, s:I, s:I, s:s}", "offset",
                                          (int)p->offset, "value", kc_json_addr(p->value), "base",
                                          kc_json_addr(p->base), "alloc_size", (json_int_t)p->size,
                                          "alloc_offset", (json_int_t)(p->value - p->base),
                                          "resolved_by", p->from_driver ? "driver" : "map"));
  }
  json_t *attrs = json_array();
  for (int i = 0; i < li->nattrs; i++)
    json_array_append_new(attrs, json_pack("{s:i}", "id", (int)li->attrs[i].id));
  /* Parameter bytes as hex: small kernels' full arguments, for replay. */
  json_t *bytes = json_null();
  if (li->param_buf && li->param_size <= 4096) {
    char *hex = malloc(2 * li->param_size + 1);
    if (hex) {
      for (size_t i = 0; i < li->param_size; i++)
        snprintf(hex + 2 * i, 3, "%02x", li->param_buf[i]);
      hex[2 * li->param_size] = 0;
      bytes = json_string(hex);
      free(hex);
    }
  }
  return json_pack(
      "{s:I, s:i, s:s, s:b, s:[iii], s:[iii], s:i, s:o, s:s, s:I, s:o, s:o, s:o}", "launch",
      (json_int_t)li->seq, "kernel", li->k->id, "entry", kc_launch_entry_names[li->args->entry],
      "ptsz", li->args->ptsz, "grid", li->grid[0], li->grid[1], li->grid[2], "block", li->block[0],
      li->block[1], li->block[2], "shmem", li->shmem, "stream",
      kc_json_addr((uint64_t)(uintptr_t)li->stream), "param_form", li->param_form, "param_size",
      (json_int_t)li->param_size, "param_bytes", bytes, "pointers", ptrs, "attributes", attrs);
}
