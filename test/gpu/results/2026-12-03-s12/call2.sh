#!/bin/bash
# Device call 2 (2026-12-03), determinism_runs=1 by default; the pre-state
# is saved and hashed in one pass, a re-run is hashed only where it may have
# changed memory when what the launch left alone is >= unwatched_min (64 MiB),
# and a check's hash slots are zeroed by one memset: (1) the overhead
# targets, three rounds, with a profile=1 run; (2) the race corpus; (3) the
# gates phase of the GPU validation.
#   bash test/gpu/results/2026-12-03-s12/call2.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 250 env KC_T_CONFIGS="plain default det2" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=240 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 70 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 280 env PHASES=gates GATES_BUDGET=250 bash test/gpu/run_gpu_validation.sh "$O/gates" >"$O/gates.log" 2>&1
echo "gates rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
