#!/usr/bin/env bash
# test/gpu/run_gpu_world.sh — the world lock on a GPU, in one go:
#   1. its cost: bench/world_lock (ns per shared enter/leave, 1-8 threads)
#      and bench/launch_overhead with kcheck's lock on and off (check_lock);
#   2. threads sharing one allocation, threads that allocate and free, and
#      CPU threads storing into one managed allocation while launches on it
#      run (test/apps/app_shared.c on the real driver): >= 20 runs each with
#      kcheck, 0 wrong results and 0 violations required; a few runs with
#      check_lock=0 show what the lock prevents;
#   3. a two-thread PyTorch program (test/gpu/torch_threads.py, each thread
#      its own model on its own stream), default options: 20 runs with
#      kcheck, bitwise identical to the runs without.
# usage: bash test/gpu/run_gpu_world.sh [OUTDIR]   (BUILD, PYTHON, KC_WORLD_BUDGET)
# Writes OUTDIR/world.md and OUTDIR/world-logs.tar.gz; exit 1 on any failure.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" world "${1:-}"
BUDGET=${KC_WORLD_BUDGET:-170}
RUNS=${KC_WORLD_RUNS:-20}
APP="$BUILD/gpu/app_shared"
export KC_SCALE_PTX="$BUILD/gpu/scale.ptx"
EVERY="check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
export LIB LOGS REPS APP PYTHON ROOT

echo "=== world lock on the GPU: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
nvidia-smi -L 2>&1 | tee "$LOGS/env.txt" || true
# The commit: a COMMIT file where the tree was copied without .git, else git.
{ cat "$ROOT/COMMIT" 2>/dev/null || git -C "$ROOT" rev-parse HEAD 2>/dev/null; } | tee -a "$LOGS/env.txt" || true

# libcudart for the runtime half of launch_overhead (as bench/run_bench.sh).
BENV=()
if ldd "$BUILD/gpu/launch_overhead" 2>/dev/null | grep -q 'libcudart.*not found'; then
  d=$("$PYTHON" -c 'import glob,os,site
for r in site.getsitepackages():
    for p in glob.glob(os.path.join(r,"nvidia","**","libcudart.so.13*"),recursive=True):
        print(os.path.dirname(p)); raise SystemExit' 2>/dev/null || true)
  [ -n "$d" ] && BENV=(LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
fi

# 1. cost (alone on the machine: nothing else runs meanwhile).
run_logged 60 world_lock "$BUILD/gpu/world_lock"
for r in 1 2 3; do
  run_logged 30 "launch.r$r.plain" env "${BENV[@]}" "$BUILD/gpu/launch_overhead" 100000 3
  run_logged 30 "launch.r$r.lock1" env "${BENV[@]}" LD_PRELOAD="$LIB" \
    KCHECK_OPTIONS="log_path=$REPS/launch.r$r.lock1" "$BUILD/gpu/launch_overhead" 100000 3
  run_logged 30 "launch.r$r.lock0" env "${BENV[@]}" LD_PRELOAD="$LIB" \
    KCHECK_OPTIONS="log_path=$REPS/launch.r$r.lock0:check_lock=0" "$BUILD/gpu/launch_overhead" 100000 3
done

# One run: TAG CFG(plain|kcheck) OPTIONS CMD... -> $LOGS/TAG.{out,err,rc}
one() {
  local tag=$1 cfg=$2 opts=$3
  shift 3
  local envk=()
  [ "$cfg" = kcheck ] && envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$tag${opts:+:$opts}")
  echo "$tag: env ${envk[*]} $*" >>"$LOGS/runs.txt"
  timeout --kill-after=5 90 env "${envk[@]}" "$@" >"$LOGS/$tag.out" 2>"$LOGS/$tag.err"
  echo $? >"$LOGS/$tag.rc"
}
export -f one
# Runs the lines of a job file (TAG CFG OPTIONS CMD...), 4 at a time, within the budget.
jobs_run() {
  local left=$((BUDGET - $(elapsed)))
  [ "$left" -lt 15 ] && { echo "  $1: left out, the time budget is spent" | tee -a "$CMDS"; return; }
  echo "$1: $(wc -l <"$2") runs, 4 at a time (t=$(elapsed)s)" >>"$CMDS"
  timeout "$left" xargs -P 4 -L 1 bash -c 'one "$@"' _ <"$2"
  echo "  done at t=$(elapsed)s" >>"$CMDS"
}

# 2. app_shared: threads 2, 4 and 8 in turn.
J="$WORK/app.jobs"
: >"$J"
for i in $(seq 1 "$RUNS"); do
  t=$(((i % 3 == 0) ? 8 : ((i % 3 == 1) ? 2 : 4)))
  echo "shared.def.$i kcheck - $APP shared $t 30" >>"$J"
  echo "shared.every.$i kcheck $EVERY $APP shared $t 8" >>"$J"
  echo "churn.def.$i kcheck save_all=1 $APP churn $t 30" >>"$J"
  echo "churn.every.$i kcheck save_all=1:$EVERY $APP churn $t 8" >>"$J"
  # CPU threads storing into their slices of one managed allocation while
  # the launches on it would be checked: never saved or restored (50 runs
  # with RUNS=25)
  echo "managed.def.$i kcheck - $APP managed 4 30" >>"$J"
  echo "managed.every.$i kcheck save_all=1:$EVERY $APP managed 4 10" >>"$J"
done
for i in 1 2 3; do
  echo "shared.plain.$i plain - $APP shared 8 30" >>"$J"
  echo "churn.plain.$i plain - $APP churn 8 30" >>"$J"
  echo "shared.nolock.$i kcheck check_lock=0:$EVERY $APP shared 4 8" >>"$J"
  echo "churn.nolock.$i kcheck check_lock=0:save_all=1:$EVERY $APP churn 4 8" >>"$J"
done
sed -i 's/ - / "" /' "$J"
jobs_run app_shared "$J"

# 3. PyTorch, two threads: plain first (the reference), then with kcheck.
"$PYTHON" -c 'import torch' >/dev/null 2>&1 # warm the import caches
J="$WORK/torch.jobs"
: >"$J"
for i in 1 2 3; do echo "torch.plain.$i plain \"\" $PYTHON test/gpu/torch_threads.py" >>"$J"; done
jobs_run torch_plain "$J"
: >"$J"
for i in $(seq 1 "$RUNS"); do echo "torch.kcheck.$i kcheck \"\" $PYTHON test/gpu/torch_threads.py" >>"$J"; done
jobs_run torch_kcheck "$J"

"$PYTHON" "$ROOT/test/gpu/world_summary.py" "$LOGS" "$REPS" "$OUTDIR/world.md" "$RUNS"
rc=$?
cp "$OUTDIR/world.md" "$LOGS/" 2>/dev/null
tar -C "$WORK" -czf "$OUTDIR/world-logs.tar.gz" logs reports 2>/dev/null
cat "$OUTDIR/world.md"
exit $rc
