/* test/fakecuda/fakecuda_array.c — the stand-in's CUDA arrays (host memory
 * behind a handle; 1D copies by byte offset, as the driver allows for 1D
 * arrays) and its batch copies (cuMemcpyBatchAsync, cuMemcpy3DBatchAsync in
 * their 12.8 and 13.0 forms), all as 1D copy nodes on the stream. The 3D
 * batch is exact for pointer-to-pointer copies (elements of 1 byte, as in
 * the driver); an array operand is addressed by a byte offset x, where the
 * driver counts elements of the array's format. */
#include <cuda.h>
#include <stdlib.h>

#include "fakecuda_int.h"

#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync

#define FK_MAGIC_ARRAY 0x41525259

struct fk_array {
  unsigned magic;
  size_t bytes;
  unsigned char *data;
};

static struct fk_array *array_of(CUarray a) {
  struct fk_array *x = (struct fk_array *)a;
  return x && x->magic == FK_MAGIC_ARRAY ? x : NULL;
}

static size_t format_bytes(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8: return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF: return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32:
  case CU_AD_FORMAT_SIGNED_INT32:
  case CU_AD_FORMAT_FLOAT: return 4;
  default: return 0;
  }
}

CUresult cuArrayCreate_v2(CUarray *out, const CUDA_ARRAY_DESCRIPTOR *d) {
  FK_ENTER("cuArrayCreate_v2");
  if (!out || !d || !d->Width || d->NumChannels < 1 || d->NumChannels > 4)
    return CUDA_ERROR_INVALID_VALUE;
  size_t elem = format_bytes(d->Format) * d->NumChannels;
  if (!elem) return CUDA_ERROR_INVALID_VALUE;
  struct fk_array *a = calloc(1, sizeof *a);
  if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
  a->bytes = d->Width * (d->Height ? d->Height : 1) * elem;
  a->data = calloc(1, a->bytes);
  if (!a->data) {
    free(a);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  a->magic = FK_MAGIC_ARRAY;
  *out = (CUarray)a;
  return CUDA_SUCCESS;
}

CUresult cuArrayDestroy(CUarray h) {
  FK_ENTER("cuArrayDestroy");
  struct fk_array *a = array_of(h);
  if (!a) return CUDA_ERROR_INVALID_HANDLE;
  a->magic = FK_MAGIC_DEAD;
  free(a->data);
  free(a);
  return CUDA_SUCCESS;
}

/* A byte range of an array as a host pointer, or NULL when out of range. */
static unsigned char *array_at(CUarray h, size_t off, size_t n) {
  struct fk_array *a = array_of(h);
  if (!a || off > a->bytes || n > a->bytes - off) return NULL;
  return a->data + off;
}

/* One copy: each side a device pointer or a host address (unified). */
static CUresult copy1(CUdeviceptr d, void *hd, CUdeviceptr s, const void *hs, size_t n, int async,
                      int ptds, CUstream st) {
  struct fk_node x = {.kind = FK_NODE_MEMCPY, .count = n};
  if (hd)
    x.host_dst = hd;
  else if (fk_mem_is_device(d))
    x.dst = d;
  else
    x.host_dst = (void *)d;
  if (hs)
    x.host_src = hs;
  else if (fk_mem_is_device(s))
    x.src = s;
  else
    x.host_src = (const void *)s;
  return async ? fk_memop_async(&x, st) : fk_memop_sync(&x, ptds);
}

#define PT(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

/* ---- copies to and from arrays ------------------------------------------ */

static CUresult dtoa(CUarray a, size_t off, CUdeviceptr s, size_t n, int ptds) {
  unsigned char *p = array_at(a, off, n);
  return p ? copy1(0, p, s, NULL, n, 0, ptds, NULL) : CUDA_ERROR_INVALID_VALUE;
}
static CUresult atod(CUdeviceptr d, CUarray a, size_t off, size_t n, int ptds) {
  unsigned char *p = array_at(a, off, n);
  return p ? copy1(d, NULL, 0, p, n, 0, ptds, NULL) : CUDA_ERROR_INVALID_VALUE;
}
static CUresult htoa(CUarray a, size_t off, const void *s, size_t n, int async, int ptds,
                     CUstream st) {
  unsigned char *p = array_at(a, off, n);
  return p && s ? copy1(0, p, 0, s, n, async, ptds, st) : CUDA_ERROR_INVALID_VALUE;
}
static CUresult atoh(void *d, CUarray a, size_t off, size_t n, int async, int ptds, CUstream st) {
  unsigned char *p = array_at(a, off, n);
  return p && d ? copy1(0, d, 0, p, n, async, ptds, st) : CUDA_ERROR_INVALID_VALUE;
}
static CUresult atoa(CUarray d, size_t doff, CUarray s, size_t soff, size_t n, int ptds) {
  unsigned char *pd = array_at(d, doff, n), *ps = array_at(s, soff, n);
  return pd && ps ? copy1(0, pd, 0, ps, n, 0, ptds, NULL) : CUDA_ERROR_INVALID_VALUE;
}

#define PTDS_PAIR(name, params, call0, call1)                                                      \
  CUresult name params {                                                                           \
    FK_ENTER(#name);                                                                               \
    return call0;                                                                                  \
  }                                                                                                \
  CUresult name##_ptds params;                                                                     \
  CUresult name##_ptds params {                                                                    \
    FK_ENTER(#name "_ptds");                                                                       \
    return call1;                                                                                  \
  }
PTDS_PAIR(cuMemcpyDtoA_v2, (CUarray a, size_t off, CUdeviceptr s, size_t n), dtoa(a, off, s, n, 0),
          dtoa(a, off, s, n, 1))
PTDS_PAIR(cuMemcpyAtoD_v2, (CUdeviceptr d, CUarray a, size_t off, size_t n), atod(d, a, off, n, 0),
          atod(d, a, off, n, 1))
PTDS_PAIR(cuMemcpyHtoA_v2, (CUarray a, size_t off, const void *s, size_t n),
          htoa(a, off, s, n, 0, 0, NULL), htoa(a, off, s, n, 0, 1, NULL))
PTDS_PAIR(cuMemcpyAtoH_v2, (void *d, CUarray a, size_t off, size_t n),
          atoh(d, a, off, n, 0, 0, NULL), atoh(d, a, off, n, 0, 1, NULL))
PTDS_PAIR(cuMemcpyAtoA_v2, (CUarray d, size_t doff, CUarray s, size_t soff, size_t n),
          atoa(d, doff, s, soff, n, 0), atoa(d, doff, s, soff, n, 1))

CUresult cuMemcpyHtoAAsync_v2(CUarray a, size_t off, const void *s, size_t n, CUstream st) {
  FK_ENTER("cuMemcpyHtoAAsync_v2");
  return htoa(a, off, s, n, 1, 0, st);
}
CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray a, size_t off, const void *s, size_t n, CUstream st);
CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray a, size_t off, const void *s, size_t n, CUstream st) {
  FK_ENTER("cuMemcpyHtoAAsync_v2_ptsz");
  return htoa(a, off, s, n, 1, 0, PT(st));
}
CUresult cuMemcpyAtoHAsync_v2(void *d, CUarray a, size_t off, size_t n, CUstream st) {
  FK_ENTER("cuMemcpyAtoHAsync_v2");
  return atoh(d, a, off, n, 1, 0, st);
}
CUresult cuMemcpyAtoHAsync_v2_ptsz(void *d, CUarray a, size_t off, size_t n, CUstream st);
CUresult cuMemcpyAtoHAsync_v2_ptsz(void *d, CUarray a, size_t off, size_t n, CUstream st) {
  FK_ENTER("cuMemcpyAtoHAsync_v2_ptsz");
  return atoh(d, a, off, n, 1, 0, PT(st));
}

