#!/bin/bash
# Device call 3 (2026-12-04, session 14): every overhead target in one call
# at one commit (the floor with the wait for the application's queued work
# as its queued_ms term): plain / gates=none / default / trace=1 in three
# alternating rounds, trace=2 once, the launch microbenchmark, the planted
# races and the profile=1 runs (racecheck and the all-strategies run left
# out; the anchors as measured before).
#   bash test/gpu/results/2026-12-04-s14/call3.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 420 env KC_T_CONFIGS="plain none default trace1" KC_T_SKIP="strat_all8 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=400 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
