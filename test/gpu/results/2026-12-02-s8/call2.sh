#!/bin/bash
# One device call (2026-12-02): (1) the first kcheck process on the freshly
# started machine with profile=1 (where its check with findings spends its
# time: 18-21 ms in such a process before, 2-5 ms in later ones); (2) the
# GPU validation's gates and torch phases at this commit.
#   bash test/gpu/results/2026-12-02-s8/call2.sh OUTDIR
set -u
O=$1
mkdir -p "$O/first"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 60 env LD_PRELOAD="$PWD/build/libkcheck.so" KCHECK_OPTIONS="profile=1:log_path=$O/first/prof_first" \
  python3 bench/transformer_step.py --layers 6 --d-model 512 --seq 256 --batch 16 --steps 10 \
  >"$O/first/out.txt" 2>"$O/first/err.txt"
echo "first rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
PHASES="gates torch" GATES_BUDGET=250 TORCH_BUDGET=300 timeout 570 bash test/gpu/run_gpu_validation.sh "$O/v" \
  >"$O/validation.log" 2>&1
echo "validation rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
