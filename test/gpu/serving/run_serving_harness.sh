#!/usr/bin/env bash
# test/gpu/serving/run_serving_harness.sh — the serving harness on a GPU:
#   1. throughput, alone on the GPU: tokens/s of harness.py plain and under
#      `kcheck run --serving` (4 request threads, continuous batching, decode
#      from CUDA graphs), alternated A/B twice, ratio of medians; then one
#      run with the opt-in trackers (stream_races=1, graph_uninit=1) for
#      their cost;
#   2. in parallel (each its own process): results (one request thread, a
#      fixed set of requests, plain vs --serving: the tokens' sha256 must be
#      equal); planted bugs, each with its correct form: graph_race and
#      graph_uninit inside the decode graph, missing_wait and record_stream
#      between streams (stream_races=1); PyTorch's own correct multi-stream
#      use (multistream.py) silent under stream_races=1 with the same
#      checksum as a plain run.
# usage: bash test/gpu/serving/run_serving_harness.sh [OUTDIR]
#   (BUILD, PYTHON, KC_HARNESS_SECONDS (15), KC_HARNESS_WINDOW (budget_window
#   of the throughput runs, 5 s: a 15 s run sees three windows),
#   KC_HARNESS_BUDGET (s), KC_HARNESS_REPEAT (A/B pairs, 2; medians over all),
#   KC_HARNESS_VARIANT (options: a third run in each pair, --serving with
#   them, e.g. time_budget=0.03), KC_HARNESS_FLOOR (1: one more run under
#   --serving with max_checks=0,
#   kcheck's cost with no check), KC_HARNESS_TRACKING (0: no tracking run),
#   KC_HARNESS_BUGS (the planted bugs run, all by default; none: no bug
#   runs), KC_HARNESS_CHECKS (0: no bits/multistream runs),
#   KC_HARNESS_DEVICE=cpu: a dry run of the plumbing, KC_HARNESS_CPUS (a
#   taskset CPU list for the throughput runs), KC_HARNESS_SERVING_OPTS
#   (options added to the paired --serving runs, e.g. stream_races=1))
# The correctness runs use time_budget=0.99 (before 2026-12-01 an explicit
# time_budget=1 under --serving read as the default, 0.05).
# Writes OUTDIR/harness.md and OUTDIR/harness-logs.tar.gz; exit 1 on a failure.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)" harness "${1:-}"
BUDGET=${KC_HARNESS_BUDGET:-260}
SECS=${KC_HARNESS_SECONDS:-15}
WIN=${KC_HARNESS_WINDOW:-5}
H="test/gpu/serving/harness.py"
M="test/gpu/serving/multistream.py"
DEV=(--device "${KC_HARNESS_DEVICE:-cuda}") # cpu: a dry run of the plumbing
KC="$PYTHON -m kcheck --lib $LIB run"
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"
bench_env | tee "$LOGS/env.txt"
echo "seconds per throughput run: $SECS; budget_window of the serving runs: $WIN s" >>"$LOGS/env.txt"
"$PYTHON" -c 'import torch, triton' >/dev/null 2>&1

kcrun() { # TAG TIMEOUT OPTS PROGRAM ARGS... : under kcheck run --serving
  local tag=$1 tmo=$2 opts=$3 pin=()
  shift 3
  case $tag in tput.*) pin=("${PIN[@]}") ;; esac
  run_logged "$tmo" "$tag" "${pin[@]}" env KCHECK_OPTIONS="log_path=$REPS/$tag${opts:+:$opts}" \
    $KC --serving -- "$PYTHON" "$@"
}
T=(--seconds "$SECS" --threads 4)
# The throughput runs on fixed CPUs (KC_HARNESS_CPUS, a taskset list, e.g.
# 0-7), to take CPU placement out of the spread between processes (the
# plain loop alone gave 7.6k-14.4k tokens/s unpinned; whether pinning
# narrows it is for the table to show). Without taskset, or with
# KC_HARNESS_CPUS empty, unpinned.
PIN=()
if [ -n "${KC_HARNESS_CPUS:-}" ] && command -v taskset >/dev/null; then
  PIN=(taskset -c "$KC_HARNESS_CPUS")
