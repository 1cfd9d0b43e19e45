#!/bin/bash
# Device call 3 (2026-12-02, eleventh stop), at the commit where a check no
# longer waits after saving the pre-state and the table kernels take
# chunks of 16 KiB: (1) bench/own_kernels at 1-256 MiB, and the same with
# the previous 64 KiB chunks (own_kernels_64k); (2) the overhead targets,
# three rounds, with a profile=1 run; (3) final losses of plain, the
# default and the default with restore_check=1, four rounds, and (4) with
# --attention math (plain's loss then the same in every run), three rounds
# of plain and the default; (5) the GPU validation's gates phase.
#   bash test/gpu/results/2026-12-02-s10/call3.sh OUTDIR
set -u
O=$1
mkdir -p "$O/loss" "$O/math"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
{ timeout 15 build/gpu/own_kernels 1 4 8 64 256; echo; echo "=== 64 KiB chunks"; timeout 15 build/gpu/own_kernels_64k 1 4 8 64 256; } >"$O/own_kernels.txt" 2>&1
echo "own_kernels rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 150 env KC_T_CONFIGS="plain default" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=140 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
losses() { # DIR ROUNDS CONFIGS... (plain | default | check) with the model's arguments in $M
  local d=$1 n=$2 r c
  shift 2
  for r in $(seq 1 "$n"); do
    for c in "$@"; do
      case $c in
        plain) timeout 40 python3 bench/transformer_step.py $M >"$d/${c}_r$r.out" 2>&1 ;;
        default) timeout 50 env LD_PRELOAD="$PWD/build/libkcheck.so" KCHECK_OPTIONS="log_path=$d/${c}_r$r" \
          python3 bench/transformer_step.py $M >"$d/${c}_r$r.out" 2>&1 ;;
        check) timeout 50 env LD_PRELOAD="$PWD/build/libkcheck.so" KCHECK_OPTIONS="restore_check=1:log_path=$d/${c}_r$r" \
          python3 bench/transformer_step.py $M >"$d/${c}_r$r.out" 2>&1 ;;
      esac
      echo "$c r$r $(grep FINAL_LOSS "$d/${c}_r$r.out") $(cat "$d/${c}_r$r".*.jsonl 2>/dev/null | grep '"type":"summary"' |
        python3 -c 'import json,sys; [print("checks", s.get("checks"), "restore_check", s.get("restore_check"), "internal_errors", s.get("internal_errors")) for s in map(json.loads, sys.stdin)]')" >>"$d/summary.txt"
    done
  done
}
s=$(date +%s)
M="--layers 6 --d-model 512 --seq 256 --batch 16 --steps 30"
timeout 140 bash -c "$(declare -f losses); M='$M'; losses '$O/loss' 4 plain default check"
echo "loss rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
M="--layers 6 --d-model 512 --seq 256 --batch 16 --steps 30 --attention math"
timeout 90 bash -c "$(declare -f losses); M='$M'; losses '$O/math' 3 plain default"
echo "math rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
PHASES="gates" GATES_BUDGET=185 timeout 195 bash test/gpu/run_gpu_validation.sh "$O/v" >"$O/validation.log" 2>&1
echo "validation rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
