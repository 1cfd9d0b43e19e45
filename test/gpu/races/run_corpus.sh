#!/usr/bin/env bash
# test/gpu/races/run_corpus.sh — the planted race corpus (corpus.cu) under
# kcheck and under compute-sanitizer racecheck, in one device call.
#
#   bash test/gpu/races/run_corpus.sh OUTDIR
#
# Per case (one process, one launch each): a plain run (the output hash);
# kcheck with default options (its check and violation records); and
# compute-sanitizer --tool racecheck (several at a time: it is slow and its
# verdict does not depend on timing). summarize.py writes OUTDIR/corpus.md
# (recall per class and strategy, false flags, cost per strategy) and
# OUTDIR/corpus.json; all logs go to OUTDIR/corpus-logs.tar.gz.
#
# Environment: BUILD (build), CUDA_HOME (/usr/local/cuda), NVCC, PYTHON,
# KC_CORPUS_OPTIONS (extra kcheck options), KC_RACECHECK_JOBS (6).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
OUTDIR=${1:-${OUT:-gpu-out}}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
PYTHON=${PYTHON:-python3}
LIB="$ROOT/$BUILD/libkcheck.so"
BIN="$ROOT/$BUILD/gpu/corpus"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kcheck-corpus.XXXXXX")
if [ -x "$NVCC" ] && [ ! -x "$BIN" ]; then
  mkdir -p "$(dirname "$BIN")"
  "$NVCC" -O2 -lineinfo -arch=sm_90 -cudart static -o "$BIN" test/gpu/races/corpus.cu
fi
[ -x "$BIN" ] || { echo "run_corpus: no $BIN" >&2; exit 1; }
CS=$(command -v compute-sanitizer || echo "$CUDA_HOME/compute-sanitizer/compute-sanitizer")
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(cat "$ROOT/.commit" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "compute-sanitizer: $("$CS" --version 2>/dev/null | tail -1)"
  echo "command: bash test/gpu/races/run_corpus.sh OUTDIR"
} >"$WORK/header.txt"
"$BIN" list >"$WORK/cases.txt"
T0=$(date +%s)
while read -r name cls racy; do
  timeout 30 "$BIN" "$name" >"$WORK/$name.plain" 2>&1
  KCHECK_OPTIONS="log_path=$WORK/$name.kc:verbosity=0${KC_CORPUS_OPTIONS:+:$KC_CORPUS_OPTIONS}" \
    timeout 120 env LD_PRELOAD="$LIB" "$BIN" "$name" >"$WORK/$name.kcout" 2>"$WORK/$name.kcerr"
  echo "$?" >"$WORK/$name.kcrc"
done <"$WORK/cases.txt"
T1=$(date +%s)
if [ -x "$CS" ]; then
  cut -d' ' -f1 "$WORK/cases.txt" |
    xargs -P "${KC_RACECHECK_JOBS:-6}" -I{} sh -c \
      'timeout 120 "$0" --tool racecheck --print-limit 4 "$1" {} >"$2/{}.racecheck" 2>&1' \
      "$CS" "$BIN" "$WORK"
fi
T2=$(date +%s)
echo "kcheck loop: $((T1 - T0)) s, racecheck: $((T2 - T1)) s" >>"$WORK/header.txt"
"$PYTHON" test/gpu/races/summarize.py "$WORK" "$OUTDIR"
rc=$?
tar -C "$WORK" -czf "$OUTDIR/corpus-logs.tar.gz" .
exit $rc
