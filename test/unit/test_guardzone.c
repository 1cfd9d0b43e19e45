/* test/unit/test_guardzone.c — the guard-zone allocator on a fake driver
 * whose device memory is host memory: data 256-byte aligned between
 * zones of 0xCB (the rounding slack joining the zone after); a store past
 * the end and one before the start found with the tensor, side, distance
 * and the bytes written, the zones armed again after a check; stores
 * inside the data silent; damage to a temporary found when it is freed;
 * the live allocations listed before the freed; the data fill; the
 * allocation map; a thread with no context (allocating or freeing) given
 * the primary one; driver failures. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "check.h"
#include "driver.h"
#include "guardzone.h"
#include "log.h"

struct kc_driver kc_drv;

static int fail_alloc, fail_copy, syncs, retained;
static CUcontext current;

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes) {
  if (fail_alloc) return CUDA_ERROR_OUT_OF_MEMORY;
  void *m = aligned_alloc(512, (bytes + 511) / 512 * 512);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(m, 0x5a, bytes); /* what the driver leaves there */
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}
static CUresult fake_free(CUdeviceptr p) {
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
static CUresult fake_memset_async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  (void)s;
  memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}
static CUresult fake_memset(CUdeviceptr d, unsigned char v, size_t n) {
  memset((void *)(uintptr_t)d, v, n);
  return CUDA_SUCCESS;
}
static CUresult fake_dtoh(void *h, CUdeviceptr d, size_t n) {
  if (fail_copy) return CUDA_ERROR_ILLEGAL_ADDRESS;
  memcpy(h, (void *)(uintptr_t)d, n);
  return CUDA_SUCCESS;
}
static CUresult fake_sync(void) {
  syncs++;
  return CUDA_SUCCESS;
}
static CUresult fake_capturing(CUstream s, CUstreamCaptureStatus *st) {
  (void)s;
  *st = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
static CUresult fake_get_current(CUcontext *c) {
  *c = current;
  return CUDA_SUCCESS;
}
static CUresult fake_set_current(CUcontext c) {
  current = c;
  return CUDA_SUCCESS;
}
static CUresult fake_device_get(CUdevice *d, int ordinal) {
  *d = ordinal;
  return CUDA_SUCCESS;
}
static CUresult fake_retain(CUcontext *c, CUdevice d) {
  retained++;
  *c = (CUcontext)(uintptr_t)(0x1000 + d);
  return CUDA_SUCCESS;
}

static int all_bytes(const unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

int main(void) {
  kc_drv.cuMemAlloc_v2 = fake_alloc;
  kc_drv.cuMemFree_v2 = fake_free;
  kc_drv.cuMemsetD8Async = fake_memset_async;
  kc_drv.cuMemsetD8_v2 = fake_memset;
  kc_drv.cuMemcpyDtoH_v2 = fake_dtoh;
  kc_drv.cuCtxSynchronize = fake_sync;
  kc_drv.cuStreamIsCapturing = fake_capturing;
  kc_drv.cuCtxGetCurrent = fake_get_current;
  kc_drv.cuCtxSetCurrent = fake_set_current;
  kc_drv.cuDeviceGet = fake_device_get;
  kc_drv.cuDevicePrimaryCtxRetain = fake_retain;

  struct kc_gz_damage d[4];
  CUresult err;

  /* a thread with no context: the device's primary one made current */
  unsigned char *a = kc_gz_alloc(1000, 1, NULL);
  CHECK(a && retained == 1 && current == (CUcontext)(uintptr_t)0x1001);
  if (!a) return CHECK_DONE("guardzone");
  /* aligned data between the zones; the slack (24 bytes) is guard too */
  CHECK(((uintptr_t)a & 255) == 0);
  CHECK(all_bytes(a - KC_GZ_FRONT, KC_GZ_FRONT, KC_GZ_FILL));
  CHECK(all_bytes(a + 1000, 24 + KC_GZ_BACK, KC_GZ_FILL));
  CHECK(all_bytes(a, 1000, 0x5a)); /* no data fill asked for */
  CHECK(kc_gz_live() == 1);
  struct kc_alloc m;
  CHECK(kc_allocmap_find((uint64_t)(uintptr_t)a + 1100, &m) == 0 &&
        m.base == (uint64_t)(uintptr_t)a - KC_GZ_FRONT &&
        m.size == KC_GZ_FRONT + 1024 + KC_GZ_BACK);

  /* every byte of the data written: silent */
  memset(a, 0, 1000);
  CHECK(kc_gz_check(d, 4, &err) == 0 && err == CUDA_SUCCESS && syncs == 1);

  /* one float past the end */
  float z = 0.f;
  memcpy(a + 1000, &z, sizeof z);
  CHECK(kc_gz_check(d, 4, &err) == 1);
  CHECK(d[0].data == (uint64_t)(uintptr_t)a && d[0].size == 1000 && d[0].after == 1);
  CHECK(d[0].distance == 0 && d[0].changed_after == 4 && d[0].changed_before == 0);
  CHECK(d[0].nshown == KC_GZ_SHOWN && all_bytes(d[0].shown, 4, 0) &&
        all_bytes(d[0].shown + 4, KC_GZ_SHOWN - 4, KC_GZ_FILL) && !d[0].freed);
  /* armed again: reported once */
  CHECK(all_bytes(a + 1000, 24 + KC_GZ_BACK, KC_GZ_FILL));
  CHECK(kc_gz_check(d, 4, &err) == 0);

  /* in the rounding slack, 10 bytes past the end */
  a[1010] = 7;
  CHECK(kc_gz_check(d, 4, &err) == 1 && d[0].after && d[0].distance == 10 && d[0].shown[0] == 7 &&
        d[0].changed_after == 1);

  /* four bytes before the start */
  memset(a - 4, 0x11, 4);
  CHECK(kc_gz_check(d, 4, &err) == 1);
  CHECK(!d[0].after && d[0].distance == 4 && d[0].changed_before == 4 && d[0].changed_after == 0 &&
        d[0].nshown == 4 && all_bytes(d[0].shown, 4, 0x11));
  CHECK(all_bytes(a - KC_GZ_FRONT, KC_GZ_FRONT, KC_GZ_FILL));

  /* both sides: past the end reported, both counted */
  a[-1] = 1;
  a[1023 + KC_GZ_BACK] = 2; /* the zone's last byte */
  CHECK(kc_gz_check(d, 4, &err) == 1 && d[0].after && d[0].distance == 23 + KC_GZ_BACK &&
        d[0].nshown == 1 && d[0].shown[0] == 2 && d[0].changed_before == 1 &&
        d[0].changed_after == 1);
  json_t *j = kc_gz_damage_json(&d[0]);
  char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  char want[512];
  snprintf(want, sizeof want,
           "{\"bytes_past_end\":279,\"changed_bytes_after\":1,\"changed_bytes_before\":1,"
           "\"freed\":false,\"ptr\":%llu,\"side\":\"after_end\",\"size\":1000,\"written\":\"02\"}",
           (unsigned long long)(uintptr_t)a);
  CHECK(text && !strcmp(text, want));
  free(text);
  json_decref(j);

  /* several allocations: only the damaged one, whichever the order */
  unsigned char *b = kc_gz_alloc(256, 0, NULL);
  unsigned char *c = kc_gz_alloc(4, 0, NULL);
  CHECK(b && c && retained == 1 && kc_gz_live() == 3);
  if (!b || !c) return CHECK_DONE("guardzone");
  CHECK(all_bytes(b + 256, KC_GZ_BACK, KC_GZ_FILL) && all_bytes(c + 4, 252 + KC_GZ_BACK, 0xCB));
  memset(b, 1, 256);
  c[4] = 9;
  CHECK(kc_gz_check(d, 4, &err) == 1 && d[0].data == (uint64_t)(uintptr_t)c && d[0].size == 4);
  /* more damaged than out holds: all counted, max kept */
  a[1000] = b[256] = c[5] = 3;
  CHECK(kc_gz_check(d, 1, &err) == 3 && d[0].after);
  CHECK(kc_gz_check(d, 4, &err) == 0);

  /* a temporary damaged then freed: reported at the next check, once */
  b[300] = 4;
  uint64_t b_base = (uint64_t)(uintptr_t)b - KC_GZ_FRONT;
  kc_gz_free(b, 0, NULL);
  CHECK(kc_gz_live() == 2 && kc_allocmap_find(b_base, &m) != 0);
  CHECK(kc_gz_check(d, 4, &err) == 1 && d[0].freed && d[0].size == 256 && d[0].distance == 44);
  CHECK(kc_gz_check(d, 4, &err) == 0);
  /* the live ones listed before the freed: a held tensor is never crowded
   * out by many damaged temporaries */
  for (int i = 0; i < 3; i++) {
    unsigned char *t = kc_gz_alloc(16, 0, NULL);
    t[16] = 5;
    kc_gz_free(t, 0, NULL);
  }
  a[1000] = 6;
  CHECK(kc_gz_check(d, 2, &err) == 4 && d[0].data == (uint64_t)(uintptr_t)a && !d[0].freed &&
        d[1].freed && d[1].size == 16);

  /* the data fill (the coverage gate's poison) */
  CHECK(kc_gz_fill(0x7f) == -1);
  unsigned char *e = kc_gz_alloc(100, 0, NULL);
  CHECK(e && all_bytes(e, 100, 0x7f) && all_bytes(e + 100, 156 + KC_GZ_BACK, KC_GZ_FILL));
  CHECK(kc_gz_fill(-1) == 0x7f);
  kc_gz_free(e, 0, NULL);

  /* no memory for no bytes; a driver failure is NULL, nothing kept */
  CHECK(kc_gz_alloc(0, 0, NULL) == NULL);
  fail_alloc = 1;
  CHECK(kc_gz_alloc(64, 0, NULL) == NULL && kc_gz_live() == 2);
  fail_alloc = 0;
  /* a copy that fails: -1 with the driver's error */
  fail_copy = 1;
  CHECK(kc_gz_check(d, 4, &err) == -1 && err == CUDA_ERROR_ILLEGAL_ADDRESS);
  fail_copy = 0;
  /* a pointer it never gave: counted as an internal error, nothing freed */
  long before = atomic_load(&kc_internal_errors);
  int x;
  kc_gz_free(&x, 0, NULL);
  CHECK(atomic_load(&kc_internal_errors) == before + 1 && kc_gz_live() == 2);

  /* a free on a thread with no context: the primary one, the zones read */
  current = NULL;
  c[6] = 1;
  kc_gz_free(c, 2, NULL);
  CHECK(current == (CUcontext)(uintptr_t)0x1002 && kc_gz_check(d, 4, &err) == 1 && d[0].freed);
  kc_gz_free(a, 0, NULL);
  CHECK(kc_gz_live() == 0 && kc_allocmap_count() == 0);
  /* no live allocation: nothing to wait for */
  int s0 = syncs;
  CHECK(kc_gz_check(d, 4, &err) == 0 && syncs == s0);
  return CHECK_DONE("guardzone");
}