fi
SOPTS="budget_window=$WIN${KC_HARNESS_SERVING_OPTS:+:$KC_HARNESS_SERVING_OPTS}"
echo "throughput runs pinned: ${PIN[*]:-no}; options of the paired serving runs: $SOPTS" >>"$LOGS/env.txt"
for r in $(seq 1 "${KC_HARNESS_REPEAT:-2}"); do
  # Each pair back to back, its order alternating (odd pairs plain first),
  # so that a drift over the call does not favour either side.
  plain_first=$((r % 2))
  [ "$plain_first" = 0 ] && kcrun "tput.serving.$r" $((SECS + 90)) "$SOPTS" "$H" "${DEV[@]}" "${T[@]}"
  run_logged $((SECS + 60)) "tput.plain.$r" "${PIN[@]}" "$PYTHON" "$H" "${DEV[@]}" "${T[@]}"
  [ "$plain_first" = 1 ] && kcrun "tput.serving.$r" $((SECS + 90)) "$SOPTS" "$H" "${DEV[@]}" "${T[@]}"
  if [ -n "${KC_HARNESS_VARIANT:-}" ]; then
    kcrun "tput.variant.$r" $((SECS + 90)) "budget_window=$WIN:$KC_HARNESS_VARIANT" "$H" \
      "${DEV[@]}" "${T[@]}"
  fi
done
if [ "${KC_HARNESS_FLOOR:-0}" = 1 ]; then
  # kcheck's floor under the profile: every launch seen, none checked.
  kcrun tput.floor $((SECS + 90)) "budget_window=$WIN:max_checks=0" "$H" "${DEV[@]}" "${T[@]}"
fi
if [ "${KC_HARNESS_TRACKING:-1}" = 1 ]; then
  kcrun tput.tracking $((SECS + 90)) "budget_window=$WIN:stream_races=1:graph_uninit=1" \
    "$H" "${DEV[@]}" "${T[@]}"
fi

# The rest in parallel: correctness, not speed.
P=${KC_HARNESS_PARALLEL_TIMEOUT:-150}
REQ=(--requests "${KC_HARNESS_REQUESTS:-24}" --threads 1)
B=(--requests 10 --threads 2)
CHECKS=${KC_HARNESS_CHECKS:-1}
if [ "$CHECKS" = 1 ]; then
  run_logged "$P" bits.plain "$PYTHON" "$H" "${DEV[@]}" "${REQ[@]}" &
  kcrun bits.serving "$P" "" "$H" "${DEV[@]}" "${REQ[@]}" &
fi
ALL="graph_race graph_race_ok graph_uninit graph_uninit_ok missing_wait missing_wait_ok"
BUGS=${KC_HARNESS_BUGS:-$ALL record_stream record_stream_ok}
[ "$BUGS" = none ] && BUGS=""
for b in $BUGS; do
  case $b in
  graph_*) o="time_budget=0.99:graph_uninit=1" ;;
  *) o="stream_races=1:time_budget=0.99" ;;
  esac
  kcrun "bug.$b" "$P" "$o" "$H" "${DEV[@]}" "${B[@]}" --bug "$b" &
done
if [ "${KC_HARNESS_DEVICE:-cuda}" = cuda ] && [ "$CHECKS" = 1 ]; then
  run_logged "$P" multistream.plain "$PYTHON" "$M" &
  kcrun multistream.kc "$P" "stream_races=1:time_budget=0.99" "$M" &
fi
wait
KC_HARNESS_VARIANT="${KC_HARNESS_VARIANT:-}" "$PYTHON" "$ROOT/test/gpu/serving/harness_summary.py" "$LOGS" "$REPS" "$OUTDIR/harness.md"
rc=$?
tar -C "$WORK" -czf "$OUTDIR/harness-logs.tar.gz" logs reports 2>/dev/null
cat "$OUTDIR/harness.md"
exit $rc
