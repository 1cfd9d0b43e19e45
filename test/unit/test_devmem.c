/* test/unit/test_devmem.c — kcheck's device memory accounting and the
 * device_mem_budget cap: an allocation over the budget is refused before
 * the driver is asked, with the category, bytes and budget in the reason;
 * current, peak, allocated, count and refused by category; a driver
 * failure is neither accounted nor a refusal; a free gives the bytes back
 * and leaves kcheck's own set; budget 0 is no cap; a measured object is
 * the fall of free memory, refused only where asked and the budget spent. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "devmem.h"
#include "driver.h"
#include "options.h"
#include "own.h"

struct kc_driver kc_drv;

static int driver_allocs, fail_next;
static CUdeviceptr next_ptr = 0x100000;
static size_t device_free = 1u << 30;

static CUresult fake_alloc(CUdeviceptr *p, size_t bytes) {
  driver_allocs++;
  if (fail_next) {
    fail_next = 0;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *p = next_ptr;
  next_ptr += (bytes + 0xfff) & ~(size_t)0xfff;
  return CUDA_SUCCESS;
}
static CUresult fake_free(CUdeviceptr p) { return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
static CUresult fake_info(size_t *f, size_t *t) {
  *f = device_free;
  *t = 2u << 30;
  return CUDA_SUCCESS;
}

static json_int_t cat_field(json_t *s, const char *cat, const char *field) {
  return json_integer_value(
      json_object_get(json_object_get(json_object_get(s, "categories"), cat), field));
}

int main(void) {
  kc_drv.cuMemAlloc_v2 = fake_alloc;
  kc_drv.cuMemFree_v2 = fake_free;
  kc_drv.cuMemGetInfo_v2 = fake_info;
  kc_opt.device_mem_budget = 1000;

  CUdeviceptr a = 0, b = 0, c = 0;
  CHECK(kc_devmem_alloc(KC_DM_staging, &a, 600) == CUDA_SUCCESS && a);
  CHECK(kc_devmem_refused() == NULL);
  CHECK(kc_own_contains(a) && kc_own_contains(a + 599));
  CHECK(kc_devmem_current() == 600 && kc_devmem_room() == 400);
  /* over the budget: refused without a driver call, and why */
  int before = driver_allocs;
  CHECK(kc_devmem_alloc(KC_DM_l2flush, &b, 500) == CUDA_ERROR_OUT_OF_MEMORY && !b);
  CHECK(driver_allocs == before);
  CHECK(kc_devmem_refused() &&
        !strcmp(kc_devmem_refused(),
                "device_mem_budget: l2flush needs 500 bytes, 600 in use of 1000"));
  /* a buffer replacing the 600 held may take their room too */
  CHECK(kc_devmem_fits(KC_DM_staging, 1000, 600) == 1 && kc_devmem_refused() == NULL);
  CHECK(kc_devmem_fits(KC_DM_staging, 1001, 600) == 0);
  CHECK(kc_devmem_refused() &&
        !strcmp(kc_devmem_refused(),
                "device_mem_budget: staging needs 1001 bytes, 600 in use of 1000"));
  /* exactly the room left fits */
  CHECK(kc_devmem_alloc(KC_DM_hash_slots, &c, 400) == CUDA_SUCCESS && c);
  CHECK(kc_devmem_refused() == NULL && kc_devmem_room() == 0);
  /* a driver failure is neither accounted nor a refusal */
  CHECK(kc_devmem_free(c) == CUDA_SUCCESS && !kc_own_contains(c));
  fail_next = 1;
  CHECK(kc_devmem_alloc(KC_DM_hash_slots, &c, 16) == CUDA_ERROR_OUT_OF_MEMORY && !c);
  CHECK(kc_devmem_refused() == NULL && kc_devmem_current() == 600);
  /* freed bytes are room again */
  CHECK(kc_devmem_free(a) == CUDA_SUCCESS && kc_devmem_current() == 0);
  CHECK(kc_devmem_alloc(KC_DM_l2flush, &b, 500) == CUDA_SUCCESS && b);
  CHECK(kc_devmem_free(0) == CUDA_SUCCESS);

  /* measured: the fall of free memory around the creation */
  size_t fb;
  CHECK(kc_devmem_begin(KC_DM_modules, 1, &fb) == 1 && fb == device_free);
  device_free -= 8192;
  uint64_t mod = kc_devmem_end(KC_DM_modules, fb);
  CHECK(mod == 8192 && kc_devmem_current() == 500 + 8192 && kc_devmem_room() == 0);
  /* the budget is spent: a green context is refused, a module is not */
  CHECK(kc_devmem_begin(KC_DM_green_ctx, 1, &fb) == 0);
  CHECK(kc_devmem_refused() && strstr(kc_devmem_refused(), "green_ctx needs 0 bytes"));
  CHECK(kc_devmem_begin(KC_DM_modules, 0, &fb) == 1 && kc_devmem_refused() == NULL);
  CHECK(kc_devmem_end(KC_DM_modules, fb) == 0); /* free memory did not fall */
  kc_devmem_drop(KC_DM_modules, mod);
  CHECK(kc_devmem_current() == 500);
  /* a fall larger than one object can take (another process allocated
   * meanwhile: cuMemGetInfo is device-wide) counts as the cap, once capped */
  CHECK(kc_devmem_begin(KC_DM_modules, 0, &fb) == 1);
  device_free -= 400ull << 20;
  uint64_t big = kc_devmem_end(KC_DM_modules, fb);
  CHECK(big == KC_DEVMEM_MEASURED_CAP && kc_devmem_current() == 500 + KC_DEVMEM_MEASURED_CAP);
  kc_devmem_drop(KC_DM_modules, big);
  device_free += 400ull << 20;
  CHECK(kc_devmem_current() == 500);

  json_t *s = kc_devmem_summary_json();
  CHECK(s && json_integer_value(json_object_get(s, "budget")) == 1000);
  CHECK(json_integer_value(json_object_get(s, "peak")) == 500 + KC_DEVMEM_MEASURED_CAP);
  CHECK(json_integer_value(json_object_get(s, "refused")) == 3);
  CHECK(cat_field(s, "staging", "peak") == 600 && cat_field(s, "staging", "current") == 0);
  CHECK(cat_field(s, "staging", "refused") == 1);
  CHECK(cat_field(s, "staging", "allocated") == 600 && cat_field(s, "staging", "count") == 1);
  CHECK(cat_field(s, "l2flush", "refused") == 1 && cat_field(s, "l2flush", "current") == 500);
  CHECK(cat_field(s, "hash_slots", "allocated") == 400 && cat_field(s, "hash_slots", "count") == 1);
  CHECK(cat_field(s, "modules", "allocated") == 8192 + KC_DEVMEM_MEASURED_CAP &&
        cat_field(s, "modules", "count") == 3 && cat_field(s, "modules", "capped") == 1);
  CHECK(cat_field(s, "green_ctx", "refused") == 1);
  CHECK(!strcmp(json_string_value(json_object_get(
                    json_object_get(json_object_get(s, "categories"), "modules"), "how")),
                "measured"));
  json_decref(s);

  /* budget 0: no cap */
  kc_opt.device_mem_budget = 0;
  CHECK(kc_devmem_room() == UINT64_MAX);
  CHECK(kc_devmem_alloc(KC_DM_staging, &a, (size_t)1 << 40) == CUDA_SUCCESS);
  CHECK(kc_devmem_refused() == NULL && kc_devmem_free(a) == CUDA_SUCCESS);
  CHECK(kc_devmem_free(b) == CUDA_SUCCESS && kc_devmem_current() == 0);
  return CHECK_DONE("devmem");
}
