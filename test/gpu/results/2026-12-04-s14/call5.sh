#!/bin/bash
# Device call 5 (2026-12-04, session 14): the anchors beside kcheck at the
# final code, same script, same call: plain / default in two alternating
# rounds, then compute-sanitizer memcheck and TORCH_CUDA_SANITIZER=1 at the
# full size and racecheck on the small configuration it can finish
# (KC_T_ANCHORS=all), with the planted races and the launch microbenchmark.
#   bash test/gpu/results/2026-12-04-s14/call5.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
s=$(date +%s)
timeout 330 env KC_T_CONFIGS="plain default" KC_T_SKIP="strat_all8 trace2" KC_T_ROUNDS=2 KC_T_ANCHORS=all \
  KC_BUDGET=310 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
