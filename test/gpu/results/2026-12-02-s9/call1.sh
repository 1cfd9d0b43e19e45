#!/bin/bash
# One device call (2026-12-02, tenth stop): (1) the overhead targets with
# hash_compare=1 (the pair hash of c62cd94) beside the default, three
# rounds, with profile=1 runs of both; (2) the race corpus with
# hash_compare=1; (3) the torch bench at bench/run_targets.sh's size (seq
# 256, batch 16), plain and --torch alternating.
#   bash test/gpu/results/2026-12-02-s9/call1.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 245 env KC_T_CONFIGS="plain default hash" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=235 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 70 env KC_CORPUS_OPTIONS=hash_compare=1 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 205 env KC_TORCH_PARTS=bench KC_BENCH_STEPS=100 KC_BENCH_OPTS="-o torch_exit_budget=0" \
  KC_BENCH_MODEL="--layers 6 --d-model 512 --heads 8 --seq 256 --batch 16" \
  KC_BENCH_CONFIGS="plain torch" KC_BENCH_ROUNDS=12 KC_BENCH_CONFIGS_LATER="torch plain" \
  KC_TIMEOUT=40 KC_BUDGET=195 bash test/gpu/run_gpu_torch.sh "$O/torch" >"$O/torch.log" 2>&1
echo "torch rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
