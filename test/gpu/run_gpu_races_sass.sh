#!/usr/bin/env bash
# test/gpu/run_gpu_races_sass.sh — the race corpus of kernels with no PTX
# (test/gpu/races_sass/: Triton kernels, SASS-only CUDA), in one device call:
# kcheck with default options (Triton's cache without its .ptx files, and
# with them), kcheck with each race strategy alone, compute-sanitizer
# racecheck, and Triton's own sanitizers (gsan, consan) where the installed
# Triton has them. Every kernel is launched once per process.
#
#   BUILD=<builddir> bash test/gpu/run_gpu_races_sass.sh OUTDIR
#
# OUTDIR gets races_sass.md (the tables, PASS/FAIL of the goal), races_sass.json
# (per kernel and condition) and races_sass-logs.tar.gz (every log and report).
# Never hangs: every process has a timeout, jobs that would start after the
# deadline are skipped (and the tables say so), a failing process only loses
# its own kernels. Exit status: the summarizer's (0: the goal holds).
#
# Environment: BUILD (build), CUDA_HOME, NVCC, PYTHON, KC_JOBS (kcheck
# processes at once, 8), KC_SAN_JOBS (sanitizer processes at once, 6),
# KC_TRITON_CHUNK (Triton kernels per kcheck process, 8), KC_DEADLINE_S (no
# job starts after this many seconds, 300; a running one is cut 40 s later),
# KC_STRATEGIES (the strategies run alone: scrub green smem hammer l2flush
# jitter warporder accesses), KC_SAN_CONCURRENT (1: the sanitizers run
# beside the kcheck jobs; 0: after them), KC_EXTRA_OPTIONS (appended to
# every kcheck run's options).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUTDIR=${1:-${OUT:-gpu-out}}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
PYTHON=${PYTHON:-python3}
export LIB="$BUILD/libkcheck.so" PYTHON
export KPY="$ROOT/test/gpu/races_sass/kernels.py"
JOBS=${KC_JOBS:-8}
SAN_JOBS=${KC_SAN_JOBS:-6}
CHUNK=${KC_TRITON_CHUNK:-8}
STRATS=${KC_STRATEGIES:-scrub green smem hammer l2flush jitter warporder accesses}
export KC_EXTRA_OPTIONS=${KC_EXTRA_OPTIONS:-}
export WORK=$(mktemp -d "${TMPDIR:-/tmp}/kcheck-races-sass.XXXXXX")
mkdir -p "$WORK/kc" "$WORK/san" "$WORK/plain" "$WORK/tc"
T0=$(date +%s)
export DEADLINE=$((T0 + ${KC_DEADLINE_S:-300}))
CS=$(command -v compute-sanitizer || echo "$CUDA_HOME/compute-sanitizer/compute-sanitizer")
export CS

# The SASS-only CUDA program: no PTX in its fatbin (-gencode ...,code=sm_90),
# no -lineinfo (its line table would carry the PTX text).
BIN="$BUILD/gpu/corpus_sass"
SRC=test/gpu/races_sass/corpus_sass.cu
if [ -x "$NVCC" ] && { [ ! -x "$BIN" ] || [ "$SRC" -nt "$BIN" ]; }; then
  mkdir -p "$(dirname "$BIN")" 2>/dev/null
  [ -w "$(dirname "$BIN")" ] || BIN="$WORK/corpus_sass"
  "$NVCC" -O2 -gencode arch=compute_90,code=sm_90 -cudart static -o "$BIN" "$SRC" \
    -L"$CUDA_HOME/lib64/stubs" -lcuda >"$WORK/nvcc.out" 2>&1 || echo "nvcc failed" >>"$WORK/nvcc.out"
fi
export BIN

# What is there: versions, and which sanitizers the installed Triton has.
SANS=$("$PYTHON" - <<'EOF' 2>/dev/null
import importlib.util, os, re
try:
    import triton
except ImportError:
    print("none none none"); raise SystemExit
d = os.path.dirname(triton.__file__)
def mentions(word):
    """Whether the word (a whole word) is in Triton's Python files or libraries."""
    pat = re.compile(rb"(?<![A-Za-z0-9_])" + word.encode() + rb"(?![A-Za-z0-9_])")
    for base, _, files in os.walk(d):
        for f in files:
            if f.endswith((".py", ".so")):
                try:
                    with open(os.path.join(base, f), "rb") as fh:
                        if pat.search(fh.read()):
                            return True
                except OSError:
                    pass
    return False
gsan = "tool" if importlib.util.find_spec("triton.tools.gsan") else ("mode" if mentions("gsan") else "none")
consan = "mode" if mentions("consan") else "none"
print(triton.__version__, gsan, consan)
EOF
)
read -r TRITON_VER GSAN CONSAN <<<"${SANS:-none none none}"
export GSAN CONSAN
HAVE_TRITON=0
"$PYTHON" -c "import torch, triton; assert torch.cuda.is_available()" >/dev/null 2>&1 && HAVE_TRITON=1
# TRITON_INTERPRET=1: the Triton kernels run on the CPU (the runner's own
# plumbing, tried on a machine without a GPU; kcheck sees no launch there)
[ "${TRITON_INTERPRET:-0}" = 1 ] && "$PYTHON" -c "import torch, triton" >/dev/null 2>&1 && HAVE_TRITON=1
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(cat "$ROOT/.commit" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "cpus: $(nproc)"
  echo "compute-sanitizer: $("$CS" --version 2>/dev/null | tail -1)"
  echo "torch: $("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
  echo "triton: $TRITON_VER (usable with CUDA: $HAVE_TRITON); gsan: $GSAN; consan: $CONSAN"
  echo "cuda program: $BIN ($(grep -ac '^\.version [0-9]' "$BIN" 2>/dev/null) PTX headers in it)"
  echo "jobs: kcheck $JOBS at once, sanitizers $SAN_JOBS at once, $CHUNK Triton kernels per kcheck process"
  echo "command: BUILD=$BUILD bash test/gpu/run_gpu_races_sass.sh OUTDIR"
} >"$WORK/header.txt"

