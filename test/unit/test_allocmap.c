/* test/unit/test_allocmap.c — the allocation interval map: lookups inside,
 * at the edges and between allocations; removal; overlap replacement;
 * growth; the snapshot's order; zero sizes and range removal; find_many
 * below, inside and above the map's span; the epoch that moves on every
 * change and only then. */
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
  /* The snapshot is the map in address order, disjoint. */
  static struct kc_alloc snap[6000];
  size_t n = kc_allocmap_snapshot(snap, 6000);
  CHECK(n == kc_allocmap_count() && n > 5000);
  ok = 1;
  for (size_t i = 1; i < n; i++)
    ok &= snap[i - 1].base + snap[i - 1].size <= snap[i].base;
  CHECK(ok);
  CHECK(kc_allocmap_snapshot(snap, 2) == 2 && snap[0].base < snap[1].base);
  /* Zero-sized allocations are not recorded; an inner address of an
   * allocation is not its base (remove needs the base). */
  size_t before = kc_allocmap_count();
  kc_allocmap_insert(0x50000, 0, KC_ALLOC_PLAIN);
  CHECK(kc_allocmap_count() == before && kc_allocmap_find(0x50000, &a) != 0);
  CHECK(kc_allocmap_remove(0x30010) != 0 && kc_allocmap_find(0x30010, &a) == 0);
  /* Unmapping the middle of one mapping removes all of it (VMM unmaps
   * whole mappings). */
  kc_allocmap_remove_range(0x30100, 0x10);
  CHECK(kc_allocmap_find(0x30000, &a) != 0 && kc_allocmap_count() == before - 1);
  /* find_many: words below the first allocation, above the last, between
   * two and inside both ends; the span test must not reject an edge. */
  uint64_t lo = 0x10080, hi = 0x100000000ull + 4999 * 0x200;
  uint64_t w[] = {0,
                  0xffff,
                  lo - 1,
                  lo,
                  lo + 0xff,
                  lo + 0x100,
                  hi,
                  hi + 0xff,
                  hi + 0x100,
                  ~0ull,
                  0x100000000ull + 0x180};
  struct kc_alloc f[sizeof w / sizeof w[0]];
  CHECK(kc_allocmap_find_many(w, sizeof w / sizeof w[0], f) == 4);
  CHECK(!f[0].size && !f[1].size && !f[2].size && f[3].base == lo && f[4].base == lo);
  CHECK(!f[5].size && f[6].base == hi && f[7].base == hi && !f[8].size && !f[9].size);
  CHECK(!f[10].size);
  /* The epoch: moved by insert, remove and a range removal that removed
   * something; not by lookups or a removal that found nothing. */
  uint64_t e = kc_allocmap_epoch();
  kc_allocmap_find(lo, &a);
  kc_allocmap_find_many(w, 2, f);
  CHECK(kc_allocmap_epoch() == e);
  kc_allocmap_insert(0x60000, 0x100, KC_ALLOC_PLAIN);
  CHECK(kc_allocmap_epoch() != e);
  e = kc_allocmap_epoch();
  CHECK(kc_allocmap_remove(0x60010) != 0 && kc_allocmap_epoch() == e);
  CHECK(kc_allocmap_remove(0x60000) == 0 && kc_allocmap_epoch() != e);
  e = kc_allocmap_epoch();
  kc_allocmap_remove_range(0x70000, 0x100);
  CHECK(kc_allocmap_epoch() == e);
  kc_allocmap_insert(0x70000, 0x100, KC_ALLOC_VMM);
  e = kc_allocmap_epoch();
  kc_allocmap_remove_range(0x70000, 0x100);
  CHECK(kc_allocmap_epoch() != e);
  return CHECK_DONE("allocmap");
}
