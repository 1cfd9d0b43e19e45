#!/bin/bash
# One GPU device call, its steps read from a steps file: the parameters of a
# recorded run are its steps file (test/gpu/results/<run>/callN.steps), the
# procedure is this script, kept once.
#   bash test/gpu/device_call.sh OUTDIR STEPS_FILE
# A steps file is bash that calls
#   step NAME SECONDS COMMAND [ARGS...]
# once per step, in order; `$O` is OUTDIR. Each step runs as
# `timeout SECONDS COMMAND ARGS...` with its output in $O/NAME.log (in
# $O/NAME when NAME has an extension, e.g. own_kernels.txt), and its exit
# status and wall seconds are appended to $O/rc.txt ("NAME rc=N Ss", NAME
# without the extension).
# The machine (date, CPUs, load, GPU and clocks) is written to
# $O/machine.txt before the first step, the load again after the last.
# The commit: the device machine's copy of .git may report an older HEAD
# than the tree it ran (seen on 2026-12-07), so before the call write
# `git rev-parse --short HEAD > .commit` (ignored by git) and carry .commit:
# the runners' headers read it first, and machine.txt records it.
set -u
if [ $# -ne 2 ] || [ ! -f "$2" ]; then
  echo "usage: bash test/gpu/device_call.sh OUTDIR STEPS_FILE" >&2
  exit 2
fi
O=$1
STEPS=$2
mkdir -p "$O"
export PYTHONUNBUFFERED=1
{ date -u; echo "commit: $(cat .commit 2>/dev/null || echo 'unknown (no .commit carried)')"; nproc; uptime; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } >"$O/machine.txt" 2>&1

step() { # NAME SECONDS COMMAND [ARGS...]
  local name=$1 secs=$2 out=$1.log s rc
  shift 2
  case $name in *.*) out=$name; name=${name%.*} ;; esac
  s=$(date +%s)
  timeout "$secs" "$@" >"$O/$out" 2>&1
  rc=$?
  echo "$name rc=$rc $(($(date +%s) - s))s" >>"$O/rc.txt"
}

# shellcheck source=/dev/null
. "$STEPS"
{ uptime; } >>"$O/machine.txt" 2>&1
cat "$O/rc.txt"