# The manifest: name kind class expected.
: >"$WORK/cases.txt"
[ -x "$BIN" ] && "$BIN" list | sed 's/^\([^ ]*\) /\1 cuda /' >>"$WORK/cases.txt"
[ $HAVE_TRITON = 1 ] && "$PYTHON" "$KPY" list | sed 's/^\([^ ]*\) /\1 triton /' >>"$WORK/cases.txt"
TRITON_NAMES=$(awk '$2 == "triton" {print $1}' "$WORK/cases.txt")
CUDA_NAMES=$(awk '$2 == "cuda" {print $1}' "$WORK/cases.txt")

# budget SECONDS: a job's timeout, at most until 40 s past the deadline;
# 0 when the deadline has passed (the job is skipped and says so).
budget() {
  local now left
  now=$(date +%s)
  [ "$now" -gt "$DEADLINE" ] && { echo 0; return; }
  left=$((DEADLINE + 40 - now))
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}
export -f budget

# kcjob COND UNIT KIND NAME...: one kcheck process. COND: default (Triton:
# its own cache, .ptx dropped), default_ptx (Triton: the warmed cache, PTX
# kept), s_<strategy> (that strategy alone, nothing added for kernels
# without code; Triton without PTX).
kcjob() {
  local cond=$1 unit=$2 kind=$3
  shift 3
  local base="$WORK/kc/$cond.$unit" opts="" t
  case "$cond" in
    s_*) opts="race_strategies=${cond#s_}:race_no_code_strategies=" ;;
  esac
  [ -n "$KC_EXTRA_OPTIONS" ] && opts="${opts:+$opts:}$KC_EXTRA_OPTIONS"
  t=$(budget $([ "$kind" = triton ] && echo 180 || echo 60))
  if [ "$t" = 0 ]; then echo "skipped: deadline" >"$base.rc"; return; fi
  local s=$(date +%s.%N) rc
  if [ "$kind" = cuda ]; then
    timeout -k 5 "$t" env LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$base:verbosity=0${opts:+:$opts}" \
      "$BIN" "$@" >"$base.out" 2>"$base.err"
    rc=$?
  elif [ "$cond" = default_ptx ]; then
    timeout -k 5 "$t" env TRITON_CACHE_DIR="$WORK/tc/ptx" LD_PRELOAD="$LIB" \
      KCHECK_OPTIONS="log_path=$base:verbosity=0${opts:+:$opts}" \
      "$PYTHON" "$KPY" run "$@" >"$base.out" 2>"$base.err"
    rc=$?
  else
    mkdir -p "$WORK/tc/$cond.$unit"
    timeout -k 5 "$t" env TRITON_CACHE_DIR="$WORK/tc/$cond.$unit" LD_PRELOAD="$LIB" \
      KCHECK_OPTIONS="log_path=$base:verbosity=0${opts:+:$opts}" \
      "$PYTHON" "$KPY" run --drop-ptx "$@" >"$base.out" 2>"$base.err"
    rc=$?
    rm -rf "$WORK/tc/$cond.$unit"
  fi
  echo "$rc $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') $*" >"$base.rc"
}
export -f kcjob

