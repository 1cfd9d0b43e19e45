/* test/unit/test_access.c — the access-level check's analysis on hand-made
 * logs (libkcheck/base/access.h): barrier epochs and __syncwarp inside a block,
 * shared memory per block, and the release/acquire model between blocks
 * (the last-block-done reduction and the flag hand-off, with and without
 * __threadfence). Each case must fire or must stay silent. */
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "check.h"

#define G KC_ACC_GLOBAL
/* addr, block, thread, kind, size, barrier epoch, warp epoch, seq; g: G or 0 */
static struct kc_access acc(unsigned long long addr, unsigned blk, unsigned tid, unsigned kind,
                            unsigned size, unsigned ep, unsigned wep, unsigned seq, unsigned g) {
  return (struct kc_access){addr, tid | kind << 16 | size << 20 | g, ep | wep << 16, blk, 0, seq,
                            0};
}
#define A(...) acc(__VA_ARGS__)
#define R KC_ACC_READ
#define W KC_ACC_WRITE
#define AT KC_ACC_ATOMIC
#define SR KC_ACC_SREAD
#define SW KC_ACC_SWRITE
#define F KC_ACC_FENCE

static struct kc_access_result res;

static int races_x(const struct kc_access *rec, size_t n, int cross) {
  int r = kc_access_analyze(rec, n, cross, &res);
  CHECK(r >= 0);
  return r;
}
static int races(const struct kc_access *rec, size_t n) { return races_x(rec, n, 1); }
#define N(a) (sizeof(a) / sizeof(a)[0])

static void shared_memory(void) {
  /* a tree-reduction step without __syncthreads: thread 0 reads what
   * thread 64 writes, both in epoch 1 (must fire) */
  const struct kc_access nosync[] = {A(0, 0, 0, W, 4, 1, 0, 1, 0), A(256, 0, 0, R, 4, 1, 0, 2, 0),
                                     A(256, 0, 64, W, 4, 1, 0, 1, 0)};
  CHECK(races(nosync, N(nosync)) == 1 && res.pair[0].addr == 256 &&
        (res.pair[0].who & 0xffff) != (res.pair[1].who & 0xffff));
  /* the same with the barrier: epochs 1 and 2 (silent) */
  const struct kc_access sync[] = {A(256, 0, 0, R, 4, 1, 0, 1, 0), A(256, 0, 64, W, 4, 2, 0, 1, 0)};
  CHECK(races(sync, N(sync)) == 0);
  /* every block has its own shared memory: one address in two blocks is
   * two words (silent); the same race in block 7 fires */
  const struct kc_access blocks[] = {A(256, 0, 0, R, 4, 1, 0, 1, 0),
                                     A(256, 3, 64, W, 4, 1, 0, 1, 0)};
  CHECK(races(blocks, N(blocks)) == 0);
  const struct kc_access block7[] = {A(256, 7, 0, R, 4, 1, 0, 1, 0),
                                     A(256, 7, 64, W, 4, 1, 0, 1, 0)};
  CHECK(races(block7, N(block7)) == 1 && res.pair[0].block == 7);
  /* lanes of one warp: unordered without __syncwarp, ordered with it */
  const struct kc_access lanes[] = {A(64, 0, 1, R, 4, 0, 0, 1, 0), A(64, 0, 17, W, 4, 0, 0, 1, 0)};
  CHECK(races(lanes, N(lanes)) == 1);
  const struct kc_access lanes_sync[] = {A(64, 0, 1, R, 4, 0, 1, 1, 0),
                                         A(64, 0, 17, W, 4, 0, 2, 1, 0)};
  CHECK(races(lanes_sync, N(lanes_sync)) == 0);
  /* volatile does not order lanes (warp_red_volatile): strong shared
   * accesses are plain ones */
  const struct kc_access vol[] = {A(64, 0, 1, SR, 4, 0, 0, 1, 0), A(64, 0, 17, SW, 4, 0, 0, 1, 0)};
  CHECK(races(vol, N(vol)) == 1);
  /* ...but __syncwarp epochs do not order two warps */
  const struct kc_access warps[] = {A(64, 0, 1, R, 4, 0, 1, 1, 0), A(64, 0, 40, W, 4, 0, 2, 1, 0)};
  CHECK(races(warps, N(warps)) == 1);
  /* atomics among themselves and reads among themselves are fine; a
   * plain read of an atomically updated word is not */
  const struct kc_access atomics[] = {A(8, 0, 0, AT, 4, 1, 0, 1, 0), A(8, 0, 33, AT, 4, 1, 0, 1, 0),
                                      A(12, 0, 0, R, 4, 1, 0, 2, 0),
                                      A(12, 0, 99, R, 4, 1, 0, 1, 0)};
  CHECK(races(atomics, N(atomics)) == 0);
  const struct kc_access mixed[] = {A(8, 0, 0, AT, 4, 1, 0, 1, 0), A(8, 0, 33, R, 4, 1, 0, 1, 0)};
  CHECK(races(mixed, N(mixed)) == 1);
  /* a 16-byte vector store overlaps a 4-byte read of its third word */
  const struct kc_access vec[] = {A(32, 0, 0, W, 16, 0, 0, 1, 0), A(40, 0, 50, R, 4, 0, 0, 1, 0)};
  CHECK(races(vec, N(vec)) == 1 && res.pair[0].addr == 40);
  /* 16-bit elements, one per thread (Triton's layouts): two threads
   * storing the two halves of one word share no byte (silent); the same
   * half, or a 4-byte read over both, does (fires) */
  const struct kc_access halves[] = {A(0x400, 0, 0, W, 2, 1, 0, 1, 0),
                                     A(0x402, 0, 1, W, 2, 1, 0, 1, 0)};
  CHECK(races(halves, N(halves)) == 0);
  const struct kc_access half[] = {A(0x400, 0, 0, W, 2, 1, 0, 1, 0),
                                   A(0x400, 0, 1, W, 2, 1, 0, 1, 0)};
  CHECK(races(half, N(half)) == 1);
  const struct kc_access over[] = {A(0x402, 0, 0, W, 2, 1, 0, 1, 0),
                                   A(0x400, 0, 33, R, 4, 1, 0, 1, 0)};
  CHECK(races(over, N(over)) == 1);
  /* bytes: thread 3 writes byte 3 of a word thread 0 writes byte 0 of */
  const struct kc_access bytes[] = {A(16, 0, 0, W, 1, 0, 0, 1, G), A(19, 0, 3, W, 1, 0, 0, 1, G)};
  CHECK(races(bytes, N(bytes)) == 0);
  /* one thread's own accesses are ordered */
  const struct kc_access own[] = {A(4, 0, 7, W, 4, 0, 0, 1, 0), A(4, 0, 7, R, 4, 0, 0, 2, 0)};
  CHECK(races(own, N(own)) == 0);
  CHECK(races(NULL, 0) == 0);
}

