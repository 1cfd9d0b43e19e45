/* test/unit/test_allocmap.c — the allocation interval map: lookups inside,
 * at the edges and between allocations; removal; overlap replacement. */
#include <stdint.h>

#include "allocmap.h"
#include "check.h"

int main(void) {
  struct kc_alloc a;
  CHECK(kc_allocmap_find(0x1000, &a) != 0);
  kc_allocmap_insert(0x10000, 0x100, KC_ALLOC_PLAIN);
  kc_allocmap_insert(0x30000, 0x1000, KC_ALLOC_ASYNC);
  kc_allocmap_insert(0x20000, 0x10, KC_ALLOC_PLAIN);
  CHECK(kc_allocmap_count() == 3);
  CHECK(kc_allocmap_find(0x10000, &a) == 0 && a.base == 0x10000 && a.size == 0x100);
  CHECK(kc_allocmap_find(0x100ff, &a) == 0 && a.base == 0x10000);
  CHECK(kc_allocmap_find(0x10100, &a) != 0); /* one past the end */
  CHECK(kc_allocmap_find(0x2000f, &a) == 0 && a.base == 0x20000);
  CHECK(kc_allocmap_find(0x30fff, &a) == 0 && a.kind == KC_ALLOC_ASYNC);
  CHECK(kc_allocmap_find(0xffff, &a) != 0);
  CHECK(kc_allocmap_remove(0x20000) == 0);
  CHECK(kc_allocmap_remove(0x20000) != 0);
  CHECK(kc_allocmap_find(0x20000, &a) != 0);
  /* A new allocation over a stale one (a free kcheck did not see) wins. */
  kc_allocmap_insert(0x10080, 0x100, KC_ALLOC_VMM);
  CHECK(kc_allocmap_find(0x10000, &a) != 0);
  CHECK(kc_allocmap_find(0x10080, &a) == 0 && a.kind == KC_ALLOC_VMM);
  /* Unmapping a range removes every overlapping mapping. */
  kc_allocmap_insert(0x40000, 0x1000, KC_ALLOC_VMM);
  kc_allocmap_insert(0x41000, 0x1000, KC_ALLOC_VMM);
  kc_allocmap_remove_range(0x40800, 0x1000);
  CHECK(kc_allocmap_find(0x40000, &a) != 0 && kc_allocmap_find(0x41000, &a) != 0);
  CHECK(kc_allocmap_find(0x30000, &a) == 0);
  /* Many allocations: sorted order holds through growth. */
  for (uint64_t i = 0; i < 5000; i++)
    kc_allocmap_insert(0x100000000ull + (4999 - i) * 0x200, 0x100, 0);
  int ok = 1;
  for (uint64_t i = 0; i < 5000; i++) {
    uint64_t base = 0x100000000ull + i * 0x200;
    ok &= kc_allocmap_find(base + 0x80, &a) == 0 && a.base == base;
    ok &= kc_allocmap_find(base + 0x100, &a) != 0;
  }
  CHECK(ok);
  return CHECK_DONE("allocmap");
}