# sanjob TOOL KIND NAME: one sanitizer process for one kernel. racecheck
# instruments only the corpus kernel in the Python processes (kns=: torch's
# own kernels are not what is judged, and instrumenting them costs time).
sanjob() {
  local tool=$1 kind=$2 name=$3 base="$WORK/san/$1.$3" t rc
  t=$(budget 150)
  if [ "$t" = 0 ]; then echo "skipped: deadline" >"$base.rc"; return; fi
  local s=$(date +%s.%N)
  case "$tool.$kind" in
    racecheck.cuda)
      timeout -k 5 "$t" "$CS" --tool racecheck --print-limit 4 "$BIN" "$name" >"$base.out" 2>&1 ;;
    racecheck.triton)
      timeout -k 5 "$t" env TRITON_CACHE_DIR="$WORK/tc/ptx" "$CS" --tool racecheck --print-limit 4 \
        --kernel-name "kns=$name" "$PYTHON" "$KPY" run "$name" >"$base.out" 2>&1 ;;
    gsan.triton)
      mkdir -p "$WORK/tc/gsan.$name"
      if [ "$GSAN" = tool ]; then
        timeout -k 5 "$t" env TRITON_CACHE_DIR="$WORK/tc/gsan.$name" "$PYTHON" -m triton.tools.gsan \
          "$KPY" run "$name" >"$base.out" 2>&1
      else
        timeout -k 5 "$t" env TRITON_CACHE_DIR="$WORK/tc/gsan.$name" TRITON_INSTRUMENTATION_MODE=gsan \
          "$PYTHON" "$KPY" run "$name" >"$base.out" 2>&1
      fi ;;
    consan.triton)
      mkdir -p "$WORK/tc/consan.$name"
      timeout -k 5 "$t" env TRITON_CACHE_DIR="$WORK/tc/consan.$name" TRITON_INSTRUMENTATION_MODE=consan \
        "$PYTHON" "$KPY" run "$name" >"$base.out" 2>&1 ;;
  esac
  rc=$?
  rm -rf "$WORK/tc/$tool.$name"
  echo "$rc $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')" >"$base.rc"
}
export -f sanjob

# 1. Plain runs (no kcheck): the results each kcheck run must leave as they
# are, and Triton's warmed cache (PTX kept) for default_ptx and racecheck.
T1=$(date +%s)
[ -x "$BIN" ] && [ -n "$CUDA_NAMES" ] && timeout -k 5 120 "$BIN" $CUDA_NAMES >"$WORK/plain/cuda.out" 2>&1
if [ -n "$TRITON_NAMES" ]; then
  echo $TRITON_NAMES | tr ' ' '\n' | xargs -n "$CHUNK" | nl -nln -w1 -s' ' |
    xargs -P "$JOBS" -L1 sh -c 'u=$1; shift; TRITON_CACHE_DIR="$WORK/tc/ptx" timeout -k 5 150 \
      "$PYTHON" "$KPY" run "$@" >"$WORK/plain/triton.$u.out" 2>&1' _
fi
T2=$(date +%s)

# 2. The jobs: kcheck per condition and unit; sanitizers per kernel.
# In order of importance (a deadline skips the last ones), the long Triton
# processes of each condition first.
{
  for cond in default default_ptx $(for s in $STRATS; do echo "s_$s"; done); do
    if [ -n "$TRITON_NAMES" ]; then
      echo $TRITON_NAMES | tr ' ' '\n' | xargs -n "$CHUNK" | nl -nln -w1 -s' ' |
        sed "s/^\([0-9]*\) /$cond t\1 triton /"
    fi
    [ "$cond" = default_ptx ] && continue
    for n in $CUDA_NAMES; do echo "$cond $n cuda $n"; done
  done
} >"$WORK/kcjobs.txt"
{
  if [ -x "$CS" ]; then
    for n in $CUDA_NAMES; do echo "racecheck cuda $n"; done
    for n in $TRITON_NAMES; do echo "racecheck triton $n"; done
  fi
  [ "$GSAN" != none ] && for n in $TRITON_NAMES; do echo "gsan triton $n"; done
  [ "$CONSAN" != none ] && for n in $TRITON_NAMES; do echo "consan triton $n"; done
} >"$WORK/sanjobs.txt"

run_san() { xargs -P "$SAN_JOBS" -L1 bash -c 'sanjob "$@"' _ <"$WORK/sanjobs.txt"; }
if [ "${KC_SAN_CONCURRENT:-1}" = 1 ]; then
  run_san &
  SANPID=$!
fi
xargs -P "$JOBS" -L1 bash -c 'kcjob "$@"' _ <"$WORK/kcjobs.txt"
T3=$(date +%s)
if [ "${KC_SAN_CONCURRENT:-1}" = 1 ]; then wait "$SANPID"; else run_san; fi
T4=$(date +%s)
{
  echo "wall: plain runs and Triton warm-up $((T2 - T1)) s; kcheck jobs $((T3 - T2)) s" \
    "($(wc -l <"$WORK/kcjobs.txt") processes); sanitizers done at $((T4 - T2)) s" \
    "($(wc -l <"$WORK/sanjobs.txt") processes, concurrent: ${KC_SAN_CONCURRENT:-1}); total $((T4 - T0)) s"
  echo "skipped at the deadline: $(grep -l '^skipped' "$WORK"/kc/*.rc "$WORK"/san/*.rc 2>/dev/null | wc -l) jobs"
} >>"$WORK/header.txt"
rm -rf "$WORK/tc"
"$PYTHON" test/gpu/races_sass/summarize.py "$WORK" "$OUTDIR"
rc=$?
tar -C "$WORK" -czf "$OUTDIR/races_sass-logs.tar.gz" . 2>/dev/null
echo "races_sass: $OUTDIR/races_sass.md (work folder $WORK)"
exit $rc
