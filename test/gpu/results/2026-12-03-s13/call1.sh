#!/bin/bash
# Device call 1 (2026-12-03, session 13): the hash kernels publish their
# sums into mapped host memory and leave their device slots zeroed
# (hash_publish=1, the default) instead of the host copying them back and
# zeroing each check's slots (hash_publish=0, "copyback"): (0) own_kernels, the
# round trips of both and the published sums checked against the copied
# ones; (a check whose runs were all waited for on its stream now ends
# without a device-wide wait, in both configurations); (1) the overhead targets, plain / default / copyback in three
# alternating rounds, with a profile=1 run of each; (2) the race corpus;
# (3) the gates phase of the GPU validation.
#   bash test/gpu/results/2026-12-03-s13/call1.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1
s=$(date +%s)
timeout 40 build/gpu/own_kernels 8 64 >"$O/own_kernels.txt" 2>&1
echo "own_kernels rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 230 env KC_T_CONFIGS="plain default copyback" KC_T_SKIP="strat_all8 trace2 racecheck" KC_T_ROUNDS=3 \
  KC_BUDGET=220 bash bench/run_targets.sh "$O/targets" >"$O/targets.log" 2>&1
echo "targets rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 70 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 250 env PHASES=gates GATES_BUDGET=230 bash test/gpu/run_gpu_validation.sh "$O/gates" >"$O/gates.log" 2>&1
echo "gates rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
