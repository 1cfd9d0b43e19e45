#!/bin/bash
# Device call 1 (2026-12-02, eleventh stop): (1) bench/own_kernels: the
# comparison kernels against a device copy, the keyed NH hash against its
# host definition, and how cold a read is after the L2 flush and lighter
# sweeps; (2) the overhead targets with hash_compare=1 (the NH hash, A's
# hash taken in the comparison after the application's launch) beside the
# default, three rounds, with profile=1 runs of both; (3) the race corpus
# with hash_compare=1.
#   bash test/gpu/results/2026-12-02-s10/call1.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 60 build/gpu/own_kernels 8 64 256 >"$O/own_kernels.txt" 2>&1
echo "own_kernels rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 245 env KC_T_CONFIGS="plain default hash" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=235 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 80 env KC_CORPUS_OPTIONS=hash_compare=1 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
