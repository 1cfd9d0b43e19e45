#!/usr/bin/env bash
# final validation, call B: the gate checks, two lanes side by side (no timing asserted)
C=$1
cp -a .dev/final/build build && echo "$C" > .commit && echo "$C" > COMMIT
export PYTHONUNBUFFERED=1
R=$OUT/b; mkdir -p $R
T0=$(date +%s)
S(){ n=$1; t=$2; shift 2; s=$(date +%s); timeout -k 5 $t "$@" > $R/$n.log 2>&1; echo "$n rc=$? $(( $(date +%s)-s ))s" | tee -a $R/rc.txt; }
left(){ echo $(( ${KC_B_BUDGET:-250} - ($(date +%s) - T0) )); }
nvidia-smi -L > $R/env.txt; date -u >> $R/env.txt
( S found 120 env KC_TRAIN_STEPS=20 bash test/gpu/run_gpu_tests.sh $R/found; S checks $(( $(left) - 5 )) env KC_RECALL_BUDGET=0 KC_BUDGET=$(( $(left) - 15 )) bash test/gpu/run_gpu_checks.sh $R/checks ) &
( S races 90 bash test/gpu/races/run_corpus.sh $R/races
  [ $(left) -gt 65 ] && S rel 55 bash test/gpu/run_gpu_rel.sh $R/rel
  [ $(left) -gt 55 ] && S serving 50 bash test/gpu/run_gpu_serving.sh $R/serving ) &
wait
cd $OUT && find b -name "*.md" -o -name "*.txt" -o -name "*.log" -o -name "*.json" | tar czf b-md.tgz -T - && tar czf b-all.tgz b && rm -rf b; ls -la $OUT
