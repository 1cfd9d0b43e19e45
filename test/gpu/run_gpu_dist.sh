#!/usr/bin/env bash
# test/gpu/run_gpu_dist.sh — multi-rank training under kcheck (torchrun),
# written for any number of ranks and GPUs:
#   torchrun --nproc-per-node=$KC_DIST_NPROC (2) test/gpu/dist_train.py
#   (DDP, 1 MB buckets so all-reduce overlaps backward, a side stream), in
#   four modes: plain; `kcheck run --torch`; plain LD_PRELOAD with the
#   default options; `kcheck run --torch` checking every launch (so checks
#   run while collectives are in flight on the communication stream). Each rank's final loss and parameter hash must be
#   bitwise equal across the modes; each rank writes its own report
#   (.rank<r>.jsonl) with a summary and 0 internal errors; no check record
#   of a communication kernel; `kcheck report --merge` over the ranks'
#   reports gives one summary. Steady-state step time per mode as a ratio.
#   With fewer GPUs than ranks dist_train.py uses gloo (no communication
#   kernels then); KC_DIST_NCCL1=1 (default) adds a one-rank NCCL run, which
#   does have NCCL in the process. KC_DIST_FSDP=1 adds an FSDP run (NCCL only).
# usage: bash test/gpu/run_gpu_dist.sh [OUTDIR]  (BUILD, PYTHON, KC_DIST_BUDGET)
# Writes OUTDIR/dist.md and OUTDIR/dist-logs.tar.gz; exit 1 on any failure.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" dist "${1:-}"
export BUDGET=${KC_DIST_BUDGET:-240}
NP=${KC_DIST_NPROC:-2}
STEPS=${KC_DIST_STEPS:-12}
TMO=${KC_DIST_TIMEOUT:-90}
export KCHECK_LIB="$LIB"
KC=("$PYTHON" "$ROOT/scripts/kcheck")
# every launch checked: checks overlap the collectives the reducer thread
# launches on the communication stream during backward.
EVERY="check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
TRAIN=(test/gpu/dist_train.py --steps "$STEPS" --side-stream)
fails=0
ROWS=()
row() { ROWS+=("| $1 | $2 | $3 |"); record "$1" "$2" "$3"; [ "$2" = PASS ] || fails=$((fails + 1)); }
field() { sed -n "s/^$1 //p" "$2" 2>/dev/null | head -n 1; }

echo "=== multi-rank under kcheck: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
bench_env | tee "$LOGS/env.txt"
NGPU=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
echo "GPUs: $NGPU, ranks: $NP" | tee -a "$LOGS/env.txt"

