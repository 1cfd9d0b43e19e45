/* libkcheck/access.h — the access-level check's analysis: conflicting
 * pairs in a log of one block's shared-memory accesses (struct kc_access,
 * written by kcheck's PTX copy of a kernel, libkcheck/ptx.h). No driver:
 * unit-tested on hand-made logs (test/unit/test_ptx.c). */
#ifndef KC_ACCESS_H
#define KC_ACCESS_H

#include <stddef.h>

#include "ptx.h"

/* One 4-byte word touched by one logged access (scratch of the analysis). */
struct kc_access_touch {
  unsigned word, epoch, who, site;
};

/* The first pair of rec[0..n) that races: one word, two threads, at least
 * one plain write or one atomic against a plain access, in one barrier
 * epoch and, for two lanes of one warp, in one __syncwarp epoch. scratch
 * holds 4 * n touches. 1 with pair[0..1] (addr: the word's byte address),
 * else 0. */
int kc_access_conflict(const struct kc_access *rec, size_t n, struct kc_access_touch *scratch,
                       struct kc_access pair[2]);

#endif
