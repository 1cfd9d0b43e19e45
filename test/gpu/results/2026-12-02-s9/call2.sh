#!/bin/bash
# Device call 2 (2026-12-02, tenth stop): (1) the torch bench at
# bench/run_targets.sh's size (seq 256, batch 16), plain and --torch
# alternating, after the attention oracle's per-row division and the
# binding's dim-1 sampling; (2) the binding's GPU validation without the
# bench (train, bugs, nondet, activation).
#   bash test/gpu/results/2026-12-02-s9/call2.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 300 env KC_TORCH_PARTS=bench KC_BENCH_STEPS=100 KC_BENCH_OPTS="-o torch_exit_budget=0" \
  KC_BENCH_MODEL="--layers 6 --d-model 512 --heads 8 --seq 256 --batch 16" \
  KC_BENCH_CONFIGS="plain torch" KC_BENCH_ROUNDS=12 KC_BENCH_CONFIGS_LATER="torch plain" \
  KC_TIMEOUT=40 KC_BUDGET=290 bash test/gpu/run_gpu_torch.sh "$O/bench" >"$O/bench.log" 2>&1
echo "bench rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 255 env KC_TORCH_PARTS="train bugs nondet activation" KC_BUDGET=245 \
  bash test/gpu/run_gpu_torch.sh "$O/torch" >"$O/torch.log" 2>&1
echo "torch rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
