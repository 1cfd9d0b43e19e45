#!/bin/bash
# Device call 2 (2026-12-02, twelfth stop), at the commit where the pre-state is saved and hashed in one pass (kc_copy_hash_table) and a re-run's
# result is compared by hash only in the memory the run may have changed
# (the rest hashed once after the gates): (0) bench/own_kernels (the copy+hash against its host definition); (1) the overhead targets, three
# rounds, with a profile=1 run; (2) the race corpus.
#   bash test/gpu/results/2026-12-02-s11/call2.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 15 build/gpu/own_kernels 1 4 8 64 256 >"$O/own_kernels.txt" 2>&1
echo "own_kernels rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 200 env KC_T_CONFIGS="plain default" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=190 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 70 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
