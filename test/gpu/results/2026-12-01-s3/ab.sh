#!/usr/bin/env bash
# A/B of app_shared shared mode (every launch checked) across libraries
B=.dev/final/build
export KC_SCALE_PTX=$B/gpu/scale.ptx LD_LIBRARY_PATH=$B
EVERY="check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
N=${N:-40}
R=$OUT/ab; mkdir -p $R
for lib in $B/libkcheck.so .dev/final/ab/libkcheck_nodefer.so .dev/final/ab/libkcheck_old.so; do
  [ -f $lib ] || continue
  tag=$(basename $lib .so); bad=0
  for i in $(seq 1 $N); do
    t=$((2 + 2 * (i % 3)))
    KCHECK_OPTIONS="log_path=$R/$tag.$i:$EVERY:verbosity=0" LD_PRELOAD=$lib timeout 30 $B/gpu/app_shared shared $t 8 > $R/$tag.$i.out 2> $R/$tag.$i.err
    grep -q "wrong 0" $R/$tag.$i.out || { bad=$((bad+1)); echo "$tag run $i: $(cat $R/$tag.$i.out)"; }
  done
  echo "$tag: $bad of $N runs wrong" | tee -a $R/summary.txt
done
bad=0; for i in $(seq 1 $N); do t=$((2 + 2 * (i % 3))); timeout 30 $B/gpu/app_shared shared $t 8 > $R/plain.$i.out 2>&1; grep -q "wrong 0" $R/plain.$i.out || bad=$((bad+1)); done; echo "plain: $bad of $N runs wrong" | tee -a $R/summary.txt
cd $OUT && tar czf ab.tgz ab && rm -rf ab