# one configuration: NAME NPROC EXTRA-ENV... -- extra script args
run_set() {
  local set=$1 np=$2 env_extra=$3 args=$4
  local port=$((29500 + RANDOM % 2000))
  local tr=(torchrun --standalone --nproc-per-node="$np" --master-port="$port")
  for mode in plain kcheck preload every; do
    local o="$WORK/$set-$mode"
    mkdir -p "$o"
    case $mode in
    plain) run_logged "$TMO" "$set-$mode" env $env_extra "${tr[@]}" "${TRAIN[@]}" $args --out "$o" ;;
    kcheck) run_logged "$TMO" "$set-$mode" env $env_extra "${KC[@]}" run --torch \
      -o "log_path=$REPS/$set-$mode" -- "${tr[@]}" "${TRAIN[@]}" $args --out "$o" ;;
    every) run_logged "$TMO" "$set-$mode" env $env_extra "${KC[@]}" run --torch \
      -o "log_path=$REPS/$set-$mode:$EVERY" -- "${tr[@]}" "${TRAIN[@]}" $args --out "$o" ;;
    preload) run_logged "$TMO" "$set-$mode" env $env_extra KCHECK_OPTIONS="log_path=$REPS/$set-$mode" \
      LD_PRELOAD="$LIB" "${tr[@]}" "${TRAIN[@]}" $args --out "$o" ;;
    esac
    local rc=$?
    [ "$rc" = 0 ] || row "$set $mode: torchrun exits 0" FAIL "exit $rc (see $set-$mode.err)"
  done
  local r
  for ((r = 0; r < np; r++)); do
    local p="$WORK/$set-plain/rank$r.txt"
    for mode in kcheck preload every; do
      local k="$WORK/$set-$mode/rank$r.txt"
      local lp lk hp hk
      lp=$(field FINAL_LOSS "$p") lk=$(field FINAL_LOSS "$k")
      hp=$(field PARAMS_SHA256 "$p") hk=$(field PARAMS_SHA256 "$k")
      if [ -n "$lp" ] && [ "$lp" = "$lk" ] && [ "$hp" = "$hk" ]; then
        row "$set rank $r $mode: loss and parameters bitwise equal to plain" PASS \
          "loss $lp, backend $(field BACKEND "$k"), step $(field STEP_MS "$p") ms plain, $(field STEP_MS "$k") ms $mode ($(ratio "$(field STEP_MS "$k")" "$(field STEP_MS "$p")")x)"
      else
        row "$set rank $r $mode: loss and parameters bitwise equal to plain" FAIL "plain $lp/$hp, $mode $lk/$hk"
      fi
      local rep
      rep=$(ls "$REPS/$set-$mode".*.rank"$r".jsonl 2>/dev/null | head -n 1)
      if [ -z "$rep" ]; then
        row "$set rank $r $mode: its own report" FAIL "no $set-$mode.*.rank$r.jsonl"
        continue
      fi
      "$PYTHON" test/gpu/dist_summary.py "$rep" >"$LOGS/$set-$mode-rank$r.sum" 2>&1
      local s
      s=$(tr '\n' ' ' <"$LOGS/$set-$mode-rank$r.sum")
      if grep -q '^summary=1$' "$LOGS/$set-$mode-rank$r.sum" &&
        grep -q '^internal_errors=0$' "$LOGS/$set-$mode-rank$r.sum" &&
        grep -q '^comm_checked=0$' "$LOGS/$set-$mode-rank$r.sum"; then
        row "$set rank $r $mode: report with summary, 0 internal errors, no communication kernel checked" PASS "$s"
      else
        row "$set rank $r $mode: report with summary, 0 internal errors, no communication kernel checked" FAIL "$s"
      fi
    done
  done
  if [ "$np" -gt 1 ]; then
    local reps
    mapfile -t reps < <(ls "$REPS/$set-kcheck".*.rank*.jsonl 2>/dev/null)
    run_logged 60 "$set-merge" "${KC[@]}" report --merge "${reps[@]}"
    if grep -q "^merged: ${#reps[@]} reports" "$LOGS/$set-merge.out" && [ "${#reps[@]}" = "$np" ]; then
      row "$set: kcheck report --merge over the $np ranks' reports" PASS "$(grep '^merged:' "$LOGS/$set-merge.out")"
    else
      row "$set: kcheck report --merge over the $np ranks' reports" FAIL "${#reps[@]} reports; $(head -c 300 "$LOGS/$set-merge.out")"
    fi
  fi
}
ratio() { "$PYTHON" -c "import sys; a,b=sys.argv[1:]; print('%.3f' % (float(a)/float(b)) if a and b else '?')" "$1" "$2" 2>/dev/null || echo '?'; }

run_set "ddp${NP}" "$NP" "" ""
[ "${KC_DIST_NCCL1:-1}" = 1 ] && run_set nccl1 1 "KC_DIST_BACKEND=nccl" ""
if [ "${KC_DIST_FSDP:-0}" = 1 ] && [ "$NGPU" -ge "$NP" ]; then
  run_set "fsdp${NP}" "$NP" "" "--fsdp"
fi

{
  echo "# multi-rank training under kcheck"
  echo
  cat "$LOGS/env.txt"
  echo
  echo "| check | result | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
  echo
  echo "commands:"
  sed 's/^/    /' "$CMDS"
} >"$OUTDIR/dist.md"
tar czf "$OUTDIR/dist-logs.tar.gz" -C "$WORK" logs reports 2>/dev/null || true
echo "=== $((${#ROWS[@]} - fails))/${#ROWS[@]} passed, $(elapsed) s"
[ "$fails" = 0 ]
