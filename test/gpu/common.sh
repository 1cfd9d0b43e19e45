# test/gpu/common.sh — sourced by the GPU validation and benchmark scripts
# (test/gpu/run_gpu_*.sh, bench/run_*.sh): paths, a work folder, the
# PASS/FAIL record and a command runner under a time budget.

# kc_gpu_init ROOT TAG [OUTDIR]: cd ROOT; OUTDIR (argument, else $OUT, else
# ROOT/gpu-out, absolute); BUILD (absolute), PYTHON, CUDA_HOME, NVCC, LIB;
# WORK (a fresh kcheck-TAG.XXXXXX folder) with LOGS, REPS and the command
# log CMDS; T_START.
kc_gpu_init() {
  ROOT=$1
  cd "$ROOT"
  OUTDIR=${3:-${OUT:-$ROOT/gpu-out}}
  mkdir -p "$OUTDIR"
  OUTDIR=$(cd "$OUTDIR" && pwd)
  BUILD=${BUILD:-build}
  case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
  PYTHON=${PYTHON:-python3}
  CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
  NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
  LIB="$BUILD/libkcheck.so"
  T_START=$(date +%s)
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kcheck-$2.XXXXXX")
  LOGS="$WORK/logs"
  REPS="$WORK/reports"
  mkdir -p "$LOGS" "$REPS"
  CMDS="$LOGS/commands.txt"
  : >"$CMDS"
  NAMES=()
  STATUS=()
  DETAILS=()
}

record() { # name status detail
  NAMES+=("$1")
  STATUS+=("$2")
  DETAILS+=("${3:-}")
  printf '[%s] %s %s\n' "$2" "$1" "${3:+- $3}"
}

elapsed() { echo $(($(date +%s) - T_START)); }

# run_logged TIMEOUT NAME CMD... : stdout/stderr to $LOGS/NAME.{out,err};
# returns the command's status without tripping set -e. No command starts
# after BUDGET seconds or runs past them, so the results are always written.
run_logged() {
  local tmo=$1 name=$2
  shift 2
  printf '%s: %s\n' "$name" "$*" >>"$CMDS"
  local left=$((BUDGET - $(elapsed)))
  if [ "$left" -lt 10 ]; then
    echo "  $name: left out, the time budget (${BUDGET}s) is spent" | tee -a "$CMDS"
    : >"$LOGS/$name.out"
    : >"$LOGS/$name.err"
    return 125
  fi
  [ "$tmo" -gt "$left" ] && tmo=$left
  local rc=0
  timeout --kill-after=10 "$tmo" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" || rc=$?
  printf '  %s: exit %d (t=%ss)\n' "$name" "$rc" "$(elapsed)" >>"$CMDS"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "  $name: TIMED OUT after ${tmo}s" | tee -a "$CMDS"
  fi
  return "$rc"
}

reports_of() { # name -> its report files in $REPS (may be none)
  local f
  for f in "$REPS/$1".*.jsonl; do [ -e "$f" ] && printf '%s\n' "$f"; done
  return 0
}

bench_env() { # the date, host, kcheck commit, GPU and torch of a benchmark run, to stdout
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "kcheck commit: $(cat "$ROOT/.commit" 2>/dev/null || git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 || true
  "$PYTHON" -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -n 1 || true
}
