#!/usr/bin/env bash
# test/gpu/run_gpu_python_lines.sh — a Python line on every serving finding,
# and one finding per bug, on a GPU (test/gpu/serving/harness.py, unmodified,
# under `kcheck run --serving`; both runs in parallel, about two minutes):
#   1. streams: the planted missing wait_stream between the prompt's copy
#      stream and the prefill (-o stream_races=1): both sides of every
#      stream_order (and stream_delay) name a line of harness.py although
#      the request threads released the GIL; the findings are one or two
#      bugs with their occurrences, not one per operation;
#   2. graph: the planted race inside the decode graph, found in a replayed
#      node: the finding names harness.py's line (graph replay releases the
#      GIL);
#   and in both, libtorch/libc10/libcudart host frames carry symbol names.
# usage: BUILD=.dev/gpu bash test/gpu/run_gpu_python_lines.sh [OUTDIR]
# Prints PASS/FAIL lines; writes OUTDIR/python-lines.txt and
# OUTDIR/python-lines-logs.tar.gz; exit 1 on a FAIL.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" pylines "${1:-}"
BUDGET=${KC_PYLINES_BUDGET:-170}
H="test/gpu/serving/harness.py"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
{
  bench_env
  "$PYTHON" -c 'import sys; print("python", sys.version.split()[0])'
} | tee "$LOGS/env.txt"
kcrun() { # TAG OPTS ARGS...: harness.py under kcheck run --serving
  local tag=$1 opts=$2
  shift 2
  run_logged 150 "$tag" env KCHECK_OPTIONS="log_path=$REPS/$tag:$opts" \
    "$PYTHON" -m kcheck --lib "$LIB" run --serving -- "$PYTHON" "$H" --requests 10 --threads 2 "$@"
}
kcrun streams "stream_races=1:time_budget=0.99" --bug missing_wait &
kcrun graph "time_budget=0.99" --bug graph_race &
wait
rc=0
for k in streams graph; do
  echo "--- $k: exit $(grep -o "$k: exit [0-9]*" "$CMDS" | tail -1)"
  mapfile -t reps < <(reports_of "$k")
  if [ "${#reps[@]}" = 0 ]; then
    echo "FAIL $k: no report (see $LOGS/$k.err)"
    tail -20 "$LOGS/$k.err"
    rc=1
    continue
  fi
  "$PYTHON" test/gpu/check_python_lines.py "$k" "${reps[@]}" || rc=1
  # the first finding block and the exit summary, as a user sees them
  awk '/==== violation/{n++} n==1' "$LOGS/$k.err" | head -30
  grep -E "^kcheck: bug [0-9]|^SUMMARY" "$LOGS/$k.err" | head -10
done 2>&1 | tee "$OUTDIR/python-lines.txt"
grep -q "^FAIL" "$OUTDIR/python-lines.txt" && rc=1
tar -C "$WORK" -czf "$OUTDIR/python-lines-logs.tar.gz" logs reports 2>/dev/null
echo "=== $([ "$rc" = 0 ] && echo PASS || echo FAIL) run_gpu_python_lines ($(elapsed)s)"
exit $rc
