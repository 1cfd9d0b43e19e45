/* libkcheck/base/cubin_cache.c — the device's cubin of the images read
 * last (cubin_cache.h): a few entries, least recently used dropped first. */
#include "cubin_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static struct entry {
  int image, cc;
  char *elf; /* NULL: a free slot */
  size_t len;
  uint64_t used; /* the lookup clock at its last use */
} cache[KC_CUBIN_CACHE_ENTRIES];
static size_t held;
static uint64_t clock_;
static long hits, misses;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void drop(struct entry *e) {
  KC_ASSERT(e->elf && held >= e->len);
  held -= e->len;
  free(e->elf);
  memset(e, 0, sizeof *e);
}

char *kc_cubin_cache_get(int image, int cc, size_t *len) {
  char *out = NULL;
  pthread_mutex_lock(&lock);
  struct entry *e = NULL;
  for (int i = 0; i < KC_CUBIN_CACHE_ENTRIES && !e; i++)
    if (cache[i].elf && cache[i].image == image && cache[i].cc == cc) e = &cache[i];
  if (e && (out = malloc(e->len))) {
    memcpy(out, e->elf, e->len);
    *len = e->len;
    e->used = ++clock_;
  }
  if (out)
    hits++;
  else
    misses++;
  pthread_mutex_unlock(&lock);
  return out;
}

void kc_cubin_cache_put(int image, int cc, const char *elf, size_t len) {
  if (!elf || !len || len > KC_CUBIN_CACHE_BYTES) return;
  char *copy = malloc(len);
  if (!copy) return;
  memcpy(copy, elf, len);
  pthread_mutex_lock(&lock);
  for (int i = 0; i < KC_CUBIN_CACHE_ENTRIES; i++)
    if (cache[i].elf && cache[i].image == image && cache[i].cc == cc) drop(&cache[i]);
  for (;;) {
    struct entry *free_slot = NULL, *oldest = NULL;
    for (int i = 0; i < KC_CUBIN_CACHE_ENTRIES; i++) {
      if (!cache[i].elf)
        free_slot = free_slot ? free_slot : &cache[i];
      else if (!oldest || cache[i].used < oldest->used)
        oldest = &cache[i];
    }
    if (free_slot && held + len <= KC_CUBIN_CACHE_BYTES) {
      *free_slot = (struct entry){image, cc, copy, len, ++clock_};
      held += len;
      break;
    }
    KC_ASSERT(oldest); /* held + len > the cap with len <= the cap: something is held */
    drop(oldest);
  }
  KC_ASSERT(held <= KC_CUBIN_CACHE_BYTES);
  pthread_mutex_unlock(&lock);
}

void kc_cubin_cache_counts(long *h, long *m) {
  pthread_mutex_lock(&lock);
  *h = hits;
  *m = misses;
  pthread_mutex_unlock(&lock);
}

void kc_cubin_cache_clear(void) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < KC_CUBIN_CACHE_ENTRIES; i++)
    if (cache[i].elf) drop(&cache[i]);
  hits = misses = 0;
  pthread_mutex_unlock(&lock);
}
