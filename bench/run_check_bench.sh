#!/usr/bin/env bash
# bench/run_check_bench.sh — what checking costs on a small transformer.
#
#   bench/run_check_bench.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# bench/transformer_step.py (2 layers, d_model 256, 4 heads, seq 128, batch
# 16, AdamW, fp32; KC_BENCH_STEPS steps, 30), one process per run, the
# configurations alternating for KC_BENCH_ROUNDS rounds (2):
#   plain      no kcheck
#   none       kcheck gates=none (pass-through)
#   default    kcheck default options (each distinct signature checked once):
#              steps 1-5 = first sight, steps 6.. = steady state
#   sampling   kcheck sample=0.01:clean_limit=-1
# then compute-sanitizer --tool memcheck and --tool racecheck on the same
# script with KC_SAN_STEPS steps (3), KC_SAN_TIMEOUT seconds each (160).
# KC_TIMEOUT (120) limits every other run; KC_BUDGET (510 s) the whole: no
# command starts or runs past it, so the results are always written.
# Per-kernel cost: from the default run's report (round 1), the 5 costliest
# checks against floor = (1 + runs) x kernel time + 2 x saved_bytes / copy
# bandwidth, with the kernel time and the bandwidth from a plain profiled run
# (torch.profiler; a 1 GiB device-to-device torch copy).
#
# Writes OUTDIR/check-bench.md and OUTDIR/check-bench-logs.tar.gz; prints the
# tables last. Nonzero exit when a kcheck or plain run failed (a sanitizer
# that is missing, fails or times out is recorded, not an error).
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/gpu/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" check-bench "${1:-}"
ROUNDS=${KC_BENCH_ROUNDS:-2}
STEPS=${KC_BENCH_STEPS:-30}
SAN_STEPS=${KC_SAN_STEPS:-3}
SAN_TMO=${KC_SAN_TIMEOUT:-160}
TMO=${KC_TIMEOUT:-120}
BUDGET=${KC_BUDGET:-510}
SCRIPT=bench/transformer_step.py
SUMM=("$PYTHON" "$ROOT/test/gpu/kc_summarize.py")
CONFIGS=(plain none default sampling)
errors=0

# This script's own run_logged (also sets WALL, the command's seconds).
run_logged() { # TIMEOUT NAME CMD...
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
  local rc=0 t0 t1
  t0=$(date +%s.%N)
  timeout --kill-after=10 "$tmo" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" || rc=$?
  t1=$(date +%s.%N)
  WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}')
  printf '  %s: exit %d, %s s (t=%ss)\n' "$name" "$rc" "$WALL" "$(elapsed)" | tee -a "$CMDS"
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "  $name: TIMED OUT after ${tmo}s" | tee -a "$CMDS"; fi
  return "$rc"
}
field() { awk -v k="$1" '$1 == k {v = $2} END {print v}' "$2" 2>/dev/null || true; }
kv() { awk -v k="$1" 'index($0, k "=") == 1 {print substr($0, length(k) + 2); exit}' "$2" 2>/dev/null || true; }
reports_of() {
  local f
  for f in "$REPS/$1".*.jsonl; do [ -e "$f" ] && printf '%s\n' "$f"; done
  return 0
}
median() { sort -g | awk '{a[NR] = $1} END {if (!NR) print ""; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b}'; }
# mean of STEP lines with index >= FROM (and <= TO) in a log
step_mean() { awk -v f="$2" -v t="${3:-1000000}" '$1 == "STEP" && $2 >= f && $2 <= t {s += $3; n++} END {if (n) printf "%.3f", s / n}' "$1" 2>/dev/null || true; }

echo "=== kcheck check-cost benchmark: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "repo: $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || echo "nvidia-smi failed"
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -n 1 || true
  ls -l "$LIB" 2>&1 || true
} >"$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"
if [ ! -f "$LIB" ]; then
  echo "FAIL: $LIB missing (run make, carry build/)" >&2
  exit 1
