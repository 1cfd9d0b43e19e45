#!/usr/bin/env bash
# bench/run_passthrough_cpu.sh — kcheck's per-launch cost on the CPU stand-in
# driver: plain, pass-through (gates=none) and with the default gates in
# steady state (one signature, checked once, every later launch captured and
# skipped), alternating rounds in one run; medians and differences.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$BUILD/bench/passthrough_cpu
ROUNDS=${ROUNDS:-5}
N=${N:-2000000}
export LD_LIBRARY_PATH="$PWD/$BUILD/fakecuda"
declare -A R
for r in $(seq 1 "$ROUNDS"); do
  R[plain]+=" $($BIN "$N" | sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p')"
  R[none]+=" $(KCHECK_OPTIONS=gates=none:log_path=none:verbosity=0 LD_PRELOAD=$PWD/$BUILD/libkcheck.so $BIN "$N" | sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p')"
  R[default]+=" $(KCHECK_OPTIONS=log_path=none:verbosity=0 LD_PRELOAD=$PWD/$BUILD/libkcheck.so $BIN "$N" | sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p')"
  # 64 distinct kernels launched in turn (a training step cycles through dozens)
  R[plain64]+=" $($BIN "$N" 64 | sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p')"
  R[none64]+=" $(KCHECK_OPTIONS=gates=none:log_path=none:verbosity=0 LD_PRELOAD=$PWD/$BUILD/libkcheck.so $BIN "$N" 64 | sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p')"
  R[default64]+=" $(KCHECK_OPTIONS=log_path=none:verbosity=0 LD_PRELOAD=$PWD/$BUILD/libkcheck.so $BIN "$N" 64 | sed -n 's/.*ns_per_launch=\([0-9.]*\).*/\1/p')"
done
med() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
p=$(echo "${R[plain]}" | med); n=$(echo "${R[none]}" | med); d=$(echo "${R[default]}" | med)
p64=$(echo "${R[plain64]}" | med); n64=$(echo "${R[none64]}" | med); d64=$(echo "${R[default64]}" | med)
echo "# kcheck per-launch cost on the CPU stand-in driver"
echo
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'); $N launches of an empty kernel through cuLaunchKernel, best of 3 per process, median of $ROUNDS alternating rounds."
echo
echo "| configuration | ns/launch | kcheck's cost, ns/launch |"
echo "|---|---:|---:|"
echo "| stand-in alone | $p | - |"
echo "| kcheck gates=none (pass-through) | $n | $(awk -v a="$n" -v b="$p" 'BEGIN{printf "%.1f", a-b}') |"
echo "| kcheck default gates, steady state (capture + signature, no check) | $d | $(awk -v a="$d" -v b="$p" 'BEGIN{printf "%.1f", a-b}') |"
echo "| 64 kernels in turn: stand-in alone | $p64 | - |"
echo "| 64 kernels in turn: kcheck gates=none | $n64 | $(awk -v a="$n64" -v b="$p64" 'BEGIN{printf "%.1f", a-b}') |"
echo "| 64 kernels in turn: kcheck default gates, steady state | $d64 | $(awk -v a="$d64" -v b="$p64" 'BEGIN{printf "%.1f", a-b}') |"
echo
echo "rounds: plain${R[plain]}; none${R[none]}; default${R[default]}; plain64${R[plain64]}; none64${R[none64]}; default64${R[default64]}"
