/* libkcheck/base/own.c — a small set of kcheck's own device allocations. */
#include "own.h"

#include <pthread.h>

#include "log.h"

#define MAX_OWN 256

static struct { uint64_t base, size; } own[MAX_OWN];
static int nown;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void kc_own_add(uint64_t base, uint64_t size) {
  pthread_mutex_lock(&lock);
  if (nown < MAX_OWN)
    own[nown].base = base, own[nown].size = size, nown++;
  else
    KC_INTERNAL_ERROR("too many kcheck-owned allocations to track");
  pthread_mutex_unlock(&lock);
}

void kc_own_remove(uint64_t base) {
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nown; i++)
    if (own[i].base == base) {
      own[i] = own[--nown];
      break;
    }
  pthread_mutex_unlock(&lock);
}

int kc_own_contains(uint64_t addr) {
  int found = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nown && !found; i++)
    found = addr - own[i].base < own[i].size;
  pthread_mutex_unlock(&lock);
  return found;
}
