#!/bin/bash
# one device call: where the binding's steady cost goes (fresh machine)
set -u
O=$1; mkdir -p $O
{ date -u; nproc; lscpu | head -30; uptime; ps aux --sort=-%cpu | head -15; which perf && perf stat -e instructions:u true 2>&1 | tail -5; } > $O/machine.txt 2>&1
KC_TORCH_PARTS=bench KC_BENCH_STEPS=150 KC_BENCH_OPTS="-o torch_exit_budget=0" \
 KC_BENCH_CONFIGS="plain torch torch_nomode torch_none default" KC_BENCH_ROUNDS=3 \
 KC_BENCH_CONFIGS_LATER="default torch_none torch_nomode torch plain" KC_TIMEOUT=40 KC_BUDGET=300 \
 bash test/gpu/run_gpu_torch.sh $O/t > $O/t.log 2>&1
{ uptime; ps aux --sort=-%cpu | head -8; } >> $O/machine.txt 2>&1
