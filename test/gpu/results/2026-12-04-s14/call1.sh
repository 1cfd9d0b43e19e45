#!/bin/bash
# Device call 1 (2026-12-04, session 14): a finding's host stack copied by
# the check and unwound on the findings thread (stack_snap.c), the staging
# buffer reserved and the floor's device costs measured in the one-time
# setup: (1) the overhead targets, plain / default in three alternating
# rounds with a profile=1 run, the launch microbenchmark and the planted
# races; (2) the race corpus; (3) the gates phase of the GPU validation.
#   bash test/gpu/results/2026-12-04-s14/call1.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 200 env KC_T_CONFIGS="plain default" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=190 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 70 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 250 env PHASES=gates GATES_BUDGET=230 bash test/gpu/run_gpu_validation.sh "$O/gates" >"$O/gates.log" 2>&1
echo "gates rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
