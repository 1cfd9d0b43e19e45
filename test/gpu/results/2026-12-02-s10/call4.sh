#!/bin/bash
# Device call 4 (2026-12-02, eleventh stop), at the commit where the table
# kernels' chunk size is chosen per launch (64 KiB where the launch reads
# at least 4 such chunks per SM, else 16 KiB): (1) bench/own_kernels at
# 1-256 MiB with both chunk sizes; (2) the overhead targets, two rounds,
# with a profile=1 run; (3) the race corpus.
#   bash test/gpu/results/2026-12-02-s10/call4.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 15 build/gpu/own_kernels 1 4 8 64 256 >"$O/own_kernels.txt" 2>&1
echo "own_kernels rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 105 env KC_T_CONFIGS="plain default" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=2 \
  KC_BUDGET=95 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 60 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
