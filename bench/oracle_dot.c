/* bench/oracle_dot.c — cost of the exact dot product (oc_dot_exact) per
 * term on one core, against a plain double loop over the same fp32 data in
 * the same run. Goal (ORACLE.md §4): <= 8 ns/term. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "exact.h"

static uint64_t rng_state = 12345;
static uint64_t rnd64(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Kept out of line so the compiler cannot fuse or hoist it across reps. */
__attribute__((noinline)) static double plain_dot(const double *x, const double *y, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += x[i] * y[i];
  return s;
}

static volatile double sink;

/* Best time per term over a few runs of enough repetitions. */
static double time_per_term(int exact, const double *x, const double *y, size_t n) {
  size_t reps = (size_t)(2e6 / (double)n) + 1;
  double best = INFINITY;
  for (int run = 0; run < 5; run++) {
    double t0 = now();
    for (size_t r = 0; r < reps; r++)
      sink = exact ? oc_dot_exact(x, 1, y, 1, n, MPFR_RNDN) : plain_dot(x, y, n);
    double dt = (now() - t0) / (double)(reps * n);
    if (dt < best) best = dt;
  }
  return best * 1e9;
}

int main(void) {
  const size_t sizes[] = {64, 1024, 16384, 262144};
  size_t nmax = sizes[sizeof sizes / sizeof sizes[0] - 1];
  double *x = malloc(nmax * sizeof *x), *y = malloc(nmax * sizeof *y);
  if (!x || !y) return 1;
  /* fp32 values with signs and exponents spread over +-2^20 (GEMM-like) */
  for (size_t i = 0; i < nmax; i++) {
    x[i] = (float)ldexp((double)(rnd64() >> 11) * 0x1p-53 + 0.5, (int)(rnd64() % 41) - 20);
    y[i] = (float)ldexp((double)(rnd64() >> 11) * 0x1p-53 + 0.5, (int)(rnd64() % 41) - 20);
    if (rnd64() & 1) x[i] = -x[i];
  }
  printf("oracle_dot: exact fp32 dot (Kulisch accumulator) vs plain double loop, one core\n");
  printf("%10s %16s %16s %8s\n", "n", "ns/term exact", "ns/term plain", "ratio");
  double worst = 0;
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    double te = time_per_term(1, x, y, n), tp = time_per_term(0, x, y, n);
    printf("%10zu %16.2f %16.2f %8.2f\n", n, te, tp, te / tp);
    if (n >= 1024 && te > worst) worst = te;
  }
  printf("goal <= 8 ns/term (n >= 1024): %s (worst %.2f)\n", worst <= 8 ? "met" : "NOT met", worst);
  free(x);
  free(y);
  return 0;
}
