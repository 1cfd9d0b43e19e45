/* libkcheck/base/allocmap.h — kcheck's own interval map of device allocations,
 * fed by the allocation hooks; driver queries are only the fallback. */
#ifndef KC_ALLOCMAP_H
#define KC_ALLOCMAP_H

#include <stddef.h>
#include <stdint.h>

enum kc_alloc_kind {
  KC_ALLOC_PLAIN,
  KC_ALLOC_PITCH,
  KC_ALLOC_MANAGED,
  KC_ALLOC_ASYNC,
  KC_ALLOC_VMM
};

struct kc_alloc {
  uint64_t base;
  uint64_t size;
  int kind;     /* enum kc_alloc_kind */
  uint64_t gen; /* which allocation: numbered from 1 as inserted (addresses are reused) */
};

void kc_allocmap_insert(uint64_t base, uint64_t size, int kind);
/* Removes the allocation starting at base; returns 0 if found. */
int kc_allocmap_remove(uint64_t base);
/* Removes every allocation overlapping [base, base+size) (VMM unmap). */
void kc_allocmap_remove_range(uint64_t base, uint64_t size);
/* Finds the allocation containing addr; 0 if found. */
int kc_allocmap_find(uint64_t addr, struct kc_alloc *out);
/* find for n addresses under one lock: out[i].size is 0 where addr[i] is
 * in no allocation. Returns how many were found. */
size_t kc_allocmap_find_many(const uint64_t *addr, size_t n, struct kc_alloc *out);
size_t kc_allocmap_count(void);
/* Moves on every change of the map (insert, remove, unmap). */
uint64_t kc_allocmap_epoch(void);
/* Copies up to max allocations (all live ones, for save_all snapshots). */
size_t kc_allocmap_snapshot(struct kc_alloc *out, size_t max);
void kc_allocmap_reset_lock(void);

#endif
