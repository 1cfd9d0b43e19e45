/* test/fakecuda/fakecuda_mem.c — device memory of the CPU stand-in driver.
 * One large PROT_NONE reservation at a high address supplies every device
 * pointer, so device pointers look like device pointers, never alias malloc'd
 * host memory, and a freed or unmapped range faults when touched. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakecuda_int.h"

#define PAGE 4096ull
#define VMM_GRAN (2ull << 20)
#define RESERVE_HINT ((void *)0x600000000000ull)

enum { R_ALLOC = 1, R_RESERVE = 2 };

/* One range of the reservation in use: an allocation (plus one guard page
 * after it, never made accessible) or a VMM address reservation. */
struct range {
  CUdeviceptr base;
  size_t size; /* bytes asked for */
  size_t span; /* bytes taken from the reservation, guard included */
  int what;    /* R_ALLOC or R_RESERVE */
  int kind;    /* FK_MEM_* for allocations */
  struct fk_ctx *ctx;
  unsigned long long id;
};

/* Physical memory of cuMemCreate: a memfd so it can be mapped anywhere. */
struct phys {
  int fd;
  size_t size;
  int mappings;
  int released;
};

/* One cuMemMap of a piece of phys into a reservation. */
struct mapping {
  CUdeviceptr va;
  size_t size;
  struct phys *ph;
  int access; /* set by cuMemSetAccess */
};

static struct {
  pthread_mutex_t lock;
  unsigned char *base;
  size_t size;
  size_t used;
  struct range *r; /* sorted by base */
  size_t nr, capr;
  struct mapping *m;
  size_t nm, capm;
  unsigned long long next_id;
  unsigned long long allocs, alloc_bytes; /* fk_mem_counts */
} mem = {.lock = PTHREAD_MUTEX_INITIALIZER};

void fk_mem_init(void) {
  pthread_mutex_lock(&mem.lock);
  if (mem.base == NULL) {
    const char *e = getenv("FAKECUDA_MEM_GB");
    unsigned long gb = e ? strtoul(e, NULL, 10) : 16;
    if (gb == 0 || gb > 1024) gb = 16;
    mem.size = (size_t)gb << 30;
    void *p =
        mmap(RESERVE_HINT, mem.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      fprintf(stderr, "fakecuda: cannot reserve %lu GiB of device address space: %s\n", gb,
              strerror(errno));
      mem.size = 0;
    } else {
      mem.base = p;
    }
  }
  pthread_mutex_unlock(&mem.lock);
}

size_t fk_mem_total(void) {
  fk_mem_init();
  return mem.size;
}

void fk_mem_counts(unsigned long long *count, unsigned long long *bytes) {
  pthread_mutex_lock(&mem.lock);
  *count = mem.allocs;
  *bytes = mem.alloc_bytes;
  pthread_mutex_unlock(&mem.lock);
}

static size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

