#!/bin/bash
# Device call 4 (2026-12-04, session 14): the gates phase of the GPU
# validation and the race corpus again at the final code (the floor's
# queued term, kcheck report's changed division), after call 1's at 629fc92.
#   bash test/gpu/results/2026-12-04-s14/call4.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
export PYTHONUNBUFFERED=1
s=$(date +%s)
timeout 70 bash test/gpu/races/run_corpus.sh "$O/races" >"$O/races.log" 2>&1
echo "races rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
s=$(date +%s)
timeout 250 env PHASES=gates GATES_BUDGET=230 bash test/gpu/run_gpu_validation.sh "$O/gates" >"$O/gates.log" 2>&1
echo "gates rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
