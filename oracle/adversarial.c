/* oracle/adversarial.c — the seeded generators of adversarial.h. Values are
 * chosen in double and rounded to the target format, so every format gets
 * the same pattern at its own resolution. */
#include "adversarial.h"

#include <math.h>
#include <string.h>

#include "oracle.h"

static const struct {
  const char *name, *purpose;
} gens[OC_GEN_COUNT] = {
    {"uniform", "baseline uniform [0,1) data (what KernelBench uses); catches gross errors, "
                "hides most precision loss"},
    {"all_positive", "all products positive so sum|ab| = |c|: rounding errors cannot hide "
                     "behind cancellation; exposes narrow accumulators"},
    {"stagnation", "a large product opens every K tile, so a narrow or truncating accumulator "
                   "absorbs the small terms after it (errors add up one-signed); exposes "
                   "fp16/bf16/14-bit accumulation and missing promotion"},
    {"fp16_overflow", "partial sums climb past 65520 and come back into range: an fp16 "
                      "accumulator overflows to Inf, a correct one does not"},
    {"large_mean", "rows with mean about 1e3 standard deviations: one-pass variance "
                   "E[x^2]-mean^2 loses every digit (n u k^2 >> 1) while two-pass/Welford "
                   "stay accurate (n u k << 1)"},
    {"large_logits", "logits in [80,100]: exp overflows fp32 unless the row max is subtracted "
                     "first"},
    {"specials", "NaN, +Inf, -Inf, rows of signed zeros and subnormals at seeded places: checks "
                 "propagation (NaN through max), signed zeros and denormal handling (FTZ)"},
    {"duplicates", "ties, constant rows, +-max finite and the smallest subnormal: checks "
                   "argmax/tie logic, saturation and overflow rules"},
    {"cancel", "signed data in [-1,1): heavy cancellation; a value-correctness detector, a "
               "poor precision detector"},
};

const char *oc_gen_name(enum oc_gen g) { return (unsigned)g < OC_GEN_COUNT ? gens[g].name : "?"; }
const char *oc_gen_purpose(enum oc_gen g) {
  return (unsigned)g < OC_GEN_COUNT ? gens[g].purpose : "?";
}
int oc_gen_parse(const char *name) {
  for (int i = 0; i < OC_GEN_COUNT; i++)
    if (!strcmp(name, gens[i].name)) return i;
  return -1;
}

uint64_t oc_rand_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double oc_rand_unit(uint64_t *s) { return (double)(oc_rand_next(s) >> 11) * 0x1p-53; }

static void put(void *out, enum oc_format f, int64_t i, double x) {
  uint64_t b = oc_encode(f, x, OC_OVF_IEEE);
  unsigned char *p = (unsigned char *)out + i * (int64_t)oc_format_size(f);
  switch (oc_format_size(f)) {
  case 8: memcpy(p, &b, 8); break;
  case 4: {
    uint32_t v = (uint32_t)b;
    memcpy(p, &v, 4);
    break;
  }
  case 2: {
    uint16_t v = (uint16_t)b;
    memcpy(p, &v, 2);
    break;
  }
  default: *p = (unsigned char)b;
  }
}

static double fmt_max(enum oc_format f) { return oc_format_info(f)->max_finite; }

int oc_specials_runs(int64_t rows) {
  if (rows <= 0 || rows >= OC_SPECIALS_KINDS) return 1;
  return (int)((OC_SPECIALS_KINDS + rows - 1) / rows);
}

uint64_t oc_specials_seed(uint64_t seed, int64_t rows, int i) {
  return rows > 0 && rows < OC_SPECIALS_KINDS ? seed + (uint64_t)i * (uint64_t)rows : seed;
}

/* The first kind of the specials generator (see adversarial.h): 0 from 6
 * rows on, so that every input that reached all kinds before keeps its
 * bytes (fixtures and recorded regenerate commands); below, taken from the
 * seed, which a regenerate command carries already (a separate rotation
 * argument would change kcheck_generate and every recorded command). A
 * rotation of the row index keeps one kind per row: NaN and Inf in one
 * row would hide each other in a reduction. */
static int specials_rotation(int64_t rows, uint64_t seed) {
  return rows < OC_SPECIALS_KINDS ? (int)(seed % OC_SPECIALS_KINDS) : 0;
}

