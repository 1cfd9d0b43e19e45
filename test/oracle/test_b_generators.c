/* test/oracle/test_b_generators.c — the specials generator reaches every
 * special kind whatever the number of rows: an input of fewer than 6 rows
 * over the runs the nonfinite gate makes (oc_specials_runs,
 * oc_specials_seed) holds NaN, +Inf, -Inf, -0.0 and a subnormal, one kind
 * a row; from 6 rows on every input keeps the bytes it always had. */
#include <stdint.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "adversarial.h"
#include "test_b_util.h"

enum { COLS = 40, MAXR = 16 };

/* What the runs of one input hold, over every row of every run. */
struct kinds {
  int nan, pinf, ninf, nzero, sub, mixed;
};

/* The special kinds of one row of fp64 values, as bits: 1 NaN, 2 +Inf,
 * 4 -Inf, 8 -0, 16 subnormal. */
static unsigned row_kinds(const double *x, int64_t n) {
  unsigned k = 0;
  for (int64_t c = 0; c < n; c++) {
    double v = x[c];
    if (v != v)
      k |= 1;
    else if (v == INFINITY)
      k |= 2;
    else if (v == -INFINITY)
      k |= 4;
    else if (v == 0 && signbit(v))
      k |= 8;
    else if (v != 0 && fabs(v) < ldexp(0.5, oc_format_info(OC_FP32)->emin_normal))
      k |= 16;
  }
  return k;
}

/* The rows of an fp32 rows x COLS input, added to s. */
static void add_rows(struct kinds *s, const float *buf, int64_t rows) {
  double x[COLS];
  for (int64_t r = 0; r < rows; r++) {
    for (int c = 0; c < COLS; c++)
      x[c] = buf[r * COLS + c];
    unsigned kb = row_kinds(x, COLS);
    s->nan |= kb & 1, s->pinf |= !!(kb & 2), s->ninf |= !!(kb & 4), s->nzero |= !!(kb & 8);
    s->sub |= !!(kb & 16);
    /* NaN and an infinity in one row hide each other in a reduction. */
    s->mixed |= (kb & 1) && (kb & 6);
  }
}

/* Input k (seed base + k, as the gates generate input k) of rows x COLS
 * fp32 values over the specials runs for `fewest` rows, judged together. */
static struct kinds over_runs(int64_t rows, int64_t fewest, uint64_t base, int k) {
  struct kinds s = {0};
  float buf[MAXR * COLS];
  for (int i = 0; i < oc_specials_runs(fewest); i++) {
    uint64_t seed = oc_specials_seed(base, fewest, i) + (uint64_t)k;
    oc_generate(OC_GEN_SPECIALS, OC_FP32, k < 2 ? k : OC_ROLE_V, rows, COLS, seed, NULL, buf);
    add_rows(&s, buf, rows);
  }
  return s;
}

static void every_kind_below_six_rows(void) {
  int before = t_fail;
  static const uint64_t seeds[] = {0, 1, 5, 172487885537778ULL, 0x1fffffffffffffULL};
  for (int64_t rows = 1; rows < OC_SPECIALS_KINDS; rows++)
    for (size_t si = 0; si < sizeof seeds / sizeof seeds[0]; si++)
      for (int k = 0; k < 3; k++) {
        struct kinds s = over_runs(rows, rows, seeds[si], k);
        EXPECT(s.nan && s.pinf && s.ninf && s.nzero && s.sub && !s.mixed,
               "rows %lld seed %llu input %d: NaN %d +Inf %d -Inf %d -0 %d subnormal %d mixed %d",
               (long long)rows, (unsigned long long)seeds[si], k, s.nan, s.pinf, s.ninf, s.nzero,
               s.sub, s.mixed);
      }
  /* A launch's inputs of different row counts: the runs for the fewest
   * rows (what the gate takes) cover an input with more rows too. */
  for (int64_t fewest = 1; fewest < OC_SPECIALS_KINDS; fewest++)
    for (int64_t rows = fewest + 1; rows <= OC_SPECIALS_KINDS; rows++) {
      struct kinds s = over_runs(rows, fewest, 77, 1);
      EXPECT(s.nan && s.pinf && s.ninf && s.nzero && s.sub && !s.mixed,
             "%lld rows over the runs for %lld", (long long)rows, (long long)fewest);
    }
  EXPECT(oc_specials_runs(1) == 6 && oc_specials_runs(2) == 3 && oc_specials_runs(4) == 2 &&
             oc_specials_runs(5) == 2 && oc_specials_runs(6) == 1 && oc_specials_runs(1000) == 1 &&
             oc_specials_runs(0) == 1,
         "runs: %d %d %d %d %d", oc_specials_runs(1), oc_specials_runs(2), oc_specials_runs(4),
         oc_specials_runs(5), oc_specials_runs(6));
  t_line("specials: 1 to 5 rows reach NaN, +-Inf, -0 and subnormals over the gate's runs", before);
}

/* From 6 rows on the bytes are what they always were (row r: kind r % 6):
 * the hashes (XXH3) are of the bytes made before rows below 6 got their
 * rotation. Same seed, same bytes, at any row count. */
static void six_rows_unchanged(void) {
  int before = t_fail;
  static const struct {
    int64_t rows;
    enum oc_format f;
    uint64_t seed, hash;
  } cases[] = {
      {6, OC_FP32, 3, 0xfae6b2a8befe4f0dULL},
      {16, OC_FP32, 172487885537778ULL, 0xa90d2e988659ecd5ULL},
      {12, OC_BF16, 9, 0xab51bce4170a82e6ULL},
  };
  float buf[MAXR * COLS], again[MAXR * COLS];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t bytes = (size_t)cases[i].rows * COLS * oc_format_size(cases[i].f);
    oc_generate(OC_GEN_SPECIALS, cases[i].f, 0, cases[i].rows, COLS, cases[i].seed, NULL, buf);
    uint64_t h = XXH3_64bits(buf, bytes);
    EXPECT(h == cases[i].hash, "rows %lld: hash %016llx", (long long)cases[i].rows,
           (unsigned long long)h);
  }
  for (int64_t rows = 1; rows <= MAXR; rows++) {
    oc_generate(OC_GEN_SPECIALS, OC_FP32, 0, rows, COLS, 41, NULL, buf);
    oc_generate(OC_GEN_SPECIALS, OC_FP32, 0, rows, COLS, 41, NULL, again);
    EXPECT(!memcmp(buf, again, (size_t)rows * COLS * sizeof *buf), "rows %lld: same seed differs",
           (long long)rows);
  }
  t_line("specials: 6 rows and more keep their bytes; a seed gives the same bytes", before);
}

int main(void) {
  every_kind_below_six_rows();
  six_rows_unchanged();
  return t_done("test_b_generators");
}