fi

# ------------------------------------------------------------ alternating rounds
declare -A FIRST STEADY CHECKS VIOLS
for r in $(seq 1 "$ROUNDS"); do
  for c in "${CONFIGS[@]}"; do
    n="${c}_r$r"
    envk=()
    case "$c" in
      none) envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$n:gates=none") ;;
      default) envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$n") ;;
      sampling) envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$n:sample=0.01:clean_limit=-1") ;;
    esac
    if ! run_logged "$TMO" "$n" env "${envk[@]}" "$PYTHON" "$SCRIPT" --steps "$STEPS"; then
      errors=$((errors + 1))
      tail -n 8 "$LOGS/$n.err" | sed 's/^/    | /' || true
      continue
    fi
    if [ "$c" != plain ] && ! grep -q '^SUMMARY: kcheck:' "$LOGS/$n.err"; then
      echo "  $n: kcheck did not load (no SUMMARY line)" | tee -a "$CMDS"
      errors=$((errors + 1))
    fi
    FIRST[$c]+="$(step_mean "$LOGS/$n.out" 1 5) "
    STEADY[$c]+="$(step_mean "$LOGS/$n.out" 6) "
    if [ "$c" != plain ]; then
      mapfile -t reps < <(reports_of "$n")
      "${SUMM[@]}" process "${reps[@]}" >"$LOGS/$n.pinfo" 2>&1 || true
      CHECKS[$c]+="$(kv checks "$LOGS/$n.pinfo") "
      VIOLS[$c]+="$(kv violations "$LOGS/$n.pinfo") "
      echo "    $n: $(grep '^SUMMARY: kcheck:' "$LOGS/$n.err" | tail -n 1)"
    fi
    echo "    $n: first sight $(step_mean "$LOGS/$n.out" 1 5) ms/step, steady $(step_mean "$LOGS/$n.out" 6) ms/step"
  done
done
# shellcheck disable=SC2086 # the list is split on purpose
med() { printf '%s\n' $1 | { grep . || true; } | median; }

# ------------------------------------------------------------ profile (plain)
PROF="$LOGS/profile.json"
if ! run_logged "$TMO" profile "$PYTHON" "$SCRIPT" --steps 3 --profile-out "$PROF"; then
  echo "  profile run failed: kernel times and bandwidth taken as 0" | tee -a "$CMDS"
  tail -n 5 "$LOGS/profile.err" | sed 's/^/    | /' || true
fi

# ------------------------------------------------------------ compute-sanitizer
SAN=""
for cand in "$(command -v compute-sanitizer || true)" "$CUDA_HOME/bin/compute-sanitizer" \
  "$CUDA_HOME/compute-sanitizer/compute-sanitizer"; do
  if [ -n "$cand" ] && [ -x "$cand" ]; then
    SAN=$cand
    break
  fi
done
declare -A SAN_ROW
for tool in memcheck racecheck; do
  if [ -z "$SAN" ]; then
    SAN_ROW[$tool]="| $tool | - | - | - | - | compute-sanitizer not found |"
    continue
  fi
  rc=0
  run_logged "$SAN_TMO" "san_$tool" "$SAN" --tool "$tool" --print-limit 20 \
    "$PYTHON" "$SCRIPT" --steps "$SAN_STEPS" || rc=$?
  done_steps=$(awk '$1 == "STEP" {n = $2} END {print n + 0}' "$LOGS/san_$tool.out")
  per=$(step_mean "$LOGS/san_$tool.out" 2)
  [ -z "$per" ] && per=$(step_mean "$LOGS/san_$tool.out" 1)
  summ=$(grep -h -E '(ERROR|RACECHECK|LEAK) SUMMARY' "$LOGS/san_$tool.out" "$LOGS/san_$tool.err" 2>/dev/null | tail -n 2 | tr '\n' ' ' | tr '|' '/' || true)
  case "$rc" in
    0) st="exit 0" ;;
    124 | 137) st="timed out after ${SAN_TMO}s" ;;
    *) st="exit $rc" ;;
  esac
  SAN_ROW[$tool]="| $tool | $done_steps/$SAN_STEPS | ${per:--} | $(ratio "$per" "$(med "${STEADY[plain]:-}")") | $WALL | $st; ${summ:-no summary line} |"
