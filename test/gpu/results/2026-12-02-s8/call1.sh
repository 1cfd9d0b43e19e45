#!/bin/bash
# One device call (2026-12-02, 15cb95e): (1) the overhead targets with the
# default options (batch_runs=1) beside batch_runs=0, three rounds, and
# profile=1 runs of both (each check's stages_ms); (2) the race corpus with
# the defaults and with batch_runs=0 (same verdicts expected).
#   bash test/gpu/results/2026-12-02-s8/call1.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 265 env KC_T_CONFIGS="plain default nobatch" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=255 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 80 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 80 env KC_CORPUS_OPTIONS=batch_runs=0 bash test/gpu/races/run_corpus.sh "$O/races0" >"$O/races0.log" 2>&1
echo "races0 rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
