/* test/oracle/check.h — the check harness shared by the format-level oracle
 * tests (test_formats.c, test_exact.c, test_elementwise.c): counted CHECKs
 * that print the first 30 failures, per-section ok/FAIL, a seeded splitmix64
 * and a bitwise double comparison.
 *
 * Define CHECK_RNG_SEED before including this header to pick the seed of
 * rnd64(). */
#ifndef TEST_ORACLE_CHECK_H
#define TEST_ORACLE_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#ifndef CHECK_RNG_SEED
#define CHECK_RNG_SEED 0x9E3779B97F4A7C15u
#endif

static int failures;
static long checks;
/* "ok" only when the section added no failure */
#define STATUS(before) (failures == (before) ? "ok" : "FAIL")

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    checks++;                                                                                      \
    if (!(cond)) {                                                                                 \
      if (failures++ < 30) {                                                                       \
        printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static uint64_t rng_state = CHECK_RNG_SEED;
static inline uint64_t rnd64(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}
/* Uniform in [0, 1). */
static inline double unif(void) { return (double)(rnd64() >> 11) * 0x1p-53; }

/* Same value (and sign), or both NaN. */
static inline int same(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return a == b && signbit(a) == signbit(b);
}

#endif
