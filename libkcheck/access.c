/* libkcheck/access.c — conflicting pairs in a block's shared-memory access
 * log (access.h). Accesses are split into the 4-byte words they touch,
 * sorted by (word, barrier epoch), and each group of one word and epoch is
 * searched for a racing pair: two accesses that no __syncthreads separates
 * (CUDA orders a block's threads only at barriers) and, within one warp,
 * no __syncwarp (independent thread scheduling: lanes are not in lockstep
 * unless the code says so). */
#include "access.h"

#include <stdlib.h>

static int by_word_epoch(const void *a, const void *b) {
  const struct kc_access_touch *x = a, *y = b;
  if (x->word != y->word) return x->word < y->word ? -1 : 1;
  unsigned ex = x->epoch & 0xffff, ey = y->epoch & 0xffff;
  return ex < ey ? -1 : ex > ey;
}

static int conflict(const struct kc_access_touch *a, const struct kc_access_touch *b) {
  unsigned ta = a->who & 0xffff, tb = b->who & 0xffff;
  unsigned ka = (a->who >> 16) & 0xf, kb = (b->who >> 16) & 0xf;
  if (ta == tb) return 0; /* one thread: program order */
  if (ka == KC_ACC_READ && kb == KC_ACC_READ) return 0;
  if (ka == KC_ACC_ATOMIC && kb == KC_ACC_ATOMIC) return 0;
  if (ta / 32 == tb / 32 && (a->epoch >> 16) != (b->epoch >> 16)) return 0;
  return 1;
}

static struct kc_access as_access(const struct kc_access_touch *t) {
  return (struct kc_access){4 * t->word, t->who, t->epoch, t->site};
}

int kc_access_conflict(const struct kc_access *rec, size_t n, struct kc_access_touch *t,
                       struct kc_access pair[2]) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned size = (rec[i].who >> 20) & 0x1f, first = rec[i].addr / 4;
    unsigned last = (rec[i].addr + (size ? size : 1) - 1) / 4;
    for (unsigned w = first; w <= last && w < first + 4; w++)
      t[m++] = (struct kc_access_touch){w, rec[i].epoch, rec[i].who, rec[i].site};
  }
  qsort(t, m, sizeof *t, by_word_epoch);
  for (size_t g = 0; g < m;) {
    size_t e = g + 1;
    while (e < m && !by_word_epoch(&t[g], &t[e]))
      e++;
    /* Bounded per group: a word every thread hits (an atomic counter)
     * must not cost quadratic time. */
    size_t lim = e - g > 4096 ? g + 4096 : e;
    for (size_t i = g; i < lim; i++)
      for (size_t j = i + 1; j < lim; j++)
        if (conflict(&t[i], &t[j])) {
          pair[0] = as_access(&t[i]);
          pair[1] = as_access(&t[j]);
          return 1;
        }
    g = e;
  }
  return 0;
}
