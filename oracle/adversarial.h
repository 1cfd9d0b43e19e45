/* oracle/adversarial.h — seeded input generators that make imprecise or
 * wrong kernels show themselves. Random uniform data hides most precision
 * loss (ORACLE.md §2): each generator here targets one failure mechanism;
 * the same (generator, seed, shape, format) always yields the same bytes. */
#ifndef OC_ADVERSARIAL_H
#define OC_ADVERSARIAL_H

#include <stdint.h>

#include "formats.h"

enum oc_gen {
  OC_GEN_UNIFORM,       /* uniform [0,1): baseline, KernelBench-like (weak detector) */
  OC_GEN_ALL_POSITIVE,  /* uniform [0.5,1): all products positive, sum|ab| = |c| */
  OC_GEN_STAGNATION,    /* a large product at the start of every K tile, all positive */
  OC_GEN_FP16_OVERFLOW, /* partial sums beyond 65520, final result in range */
  OC_GEN_LARGE_MEAN,    /* rows with mean/sigma ~ 1e3: one-pass variance breaks */
  OC_GEN_LARGE_LOGITS,  /* logits in [80, 100]: exp overflows without max subtraction */
  OC_GEN_SPECIALS,      /* NaN, +-Inf, rows of +-0, subnormals at seeded places */
  OC_GEN_DUPLICATES,    /* ties, equal rows, +-max finite, smallest subnormal */
  OC_GEN_CANCEL,        /* signed data in [-1,1): cancellation, value correctness */
  OC_GEN_COUNT
};

/* Which operand a generator fills: most generators give different patterns
 * to the two operands of a product (A's rows vs B's columns). */
enum oc_gen_role { OC_ROLE_X = 0, OC_ROLE_A = 0, OC_ROLE_B = 1, OC_ROLE_V = 2 };

struct oc_gen_params {
  int tile;   /* K tile for stagnation (32) */
  double big; /* size of the leading product in stagnation (64) */
};

const char *oc_gen_name(enum oc_gen g);
/* One sentence: what the generator is meant to expose. */
const char *oc_gen_purpose(enum oc_gen g);
int oc_gen_parse(const char *name); /* -1 when unknown */

/* Fills a row-major rows x cols array of format f (bit patterns, packed)
 * for the given role. For products: A is rows=M x cols=K, B rows=K x
 * cols=N. params may be NULL for the defaults. Returns 0, -1 on bad args. */
int oc_generate(enum oc_gen g, enum oc_format f, int role, int64_t rows, int64_t cols,
                uint64_t seed, const struct oc_gen_params *params, void *out);

/* The specials generator's row kinds: row r of an input with rows >= 6
 * gets kind r % 6 (0 NaN at a seeded spot, 1 +Inf, 2 -Inf, 3 a row of -0,
 * 4 subnormals, 5 one -0 among +0). An input with fewer rows gets kind
 * (r + seed) % 6 instead, so that runs at other seeds reach the kinds its
 * rows alone cannot: oc_specials_runs and oc_specials_seed name the runs
 * that cover every kind (the nonfinite gate runs them all). */
#define OC_SPECIALS_KINDS 6
/* How many runs of the specials generator give an input of `rows` rows
 * every kind: 1 from 6 rows on (and for an empty input), ceil(6 / rows)
 * below. */
int oc_specials_runs(int64_t rows);
/* The seed of run i of those (run 0 is `seed` itself): seed + i * rows,
 * so run i's rows start i * rows kinds further on. Inputs generated at
 * seed + k (input k of a launch) with at least `rows` rows are covered
 * too: each run moves all of them on by the same step. */
uint64_t oc_specials_seed(uint64_t seed, int64_t rows, int i);

/* Deterministic 64-bit generator (splitmix64) the library and tests share. */
uint64_t oc_rand_next(uint64_t *state);
double oc_rand_unit(uint64_t *state); /* uniform [0,1) with 53 random bits */

#endif
