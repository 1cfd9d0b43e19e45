#!/usr/bin/env bash
# kcheck audit on the GPU corpus (test/audit_gpu), in one call on a GPU:
# builds the corpus's one CUDA extension, runs KernelBench's allclose on
# every candidate (outside kcheck), runs `kcheck audit` over the corpus on
# CUDA, and writes OUTDIR/summary.md (a table per candidate: expected,
# got, gates, allclose ratio, audit wall time) ending in PASS/FAIL lines.
#
#   BUILD=<builddir> bash test/gpu/run_gpu_audit.sh OUTDIR
#
# OUTDIR gets summary.md, audit.jsonl, allclose.json, table.txt, run.log.
# The extension, the Triton cache and each candidate's kcheck reports go
# to WORK (default ${TMPDIR:-/tmp}/kcheck-audit-gpu.work, kept between runs so the
# extension is built once). JOBS (default 12) candidates run at once;
# PYTHON (default python3) is the interpreter that holds PyTorch.
# Exit status: 0 when every line of summary.md's verdict is PASS.
set -u
OUT=${1:?usage: BUILD=<builddir> bash test/gpu/run_gpu_audit.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${BUILD:-$ROOT/build}" 2>/dev/null && pwd)
if [ ! -f "$BUILD/libkcheck.so" ]; then
    echo "run_gpu_audit.sh: no libkcheck.so in BUILD=${BUILD:-?} (make first)" >&2
    exit 2
fi
JOBS=${JOBS:-12}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=${WORK:-${TMPDIR:-/tmp}/kcheck-audit-gpu.work}
mkdir -p "$WORK"
CORPUS=$ROOT/test/audit_gpu
LOG=$OUT/run.log
: > "$LOG"
export PYTHONPATH=$ROOT/python:$CORPUS${PYTHONPATH:+:$PYTHONPATH}
export TORCH_EXTENSIONS_DIR=$WORK/torch_extensions
export TRITON_CACHE_DIR=$WORK/triton_cache
export MAX_JOBS=${MAX_JOBS:-16}
unset KC_AUDIT_GPU_EXT
now() { date +%s.%N; }
secs() { "$PY" -c "print(round($2 - $1, 1))"; }

t0=$(now)
echo "== building the extension kcheck_audit_gpu (MAX_JOBS=$MAX_JOBS)" | tee -a "$LOG"
SO=$("$PY" "$CORPUS/gpu_ext.py" 2>>"$LOG" | tail -n 1)
if [ ! -f "$SO" ]; then
    echo "FAIL: the corpus's extension did not build (see $LOG)" | tee "$OUT/summary.md"
    exit 1
fi
export KC_AUDIT_GPU_EXT=$SO
t1=$(now)
echo "   built $SO in $(secs "$t0" "$t1") s" | tee -a "$LOG"

echo "== KernelBench's allclose on every candidate (outside kcheck)" | tee -a "$LOG"
"$PY" "$ROOT/test/gpu/audit_gpu_allclose.py" "$CORPUS" --jobs "$JOBS" -o "$OUT/allclose.json" 2>>"$LOG" | tee -a "$LOG"
t2=$(now)

echo "== kcheck audit test/audit_gpu --device cuda --jobs $JOBS" | tee -a "$LOG"
rm -rf "$WORK/audit"
"$PY" -m kcheck --lib "$BUILD/libkcheck.so" audit "$CORPUS" --device cuda --jobs "$JOBS" \
    --timeout "${TIMEOUT:-300}" -o "$WORK/audit" > "$OUT/table.txt" 2>>"$LOG"
echo "   kcheck audit exit status $? (1: broken candidates, as planted)" | tee -a "$LOG"
t3=$(now)
cp "$WORK/audit/audit.jsonl" "$OUT/audit.jsonl" 2>/dev/null

"$PY" "$ROOT/test/gpu/summarize_audit.py" --corpus "$CORPUS" --audit "$OUT/audit.jsonl" \
    --allclose "$OUT/allclose.json" --work "$WORK/audit" \
    --times "build=$(secs "$t0" "$t1"),allclose=$(secs "$t1" "$t2"),audit=$(secs "$t2" "$t3"),total=$(secs "$t0" "$t3")" \
    -o "$OUT/summary.md"
rc=$?
echo "== $OUT/summary.md (total $(secs "$t0" "$(now)") s)"
exit $rc
