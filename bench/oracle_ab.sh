#!/bin/sh
# bench/oracle_ab.sh BASE [NEW] — same-session A/B of the oracle's CPU
# benchmarks (oracle_dot, oracle_gemm, oracle_ops) between two commits
# (NEW defaults to HEAD), rounds interleaved (ROUNDS, default 3 for the
# GEMM, 2 for the dot). Both sides are timed on the thread's CPU clock
# (CLOCK_THREAD_CPUTIME_ID instead of the benches' CLOCK_MONOTONIC), so that
# other processes on a shared machine do not count as the oracle's time.
# Each side is built from `git archive` of its commit in $WORK (default
# /tmp/oracle_ab); prints every run's output under a "### side round" line.
set -e
base=${1:?usage: bench/oracle_ab.sh BASE [NEW]}
new=${2:-HEAD}
rounds=${ROUNDS:-3}
work=${WORK:-/tmp/oracle_ab}
top=$(git rev-parse --show-toplevel)
for side in base new; do
  if [ $side = base ]; then rev=$base; else rev=$new; fi
  rm -rf "$work/$side"
  mkdir -p "$work/$side"
  git -C "$top" archive "$rev" | tar -x -C "$work/$side"
  for f in oracle_dot oracle_gemm oracle_ops; do
    sed -i 's/CLOCK_MONOTONIC/CLOCK_THREAD_CPUTIME_ID/' "$work/$side/bench/$f.c"
  done
  make -s -C "$work/$side" BUILD="$work/$side/build" "$work/$side/build/bench/oracle_dot" \
    "$work/$side/build/bench/oracle_gemm" "$work/$side/build/bench/oracle_ops" >/dev/null
  echo "$side = $rev ($(git -C "$top" rev-parse --short "$rev"))"
done
uptime
r=1
while [ $r -le 2 ]; do
  for side in base new; do
    echo "### $side dot round $r"
    "$work/$side/build/bench/oracle_dot"
  done
  r=$((r + 1))
done
r=1
while [ $r -le "$rounds" ]; do
  for side in base new; do
    echo "### $side gemm round $r"
    "$work/$side/build/bench/oracle_gemm"
  done
  r=$((r + 1))
done
for side in base new; do
  echo "### $side ops"
  "$work/$side/build/bench/oracle_ops"
done
uptime
