#!/usr/bin/env bash
# test/gpu/serving/run_serving_harness.sh — the serving harness on a GPU:
#   1. throughput: tokens/s of harness.py plain and under `kcheck run
#      --serving` (4 request threads, continuous batching, decode from CUDA
#      graphs), alternated A/B twice in this one call, ratio of medians;
#   2. results: one request thread, a fixed set of requests, plain vs
#      kcheck --serving: the tokens' sha256 must be equal;
#   3. planted bugs, each with its correct form: graph_race (default
#      options: the first replay of each decode graph is checked), and
#      missing_wait / record_stream (stream_races=1).
# usage: bash test/gpu/serving/run_serving_harness.sh [OUTDIR]  (BUILD, PYTHON, KC_HARNESS_SECONDS)
# Writes OUTDIR/harness.md and OUTDIR/harness-logs.tar.gz; exit 1 on a failure.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)" harness "${1:-}"
BUDGET=${KC_HARNESS_BUDGET:-420}
SECS=${KC_HARNESS_SECONDS:-40}
H="test/gpu/serving/harness.py"
DEV=(--device "${KC_HARNESS_DEVICE:-cuda}") # cpu: a dry run of the plumbing
KC="$PYTHON -m kcheck --lib $LIB run"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
bench_env | tee "$LOGS/env.txt"
"$PYTHON" -c 'import torch, triton' >/dev/null 2>&1

kcrun() { # TAG OPTS ARGS... : harness.py under kcheck run --serving
  local tag=$1 opts=$2
  shift 2
  run_logged $((SECS + 120)) "$tag" env KCHECK_OPTIONS="log_path=$REPS/$tag${opts:+:$opts}" \
    $KC --serving -- "$PYTHON" "$H" "${DEV[@]}" "$@"
}
for r in 1 2; do
  run_logged $((SECS + 60)) "tput.plain.$r" "$PYTHON" "$H" "${DEV[@]}" --seconds "$SECS" --threads 4
  kcrun "tput.serving.$r" "" --seconds "$SECS" --threads 4
done
run_logged 120 bits.plain "$PYTHON" "$H" "${DEV[@]}" --requests "${KC_HARNESS_REQUESTS:-24}" --threads 1
kcrun bits.serving "" --requests "${KC_HARNESS_REQUESTS:-24}" --threads 1
for b in graph_race graph_race_ok; do kcrun "bug.$b" "time_budget=1" --requests 12 --threads 2 --bug "$b"; done
for b in missing_wait missing_wait_ok record_stream record_stream_ok; do
  kcrun "bug.$b" "stream_races=1:time_budget=1" --requests 12 --threads 2 --bug "$b"
done
"$PYTHON" "$ROOT/test/gpu/serving/harness_summary.py" "$LOGS" "$REPS" "$OUTDIR/harness.md"
rc=$?
tar -C "$WORK" -czf "$OUTDIR/harness-logs.tar.gz" logs reports 2>/dev/null
cat "$OUTDIR/harness.md"
exit $rc
