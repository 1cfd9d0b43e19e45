#!/usr/bin/env bash
# bench/run_targets.sh — kcheck's overhead on the GPT-style training step,
# every figure a ratio to the plain run of the same device call.
#
#   bench/run_targets.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# bench/transformer_step.py at KC_T_MODEL (6 layers, d_model 512, seq 256,
# batch 16, AdamW, fp32), KC_T_STEPS (30) steps per process, configurations
# alternating for KC_T_ROUNDS (2) rounds, medians:
#   plain | gates=none | default | gates=none:trace=1    (then trace=2 once)
# Reported per configuration: first steps (1-3) ms/step, steady (steps 4..)
# ms/step, the whole run's wall time (process start to exit), checks, skip
# records, launch records, and whether FINAL_LOSS is bitwise the plain one.
# Then (in this order): build/gpu/launch_overhead per config; the planted
# races with the default and with every strategy (what each strategy
# exposed); profile=1 of a default run (profile_mark: the first steps'
# checks by stage and the steady state apart) and of trace=1 (the same
# mark); a run with every race strategy (each one's cost from the check
# records); the checks against their own floors (terms, how kcheck's
# kernels loaded, the device costs measured); compute-sanitizer racecheck
# on a small configuration
# (KC_T_SMALL) that it can finish, with its plain run. KC_T_ANCHORS=all
# adds memcheck and TORCH_CUDA_SANITIZER=1 at the full size, KC_T_FLOOR=1
# a plain torch.profiler run. KC_T_CONFIGS: the alternating configurations
# (default "plain none default trace1"; also "hash": hash_compare=1 and
# "words": hash_compare=0, "det2": determinism_runs=2, "copyback":
# hash_publish=0, each of which adds a
# profile=1 run of it beside
# prof_default; "detonly": gates=determinism and "racenogreen":
# gates=determinism,race:race_no_code_strategies=smem, without one). KC_T_SKIP (words: strat_all8, trace2,
# racecheck) leaves those runs out, for a call that measures only the
# targets and the checks' cost. KC_BUDGET (165 s) bounds the whole. Writes
# OUTDIR/targets.md and OUTDIR/targets-logs.tar.gz.
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/gpu/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" targets "${1:-}"
BUDGET=${KC_BUDGET:-165}
ROUNDS=${KC_T_ROUNDS:-2}
STEPS=${KC_T_STEPS:-30}
FIRST=3
read -r -a MODEL <<<"${KC_T_MODEL:---layers 6 --d-model 512 --seq 256 --batch 16}"
read -r -a SMALL <<<"${KC_T_SMALL:---layers 1 --d-model 64 --heads 2 --seq 32 --batch 2 --vocab 100}"
MARK=${KC_T_MARK:-3000} # launches: after the first steps' checks (~420 a step)
ALL8=race_strategies=scrub,green,smem,hammer,l2flush,jitter,warporder,accesses
T=("$PYTHON" bench/transformer_step.py "${MODEL[@]}")
SUMM=("$PYTHON" "$ROOT/test/gpu/kc_summarize.py")
errors=0

bench_env >"$LOGS/env.txt"
cat "$LOGS/env.txt"

opts_of() {
  case "$1" in
    plain) echo - ;;
    none) echo gates=none ;;
    default) echo "" ;;
    trace1) echo gates=none:trace=1 ;;
    trace2) echo gates=none:trace=2 ;;
    hash) echo hash_compare=1 ;;
    words) echo hash_compare=0 ;;
    det2) echo determinism_runs=2 ;;
    copyback) echo hash_publish=0 ;;
    detonly) echo gates=determinism ;;
    racenogreen) echo gates=determinism,race:race_no_code_strategies=smem ;;
  esac
}
# one NAME OPTS(- = no kcheck) TIMEOUT CMD... ; WALL_<NAME> = seconds
declare -A WALL
one() {
  local name=$1 opts=$2 tmo=$3
  shift 3
  local envk=()
  [ "$opts" != - ] && envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$name${opts:+:$opts}")
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  run_logged "$tmo" "$name" env "${envk[@]}" "$@" || rc=$?
  t1=$(date +%s.%N)
  WALL[$name]=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  echo "$name ${WALL[$name]}" >>"$LOGS/walls.txt" # kept with the logs: a table remade later has them
  if [ "$rc" != 0 ]; then
    echo "  $name: exit $rc" >&2
    tail -n 5 "$LOGS/$name.err" >&2 || true
  fi
  return "$rc"
}