int oc_generate(enum oc_gen g, enum oc_format f, int role, int64_t rows, int64_t cols,
                uint64_t seed, const struct oc_gen_params *params, void *out) {
  if ((unsigned)g >= OC_GEN_COUNT || (unsigned)f >= OC_FORMAT_COUNT || rows < 0 || cols < 0)
    return -1;
  int tile = params && params->tile > 0 ? params->tile : 32;
  double big = params && params->big > 0 ? params->big : 64;
  uint64_t st = seed * 0x2545f4914f6cdd1dULL + (uint64_t)role * 0x9e3779b97f4a7c15ULL + (uint64_t)g;
  oc_rand_next(&st);
  /* In fp16_overflow the magnitude is scaled so partial sums pass 65520
   * whatever K is; e4m3fn tops out at 448, so use what the format holds. */
  double ovf_mag = fmin(240.0, fmt_max(f) / 2);
  int rot = specials_rotation(rows, seed);
  for (int64_t r = 0; r < rows; r++) {
    /* Per-row helpers for the row-structured generators. */
    uint64_t rs = st ^ ((uint64_t)r * 0xd6e8feb86659fd93ULL);
    int64_t spot = cols ? (int64_t)(oc_rand_next(&rs) % (uint64_t)cols) : 0;
    for (int64_t c = 0; c < cols; c++) {
      double u = oc_rand_unit(&st), x;
      switch (g) {
      case OC_GEN_UNIFORM: x = u; break;
      case OC_GEN_ALL_POSITIVE: x = 0.5 + 0.5 * u; break;
      case OC_GEN_STAGNATION:
        /* A (role 0, K along columns): big at every tile start; B (K along
         * rows): positive. For a plain vector the first of each tile. */
        if (role == OC_ROLE_B)
          x = 0.5 + 0.5 * u;
        else
          x = c % tile == 0 ? big * (1 + u / 8) : 0.25 + 0.75 * u;
        break;
      case OC_GEN_FP16_OVERFLOW: {
        /* A: +m in the first half of K, -m + small in the second; B: the
         * same positive value at k and k + K/2, so the exact result is
         * small while the running sum peaks near (K/2) m^2. */
        int64_t kk = role == OC_ROLE_B ? r : c, klen = role == OC_ROLE_B ? rows : cols;
        int64_t half = klen / 2;
        if (role == OC_ROLE_B) {
          uint64_t ks =
              seed ^ ((uint64_t)(kk % (half ? half : 1)) * 0x9e37ULL) ^ ((uint64_t)c << 32);
          x = ovf_mag * (0.8 + 0.2 * oc_rand_unit(&ks));
        } else {
          x = kk < half ? ovf_mag : -ovf_mag + (kk < 2 * half ? 0.5 * u : ovf_mag * u);
        }
        break;
      }
      case OC_GEN_LARGE_MEAN: {
        /* mean 1000, sigma ~1: kappa ~ 1e3 (designed for fp32 rows of ~1024). */
        double z = (u + oc_rand_unit(&st) + oc_rand_unit(&st) - 1.5) * 2;
        x = 1000.0 + z;
        break;
      }
      case OC_GEN_LARGE_LOGITS: x = 80 + 20 * u; break;
      case OC_GEN_SPECIALS:
        x = 2 * u - 1;
        switch ((r + rot) % OC_SPECIALS_KINDS) {
        case 0:
          if (c == spot) x = NAN;
          break;
        case 1:
          if (c == spot) x = INFINITY;
          break;
        case 2:
          if (c == spot) x = -INFINITY;
          break;
        case 3: x = -0.0; break;
        case 4:
          x = (c % 2 ? -1 : 1) * oc_format_info(f)->min_subnormal * (1 + (double)(c % 3));
          break;
        default: x = c == spot ? -0.0 : 0.0; break;
        }
        break;
      case OC_GEN_DUPLICATES:
        switch (r % 4) {
        case 0: x = 0.75; break;                               /* constant row: ties */
        case 1: x = c == spot ? fmt_max(f) : 2 * u - 1; break; /* extreme element */
        case 2: x = c == spot ? -fmt_max(f) : (c % 2 ? 0.5 : -0.5); break;
        default: x = oc_format_info(f)->min_subnormal * (double)(1 + c % 2); break;
        }
        break;
      default: x = 2 * u - 1; break;
      }
      put(out, f, r * cols + c, x);
    }
  }
  return 0;
}
