#!/usr/bin/env bash
# bench/run_serving_cpu.sh — the serving profile's cost per eager and per
# graph launch on the CPU stand-in (bench/serving_cpu.c), alternating
# rounds: plain; serving=1 (budget_window=1); its floor (max_checks=0:
# every launch seen, none checked); serving=1 with time_budget=1 (no
# budget, so no timing of kcheck's own time); audit (serving=1 with
# stream_races=1: every launch, copy and ordering call tracked, each with
# its host stack; this C program has no Python frames, so the stacks are
# keyed on native return addresses). OLD=path/to/libkcheck.so adds the
# same rows for another build (e.g. an earlier commit's).
# usage: BUILD=build [OLD=...] [N=20000] [ROUNDS=3] bench/run_serving_cpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export LD_LIBRARY_PATH="$PWD/$BUILD/fakecuda"
B=$BUILD/bench/serving_cpu
N=${N:-20000}
LIB=$PWD/$BUILD/libkcheck.so
O=serving=1:budget_window=1:log_path=none:verbosity=0
for r in $(seq 1 "${ROUNDS:-3}"); do
  echo "round $r plain $($B "$N")"
  echo "round $r serving $(KCHECK_OPTIONS=$O LD_PRELOAD=$LIB $B "$N")"
  echo "round $r floor $(KCHECK_OPTIONS=$O:max_checks=0 LD_PRELOAD=$LIB $B "$N")"
  echo "round $r nobudget $(KCHECK_OPTIONS=$O:time_budget=1 LD_PRELOAD=$LIB $B "$N")"
  echo "round $r audit $(KCHECK_OPTIONS=$O:stream_races=1 LD_PRELOAD=$LIB $B "$N")"
  if [ -n "${OLD:-}" ]; then
    echo "round $r old_serving $(KCHECK_OPTIONS=$O LD_PRELOAD=$OLD $B "$N")"
    echo "round $r old_floor $(KCHECK_OPTIONS=$O:max_checks=0 LD_PRELOAD=$OLD $B "$N")"
    echo "round $r old_audit $(KCHECK_OPTIONS=$O:stream_races=1 LD_PRELOAD=$OLD $B "$N")"
  fi
done