/* Index of the first range with base > p. */
static size_t upper(CUdeviceptr p) {
  size_t lo = 0, hi = mem.nr;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (mem.r[mid].base <= p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The range containing p (within its span), or NULL. */
static struct range *find_range(CUdeviceptr p) {
  size_t i = upper(p);
  if (i == 0) return NULL;
  struct range *r = &mem.r[i - 1];
  return p < r->base + r->span ? r : NULL;
}

static struct mapping *find_mapping(CUdeviceptr p) {
  for (size_t i = 0; i < mem.nm; i++)
    if (p >= mem.m[i].va && p < mem.m[i].va + mem.m[i].size) return &mem.m[i];
  return NULL;
}

/* First fit over the gaps between ranges. Returns 0 when nothing fits. */
static CUdeviceptr place(size_t span, size_t align) {
  CUdeviceptr lo = (CUdeviceptr)mem.base, end = lo + mem.size;
  for (size_t i = 0; i <= mem.nr; i++) {
    CUdeviceptr cand = round_up(lo, align);
    CUdeviceptr gap_end = i < mem.nr ? mem.r[i].base : end;
    if (cand + span <= gap_end) return cand;
    if (i < mem.nr) lo = mem.r[i].base + mem.r[i].span;
  }
  return 0;
}

static int insert(const struct range *nr) {
  if (mem.nr == mem.capr) {
    size_t cap = mem.capr ? 2 * mem.capr : 64;
    struct range *r = realloc(mem.r, cap * sizeof *r);
    if (r == NULL) return -1;
    mem.r = r;
    mem.capr = cap;
  }
  size_t i = upper(nr->base);
  memmove(&mem.r[i + 1], &mem.r[i], (mem.nr - i) * sizeof *mem.r);
  mem.r[i] = *nr;
  mem.nr++;
  return 0;
}

static void drop(struct range *r) {
  size_t i = (size_t)(r - mem.r);
  memmove(&mem.r[i], &mem.r[i + 1], (mem.nr - i - 1) * sizeof *mem.r);
  mem.nr--;
}

/* Gives pages back and makes them fault again. */
static void decommit(CUdeviceptr p, size_t n) {
  void *q =
      mmap((void *)p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  (void)q;
}

CUresult fk_mem_alloc(CUdeviceptr *out, size_t bytes, int kind) {
  /* As on the device, allocating needs a current context. */
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (out == NULL || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (mem.base == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t body = round_up(bytes, PAGE);
  size_t align = body >= VMM_GRAN ? VMM_GRAN : PAGE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  CUdeviceptr p = place(body + PAGE, align);
  if (p == 0 || mprotect((void *)p, body, PROT_READ | PROT_WRITE) != 0) {
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    struct range r = {.base = p,
                      .size = bytes,
                      .span = body + PAGE,
                      .what = R_ALLOC,
                      .kind = kind,
                      .ctx = fk_current_ctx(),
                      .id = ++mem.next_id};
    if (insert(&r) != 0) {
      decommit(p, body);
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      mem.used += body;
      mem.allocs++;
      mem.alloc_bytes += bytes;
      *out = p;
    }
  }
  pthread_mutex_unlock(&mem.lock);
  return rc;
}

CUresult fk_mem_free(CUdeviceptr p) {
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  struct range *r = find_range(p);
  if (r == NULL || r->what != R_ALLOC || r->base != p) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    size_t body = r->span - PAGE;
    decommit(r->base, body);
    mem.used -= body;
    drop(r);
  }
  pthread_mutex_unlock(&mem.lock);
  return rc;
}

int fk_mem_is_device(CUdeviceptr p) {
  return mem.base != NULL && p >= (CUdeviceptr)mem.base && p < (CUdeviceptr)mem.base + mem.size;
}

int fk_mem_valid(CUdeviceptr p, size_t n) {
  int ok = 0;
  if (n == 0) return 1;
  if (p + n < p) return 0;
  pthread_mutex_lock(&mem.lock);
  struct range *r = find_range(p);
  if (r != NULL && r->what == R_ALLOC) {
    ok = p + n <= r->base + r->size;
  } else if (r != NULL) {
    /* VMM: every byte must be mapped with access set. */
    CUdeviceptr q = p;
    ok = 1;
    while (q < p + n) {
      struct mapping *m = find_mapping(q);
      if (m == NULL || !m->access) {
        ok = 0;
        break;
      }
      q = m->va + m->size;
    }
  }
  pthread_mutex_unlock(&mem.lock);
  return ok;
}

/* ---------------------------------------------------------------- entries */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  FK_ENTER("cuMemAlloc_v2");
  return fk_mem_alloc(dptr, bytesize, FK_MEM_DEVICE);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                            unsigned elem) {
  FK_ENTER("cuMemAllocPitch_v2");
  if (pitch == NULL || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
    return CUDA_ERROR_INVALID_VALUE;
  size_t p = round_up(width, 512);
  CUresult rc = fk_mem_alloc(dptr, p * height, FK_MEM_DEVICE);
  if (rc == CUDA_SUCCESS) *pitch = p;
  return rc;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned flags) {
  FK_ENTER("cuMemAllocManaged");
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return fk_mem_alloc(dptr, bytesize, FK_MEM_MANAGED);
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  FK_ENTER("cuMemFree_v2");
  if (dptr == 0) return CUDA_SUCCESS;
  return fk_mem_free(dptr);
}

/* Stream-ordered allocation completes at once: launches are synchronous. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream s) {
  struct fk_stream *st;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(s, &st, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  return fk_mem_alloc(dptr, bytes, FK_MEM_ASYNC);
}

static CUresult free_async(CUdeviceptr dptr, CUstream s) {
  struct fk_stream *st;
  struct fk_ctx *ctx;
  CUresult rc = fk_resolve_stream(s, &st, &ctx);
  if (rc != CUDA_SUCCESS) return rc;
  return fk_mem_free(dptr);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream s) {
  FK_ENTER("cuMemAllocAsync");
  return alloc_async(dptr, bytes, s);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUstream s) {
  FK_ENTER("cuMemAllocAsync_ptsz");
  return alloc_async(dptr, bytes, s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool, CUstream s) {
  FK_ENTER("cuMemAllocFromPoolAsync");
  (void)pool;
  return alloc_async(dptr, bytes, s);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
                                      CUstream s) {
  FK_ENTER("cuMemAllocFromPoolAsync_ptsz");
  (void)pool;
  return alloc_async(dptr, bytes, s ? s : CU_STREAM_PER_THREAD);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  FK_ENTER("cuMemFreeAsync");
  return free_async(dptr, s);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) {
  FK_ENTER("cuMemFreeAsync_ptsz");
  return free_async(dptr, s ? s : CU_STREAM_PER_THREAD);
}

CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total) {
  FK_ENTER("cuMemGetInfo_v2");
  if (free_b == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (fk_current_ctx() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  pthread_mutex_lock(&mem.lock);
  *total = mem.size;
  *free_b = mem.size - mem.used;
  pthread_mutex_unlock(&mem.lock);
  return CUDA_SUCCESS;
}

/* Allocations give their own extent; a VMM address gives the one mapping
 * (cuMemMap piece) it lies in, as the real driver gives one chunk. */
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  FK_ENTER("cuMemGetAddressRange_v2");
  CUresult rc = CUDA_ERROR_NOT_FOUND;
  CUdeviceptr b = 0;
  size_t sz = 0;
  pthread_mutex_lock(&mem.lock);
  struct range *r = find_range(dptr);
  if (r != NULL && r->what == R_ALLOC && dptr < r->base + r->size) {
    b = r->base;
    sz = r->size;
    rc = CUDA_SUCCESS;
  } else if (r != NULL && r->what == R_RESERVE) {
    struct mapping *m = find_mapping(dptr);
    if (m != NULL) {
      b = m->va;
      sz = m->size;
      rc = CUDA_SUCCESS;
    }
  }
  pthread_mutex_unlock(&mem.lock);
  if (rc == CUDA_SUCCESS) {
    if (pbase) *pbase = b;
    if (psize) *psize = sz;
  }
  return rc;
}

static CUresult pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr) {
  if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  struct range *r = find_range(ptr);
  struct mapping *m = NULL;
  if (r != NULL && r->what == R_ALLOC && ptr >= r->base + r->size) r = NULL;
  if (r != NULL && r->what == R_RESERVE) {
    m = find_mapping(ptr);
    if (m == NULL) r = NULL;
  }
  if (r == NULL) {
    pthread_mutex_unlock(&mem.lock);
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct fk_ctx *ctx = r->ctx ? r->ctx : &fk_g.primary;
  switch (attr) {
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = (CUcontext)ctx; break;
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = CU_MEMORYTYPE_DEVICE; break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    if (r->kind == FK_MEM_MANAGED)
      *(void **)data = (void *)ptr;
    else
      rc = CUDA_ERROR_INVALID_VALUE;
    break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned *)data = r->kind == FK_MEM_MANAGED; break;
  case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = r->id; break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = r->base; break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = r->size; break;
  case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned *)data = 1; break;
  case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *(unsigned *)data = 1; break;
  case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    *(unsigned *)data = r->what == R_ALLOC && r->kind == FK_MEM_DEVICE;
    break;
  case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    *(unsigned *)data = CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
    break;
  default: rc = CUDA_ERROR_NOT_SUPPORTED; break;
  }
  pthread_mutex_unlock(&mem.lock);
  return rc;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  FK_ENTER("cuPointerGetAttribute");
  return pointer_attr(data, attribute, ptr);
}

/* Attributes of a non-device pointer read as "unregistered host memory"
 * (zeros, memory type 0) rather than failing, as the real entry does. */
CUresult cuPointerGetAttributes(unsigned n, CUpointer_attribute *attrs, void **data,
                                CUdeviceptr ptr) {
  FK_ENTER("cuPointerGetAttributes");
  if (attrs == NULL || data == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++) {
    if (data[i] == NULL) continue;
    if (pointer_attr(data[i], attrs[i], ptr) != CUDA_SUCCESS) {
      switch (attrs[i]) {
      case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data[i] = NULL; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data[i] = 0; break;
      case CU_POINTER_ATTRIBUTE_HOST_POINTER: *(void **)data[i] = NULL; break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data[i] = 0; break;
      case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data[i] = 0; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data[i] = -2; break;
      default: *(unsigned *)data[i] = 0; break;
      }
    }
  }
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------ VMM (cuMem*) subset */

CUresult cuMemGetAllocationGranularity(size_t *gran, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option) {
  FK_ENTER("cuMemGetAllocationGranularity");
  (void)option;
  if (gran == NULL || prop == NULL) return CUDA_ERROR_INVALID_VALUE;
  *gran = VMM_GRAN;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  FK_ENTER("cuMemAddressReserve");
  (void)addr;
  (void)flags;
  if (ptr == NULL || size == 0 || size % VMM_GRAN) return CUDA_ERROR_INVALID_VALUE;
  if (alignment < VMM_GRAN) alignment = VMM_GRAN;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  CUdeviceptr p = place(size + VMM_GRAN, alignment);
  struct range r = {.base = p,
                    .size = size,
                    .span = size + VMM_GRAN,
                    .what = R_RESERVE,
                    .ctx = fk_current_ctx(),
                    .id = ++mem.next_id};
  if (p == 0 || insert(&r) != 0)
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  else
    *ptr = p;
  pthread_mutex_unlock(&mem.lock);
  return rc;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  FK_ENTER("cuMemAddressFree");
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  struct range *r = find_range(ptr);
  if (r == NULL || r->what != R_RESERVE || r->base != ptr || r->size != size) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    for (size_t i = 0; i < mem.nm; i++)
      if (mem.m[i].va >= ptr && mem.m[i].va < ptr + size) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) drop(r);
  }
  pthread_mutex_unlock(&mem.lock);
  return rc;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags) {
  FK_ENTER("cuMemCreate");
  (void)flags;
  if (handle == NULL || prop == NULL || size == 0 || size % VMM_GRAN)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id != 0)
    return CUDA_ERROR_INVALID_VALUE;
  struct phys *ph = calloc(1, sizeof *ph);
  if (ph == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  ph->fd = memfd_create("fakecuda-vmm", MFD_CLOEXEC);
  if (ph->fd < 0 || ftruncate(ph->fd, (off_t)size) != 0) {
    if (ph->fd >= 0) close(ph->fd);
    free(ph);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  ph->size = size;
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
  return CUDA_SUCCESS;
}

static void phys_maybe_free(struct phys *ph) {
  if (ph->released && ph->mappings == 0) {
    close(ph->fd);
    free(ph);
  }
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  FK_ENTER("cuMemRelease");
  struct phys *ph = (struct phys *)(uintptr_t)handle;
  if (ph == NULL || ph->released) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mem.lock);
  ph->released = 1;
  phys_maybe_free(ph);
  pthread_mutex_unlock(&mem.lock);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  FK_ENTER("cuMemMap");
  struct phys *ph = (struct phys *)(uintptr_t)handle;
  if (ph == NULL || flags != 0 || size == 0 || size % VMM_GRAN || offset % VMM_GRAN ||
      offset + size > ph->size)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  struct range *r = find_range(ptr);
  if (r == NULL || r->what != R_RESERVE || ptr + size > r->base + r->size) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    for (size_t i = 0; i < mem.nm; i++)
      if (ptr < mem.m[i].va + mem.m[i].size && mem.m[i].va < ptr + size)
        rc = CUDA_ERROR_INVALID_VALUE; /* already mapped */
  }
  if (rc == CUDA_SUCCESS && mem.nm == mem.capm) {
    size_t cap = mem.capm ? 2 * mem.capm : 16;
    struct mapping *m = realloc(mem.m, cap * sizeof *m);
    if (m == NULL)
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
      mem.m = m;
      mem.capm = cap;
    }
  }
  if (rc == CUDA_SUCCESS) {
    /* Mapped without access until cuMemSetAccess, as on the device. */
    void *q = mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->fd, (off_t)offset);
    if (q == MAP_FAILED) {
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      mem.m[mem.nm++] = (struct mapping){.va = ptr, .size = size, .ph = ph};
      ph->mappings++;
      mem.used += size;
    }
  }
  pthread_mutex_unlock(&mem.lock);
  return rc;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  FK_ENTER("cuMemUnmap");
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  struct range *r = find_range(ptr);
  if (r == NULL || r->what != R_RESERVE || size == 0 || ptr + size > r->base + r->size) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    /* Only whole mappings inside [ptr, ptr+size) may be unmapped. */
    for (size_t i = 0; i < mem.nm; i++) {
      struct mapping *m = &mem.m[i];
      int overlap = ptr < m->va + m->size && m->va < ptr + size;
      if (overlap && (m->va < ptr || m->va + m->size > ptr + size)) rc = CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; rc == CUDA_SUCCESS && i < mem.nm;) {
      struct mapping *m = &mem.m[i];
      if (m->va >= ptr && m->va + m->size <= ptr + size) {
        decommit(m->va, m->size);
        mem.used -= m->size;
        m->ph->mappings--;
        phys_maybe_free(m->ph);
        mem.m[i] = mem.m[--mem.nm];
      } else {
        i++;
      }
    }
  }
  pthread_mutex_unlock(&mem.lock);
  return rc;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  FK_ENTER("cuMemSetAccess");
  if (desc == NULL || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
  int prot = PROT_NONE, acc = 0;
  for (size_t i = 0; i < count; i++) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id != 0)
      return CUDA_ERROR_INVALID_DEVICE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
      prot = PROT_READ | PROT_WRITE;
      acc = 1;
    } else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ) {
      /* Kernels here run on the CPU and may not be read-only-aware: keep
       * the range readable and writable but remember the grant. */
      prot = PROT_READ | PROT_WRITE;
      acc = 1;
    }
  }
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&mem.lock);
  CUdeviceptr q = ptr;
  while (q < ptr + size) {
    struct mapping *m = find_mapping(q);
    if (m == NULL) {
      rc = CUDA_ERROR_INVALID_VALUE;
      break;
    }
    q = m->va + m->size;
  }
  if (rc == CUDA_SUCCESS) {
    for (size_t i = 0; i < mem.nm; i++) {
      struct mapping *m = &mem.m[i];
      if (m->va >= ptr && m->va < ptr + size) {
        mprotect((void *)m->va, m->size, prot);
        m->access = acc;
      }
    }
  }
  pthread_mutex_unlock(&mem.lock);
  return rc;
}
