#!/usr/bin/env bash
# test/gpu/run_gpu_tests.sh — kcheck's GPU validation suite.
#
#   test/gpu/run_gpu_tests.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# (a) test/gpu/train_small.py without and with kcheck
#     (trace=1:cupti_audit=1): final loss and parameter digest must be
#     bitwise equal; the report must pass check_report.py --mode torch.
# (b) test/gpu/launches.cu (shared and static cudart builds) without and with
#     kcheck: checksums equal, exit 0, report passes check_report.py --mode cuda
#     with the launch count the program printed.
#
# Writes two files into OUTDIR: results.md (date, machine, versions, commands,
# PASS/FAIL table) and gpu-test-logs.tar.gz (every stdout/stderr log and
# report). Exit status is nonzero when any check failed.
#
# Environment: BUILD (default build), PYTHON (python3), CUDA_HOME
# (/usr/local/cuda), NVCC, KC_TRAIN_STEPS (20), KC_TIMEOUT (seconds per
# command, 300).
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" gpu "${1:-}"
STEPS=${KC_TRAIN_STEPS:-20}
TMO=${KC_TIMEOUT:-300}
KOPTS_BASE="trace=1:cupti_audit=1"

have_timeout=0
command -v timeout >/dev/null 2>&1 && have_timeout=1

# run_logged NAME CMD... (this script's own, in place of common.sh's: one
# timeout per command, no overall budget): stdout/stderr to
# $LOGS/NAME.{out,err}; returns the command's exit status without tripping
# set -e. Commands are recorded.
run_logged() {
  local name=$1
  shift
  printf '%s: %s\n' "$name" "$*" >>"$CMDS"
  local rc=0
  local t0 t1
  t0=$(date +%s.%N)
  if [ "$have_timeout" = 1 ]; then
    timeout --kill-after=15 "$TMO" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" || rc=$?
  else
    "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" || rc=$?
  fi
  t1=$(date +%s.%N)
  printf '  %s: exit %d, %s s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')" \
    | tee -a "$CMDS"
  [ "$rc" = 124 ] && echo "  $name: TIMED OUT after ${TMO}s" | tee -a "$CMDS"
  return "$rc"
}

field() { # file key -> the value after "KEY " on the last matching line
  awk -v k="$1" '$1 == k {v = $2} END {print v}' "$2" 2>/dev/null || true
}

show_tail() { # file: last lines, indented, for the console
  [ -s "$1" ] && tail -n "${2:-15}" "$1" | sed 's/^/    | /' || true
}

kcheck_lines() { # stderr file: kcheck's own lines
  grep -E '^(kcheck:|SUMMARY: kcheck)' "$1" 2>/dev/null | tail -n 12 | sed 's/^/    | /' || true
}

echo "=== kcheck GPU tests: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
echo "=== output: $OUTDIR (work dir $WORK)"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "repo: $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
  echo "--- nvidia-smi -L"
  nvidia-smi -L 2>&1 || echo "nvidia-smi failed"
  echo "--- driver"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  echo "--- nvcc"
  if [ -x "$NVCC" ]; then "$NVCC" --version 2>&1 | tail -n 2; else echo "no nvcc at $NVCC"; fi
  echo "--- python"
  "$PYTHON" --version 2>&1 || true
  "$PYTHON" -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)' 2>&1 | tail -n 1 || true
  echo "--- kcheck"
  ls -l "$LIB" 2>&1 || true
  ldd "$LIB" 2>&1 | grep -E 'not found|jansson|unwind|libc\.so' || true
  uname -a
} >"$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"

# ------------------------------------------------------------ preconditions
if [ ! -f "$LIB" ]; then
  record "libkcheck.so present" FAIL "$LIB missing (run make, carry build/)"
elif ldd "$LIB" 2>&1 | grep -q 'not found'; then
  record "libkcheck.so loads" FAIL "$(ldd "$LIB" | grep 'not found' | tr -s ' \t' ' ' | tr '\n' ';')"
else
  record "libkcheck.so loads" PASS "$LIB"
fi

# ------------------------------------------------------------ build
mkdir -p "$BUILD/gpu"
build_bin() { # output source cudart-mode
  local out=$1 src=$2 mode=$3
  local rpath=()
  [ "$mode" = shared ] && rpath=(-Xlinker "-rpath,$CUDA_HOME/lib64")
  if [ -x "$NVCC" ]; then
    if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
      run_logged "build_$(basename "$out")" "$NVCC" -O2 -arch=sm_90 -cudart "$mode" "${rpath[@]}" \
        "$src" -o "$out" -L"$CUDA_HOME/lib64/stubs" -lcuda || return 1
    fi
  elif [ ! -x "$out" ]; then
    echo "  no nvcc and no prebuilt $out" >>"$CMDS"
    return 1
  fi
  return 0
}
LAUNCHES_SHARED="$BUILD/gpu/launches"
LAUNCHES_STATIC="$BUILD/gpu/launches_static"
for v in shared static; do
  bin=$LAUNCHES_SHARED
  [ $v = static ] && bin=$LAUNCHES_STATIC
  if build_bin "$bin" test/gpu/launches.cu $v; then
    record "build launches ($v cudart)" PASS "$bin"
  else
    record "build launches ($v cudart)" FAIL "see build log / no nvcc and no prebuilt binary"
  fi
