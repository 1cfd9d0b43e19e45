/* libkcheck/capture/uninit.c — the allocations touched since they were allocated
 * (see uninit.h): a set of allocation numbers (allocmap's gen, so a reused
 * address is a new allocation) and the number up to which an unattributed
 * operation touched everything. */
#include "uninit.h"

#include <pthread.h>
#include <stdlib.h>
#include <uthash.h>

#include "allocmap.h"
#include "launch.h"

struct touched {
  uint64_t gen;
  UT_hash_handle hh;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct touched *set;
static uint64_t all_upto; /* every allocation numbered <= this was touched */

static int counts(const struct kc_alloc *a) { return a->kind != KC_ALLOC_MANAGED; }

static void touch_gen(uint64_t gen) {
  pthread_mutex_lock(&lock);
  struct touched *t = NULL;
  if (gen > all_upto) {
    HASH_FIND(hh, set, &gen, sizeof gen, t);
    if (!t && (t = calloc(1, sizeof *t))) {
      t->gen = gen;
      HASH_ADD(hh, set, gen, sizeof t->gen, t);
    }
  }
  pthread_mutex_unlock(&lock);
}

void kc_uninit_touch_addr(uint64_t addr) {
  struct kc_alloc a;
  if (addr && kc_allocmap_find(addr, &a) == 0) touch_gen(a.gen);
}

void kc_uninit_touch_launch(const struct kc_launch_info *li) {
  for (int i = 0; i < li->nptrs; i++)
    kc_uninit_touch_addr(li->ptrs[i].base);
}

void kc_uninit_touch_all(void) {
  /* The newest allocation's number: found as the largest in the map. */
  size_t n = kc_allocmap_count();
  struct kc_alloc *all = malloc((n ? n : 1) * sizeof *all);
  uint64_t top = 0;
  if (all) {
    n = kc_allocmap_snapshot(all, n);
    for (size_t i = 0; i < n; i++)
      if (all[i].gen > top) top = all[i].gen;
    free(all);
  } else {
    top = UINT64_MAX; /* cannot tell which: everything counts as touched */
  }
  pthread_mutex_lock(&lock);
  if (top > all_upto) all_upto = top;
  struct touched *t = NULL, *tmp = NULL;
  /* uthash's deletion-safe iteration: tmp holds the next element before t
   * is freed, which the analyzer does not follow. */
  // NOLINTBEGIN(clang-analyzer-unix.Malloc)
  HASH_ITER(hh, set, t, tmp) {
    if (t->gen <= all_upto) {
      HASH_DEL(set, t);
      free(t);
    }
  }
  // NOLINTEND(clang-analyzer-unix.Malloc)
  pthread_mutex_unlock(&lock);
}

int kc_uninit_untouched(uint64_t base) {
  struct kc_alloc a;
  if (kc_allocmap_find(base, &a) || a.base != base || !counts(&a)) return 0;
  pthread_mutex_lock(&lock);
  struct touched *t = NULL;
  if (a.gen > all_upto) HASH_FIND(hh, set, &a.gen, sizeof a.gen, t);
  int untouched = a.gen > all_upto && !t;
  pthread_mutex_unlock(&lock);
  return untouched;
}

void kc_uninit_postfork_child(void) { pthread_mutex_init(&lock, NULL); }