/* ---- batch copies ---------------------------------------------------------- */

/* As the driver: no legacy or per-thread NULL stream, attributes given,
 * every copy issued in order; *fail gets the failing copy's index. */
static CUresult batch(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                      CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail,
                      CUstream st) {
  if (fail) *fail = SIZE_MAX;
  if (!st || st == CU_STREAM_LEGACY || !d || !s || !sizes || !count || !attrs || !idxs || !nattrs)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; i++) {
    CUresult rc = copy1(d[i], NULL, s[i], NULL, sizes[i], 1, 0, st);
    if (rc != CUDA_SUCCESS) {
      if (fail) *fail = i;
      return rc;
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemcpyBatchAsync(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                            CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail,
                            CUstream st);
CUresult cuMemcpyBatchAsync(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                            CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs, size_t *fail,
                            CUstream st) {
  FK_ENTER("cuMemcpyBatchAsync");
  return batch(d, s, sizes, count, attrs, idxs, nattrs, fail, st);
}
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                                 CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                                 size_t *fail, CUstream st);
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                                 CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                                 size_t *fail, CUstream st) {
  FK_ENTER("cuMemcpyBatchAsync_ptsz");
  return batch(d, s, sizes, count, attrs, idxs, nattrs, fail, st);
}
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                               CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                               CUstream st) {
  FK_ENTER("cuMemcpyBatchAsync_v2");
  return batch(d, s, sizes, count, attrs, idxs, nattrs, NULL, st);
}
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                                    CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                                    CUstream st);
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t count,
                                    CUmemcpyAttributes *attrs, size_t *idxs, size_t nattrs,
                                    CUstream st) {
  FK_ENTER("cuMemcpyBatchAsync_v2_ptsz");
  return batch(d, s, sizes, count, attrs, idxs, nattrs, NULL, st);
}

