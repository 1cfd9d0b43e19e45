#!/usr/bin/env bash
# app_shared shared mode under concurrent GPU load: the app with the
# device-to-array copy unordered (as committed before) and fixed, plain and
# under kcheck with every launch checked, round robin.
L=.dev/lead; B=.dev/final/build
export KC_SCALE_PTX=$L/scale.ptx LD_LIBRARY_PATH=$B
EVERY="check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
R=$OUT/diag; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/env.txt
python3 - > $R/load.txt 2>&1 <<'PY' &
import time, torch
a = torch.randn(4096, 4096, device="cuda"); h = torch.empty(64 << 20, dtype=torch.uint8).pin_memory()
d = torch.empty_like(h, device="cuda"); t0 = time.time(); n = 0
while time.time() - t0 < 140:
    b = a @ a; d.copy_(h, non_blocking=True); h.copy_(d, non_blocking=True); n += 1
    if n % 50 == 0: torch.cuda.synchronize()
print("load iterations", n)
PY
sleep 4
declare -A bad runs
s=$(date +%s); i=0
while [ $(( $(date +%s) - s )) -lt ${RUN_S:-120} ]; do
  i=$((i+1)); t=$((2 + 2 * (i % 3)))
  for v in unordered_plain unordered_kcheck fixed_plain fixed_kcheck; do
    app=$L/app_shared; case $v in unordered*) app=$L/app_shared_unordered;; esac
    pre=""; case $v in *kcheck) pre="$L/libkcheck.so";; esac
    KCHECK_OPTIONS="log_path=$R/$v.$i:$EVERY:verbosity=0" LD_PRELOAD=$pre timeout 30 $app shared $t 8 > $R/$v.$i.out 2> $R/$v.$i.err
    runs[$v]=$(( ${runs[$v]:-0} + 1 ))
    if ! grep -q "wrong 0" $R/$v.$i.out; then bad[$v]=$(( ${bad[$v]:-0} + 1 )); echo "$v run $i: $(cat $R/$v.$i.out) | $(grep -h 'iter' $R/$v.$i.err | head -3 | tr '\n' ';')" | tee -a $R/wrong.txt; else rm -f $R/$v.$i.*; fi
  done
done
for v in unordered_plain unordered_kcheck fixed_plain fixed_kcheck; do echo "$v: ${bad[$v]:-0} of ${runs[$v]} runs wrong"; done | tee $R/summary.txt
wait; cat $R/load.txt
cd $OUT && tar czf diag.tgz diag && rm -rf diag
