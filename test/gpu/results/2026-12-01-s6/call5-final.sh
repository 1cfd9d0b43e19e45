#!/bin/bash
# one device call: libkcheck's per-launch stages on the launch microbenchmark
# (profile=1), then the torch bench with profile=1 configurations beside it
set -u
O=$1; mkdir -p $O/lo
L=$PWD/build/libkcheck.so; B=$PWD/build/gpu/launch_overhead
{ date -u; uptime; ps aux --sort=-%cpu | head -6; } > $O/machine.txt 2>&1
for r in 1 2; do
  $B 50000 2 > $O/lo/plain_r$r.out 2>&1
  LD_PRELOAD=$L KCHECK_OPTIONS=log_path=$O/lo/none_r$r:gates=none:profile=1:profile_mark=20000 $B 50000 2 > $O/lo/none_r$r.out 2>&1
  LD_PRELOAD=$L KCHECK_OPTIONS=log_path=$O/lo/default_r$r:profile=1:profile_mark=20000 $B 50000 2 > $O/lo/default_r$r.out 2>&1
  LD_PRELOAD=$L KCHECK_OPTIONS=log_path=$O/lo/defaultnp_r$r $B 50000 2 > $O/lo/defaultnp_r$r.out 2>&1
done
grep -H RESULT $O/lo/*.out
timeout 300 env KC_TORCH_PARTS=bench KC_BENCH_STEPS=150 KC_BENCH_OPTS="-o torch_exit_budget=0" \
 KC_BENCH_CONFIGS="plain torch torch_prof default_prof" KC_BENCH_ROUNDS=4 \
 KC_BENCH_CONFIGS_LATER="default_prof torch_prof torch plain" KC_TIMEOUT=40 KC_BUDGET=280 \
 bash test/gpu/run_gpu_torch.sh $O/t > $O/t.log 2>&1
{ uptime; ps aux --sort=-%cpu | head -6; } >> $O/machine.txt 2>&1
