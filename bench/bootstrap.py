#!/usr/bin/env python3
"""bench/bootstrap.py — the median of paired ratios with a percentile
bootstrap interval: each pair (plain, kcheck) run back to back gives one
ratio; the pairs are resampled with replacement, seeded, so a table can be
recomputed bit for bit from its logs.

  python3 bench/bootstrap.py RATIO [RATIO ...]      # prints median lo hi
"""
import random
import statistics
import sys


def median_ci(ratios, level=0.95, resamples=10000, seed=0):
    """(median, lo, hi) of `ratios`: the sample median and the percentile
    bootstrap interval of the median at `level`. Fewer than 2 ratios have
    no interval (lo = hi = the median)."""
    xs = [float(r) for r in ratios]
    if not xs:
        raise ValueError("no ratios")
    med = statistics.median(xs)
    if len(xs) < 2:
        return med, med, med
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(resamples))
    tail = (1 - level) / 2
    lo = meds[int(tail * resamples)]
    hi = meds[min(resamples - 1, int((1 - tail) * resamples))]
    return med, lo, hi


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    print("%.4f %.4f %.4f" % median_ci(sys.argv[1:]))
