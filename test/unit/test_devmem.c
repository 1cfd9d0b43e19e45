/* test/unit/test_devmem.c — kcheck's device memory accounting and the
 * device_mem_budget cap: an allocation over the budget is refused before
 * the driver is asked, with the category, bytes and budget in the reason;
 * current, peak, allocated, count and refused by category; a driver
 * failure is neither accounted nor a refusal; a free gives the bytes back
 * and leaves kcheck's own set; budget 0 is no cap; a measured object is
 * the fall of free memory, refused only where asked and the budget spent,
 * and counted as at most what the object can hold: a neighbour process's
 * allocation during the measurement is not kcheck's. */
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

/* Measures one object whose creation takes own bytes while a neighbour
 * process takes neighbour bytes; returns what kcheck counted. */
static uint64_t measure(enum kc_devmem_cat cat, uint64_t own, uint64_t neighbour, uint64_t bound) {
  size_t fb;
  CHECK(kc_devmem_begin(cat, 0, &fb) == 1);
  device_free -= own + neighbour;
  uint64_t got = kc_devmem_end(cat, fb, bound);
  device_free += neighbour; /* the neighbour's buffer is freed later */
  return got;
}

/* Each measured object counts at most what it can hold. */
static void test_bounds(void) {
  const uint64_t MiB = 1ull << 20;
  /* whole 2 MiB pages of the image, and one page more */
  CHECK(kc_devmem_module_bound(0) == 2 * MiB);
  CHECK(kc_devmem_module_bound(1) == 4 * MiB);
  CHECK(kc_devmem_module_bound(2 * MiB) == 4 * MiB);
  CHECK(kc_devmem_module_bound(2 * MiB + 1) == 6 * MiB);
  CHECK(kc_devmem_module_bound(UINT64_MAX) == KC_DEVMEM_MEASURED_CAP); /* no overflow */
  json_t *s = kc_devmem_summary_json();
  json_int_t mcap = cat_field(s, "modules", "capped"), gcap = cat_field(s, "green_ctx", "capped");
  json_int_t malloc0 = cat_field(s, "modules", "allocated");
  json_decref(s);
  uint64_t cur = kc_devmem_current();

  /* a neighbour allocates 40 MiB while a copy of 40 KB of PTX loads (one
   * page of its own): the copy counts as its bound, 4 MiB, not 42 MiB */
  uint64_t bound = kc_devmem_module_bound(KC_DEVMEM_CODE_FACTOR * 40000ull);
  CHECK(bound == 4 * MiB);
  uint64_t m1 = measure(KC_DM_modules, 2 * MiB, 40 * MiB, bound);
  CHECK(m1 == bound && kc_devmem_current() == cur + bound);
  /* a neighbour's 50 MiB during a green context's 6 MiB: its bound */
  uint64_t g1 = measure(KC_DM_green_ctx, 6 * MiB, 50 * MiB, KC_DEVMEM_GREEN_CTX_BOUND);
  CHECK(g1 == KC_DEVMEM_GREEN_CTX_BOUND && KC_DEVMEM_GREEN_CTX_BOUND == 16 * MiB);
  /* alone, a genuine figure within the bound is counted as measured */
  uint64_t m2 = measure(KC_DM_modules, 2 * MiB, 0, bound);
  uint64_t g2 = measure(KC_DM_green_ctx, 6 * MiB, 0, KC_DEVMEM_GREEN_CTX_BOUND);
  CHECK(m2 == 2 * MiB && g2 == 6 * MiB);
  /* a bound over the outer cap (a large image) leaves the cap in force */
  uint64_t m3 = measure(KC_DM_modules, 0, 400 * MiB, kc_devmem_module_bound(100 * MiB));
  CHECK(m3 == KC_DEVMEM_MEASURED_CAP);
  CHECK(kc_devmem_current() == cur + m1 + g1 + m2 + g2 + m3);

  s = kc_devmem_summary_json();
  CHECK(cat_field(s, "modules", "capped") == mcap + 2);
  CHECK(cat_field(s, "green_ctx", "capped") == gcap + 1);
  CHECK(cat_field(s, "modules", "allocated") == malloc0 + (json_int_t)(m1 + m2 + m3));
  json_decref(s);
  kc_devmem_drop(KC_DM_modules, m1 + m2 + m3);
  kc_devmem_drop(KC_DM_green_ctx, g1 + g2);
  CHECK(kc_devmem_current() == cur);
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
  uint64_t mod = kc_devmem_end(KC_DM_modules, fb, 0);
  CHECK(mod == 8192 && kc_devmem_current() == 500 + 8192 && kc_devmem_room() == 0);
  /* the budget is spent: a green context is refused, a module is not */
  CHECK(kc_devmem_begin(KC_DM_green_ctx, 1, &fb) == 0);
  CHECK(kc_devmem_refused() && strstr(kc_devmem_refused(), "green_ctx needs 0 bytes"));
  CHECK(kc_devmem_begin(KC_DM_modules, 0, &fb) == 1 && kc_devmem_refused() == NULL);
  CHECK(kc_devmem_end(KC_DM_modules, fb, 0) == 0); /* free memory did not fall */
  kc_devmem_drop(KC_DM_modules, mod);
  CHECK(kc_devmem_current() == 500);
  /* a fall larger than one object can take (another process allocated
   * meanwhile: cuMemGetInfo is device-wide) counts as the cap, once capped;
   * bound 0: the object's own bound is unknown */
  CHECK(kc_devmem_begin(KC_DM_modules, 0, &fb) == 1);
  device_free -= 400ull << 20;
  uint64_t big = kc_devmem_end(KC_DM_modules, fb, 0);
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
  test_bounds();

  /* budget 0: no cap */
  kc_opt.device_mem_budget = 0;
  CHECK(kc_devmem_room() == UINT64_MAX);
  CHECK(kc_devmem_alloc(KC_DM_staging, &a, (size_t)1 << 40) == CUDA_SUCCESS);
  CHECK(kc_devmem_refused() == NULL && kc_devmem_free(a) == CUDA_SUCCESS);
  CHECK(kc_devmem_free(b) == CUDA_SUCCESS && kc_devmem_current() == 0);
  return CHECK_DONE("devmem");
}
