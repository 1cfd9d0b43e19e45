/* test/fakecuda/fakecuda_copy2d.c — the stand-in's pitched (2D), 3D, peer
 * and 2D memset entries, row by row over the 1D copy and memset nodes (so a
 * capture records one node per row). Linear memory only: CUDA arrays are
 * CUDA_ERROR_NOT_SUPPORTED (the stand-in has none). Peer copies ignore the
 * contexts (one device). */
#include <cuda.h>

#include "fakecuda_int.h"

/* One side of a copy: a device or host base address. -1 for arrays. */
static int side(CUmemorytype t, const void *host, CUdeviceptr dev, CUdeviceptr *d, char **h) {
  *d = 0, *h = NULL;
  switch (t) {
  case CU_MEMORYTYPE_HOST: *h = (char *)host; return 0;
  case CU_MEMORYTYPE_DEVICE: *d = dev; return 0;
  case CU_MEMORYTYPE_UNIFIED:
    if (fk_mem_is_device(dev))
      *d = dev;
    else
      *h = (char *)dev;
    return 0;
  default: return -1;
  }
}

/* width bytes x height rows x depth slices; pitch and slice stride per side. */
struct box {
  CUdeviceptr sd, dd;
  char *sh, *dh;
  size_t soff, spitch, sslice, doff, dpitch, dslice, width, height, depth;
};

static CUresult run_box(const struct box *b, int async, int ptds, CUstream s) {
  for (size_t z = 0; z < b->depth; z++)
    for (size_t y = 0; y < b->height; y++) {
      size_t so = b->soff + z * b->sslice + y * b->spitch,
             dof = b->doff + z * b->dslice + y * b->dpitch;
      struct fk_node n = {.kind = FK_NODE_MEMCPY, .count = b->width};
      if (b->sd)
        n.src = b->sd + so;
      else
        n.host_src = b->sh + so;
      if (b->dd)
        n.dst = b->dd + dof;
      else
        n.host_dst = b->dh + dof;
      CUresult rc = async ? fk_memop_async(&n, s) : fk_memop_sync(&n, ptds);
      if (rc != CUDA_SUCCESS) return rc;
    }
  return CUDA_SUCCESS;
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, int async, int ptds, CUstream s) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  struct box b = {.soff = p->srcXInBytes + p->srcY * p->srcPitch,
                  .spitch = p->srcPitch,
                  .doff = p->dstXInBytes + p->dstY * p->dstPitch,
                  .dpitch = p->dstPitch,
                  .width = p->WidthInBytes,
                  .height = p->Height,
                  .depth = 1};
  if (side(p->srcMemoryType, p->srcHost, p->srcDevice, &b.sd, &b.sh) ||
      side(p->dstMemoryType, p->dstHost, p->dstDevice, &b.dd, &b.dh))
    return CUDA_ERROR_NOT_SUPPORTED;
  if ((p->Height > 1 && (p->srcPitch < p->WidthInBytes || p->dstPitch < p->WidthInBytes)))
    return CUDA_ERROR_INVALID_VALUE;
  return run_box(&b, async, ptds, s);
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, int async, int ptds, CUstream s) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  size_t sslice = p->srcPitch * p->srcHeight, dslice = p->dstPitch * p->dstHeight;
  struct box b = {.soff = p->srcXInBytes + p->srcY * p->srcPitch + p->srcZ * sslice,
                  .spitch = p->srcPitch,
                  .sslice = sslice,
                  .doff = p->dstXInBytes + p->dstY * p->dstPitch + p->dstZ * dslice,
                  .dpitch = p->dstPitch,
                  .dslice = dslice,
                  .width = p->WidthInBytes,
                  .height = p->Height,
                  .depth = p->Depth};
  if (side(p->srcMemoryType, p->srcHost, p->srcDevice, &b.sd, &b.sh) ||
      side(p->dstMemoryType, p->dstHost, p->dstDevice, &b.dd, &b.dh))
    return CUDA_ERROR_NOT_SUPPORTED;
  return run_box(&b, async, ptds, s);
}

static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *p, int async, int ptds, CUstream s) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUDA_MEMCPY3D q = {0};
  q.srcXInBytes = p->srcXInBytes, q.srcY = p->srcY, q.srcZ = p->srcZ, q.srcLOD = p->srcLOD;
  q.srcMemoryType = p->srcMemoryType, q.srcHost = p->srcHost, q.srcDevice = p->srcDevice;
  q.srcArray = p->srcArray, q.srcPitch = p->srcPitch, q.srcHeight = p->srcHeight;
  q.dstXInBytes = p->dstXInBytes, q.dstY = p->dstY, q.dstZ = p->dstZ, q.dstLOD = p->dstLOD;
  q.dstMemoryType = p->dstMemoryType, q.dstHost = p->dstHost, q.dstDevice = p->dstDevice;
  q.dstArray = p->dstArray, q.dstPitch = p->dstPitch, q.dstHeight = p->dstHeight;
  q.WidthInBytes = p->WidthInBytes, q.Height = p->Height, q.Depth = p->Depth;
  return copy3d(&q, async, ptds, s);
}

