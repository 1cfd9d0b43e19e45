#!/bin/bash
# One device call (2026-12-02): (1) the overhead targets with hash_compare=1
# beside the default, three rounds, and profile=1 runs of both (each check's
# stages_ms); (2) the race corpus with hash_compare=1; (3) the torch bench,
# plain and --torch alternating for seven rounds, every process pinned to
# the same eight CPUs (KC_BENCH_PIN).
#   bash test/gpu/results/2026-12-02-s7/call1.sh OUTDIR
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
timeout 80 env KC_CORPUS_OPTIONS=hash_compare=1 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 215 env KC_TORCH_PARTS=bench KC_BENCH_STEPS=150 KC_BENCH_OPTS="-o torch_exit_budget=0" \
  KC_BENCH_CONFIGS="plain torch" KC_BENCH_ROUNDS=7 KC_BENCH_CONFIGS_LATER="torch plain" KC_BENCH_PIN=2-9 \
  KC_TIMEOUT=40 KC_BUDGET=205 bash test/gpu/run_gpu_torch.sh "$O/torch" >"$O/torch.log" 2>&1
echo "torch rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