echo "=== transformer_step.py ${MODEL[*]}: $ROUNDS rounds x $STEPS steps"
# The small configuration's plain run (racecheck's baseline, below) also
# warms the page cache and the CUDA libraries' files for every later run.
TS=("$PYTHON" bench/transformer_step.py "${SMALL[@]}")
one small_plain - 60 "${TS[@]}" --steps 3 || true
read -r -a CONFIGS <<<"${KC_T_CONFIGS:-plain none default trace1}"
for r in $(seq 1 "$ROUNDS"); do
  for c in "${CONFIGS[@]}"; do
    one "${c}_r$r" "$(opts_of "$c")" 120 "${T[@]}" --steps "$STEPS" || errors=$((errors + 1))
    echo "  ${c}_r$r: $(grep -h -E '^STEADY_MEDIAN_MS' "$LOGS/${c}_r$r.out" || true) wall ${WALL[${c}_r$r]} s"
  done
done

# The launch microbenchmark and the planted races take seconds: first,
# so a budget that runs out leaves out the longer runs after them.
echo "=== launch_overhead"
for c in plain none default trace1; do
  one "lo_$c" "$(opts_of "$c")" 60 "$BUILD/gpu/launch_overhead" 50000 2 || true
done

echo "=== planted races (build/gpu/races all): what the gates still find, clean kernels bitwise"
one races_plain - 30 "$BUILD/gpu/races" all || true
one races_default "" 30 "$BUILD/gpu/races" all || true
one races_all8 "$ALL8" 30 "$BUILD/gpu/races" all || true

echo "=== profile=1 (default options, mark at launch $MARK; trace=1, same mark); every race strategy"
one prof_default "profile=1:profile_mark=$MARK" 120 "${T[@]}" --steps "$STEPS" || true
one prof_trace "gates=none:trace=1:profile=1:profile_mark=$MARK" 120 "${T[@]}" --steps "$STEPS" || true
for c in hash words det2 copyback; do
  if [[ " ${CONFIGS[*]} " == *" $c "* ]]; then
    one "prof_$c" "$(opts_of $c):profile=1:profile_mark=$MARK" 120 "${T[@]}" --steps "$STEPS" || true
  fi
done
skipped() { case " ${KC_T_SKIP:-} " in *" $1 "*) echo "  $1: left out (KC_T_SKIP)" ;; *) return 1 ;; esac; }
skipped strat_all8 || one strat_all8 "$ALL8" 120 "${T[@]}" --steps 5 || true
skipped trace2 || one trace2_r1 "$(opts_of trace2)" 60 "${T[@]}" --steps 8 || errors=$((errors + 1))

echo "=== anchors"
SAN=$(command -v compute-sanitizer || echo "$CUDA_HOME/bin/compute-sanitizer")
skipped racecheck || one san_racecheck_small - "${KC_T_RACECHECK_S:-25}" "$SAN" --tool racecheck --print-limit 10 "${TS[@]}" --steps 3 || true
if [ "${KC_T_ANCHORS:-}" = all ]; then
  one san_memcheck - 90 "$SAN" --tool memcheck --print-limit 10 "${T[@]}" --steps 3 || true
  one torch_sanitizer - 60 env TORCH_CUDA_SANITIZER=1 "${T[@]}" --steps 3 || true
fi
if [ "${KC_T_FLOOR:-}" = 1 ]; then
  echo "=== kernel times (plain, torch.profiler) for the profile-based floor"
  one floor_profile - 120 "${T[@]}" --steps 3 --profile-out "$LOGS/profile.json" || true
fi

"$PYTHON" bench/targets_table.py "$LOGS" "$REPS" "$ROUNDS" "$STEPS" "$FIRST" "$(declare -p WALL)" "${SMALL[@]}" >"$WORK/targets.md" ||
  { echo "(summary failed)" >>"$WORK/targets.md"; errors=$((errors + 1)); }
mapfile -t dreps < <(reports_of default_r1)
{
  echo
  echo "## the ten costliest checks of the default run (round 1) against their floor"
  echo
  echo "floor = (1 + runs) x kernel_ms (device events) + 2 x saved bytes / the device's copy bandwidth + (1 + runs) x a launch-and-wait round trip (both measured once per process: summary own_kernels; terms in each check's floor_terms)"
  [ -f "$LOGS/profile.json" ] || echo "(no plain torch.profiler run: KC_T_FLOOR=1 adds it)"
  echo
  "${SUMM[@]}" costs --profile "$LOGS/profile.json" --top 10 "${dreps[@]}" 2>&1 | grep -v '^(no profile' || true
} >>"$WORK/targets.md"
{
  cat "$WORK/targets.md"
  echo
  echo "## Commands"
  echo '```'
  cat "$CMDS"
  echo '```'
} >"$OUTDIR/targets.md"
mkdir -p "$WORK/records"
for fr in "$REPS"/*.jsonl; do
  [ -e "$fr" ] || continue
  grep -v '"type":"launch"' "$fr" >"$WORK/records/$(basename "$fr")" || true
done
tar -czf "$OUTDIR/targets-logs.tar.gz" -C "$WORK" logs records
rm -rf "$WORK"
cat "$OUTDIR/targets.md"
[ "$errors" = 0 ]