done

# ------------------------------------------------------------ tables
P_FIRST=$(med "${FIRST[plain]:-}")
P_STEADY=$(med "${STEADY[plain]:-}")
main_table() {
  echo "| configuration | first sight ms/step (steps 1-5) | ratio to plain | steady ms/step (steps 6-$STEPS) | ratio to plain | checks | violations |"
  echo "|---|---|---|---|---|---|---|"
  for c in "${CONFIGS[@]}"; do
    local f s
    f=$(med "${FIRST[$c]:-}")
    s=$(med "${STEADY[$c]:-}")
    local label=$c
    case "$c" in
      plain) label="(a) plain" ;;
      none) label="(b) kcheck gates=none" ;;
      default) label="(c) kcheck default" ;;
      sampling) label="(d) kcheck sample=0.01:clean_limit=-1" ;;
    esac
    echo "| $label | ${f:--} | $(ratio "$f" "$P_FIRST") | ${s:--} | $(ratio "$s" "$P_STEADY") | ${CHECKS[$c]:--} | ${VIOLS[$c]:--} |"
  done
}
san_table() {
  echo "| tool | steps done | ms/step (steps 2..) | ratio to plain steady | wall s | result |"
  echo "|---|---|---|---|---|---|"
  echo "${SAN_ROW[memcheck]}"
  echo "${SAN_ROW[racecheck]}"
}
cost_table() {
  local reps=()
  mapfile -t reps < <(reports_of default_r1)
  if [ ${#reps[@]} -eq 0 ]; then
    echo "(no report of the default run)"
    return 0
  fi
  "${SUMM[@]}" costs --profile "$PROF" --top 5 "${reps[@]}" 2>&1 || true
}
COST_MD=$(cost_table)
{
  echo "# kcheck check cost: small transformer training step"
  echo
  echo "Medians over $ROUNDS alternating rounds (one process per run; per-round values in the logs)."
  echo "Model: 2 layers, d_model 256, 4 heads, seq 128, batch 16, AdamW, fp32 (TF32 off); $STEPS steps per run,"
  echo "each step synchronised and timed. checks / violations: per round, from each run's report."
  echo
  main_table
  echo
  echo "## compute-sanitizer on the same script ($SAN_STEPS steps; ${SAN:-not found})"
  echo
  san_table
  echo
  echo "## The 5 costliest checks of the default run (round 1) against their floor"
  echo
  echo "floor = (1 + runs) x kernel time + 2 x saved_bytes / copy bandwidth. Kernel time: mean device time"
  echo "of kernels of that name in a plain profiled run (torch.profiler), all launches of the name together"
  echo "(not the checked launch's own shape); 0 where the name was not found. The copy term counts only one"
  echo "save and one restore of the reachable memory, so the ratio overstates what is avoidable."
  echo
  echo "$COST_MD"
  echo
  echo "## Environment"
  echo '```'
  cat "$LOGS/env.txt"
  echo '```'
  echo
  echo "## Commands (logs and reports in check-bench-logs.tar.gz)"
  echo '```'
  cat "$CMDS"
  echo '```'
} >"$WORK/check-bench.md"
cp "$WORK/check-bench.md" "$OUTDIR/check-bench.md"
tar -czf "$OUTDIR/check-bench-logs.tar.gz" -C "$WORK" logs reports
rm -rf "$WORK"

echo
echo "=== results (also in $OUTDIR/check-bench.md), $(elapsed) s in all"
san_table
echo
echo "$COST_MD"
echo
main_table
if [ "$errors" -ne 0 ]; then
  echo "ERRORS: $errors runs failed"
  exit 1
fi