static void global_in_block(void) {
  /* a non-atomic count among a block's threads (glob_rmw_count) */
  const struct kc_access rmw[] = {
      A(0x7f0000001000ull, 2, 0, R, 4, 0, 0, 1, G), A(0x7f0000001000ull, 2, 0, W, 4, 0, 0, 2, G),
      A(0x7f0000001000ull, 2, 5, R, 4, 0, 0, 1, G), A(0x7f0000001000ull, 2, 5, W, 4, 0, 0, 2, G)};
  CHECK(races(rmw, N(rmw)) == 1 && (res.pair[0].who & G) && res.racing_words == 1);
  /* two threads writing the same value to one word (stale_dup_write) */
  const struct kc_access dup[] = {A(0x7f0000002000ull, 0, 2, W, 4, 0, 0, 1, G),
                                  A(0x7f0000002000ull, 0, 3, W, 4, 0, 0, 1, G)};
  CHECK(races(dup, N(dup)) == 1);
  /* a neighbour's element read after __syncthreads (silent) */
  const struct kc_access nb[] = {A(0x7f0000003004ull, 0, 1, W, 4, 0, 0, 1, G),
                                 A(0x7f0000003004ull, 0, 0, R, 4, 1, 0, 2, G)};
  CHECK(races(nb, N(nb)) == 0);
  /* a plain read beside atomics (glob_read_vs_atomic) fires; volatile
   * reads beside atomics are strong (silent) */
  const struct kc_access rva[] = {A(0x7f0000004000ull, 0, 1, AT, 4, 0, 0, 1, G),
                                  A(0x7f0000004000ull, 0, 2, R, 4, 0, 0, 1, G)};
  CHECK(races(rva, N(rva)) == 1);
  const struct kc_access sva[] = {A(0x7f0000004000ull, 0, 1, AT, 4, 0, 0, 1, G),
                                  A(0x7f0000004000ull, 0, 2, SR, 4, 0, 0, 1, G)};
  CHECK(races(sva, N(sva)) == 0);
  /* two words racing are counted */
  const struct kc_access two[] = {
      A(0x7f0000005000ull, 0, 1, W, 4, 0, 0, 1, G), A(0x7f0000005000ull, 0, 2, W, 4, 0, 0, 1, G),
      A(0x7f0000005010ull, 0, 1, W, 4, 0, 0, 2, G), A(0x7f0000005010ull, 0, 2, R, 4, 0, 0, 2, G)};
  CHECK(races(two, N(two)) == 1 && res.racing_words == 2);
}

/* The last-block-done reduction: block b's thread 0 writes part[b], (a
 * fence), an atomic on the counter; the last block's thread 0 takes the
 * counter, a barrier, then reads every part. */
