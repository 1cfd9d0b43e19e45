/* libkcheck/base/allocmap.c — a sorted array of disjoint [base, base+size)
 * intervals under a reader-writer lock: launches look up (read) far more
 * often than programs allocate (write), and caching allocators allocate
 * rarely. */
#include "allocmap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static struct kc_alloc *items;
static size_t count, cap;
static uint64_t gens; /* allocations inserted so far */
/* Bumped by every change of the map (insert, remove, unmap): whoever
 * remembers what the map or the driver said about an address (the trace
 * records' cache of words in no allocation) forgets it when this moves. */
static _Atomic uint64_t epoch;

uint64_t kc_allocmap_epoch(void) { return atomic_load_explicit(&epoch, memory_order_acquire); }

static void changed_locked(void) { atomic_fetch_add_explicit(&epoch, 1, memory_order_release); }

void kc_allocmap_reset_lock(void) { pthread_rwlock_init(&lock, NULL); }

/* Index of the first interval with base > addr. */
static size_t upper(uint64_t addr) {
  size_t lo = 0, hi = count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (items[mid].base <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void remove_overlaps_locked(uint64_t base, uint64_t size) {
  uint64_t end = base + size;
  size_t i = upper(base);
  if (i > 0 && items[i - 1].base + items[i - 1].size > base) i--;
  size_t j = i;
  while (j < count && items[j].base < end)
    j++;
  if (j > i) {
    memmove(items + i, items + j, (count - j) * sizeof *items);
    count -= j - i;
    changed_locked();
  }
}

void kc_allocmap_insert(uint64_t base, uint64_t size, int kind) {
  if (!size) return;
  pthread_rwlock_wrlock(&lock);
  /* The driver reuses addresses; a stale overlapping entry means we missed a
   * free (e.g. through an entry we do not hook): the new one wins. */
  remove_overlaps_locked(base, size);
  if (count == cap) {
    size_t ncap = cap ? cap * 2 : 256;
    struct kc_alloc *n = realloc(items, ncap * sizeof *n);
    if (!n) {
      pthread_rwlock_unlock(&lock);
      KC_INTERNAL_ERROR("out of memory in the allocation map");
      return;
    }
    items = n;
    cap = ncap;
  }
  size_t i = upper(base);
  memmove(items + i + 1, items + i, (count - i) * sizeof *items);
  items[i] = (struct kc_alloc){base, size, kind, ++gens};
  count++;
  changed_locked();
  /* Sorted and disjoint, which every lookup relies on. */
  KC_ASSERT(i == 0 || items[i - 1].base + items[i - 1].size <= base);
  KC_ASSERT(i + 1 == count || base + size <= items[i + 1].base);
  pthread_rwlock_unlock(&lock);
}

int kc_allocmap_remove(uint64_t base) {
  int rc = -1;
  pthread_rwlock_wrlock(&lock);
  size_t i = upper(base);
  if (i > 0 && items[i - 1].base == base) {
    memmove(items + i - 1, items + i, (count - i) * sizeof *items);
    count--;
    changed_locked();
    rc = 0;
  }
  pthread_rwlock_unlock(&lock);
  return rc;
}

void kc_allocmap_remove_range(uint64_t base, uint64_t size) {
  pthread_rwlock_wrlock(&lock);
  remove_overlaps_locked(base, size);
  pthread_rwlock_unlock(&lock);
}

int kc_allocmap_find(uint64_t addr, struct kc_alloc *out) {
  int rc = -1;
  pthread_rwlock_rdlock(&lock);
  size_t i = upper(addr);
  if (i > 0 && addr - items[i - 1].base < items[i - 1].size) {
    *out = items[i - 1];
    rc = 0;
  }
  pthread_rwlock_unlock(&lock);
  return rc;
}

size_t kc_allocmap_find_many(const uint64_t *addr, size_t n, struct kc_alloc *out) {
  size_t found = 0;
  pthread_rwlock_rdlock(&lock);
  /* Most words of a parameter struct (sizes, strides, flags, floats) lie
   * outside every allocation: one comparison with the span of the map
   * rejects them before any search. */
  uint64_t lo = count ? items[0].base : 0;
  uint64_t span = count ? items[count - 1].base + items[count - 1].size - lo : 0;
  size_t last = 0; /* 1 + the last hit: a struct's tensors share segments */
  for (size_t k = 0; k < n; k++) {
    size_t i = 0;
    if (last && addr[k] - items[last - 1].base < items[last - 1].size)
      i = last;
    else if (addr[k] - lo < span)
      i = upper(addr[k]);
    if (i > 0 && addr[k] - items[i - 1].base < items[i - 1].size) {
      last = i;
      out[k] = items[i - 1];
      found++;
    } else {
      out[k] = (struct kc_alloc){0, 0, 0, 0};
    }
  }
  pthread_rwlock_unlock(&lock);
  return found;
}

size_t kc_allocmap_count(void) {
  pthread_rwlock_rdlock(&lock);
  size_t n = count;
  pthread_rwlock_unlock(&lock);
  return n;
}

size_t kc_allocmap_snapshot(struct kc_alloc *out, size_t max) {
  pthread_rwlock_rdlock(&lock);
  size_t n = count < max ? count : max;
  memcpy(out, items, n * sizeof *items);
  pthread_rwlock_unlock(&lock);
  return n;
}
