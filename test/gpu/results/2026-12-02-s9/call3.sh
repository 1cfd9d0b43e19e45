#!/bin/bash
# Device call 3 (2026-12-02, tenth stop): the torch bench at its default
# size (seq 128, batch 16: host-bound, ~13 ms a step), plain and --torch
# alternating, after the attention oracle's per-row division and the
# binding's dim-1 sampling.
#   bash test/gpu/results/2026-12-02-s9/call3.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 505 env KC_TORCH_PARTS=bench KC_BENCH_STEPS=100 KC_BENCH_OPTS="-o torch_exit_budget=0" \
  KC_BENCH_CONFIGS="plain torch" KC_BENCH_ROUNDS=24 KC_BENCH_CONFIGS_LATER="torch plain" \
  KC_TIMEOUT=40 KC_BUDGET=495 bash test/gpu/run_gpu_torch.sh "$O/bench" >"$O/bench.log" 2>&1
echo "bench rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
