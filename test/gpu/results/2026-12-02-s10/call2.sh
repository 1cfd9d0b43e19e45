#!/bin/bash
# Device call 2 (2026-12-02, eleventh stop), at the commit that makes
# hash_compare=1 the default and has the l2flush strategy write one L2
# instead of two: (1) the overhead targets, default beside hash_compare=0,
# three rounds, with profile=1 runs of both; (2) four rounds of plain
# against the default with restore_check=1 (every check's memory compared
# word by word with the application's own result afterwards), 30 steps,
# final losses and the summaries' restore_check; (3) the GPU validation's
# gates phase (gate checks, race corpus, reliability, serving).
#   bash test/gpu/results/2026-12-02-s10/call2.sh OUTDIR
set -u
O=$1
mkdir -p "$O/loss"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 245 env KC_T_CONFIGS="plain default words" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=235 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
M="--layers 6 --d-model 512 --seq 256 --batch 16 --steps 30"
for r in 1 2 3 4; do
  timeout 40 python3 bench/transformer_step.py $M >"$O/loss/plain_r$r.out" 2>&1
  timeout 60 env LD_PRELOAD="$PWD/build/libkcheck.so" KCHECK_OPTIONS="restore_check=1:log_path=$O/loss/check_r$r" \
    python3 bench/transformer_step.py $M >"$O/loss/check_r$r.out" 2>&1
done
{
  for r in 1 2 3 4; do
    echo "round $r plain $(grep FINAL_LOSS "$O/loss/plain_r$r.out") check $(grep FINAL_LOSS "$O/loss/check_r$r.out")"
    grep -h '"type":"summary"' "$O"/loss/check_r$r.*.jsonl | python3 -c '
import json, sys
for l in sys.stdin:
    s = json.loads(l)
    print("  checks", s.get("checks"), "restore_check", s.get("restore_check"), "internal_errors", s.get("internal_errors"))'
  done
} >"$O/loss/summary.txt" 2>&1
echo "loss rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
PHASES="gates" GATES_BUDGET=240 timeout 260 bash test/gpu/run_gpu_validation.sh "$O/v" >"$O/validation.log" 2>&1
echo "validation rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
