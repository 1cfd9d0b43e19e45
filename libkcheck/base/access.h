/* libkcheck/base/access.h — the access-level check's analysis: conflicting
 * pairs in a log of a kernel run's shared- and global-memory accesses and
 * fences (struct kc_access, written by kcheck's PTX copy of the kernel,
 * libkcheck/base/ptx.h). No driver: unit-tested on hand-made logs
 * (test/unit/test_access.c). */
#ifndef KC_ACCESS_H
#define KC_ACCESS_H

#include <stddef.h>

#include "ptx.h"

struct kc_access_result {
  struct kc_access pair[2]; /* the first racing pair (addr: the 4-byte word's address) */
  size_t racing_words;      /* words with at least one racing pair */
  size_t release_points;    /* fence-then-atomic/strong-store orderings seen */
  int truncated;            /* the pair budget ran out: words left unjudged (silent) */
};

/* Races in rec[0..n). Two accesses race when they touch one 4-byte word,
 * come from different threads, at least one is a plain write or one is
 * plain and the other atomic or strong (two atomic/strong global accesses
 * never race; strong shared accesses count as plain: __syncwarp, not
 * volatile, orders a warp's lanes), and nothing orders them:
 *   - one block: a __syncthreads between them (different barrier epochs),
 *     or for two lanes of one warp a __syncwarp;
 *   - two blocks (global memory, only when cross_block): a release in one
 *     and an acquire in the other on one sync word S. Release: a fence of
 *     GPU/system scope by thread t, then t's atomic or strong write to S;
 *     it covers t's earlier accesses and the block's accesses before a
 *     barrier preceding the fence. Acquire: an atomic or strong read of S
 *     by thread u; it covers u's later accesses and the block's accesses
 *     after a barrier following it. No fence is asked of the acquiring
 *     side (CUDA's own last-block-done sample has none), which keeps the
 *     check silent on it; which value the read saw is not known, so an
 *     acquire that came too early still orders (missed races, never false
 *     ones). Orderings through a third block are not followed (such a pair
 *     is reported).
 * 1 with *out filled, 0 none (out's counters still set), -1 out of host
 * memory. */
int kc_access_analyze(const struct kc_access *rec, size_t n, int cross_block,
                      struct kc_access_result *out);

#endif
