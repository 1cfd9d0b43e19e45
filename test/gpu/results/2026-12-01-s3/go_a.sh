#!/usr/bin/env bash
# final validation, call A: the benchmarks, alone on the GPU, one after the other
C=$1
cp -a .dev/final/build build && echo "$C" > .commit && echo "$C" > COMMIT
export PYTHONUNBUFFERED=1
R=$OUT/a; mkdir -p $R
S(){ n=$1; t=$2; shift 2; s=$(date +%s); timeout -k 5 $t "$@" > $R/$n.log 2>&1; echo "$n rc=$? $(( $(date +%s)-s ))s" | tee -a $R/rc.txt; }
nvidia-smi -L > $R/env.txt; date -u >> $R/env.txt
S torch 170 env KC_TORCH_PARTS="train bench activation" KC_TORCH_MODES=fp32 KC_ACT=compile KC_BENCH_STEPS=150 KC_BENCH_CONFIGS="plain default torch" KC_TIMEOUT=80 KC_BUDGET=150 bash test/gpu/run_gpu_torch.sh $R/torch
S targets 165 env KC_BUDGET=150 bash bench/run_targets.sh $R/targets
S harness 115 env KC_HARNESS_SECONDS=10 KC_HARNESS_REPEAT=1 KC_HARNESS_TRACKING=0 KC_HARNESS_BUDGET=100 KC_HARNESS_PARALLEL_TIMEOUT=60 bash test/gpu/serving/run_serving_harness.sh $R/harness
cd $OUT && find a -name "*.md" -o -name "*.txt" -o -name "*.log" -o -name "*.json" | tar czf a-md.tgz -T - && tar czf a-all.tgz a && rm -rf a; ls -la $OUT
