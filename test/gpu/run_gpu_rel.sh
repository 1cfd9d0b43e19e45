#!/bin/bash
# test/gpu/run_gpu_rel.sh — reliability checks on the real driver, in about
# a minute:
#   1. the shapes gate with understated contracts (test/gpu/contract_bugs
#      vecadd, n = 1000): c declared [1] -> the calibration run reports it
#      and no other shape runs; c declared [1000] with a shape n = 100000 ->
#      the stores past the declared extent land in kcheck's guard zone and
#      are reported; a correct contract at the same shapes stays silent. In
#      every run the program's own results are right and it exits 0.
#   2. app_shared (batch, 3D batch and CUDA-array copies among the plain
#      ones, under the world lock): 10 runs shared and 10 churn save_all,
#      every launch checked: 0 wrong results, 0 violations.
#   2b. the same program's CUDA-array read-back left unordered with the
#      device-to-array copy (app_shared unordered) under stream_races=1:
#      a stream_order violation naming both copies; the correct program
#      (app_shared shared) under stream_races=1: none.
#   3. replay bundles: racy_last_writer (build/gpu/races) and oob_tail_write
#      (contracts_gpu.yaml, gate bounds) with repro_dir; `kcheck repro
#      BUNDLE` must reproduce each without the program.
# usage: run_gpu_rel.sh [OUTDIR]   -> OUTDIR/rel.txt (PASS/FAIL lines),
#        OUTDIR/rel.tar.gz (logs, reports, bundles' metadata)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/test/gpu/common.sh"
kc_gpu_init "$ROOT" rel "${1:-}"
BUDGET=${BUDGET:-140}
BUGS=${BUGS:-$BUILD/gpu/contract_bugs}
RACES=${RACES:-$BUILD/gpu/races}
APP=${APP:-$BUILD/gpu/app_shared}
export KC_SCALE_PTX="$BUILD/gpu/scale.ptx"
K=("$PYTHON" "$ROOT/scripts/kcheck")
EVERY="check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
{
bench_env

count() { # file type [gate] -> number of records
  "$PYTHON" - "$@" <<'PY'
import json, sys
n = 0
for f in sys.argv[1].split():
    for l in open(f):
        r = json.loads(l)
        n += r["type"] == sys.argv[2] and (len(sys.argv) < 4 or r.get("gate") == sys.argv[3])
print(n)
PY
}

vecadd_yaml() { # file a-shape c-shape n,n,...
  local shapes
  shapes=$(echo "$4" | sed 's/\([0-9][0-9]*\)/{n: \1}/g; s/,/, /g')
  cat >"$1" <<Y
contracts:
  - kernel: {name: _Z6vecaddPKfS0_Pfi}
    params:
      - {name: a, tensor: {role: in, format: fp32, shape: [$2]}}
      - {name: b, tensor: {role: in, format: fp32, shape: [n]}}
      - {name: c, tensor: {role: out, format: fp32, shape: [$3]}}
      - {name: n, scalar: i32}
    op: add
    profile: fp32
    shapes: [$shapes]
    launch: {grid: ["ceil_div(n, 128)"], block: [128]}
Y
}

echo "=== 1. shapes gate, understated contracts"
for c in "calib n 1 4097 1" "guard n 1000 100000 1" "input 1000 n 100000 0" \
         "correct n n 4097,100000 0"; do
  set -- $c
  vecadd_yaml "$WORK/$1.yaml" "$2" "$3" "$4"
  rc=0
  KCHECK_OPTIONS="log_path=$REPS/shapes_$1:contracts=$WORK/$1.yaml:gates=shapes:verbosity=0:$EVERY" \
    LD_PRELOAD="$LIB" run_logged 30 "shapes_$1" "$BUGS" vecadd || rc=$?
  reps=$(reports_of "shapes_$1" | tr '\n' ' ')
  v=$([ -n "$reps" ] && count "$reps" violation shapes || echo none)
  stage=$(grep -ho '"stage":"calibration"' $reps 2>/dev/null | head -1)
  detail="exit $rc, shapes violations $v ${stage:+($stage)}"
  ok=0
  if [ "$rc" = 0 ] && [ "$v" != none ]; then
    if [ "$5" = 1 ]; then [ "$v" -ge 1 ] && ok=1; else [ "$v" = 0 ] && ok=1; fi
  fi
  if [ "$ok" = 1 ]; then
    record "shapes $1" PASS "$detail"
  else
    record "shapes $1" FAIL "$detail; $(tail -c 300 "$LOGS/shapes_$1.err")"
  fi
done

echo "=== 2. app_shared with batch and array copies, 10 runs per mode"
for mode in "shared :" "churn :save_all=1:"; do
  set -- $mode
  bad=0 viol=0 checks=0
  for i in $(seq 1 10); do
    t=$((2 + 2 * (i % 3)))
    rc=0
    KCHECK_OPTIONS="log_path=$REPS/world_$1_$i$2$EVERY" LD_PRELOAD="$LIB" \
      run_logged 30 "world_$1_$i" "$APP" "$1" "$t" 8 || rc=$?
    grep -q "wrong 0" "$LOGS/world_$1_$i.out" && [ "$rc" = 0 ] || bad=$((bad + 1))
    reps=$(reports_of "world_$1_$i" | tr '\n' ' ')
    [ -n "$reps" ] && viol=$((viol + $(count "$reps" violation))) && checks=$((checks + $(count "$reps" check)))
  done
  [ "$bad" = 0 ] && [ "$viol" = 0 ] && [ "$checks" -ge 10 ] && s=PASS || s=FAIL
  record "world $1 (batch/array copies)" $s "10 runs: $bad wrong or failed, $viol violations, $checks checks"
done

echo "=== 2b. the array read-back's ordering under stream_races=1"
for mode in unordered shared; do
  rc=0
  KCHECK_OPTIONS="log_path=$REPS/order_$mode:stream_races=1:verbosity=0" LD_PRELOAD="$LIB" \
    run_logged 30 "order_$mode" "$APP" "$mode" 2 8 || rc=$?
  reps=$(reports_of "order_$mode" | tr '\n' ' ')
  n=0 both=0
  if [ -n "$reps" ]; then
    n=$(count "$reps" violation stream_order)
    both=$(grep -h '"stream_order"' $reps | grep -c 'cuMemcpyDtoA.*cuMemcpyAtoHAsync')
  fi
  if [ "$mode" = unordered ]; then
    [ "$n" -ge 1 ] && [ "$both" -ge 1 ] && s=PASS || s=FAIL
  else
    [ "$rc" = 0 ] && [ -n "$reps" ] && [ "$n" = 0 ] && s=PASS || s=FAIL
  fi
  record "stream order $mode array read-back" $s "exit $rc, stream_order violations $n (DtoA then AtoHAsync: $both)"
done

echo "=== 3. replay bundles without the program"
rc=0
KCHECK_OPTIONS="log_path=$REPS/races:repro_dir=$WORK/rb_races:verbosity=0" LD_PRELOAD="$LIB" \
  run_logged 30 races "$RACES" racy_last_writer || rc=$?
KCHECK_OPTIONS="log_path=$REPS/oob:repro_dir=$WORK/rb_oob:verbosity=0:gates=bounds:contracts=$ROOT/test/gpu/contracts_gpu.yaml:kernel_include=oob_tail_write" \
  LD_PRELOAD="$LIB" run_logged 30 oob "$BUGS" oob_tail_write || true
for w in races oob; do
  b=$(ls -d "$WORK/rb_$w"/bundle-* 2>/dev/null | head -1)
  if [ -z "$b" ]; then
    record "bundle $w" FAIL "no bundle: $(grep -ho '"bundle_skipped":"[^"]*"' $(reports_of $w) 2>/dev/null | head -1)"
    continue
  fi
  rc=0
  KCHECK_LIB="$LIB" run_logged 60 "repro_$w" "${K[@]}" repro "$b" || rc=$?
  [ "$rc" = 0 ] && s=PASS || s=FAIL
  record "bundle $w replayed standalone" $s "exit $rc: $(cat "$LOGS/repro_$w.out" "$LOGS/repro_$w.err" | tail -c 300)"
  mkdir -p "$WORK/bundles/$w" && cp "$b/bundle.json" "$b"/replay-report.*.jsonl "$WORK/bundles/$w/" 2>/dev/null
done

echo "=== summary"
npass=0 nfail=0
for s in "${STATUS[@]}"; do [ "$s" = PASS ] && npass=$((npass + 1)) || nfail=$((nfail + 1)); done
echo "$npass passed, $nfail failed (t=$(elapsed)s)"
} 2>&1 | tee "$OUTDIR/rel.txt"
tar czf "$OUTDIR/rel.tar.gz" -C "$WORK" . 2>/dev/null
grep -q " 0 failed" "$OUTDIR/rel.txt"