/* Base address of a 3D operand (array: its bytes from offset x). */
static int operand(const CUmemcpy3DOperand *o, CUdeviceptr *dev, unsigned char **host, size_t *row,
                   size_t *layer, size_t width, size_t height) {
  *dev = 0, *host = NULL;
  if (o->type == CU_MEMCPY_OPERAND_TYPE_POINTER) {
    *dev = o->op.ptr.ptr;
    *row = o->op.ptr.rowLength ? o->op.ptr.rowLength : width;
    *layer = *row * (o->op.ptr.layerHeight ? o->op.ptr.layerHeight : height);
    return *dev ? 0 : -1;
  }
  if (o->type != CU_MEMCPY_OPERAND_TYPE_ARRAY || o->op.array.offset.y || o->op.array.offset.z)
    return -1;
  *host = array_at(o->op.array.array, o->op.array.offset.x, width * height);
  *row = width, *layer = width * height;
  return *host ? 0 : -1;
}

static CUresult batch3d(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail, CUstream st) {
  if (fail) *fail = SIZE_MAX;
  if (!st || st == CU_STREAM_LEGACY || !ops || !nops) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < nops; i++) {
    const CUDA_MEMCPY3D_BATCH_OP *o = &ops[i];
    size_t w = o->extent.width, h = o->extent.height, dz = o->extent.depth;
    CUdeviceptr sd, dd;
    unsigned char *sh, *dh;
    size_t srow, slayer, drow, dlayer;
    CUresult rc = CUDA_SUCCESS;
    if (!w || !h || !dz || operand(&o->src, &sd, &sh, &srow, &slayer, w, h) ||
        operand(&o->dst, &dd, &dh, &drow, &dlayer, w, h))
      rc = CUDA_ERROR_INVALID_VALUE;
    for (size_t z = 0; rc == CUDA_SUCCESS && z < dz; z++)
      for (size_t y = 0; rc == CUDA_SUCCESS && y < h; y++) {
        size_t so = z * slayer + y * srow, dof = z * dlayer + y * drow;
        rc = copy1(dh ? 0 : dd + dof, dh ? dh + dof : NULL, sh ? 0 : sd + so, sh ? sh + so : NULL,
                   w, 1, 0, st);
      }
    if (rc != CUDA_SUCCESS) {
      if (fail) *fail = i;
      return rc;
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuMemcpy3DBatchAsync(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                              unsigned long long flags, CUstream st);
CUresult cuMemcpy3DBatchAsync(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                              unsigned long long flags, CUstream st) {
  FK_ENTER("cuMemcpy3DBatchAsync");
  return flags ? CUDA_ERROR_INVALID_VALUE : batch3d(nops, ops, fail, st);
}
CUresult cuMemcpy3DBatchAsync_ptsz(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                   unsigned long long flags, CUstream st);
CUresult cuMemcpy3DBatchAsync_ptsz(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail,
                                   unsigned long long flags, CUstream st) {
  FK_ENTER("cuMemcpy3DBatchAsync_ptsz");
  return flags ? CUDA_ERROR_INVALID_VALUE : batch3d(nops, ops, fail, st);
}
CUresult cuMemcpy3DBatchAsync_v2(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops, unsigned long long flags,
                                 CUstream st) {
  FK_ENTER("cuMemcpy3DBatchAsync_v2");
  return flags ? CUDA_ERROR_INVALID_VALUE : batch3d(nops, ops, NULL, st);
}
CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops,
                                      unsigned long long flags, CUstream st);
CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t nops, CUDA_MEMCPY3D_BATCH_OP *ops,
                                      unsigned long long flags, CUstream st) {
  FK_ENTER("cuMemcpy3DBatchAsync_v2_ptsz");
  return flags ? CUDA_ERROR_INVALID_VALUE : batch3d(nops, ops, NULL, st);
}
