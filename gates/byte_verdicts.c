/* gates/byte_verdicts.c — the byte comparisons of the coverage,
 * immutability and bounds gates, once: the C gates call them per element
 * of their shadow buffers and the PyTorch binding (through kcheck.h, on
 * the data of its host copies) over whole tensors, so an op and a kernel
 * are judged by the same rule. Each looks at n bytes in units of `unit`
 * (an element; 1: single bytes) and stores in first and last (either may
 * be NULL) the index of the first and last unit it counts, -1 for none. */
#include <stdint.h>
#include <string.h>

#include "../include/kcheck.h"
#include "export.h"

/* Big enough that memcmp skips equal stretches fast (an unchanged input,
 * the common case, costs one pass at memcmp's speed). */
#define SPAN 4096

static void note(unsigned long long u, unsigned long long count, long long *first,
                 long long *last) {
  if (!count && first) *first = (long long)u;
  if (last) *last = (long long)u;
}

static void none(long long *first, long long *last) {
  if (first) *first = -1;
  if (last) *last = -1;
}

KC_EXPORT unsigned long long kcheck_bytes_changed(const void *before, const void *after,
                                                  unsigned long long n, unsigned unit,
                                                  long long *first, long long *last) {
  const unsigned char *a = before, *b = after;
  unsigned long long count = 0, units = unit ? n / unit : 0;
  none(first, last);
  for (unsigned long long u = 0; u < units;) {
    /* Whole spans of equal units at once (unit-aligned, so none splits). */
    unsigned long long run = SPAN / unit ? SPAN / unit : 1;
    if (run > units - u) run = units - u;
    if (!memcmp(a + u * unit, b + u * unit, run * unit)) {
      u += run;
      continue;
    }
    for (unsigned long long end = u + run; u < end; u++)
      if (memcmp(a + u * unit, b + u * unit, unit)) {
        note(u, count, first, last);
        count++;
      }
  }
  return count;
}

static int all(const unsigned char *p, unsigned char v, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    if (p[i] != v) return 0;
  return 1;
}

KC_EXPORT unsigned long long kcheck_bytes_unwritten(const void *run_a, const void *run_b,
                                                    unsigned long long n, unsigned unit,
                                                    int poison_a, int poison_b, int may_differ,
                                                    long long *first, long long *last) {
  /* A kernel that computes the same value from the same inputs gives a
   * written unit the same bytes in both runs: one that differs kept the
   * two fills. Where written units may differ too (nondeterminism
   * allowed, an op of unknown kernels), unwritten is what kept both. */
  if (!may_differ) return kcheck_bytes_changed(run_a, run_b, n, unit, first, last);
  const unsigned char *a = run_a, *b = run_b;
  unsigned long long count = 0, units = unit ? n / unit : 0;
  none(first, last);
  for (unsigned long long u = 0; u < units; u++)
    if (all(a + u * unit, (unsigned char)poison_a, unit) &&
        all(b + u * unit, (unsigned char)poison_b, unit)) {
      note(u, count, first, last);
      count++;
    }
  return count;
}

KC_EXPORT unsigned long long kcheck_bytes_not_fill(const void *zone, unsigned long long n, int fill,
                                                   long long *first, long long *last) {
  const unsigned char *z = zone;
  unsigned long long count = 0;
  none(first, last);
  for (unsigned long long i = 0; i < n; i++)
    if (z[i] != (unsigned char)fill) {
      note(i, count, first, last);
      count++;
    }
  return count;
}
