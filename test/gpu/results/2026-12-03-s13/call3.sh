#!/bin/bash
# Device call 3 (2026-12-03, session 13): the overhead targets again, plain
# and default in two alternating rounds on another machine: a second
# measure of the median check cost/floor, now with kcheck's one-time device
# setup timed apart from the process's first check (setup_ms). Two rounds
# and a short budget: the session's device time was nearly spent.
#   bash test/gpu/results/2026-12-03-s13/call3.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
s=$(date +%s)
timeout 130 env KC_T_CONFIGS="plain default" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=2 \
  KC_BUDGET=110 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >"$O/rc.txt"
cat "$O/rc.txt"
