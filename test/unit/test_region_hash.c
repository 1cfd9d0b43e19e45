/* test/unit/test_region_hash.c — the hash_compare hash (kernels/region_hash.h)
 * sees the changes a linear per-pair hash let cancel, and equal contents
 * hash alike. The GPU's kernels use the same header; bench/own_kernels
 * checks on the device that they give these values. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/region_hash.h"

static void hash(const unsigned *a, unsigned long long words, unsigned long long seed,
                 unsigned long long h[2]) {
  h[0] = h[1] = 0;
  kc_rh_region(a, words, seed, h);
}

static int differ(const unsigned *a, const unsigned *b, unsigned long long words,
                  unsigned long long seed) {
  unsigned long long x[2], y[2];
  hash(a, words, seed, x);
  hash(b, words, seed, y);
  return x[0] != y[0] || x[1] != y[1];
}

enum { WORDS = 3 * 1024 + 7 }; /* three runs of 256 quads and a partial quad */

int main(void) {
  unsigned *a = malloc(WORDS * sizeof *a), *b = malloc(WORDS * sizeof *b);
  CHECK(a && b);
  if (!a || !b) return CHECK_DONE("region_hash");
  unsigned long long x = 88172645463325252ull;
  for (int i = 0; i < WORDS; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    a[i] = (unsigned)x;
  }
  for (unsigned long long seed = 1; seed < 40; seed++) {
    memcpy(b, a, WORDS * sizeof *a);
    CHECK(!differ(a, b, WORDS, seed));
    /* one word, one bit */
    b[(seed * 131) % WORDS] ^= 1u << (seed % 32);
    CHECK(differ(a, b, WORDS, seed));
    /* two sign bits of odd words, in two places: 2^63 (m1 + m2) is 0 mod
     * 2^64 for odd m1, m2, so the pair hash missed this every time */
    memcpy(b, a, WORDS * sizeof *a);
    b[1 + 2 * (seed % 500)] ^= 0x80000000u;
    b[1 + 2 * (seed % 500) + 2 * (1 + seed % 700)] ^= 0x80000000u;
    CHECK(differ(a, b, WORDS, seed));
    /* two runs of 256 quads trading places */
    memcpy(b, a, WORDS * sizeof *a);
    memcpy(b, a + 1024, 1024 * sizeof *a);
    memcpy(b + 1024, a, 1024 * sizeof *a);
    CHECK(differ(a, b, WORDS, seed));
    /* two words of one quad trading places */
    memcpy(b, a, WORDS * sizeof *a);
    b[4] = a[5], b[5] = a[4];
    CHECK(differ(a, b, WORDS, seed));
    /* the last, partial quad */
    memcpy(b, a, WORDS * sizeof *a);
    b[WORDS - 1] ^= 0x80000000u;
    CHECK(differ(a, b, WORDS, seed));
  }
  /* a different seed gives a different hash of the same contents */
  unsigned long long h1[2], h2[2];
  hash(a, WORDS, 1, h1);
  hash(a, WORDS, 2, h2);
  CHECK(h1[0] != h2[0] && h1[1] != h2[1]);
  free(a);
  free(b);
  return CHECK_DONE("region_hash");
}