#define PART 0x7f0000010000ull
#define COUNT 0x7f0000020000ull
static void last_block(int fence, int cross) {
  struct kc_access rec[32];
  size_t n = 0;
  for (unsigned b = 0; b < 4; b++) {
    unsigned seq = 1;
    rec[n++] = A(PART + 4 * b, b, 0, W, 4, 1, 0, seq++, G);
    if (fence) rec[n++] = A(0, b, 0, F, 0, 1, 0, seq++, G);
    rec[n++] = A(COUNT, b, 0, AT, 4, 1, 0, seq++, G);
    if (b == 3) /* the last block, after its barrier */
      for (unsigned p = 0; p < 4; p++)
        rec[n++] = A(PART + 4 * p, b, 0, SR, 4, 2, 0, seq++, G);
  }
  CHECK(n <= 32);
  int r = races_x(rec, n, cross);
  if (!cross)
    CHECK(r == 0);
  else if (fence)
    CHECK(r == 0 && res.release_points == 4);
  else
    CHECK(r == 1 && res.racing_words == 3 && res.pair[0].block != res.pair[1].block &&
          res.pair[0].addr >= PART && res.pair[0].addr < PART + 12);
}

/* The flag hand-off: block 0's threads write data, a barrier, thread 0
 * (a fence and) a volatile store of the flag; block 1's thread 0 spins on
 * the flag, a barrier, every thread reads data. */
#define DATA 0x7f0000030000ull
#define FLAG 0x7f0000040000ull
static int handoff(int fence, int consumer_epoch, int release_late) {
  struct kc_access rec[32];
  size_t n = 0;
  unsigned seq0 = 1;
  for (unsigned t = 0; t < 4; t++)
    rec[n++] = A(DATA + 4 * t, 0, t, W, 4, 0, 0, t ? 1 : seq0++, G);
  if (fence) rec[n++] = A(0, 0, 0, F, 0, 1, 0, seq0++, G);
  rec[n++] = A(FLAG, 0, 0, SW, 4, 1, 0, seq0++, G);
  if (release_late) /* written after the flag: no fence covers it */
    rec[n++] = A(DATA + 16, 0, 0, W, 4, 1, 0, seq0++, G);
  rec[n++] = A(FLAG, 1, 0, SR, 4, 0, 0, 1, G);
  for (unsigned t = 0; t < 4; t++)
    rec[n++] = A(DATA + 4 * t, 1, t, R, 4, (unsigned)consumer_epoch, 0, 2, G);
  if (release_late) rec[n++] = A(DATA + 16, 1, 0, R, 4, 1, 0, 3, G);
  return races(rec, n);
}

static void between_blocks(void) {
  last_block(0, 1);             /* lastblock_nofence: fires */
  last_block(1, 1);             /* clean_lastblock_fence: silent */
  last_block(0, 0);             /* ...and nothing judged between blocks: silent */
  CHECK(handoff(0, 1, 0) == 1); /* flag_handoff_nofence: fires */
  CHECK(handoff(1, 1, 0) == 0); /* with __threadfence before the flag: silent */
  /* readers before the barrier that follows the flag read are not
   * covered by the acquire (thread 0's own later read is) */
  CHECK(handoff(1, 0, 0) == 1 && (res.pair[0].who & 0xffff) + (res.pair[1].who & 0xffff) != 0);
  CHECK(handoff(1, 1, 1) == 1 && res.pair[0].addr == DATA + 16);
  /* blocks writing one word, no sync at all (inter_last_writer) fires;
   * atomics of different blocks and strong accesses are silent */
  const struct kc_access lw[] = {A(0x7f0000050000ull, 0, 0, W, 4, 0, 0, 1, G),
                                 A(0x7f0000050000ull, 9, 0, W, 4, 0, 0, 1, G)};
  CHECK(races(lw, N(lw)) == 1);
  const struct kc_access at[] = {
      A(0x7f0000050000ull, 0, 0, AT, 4, 0, 0, 1, G), A(0x7f0000050000ull, 9, 0, AT, 4, 0, 0, 1, G),
      A(0x7f0000050000ull, 4, 0, SR, 4, 0, 0, 1, G), A(0x7f0000050000ull, 5, 0, SW, 4, 0, 0, 1, G)};
  CHECK(races(at, N(at)) == 0);
  /* a fence without a following sync write releases nothing */
  const struct kc_access nf[] = {A(0x7f0000060000ull, 0, 0, W, 4, 0, 0, 1, G),
                                 A(0, 0, 0, F, 0, 0, 0, 2, G),
                                 A(0x7f0000060000ull, 1, 0, R, 4, 0, 0, 1, G)};
  CHECK(races(nf, N(nf)) == 1);
  /* the release and the acquire must be on the same word */
  const struct kc_access other[] = {
      A(0x7f0000060000ull, 0, 0, W, 4, 0, 0, 1, G), A(0, 0, 0, F, 0, 0, 0, 2, G),
      A(0x7f0000070000ull, 0, 0, AT, 4, 0, 0, 3, G), A(0x7f0000070004ull, 1, 0, AT, 4, 0, 0, 1, G),
      A(0x7f0000060000ull, 1, 0, R, 4, 0, 0, 2, G)};
  CHECK(races(other, N(other)) == 1);
}

int main(void) {
  shared_memory();
  global_in_block();
  between_blocks();
  return CHECK_DONE("test_access");
}