done

# A shared-cudart binary needs libcudart.so.13 at run time: the toolkit's, or
# the one in the Python environment's nvidia wheels.
CUDART_DIR=""
if [ -x "$LAUNCHES_SHARED" ] && ldd "$LAUNCHES_SHARED" 2>/dev/null | grep -q 'libcudart.*not found'; then
  CUDART_DIR=$("$PYTHON" - <<'EOF' 2>/dev/null || true
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for p in sorted(glob.glob(os.path.join(r, "nvidia", "**", "libcudart.so.13*"), recursive=True)):
        print(os.path.dirname(p)); sys.exit(0)
EOF
  )
  echo "libcudart.so.13 not on the default path; using ${CUDART_DIR:-nothing found}" | tee -a "$CMDS"
fi

# ------------------------------------------------------------ (a) PyTorch
echo "=== (a) train_small.py, $STEPS steps"
TORCH_OK=1
if run_logged torch_plain "$PYTHON" test/gpu/train_small.py --steps "$STEPS"; then :; else
  TORCH_OK=0
  show_tail "$LOGS/torch_plain.err"
fi
if run_logged torch_kcheck env LD_PRELOAD="$LIB" KCHECK_OPTIONS="$KOPTS_BASE:log_path=$REPS/torch" \
  "$PYTHON" test/gpu/train_small.py --steps "$STEPS"; then :; else
  TORCH_OK=0
  show_tail "$LOGS/torch_kcheck.err"
fi
kcheck_lines "$LOGS/torch_kcheck.err"
LA=$(field FINAL_LOSS "$LOGS/torch_plain.out")
LB=$(field FINAL_LOSS "$LOGS/torch_kcheck.out")
DA=$(field PARAM_DIGEST "$LOGS/torch_plain.out")
DB=$(field PARAM_DIGEST "$LOGS/torch_kcheck.out")
if [ "$TORCH_OK" = 1 ]; then
  record "torch: runs exit 0 without and with kcheck" PASS
else
  record "torch: runs exit 0 without and with kcheck" FAIL "see torch_plain.err / torch_kcheck.err"
fi
if [ -n "$LA" ] && [ "$LA" = "$LB" ]; then
  record "torch: FINAL_LOSS bitwise equal" PASS "$LA"
else
  record "torch: FINAL_LOSS bitwise equal" FAIL "plain '${LA}' vs kcheck '${LB}'"
fi
if [ -n "$DA" ] && [ "$DA" = "$DB" ]; then
  record "torch: parameters bitwise equal after training" PASS "sha256 ${DA:0:16}..."
else
  record "torch: parameters bitwise equal after training" FAIL "plain '${DA:0:16}' vs kcheck '${DB:0:16}'"
fi
if grep -q '^SUMMARY: kcheck:' "$LOGS/torch_kcheck.err" 2>/dev/null; then
  record "torch: kcheck loaded and printed its summary" PASS "$(grep '^SUMMARY: kcheck:' "$LOGS/torch_kcheck.err" | tail -n 1)"
else
  record "torch: kcheck loaded and printed its summary" FAIL "no 'SUMMARY: kcheck:' line on stderr"