static CUresult memset2d(CUdeviceptr d, size_t pitch, unsigned v, unsigned elem, size_t w, size_t h,
                         int async, int ptds, CUstream s) {
  if (d % elem || (h > 1 && pitch < w * elem)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t y = 0; y < h; y++) {
    struct fk_node n = {
        .kind = FK_NODE_MEMSET, .dst = d + y * pitch, .value = v, .elem = elem, .count = w};
    CUresult rc = async ? fk_memop_async(&n, s) : fk_memop_sync(&n, ptds);
    if (rc != CUDA_SUCCESS) return rc;
  }
  return CUDA_SUCCESS;
}

#define PT(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) {
  FK_ENTER("cuMemcpy2D_v2");
  return copy2d(p, 0, 0, NULL);
}
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) {
  FK_ENTER("cuMemcpy2D_v2_ptds");
  return copy2d(p, 0, 1, NULL);
}
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p) {
  FK_ENTER("cuMemcpy2DUnaligned_v2");
  return copy2d(p, 0, 0, NULL);
}
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p);
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p) {
  FK_ENTER("cuMemcpy2DUnaligned_v2_ptds");
  return copy2d(p, 0, 1, NULL);
}
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream s) {
  FK_ENTER("cuMemcpy2DAsync_v2");
  return copy2d(p, 1, 0, s);
}
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream s);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream s) {
  FK_ENTER("cuMemcpy2DAsync_v2_ptsz");
  return copy2d(p, 1, 0, PT(s));
}
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) {
  FK_ENTER("cuMemcpy3D_v2");
  return copy3d(p, 0, 0, NULL);
}
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p);
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) {
  FK_ENTER("cuMemcpy3D_v2_ptds");
  return copy3d(p, 0, 1, NULL);
}
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream s) {
  FK_ENTER("cuMemcpy3DAsync_v2");
  return copy3d(p, 1, 0, s);
}
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream s);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream s) {
  FK_ENTER("cuMemcpy3DAsync_v2_ptsz");
  return copy3d(p, 1, 0, PT(s));
}
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p) {
  FK_ENTER("cuMemcpy3DPeer");
  return copy3d_peer(p, 0, 0, NULL);
}
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p);
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p) {
  FK_ENTER("cuMemcpy3DPeer_ptds");
  return copy3d_peer(p, 0, 1, NULL);
}
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream s) {
  FK_ENTER("cuMemcpy3DPeerAsync");
  return copy3d_peer(p, 1, 0, s);
}
CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream s);
CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream s) {
  FK_ENTER("cuMemcpy3DPeerAsync_ptsz");
  return copy3d_peer(p, 1, 0, PT(s));
}

static CUresult peer(CUdeviceptr d, CUdeviceptr s, size_t n, int async, int ptds, CUstream st) {
  struct fk_node x = {.kind = FK_NODE_MEMCPY, .dst = d, .src = s, .count = n};
  return async ? fk_memop_async(&x, st) : fk_memop_sync(&x, ptds);
}
CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) {
  FK_ENTER("cuMemcpyPeer");
  return peer(d, s, n, 0, 0, NULL);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n);
CUresult cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n) {
  FK_ENTER("cuMemcpyPeer_ptds");
  return peer(d, s, n, 0, 1, NULL);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
                           CUstream st) {
  FK_ENTER("cuMemcpyPeerAsync");
  return peer(d, s, n, 1, 0, st);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
                                CUstream st);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
                                CUstream st) {
  FK_ENTER("cuMemcpyPeerAsync_ptsz");
  return peer(d, s, n, 1, 0, PT(st));
}

#define MEMSET2D(name, T, elem)                                                                    \
  CUresult name##_v2(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h) {                       \
    FK_ENTER(#name "_v2");                                                                         \
    return memset2d(d, pitch, v, elem, w, h, 0, 0, NULL);                                          \
  }                                                                                                \
  CUresult name##_v2_ptds(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h);                   \
  CUresult name##_v2_ptds(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h) {                  \
    FK_ENTER(#name "_v2_ptds");                                                                    \
    return memset2d(d, pitch, v, elem, w, h, 0, 1, NULL);                                          \
  }                                                                                                \
  CUresult name##Async(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h, CUstream s) {         \
    FK_ENTER(#name "Async");                                                                       \
    return memset2d(d, pitch, v, elem, w, h, 1, 0, s);                                             \
  }                                                                                                \
  CUresult name##Async_ptsz(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h, CUstream s);     \
  CUresult name##Async_ptsz(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h, CUstream s) {    \
    FK_ENTER(#name "Async_ptsz");                                                                  \
    return memset2d(d, pitch, v, elem, w, h, 1, 0, PT(s));                                         \
  }
#undef cuMemsetD2D8
#undef cuMemsetD2D16
#undef cuMemsetD2D32
MEMSET2D(cuMemsetD2D8, unsigned char, 1)
MEMSET2D(cuMemsetD2D16, unsigned short, 2)
MEMSET2D(cuMemsetD2D32, unsigned int, 4)