fi
shopt -s nullglob
torch_reports=("$REPS"/torch.*.jsonl)
if [ ${#torch_reports[@]} -eq 0 ]; then
  record "torch: report checks" FAIL "no report $REPS/torch.*.jsonl"
elif run_logged check_torch "$PYTHON" test/gpu/check_report.py --mode torch "${torch_reports[@]}"; then
  record "torch: report checks" PASS "$(tail -n 1 "$LOGS/check_torch.out")"
else
  record "torch: report checks" FAIL "$(grep -c '^check_report: FAIL' "$LOGS/check_torch.err" || true) failed checks"
  grep '^check_report: ' "$LOGS/check_torch.err" | sed 's/^/    | /' || true
fi
grep -E '^  (exe|summary|audit|launched kernels by)' "$LOGS/check_torch.out" 2>/dev/null | sed 's/^/    | /' || true

# ------------------------------------------------------------ (b) CUDA program
for v in shared static; do
  bin=$LAUNCHES_SHARED
  [ $v = static ] && bin=$LAUNCHES_STATIC
  echo "=== (b) launches ($v cudart)"
  if [ ! -x "$bin" ]; then
    record "cuda/$v: runs" FAIL "no binary $bin"
    continue
  fi
  envp=()
  if [ $v = shared ] && [ -n "$CUDART_DIR" ]; then
    envp=(LD_LIBRARY_PATH="$CUDART_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  fi
  ok=1
  run_logged "cuda_${v}_plain" env "${envp[@]}" "$bin" || { ok=0; show_tail "$LOGS/cuda_${v}_plain.err"; }
  run_logged "cuda_${v}_kcheck" env "${envp[@]}" LD_PRELOAD="$LIB" \
    KCHECK_OPTIONS="$KOPTS_BASE:log_path=$REPS/cuda_$v" "$bin" || { ok=0; show_tail "$LOGS/cuda_${v}_kcheck.err"; }
  kcheck_lines "$LOGS/cuda_${v}_kcheck.err"
  if [ $ok = 1 ]; then
    record "cuda/$v: results verified, exit 0 without and with kcheck" PASS
  else
    record "cuda/$v: results verified, exit 0 without and with kcheck" FAIL "see cuda_${v}_*.err"
  fi
  CA=$(field CHECKSUM "$LOGS/cuda_${v}_plain.out")
  CB=$(field CHECKSUM "$LOGS/cuda_${v}_kcheck.out")
  if [ -n "$CA" ] && [ "$CA" = "$CB" ]; then
    record "cuda/$v: checksums equal" PASS "$CA"
  else
    record "cuda/$v: checksums equal" FAIL "plain '$CA' vs kcheck '$CB'"
  fi
  NL=$(field LAUNCHES "$LOGS/cuda_${v}_kcheck.out")
  reps=("$REPS"/cuda_"$v".*.jsonl)
  expect=()
  [ -n "$NL" ] && expect=(--expect-launches "$NL")
  if [ ${#reps[@]} -eq 0 ]; then
    record "cuda/$v: report checks" FAIL "no report $REPS/cuda_$v.*.jsonl"
  elif run_logged "check_cuda_$v" "$PYTHON" test/gpu/check_report.py --mode cuda "${expect[@]}" "${reps[@]}"; then
    record "cuda/$v: report checks" PASS "$(tail -n 1 "$LOGS/check_cuda_$v.out")"
  else
    record "cuda/$v: report checks" FAIL "$(grep -c '^check_report: FAIL' "$LOGS/check_cuda_$v.err" || true) failed checks"
    grep '^check_report: ' "$LOGS/check_cuda_$v.err" | sed 's/^/    | /' || true
  fi
done

# ------------------------------------------------------------ results
nfail=0
for s in "${STATUS[@]}"; do [ "$s" = PASS ] || nfail=$((nfail + 1)); done
table() {
  printf '| check | result | detail |\n|---|---|---|\n'
  for i in "${!NAMES[@]}"; do
    printf '| %s | %s | %s |\n' "${NAMES[$i]}" "${STATUS[$i]}" "$(printf '%s' "${DETAILS[$i]}" | tr '|' '/' | cut -c1-160)"
  done
}
{
  echo "# kcheck GPU tests"
  echo
  echo "Result: $([ $nfail = 0 ] && echo "PASS (all ${#NAMES[@]} checks)" || echo "FAIL ($nfail of ${#NAMES[@]} checks failed)")"
  echo
  table
  echo
  echo "## Environment"
  echo '```'
  cat "$LOGS/env.txt"
  echo '```'
  echo
  echo "## Commands (relative to $ROOT; logs and reports in gpu-test-logs.tar.gz)"
  echo '```'
  cat "$CMDS"
  echo '```'
  for f in check_torch check_cuda_shared check_cuda_static; do
    [ -f "$LOGS/$f.out" ] || continue
    echo
    echo "## $f"
    echo '```'
    head -c 20000 "$LOGS/$f.out"
    cat "$LOGS/$f.err"
    echo '```'
  done
} >"$WORK/results.md"
cp "$WORK/results.md" "$OUTDIR/results.md"
tar -czf "$OUTDIR/gpu-test-logs.tar.gz" -C "$WORK" logs reports
rm -rf "$WORK"

echo
echo "=== kcheck GPU tests: results (also in $OUTDIR/results.md)"
table
echo
if [ $nfail = 0 ]; then
  echo "ALL PASS (${#NAMES[@]} checks)"
else
  echo "FAILED: $nfail of ${#NAMES[@]} checks"
fi
[ $nfail = 0 ]
