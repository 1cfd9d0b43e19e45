#!/usr/bin/env bash
# test/gpu/run_gpu_checks.sh — kcheck's determinism and race gates on a GPU.
#
#   test/gpu/run_gpu_checks.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# 1. test/gpu/races.cu (build/gpu/races): every racy_* and clean_* kernel, one
#    process each, without kcheck and under kcheck with default options. A
#    racy kernel passes when kcheck reported a violation (determinism or race)
#    for it; a clean one when it was checked, no violation was reported, its
#    result verified against the CPU reference and equals the plain run's.
# 2. Recall: each racy kernel under kcheck with seed=1..5 (default gates):
#    which race strategies gave "differs" and whether determinism failed
#    (k/5 per strategy); the cost of each strategy alone (gates=race,
#    race_strategies=S, seed=1; the check's cost_ms, snapshot included) and
#    of determinism alone; and the plain-repetition baseline (5 runs without
#    kcheck, distinct results).
# 3. test/gpu/torch_nondet.py: index_add and scatter_add must be flagged; mm,
#    softmax, layer_norm and elementwise must not (one process each).
# 4. test/gpu/train_small.py without and with kcheck (default options, checks
#    on): FINAL_LOSS and PARAM_DIGEST bitwise equal, internal_errors == 0, no
#    violations (evidence printed if any).
#
# Writes OUTDIR/results.md and OUTDIR/gpu-checks-logs.tar.gz (all logs and
# reports); prints the tables last; exit status nonzero when a check failed.
#
# Environment: BUILD (build), PYTHON (python3), CUDA_HOME (/usr/local/cuda),
# NVCC, KC_TIMEOUT (seconds per Python command, 150), KC_RACES_TIMEOUT
# (seconds per races run, 60), KC_SEEDS (5), KC_TRAIN_STEPS (20),
# KC_DEADLINE (seconds; recall and cost runs after it are left out, 300),
# KC_BUDGET (seconds; no command starts after it and none runs past it, so
# the results are always written, 480).
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" checks "${1:-}"
TMO=${KC_TIMEOUT:-150}
RTMO=${KC_RACES_TIMEOUT:-60}
NSEEDS=${KC_SEEDS:-5}
STEPS=${KC_TRAIN_STEPS:-20}
DEADLINE=${KC_DEADLINE:-300}
BUDGET=${KC_BUDGET:-480}
RACES="$BUILD/gpu/races"
SUMM=("$PYTHON" "$ROOT/test/gpu/kc_summarize.py")
# The race strategies, in order: the rows of libkcheck/exec/perturb.def.
mapfile -t STRATS < <(sed -n 's/^KC_PERTURB(\([a-z0-9_]*\),.*/\1/p' "$ROOT/libkcheck/exec/perturb.def")

# kc NAME OPTS CMD... : run_logged under kcheck, report prefix $REPS/NAME.
kc() {
  local tmo=$1 name=$2 opts=$3
  shift 3
  run_logged "$tmo" "$name" env LD_PRELOAD="$LIB" \
    KCHECK_OPTIONS="log_path=$REPS/$name${opts:+:$opts}" "$@"
}

# info NAME [--name KERNEL] : kc_summarize kernel output, saved to $LOGS/NAME.info
info() {
  local name=$1
  shift
  local reps=()
  mapfile -t reps < <(reports_of "$name")
  "${SUMM[@]}" kernel "$@" "${reps[@]}" >"$LOGS/$name.info" 2>>"$LOGS/$name.info.err" || true
}
pinfo() { # NAME : kc_summarize process output, saved to $LOGS/NAME.pinfo
  local reps=()
  mapfile -t reps < <(reports_of "$1")
  "${SUMM[@]}" process "${reps[@]}" >"$LOGS/$1.pinfo" 2>>"$LOGS/$1.info.err" || true
}
kv() { # KEY FILE -> value of KEY=value (first)
  awk -v k="$1" 'index($0, k "=") == 1 {print substr($0, length(k) + 2); exit}' "$2" 2>/dev/null || true
}
field() { # KEY FILE -> the value after "KEY " on the last matching line
  awk -v k="$1" '$1 == k {v = $2} END {print v}' "$2" 2>/dev/null || true
}
evidence() { # NAME [--name KERNEL]: violations of a run, indented
  local name=$1
  shift
  local reps=()
  mapfile -t reps < <(reports_of "$name")
  "${SUMM[@]}" evidence --max 3 "$@" "${reps[@]}" 2>&1 | sed 's/^/    | /' | tee -a "$LOGS/evidence.txt" || true
}
summary_line() { grep '^SUMMARY: kcheck:' "$LOGS/$1.err" 2>/dev/null | tail -n 1 || true; }

INTERNAL_BAD=()
note_internal() { # NAME : remember runs whose report says internal_errors != 0
  local f=$LOGS/$1.info
  [ -f "$LOGS/$1.pinfo" ] && f=$LOGS/$1.pinfo
  local ie
  ie=$(kv internal_errors "$f")
  if [ "$ie" != 0 ]; then INTERNAL_BAD+=("$1:${ie:-no-report}"); fi
}

echo "=== kcheck GPU checks (determinism/race gates): $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
echo "=== output: $OUTDIR (work dir $WORK)"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "repo: $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 || echo "nvidia-smi failed"
  if [ -x "$NVCC" ]; then "$NVCC" --version 2>&1 | tail -n 1; else echo "no nvcc at $NVCC"; fi
  "$PYTHON" -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)' 2>&1 | tail -n 1 || true
  ls -l "$LIB" 2>&1 || true
  uname -srm
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
mkdir -p "$BUILD/gpu"
if [ -x "$NVCC" ] && { [ ! -x "$RACES" ] || [ test/gpu/races.cu -nt "$RACES" ]; }; then
  run_logged 300 build_races "$NVCC" -O2 -arch=sm_90 -cudart static test/gpu/races.cu -o "$RACES" \
    -L"$CUDA_HOME/lib64/stubs" -lcuda || true
fi
if [ -x "$RACES" ]; then
  record "build/gpu/races present" PASS "$RACES"
else
  record "build/gpu/races present" FAIL "no $RACES and no nvcc to build it (see build_races.err)"
fi

KERNELS=()
[ -x "$RACES" ] && mapfile -t KERNELS < <("$RACES" list)
RACY=()
CLEAN=()
for k in "${KERNELS[@]}"; do
  case "$k" in racy_*) RACY+=("$k") ;; clean_*) CLEAN+=("$k") ;; esac
done

# ------------------------------------------------------------ 1. races.cu, default options
echo "=== 1. races.cu: each kernel without and with kcheck (default options)"
declare -A PLAIN_HASH
for k in "${KERNELS[@]}"; do
  prc=0
  run_logged "$RTMO" "plain_$k" "$RACES" "$k" || prc=$?
  PLAIN_HASH[$k]=$(awk '$1 == "RESULT" {sub("hash=", "", $3); print $3}' "$LOGS/plain_$k.out")
  krc=0
  kc "$RTMO" "kc_$k" "" "$RACES" "$k" || krc=$?
  info "kc_$k" --name "$k"
  note_internal "kc_$k"
  I=$LOGS/kc_$k.info
  nchk=$(kv checks "$I")
  nvio=$(kv violations "$I")
  det=$(kv det "$I")
  race=$(kv race "$I")
  diffs=$(kv differs "$I")
  sk=$(kv skip_reasons "$I")
  what="checks=${nchk:-?} violations=${nvio:-?} determinism=$det race=$race differs=$diffs"
  [ "$sk" != "-" ] && what="$what skips=$sk"
  if [ "$prc" != 0 ] || [ "$krc" != 0 ]; then
    record "races $k: runs" FAIL "exit plain=$prc kcheck=$krc (see plain_$k.err, kc_$k.err)"
    tail -n 5 "$LOGS/kc_$k.err" | sed 's/^/    | /' || true
  fi
  case "$k" in
    racy_*)
      if [ "${nvio:-0}" -gt 0 ] 2>/dev/null; then
        record "races $k: flagged" PASS "$what"
      else
        record "races $k: flagged" FAIL "$what"
      fi
      ;;
    clean_*)
      vp=$(awk '$1 == "RESULT" {print $4}' "$LOGS/plain_$k.out")
      vk=$(awk '$1 == "RESULT" {print $4}' "$LOGS/kc_$k.out")
      hk=$(awk '$1 == "RESULT" {sub("hash=", "", $3); print $3}' "$LOGS/kc_$k.out")
      if [ "${nchk:-0}" -ge 1 ] 2>/dev/null && [ "${nvio:-1}" = 0 ] && [ "$vp" = verify=ok ] &&
        [ "$vk" = verify=ok ] && [ -n "$hk" ] && [ "$hk" = "${PLAIN_HASH[$k]}" ]; then
        record "races $k: checked, not flagged, result unchanged" PASS "$what hash=$hk"
      else
        record "races $k: checked, not flagged, result unchanged" FAIL \
          "$what plain=$vp kcheck=$vk hash plain=${PLAIN_HASH[$k]} kcheck=$hk"
        evidence "kc_$k" --name "$k"
      fi
      ;;
  esac
done

# ------------------------------------------------------------ 2. recall
echo "=== 2. recall: racy kernels with seed=1..$NSEEDS; strategy costs; plain repetition"
declare -A HITS COST DETHITS ANYHITS DISTINCT DEFCOST NRUN
for k in "${RACY[@]}"; do
  DETHITS[$k]=0
  ANYHITS[$k]=0
  DEFCOST[$k]=0
  for s in "${STRATS[@]}"; do HITS[$k.$s]=0; done
  nrun=0
  for seed in $(seq 1 "$NSEEDS"); do
    if [ "$(elapsed)" -gt "$DEADLINE" ]; then
      echo "  deadline: recall runs of $k from seed $seed left out" | tee -a "$CMDS"
      break
    fi
    n="recall_${k}_s$seed"
    kc "$RTMO" "$n" "seed=$seed" "$RACES" "$k" || true
    info "$n" --name "$k"
    note_internal "$n"
    [ "$(kv checks "$LOGS/$n.info")" -ge 1 ] 2>/dev/null || continue
    nrun=$((nrun + 1))
    if [ "$(kv det "$LOGS/$n.info")" = fail ]; then DETHITS[$k]=$((DETHITS[$k] + 1)); fi
    if [ "$(kv violations "$LOGS/$n.info")" -gt 0 ] 2>/dev/null; then ANYHITS[$k]=$((ANYHITS[$k] + 1)); fi
    d=";$(kv differs "$LOGS/$n.info");"
    for s in "${STRATS[@]}"; do
      case "$d" in *";$s;"*) HITS[$k.$s]=$((HITS[$k.$s] + 1)) ;; esac
    done
    DEFCOST[$k]=$(awk -v a="${DEFCOST[$k]}" -v b="$(kv cost_ms "$LOGS/$n.info")" 'BEGIN {printf "%.3f", a + b}')
  done
  NRUN[$k]=$nrun
  # each strategy alone (seed 1) and determinism alone: cost of the check
  for s in determinism "${STRATS[@]}"; do
    COST[$k.$s]="-"
    [ "$(elapsed)" -gt "$DEADLINE" ] && continue
    n="cost_${k}_$s"
    if [ "$s" = determinism ]; then opts="seed=1:gates=determinism"; else opts="seed=1:gates=race:race_strategies=$s"; fi
    kc "$RTMO" "$n" "$opts" "$RACES" "$k" || true
    info "$n" --name "$k"
    note_internal "$n"
    if [ "$(kv checks "$LOGS/$n.info")" -ge 1 ] 2>/dev/null; then
      COST[$k.$s]="$(kv cost_ms "$LOGS/$n.info")"
      if [ "$(kv violations "$LOGS/$n.info")" -gt 0 ] 2>/dev/null; then COST[$k.$s]="${COST[$k.$s]}*"; fi
    fi
  done
  # plain repetition
  hashes=()
  for r in $(seq 1 "$NSEEDS"); do
    n="rep_${k}_$r"
    run_logged "$RTMO" "$n" "$RACES" "$k" || true
    hashes+=("$(awk '$1 == "RESULT" {sub("hash=", "", $3); print $3}' "$LOGS/$n.out")")
  done
  nok=$(printf '%s\n' "${hashes[@]}" | grep -c . || true)
  DISTINCT[$k]="$(printf '%s\n' "${hashes[@]}" | { grep . || true; } | sort -u | wc -l | tr -d ' ')/$nok"
done

recall_table() {
  printf '| kernel | determinism |'
  for s in "${STRATS[@]}"; do printf ' %s |' "$s"; done
  printf ' flagged (any gate) | plain repetition: distinct results |\n|---|---|'
  for _ in "${STRATS[@]}"; do printf -- '---|'; done
  printf -- '---|---|\n'
  for k in "${RACY[@]}"; do
    local n=${NRUN[$k]:-0}
    printf '| %s | %s/%s |' "$k" "${DETHITS[$k]:-0}" "$n"
    for s in "${STRATS[@]}"; do printf ' %s/%s |' "${HITS[$k.$s]:-0}" "$n"; done
    printf ' %s/%s | %s |\n' "${ANYHITS[$k]:-0}" "$n" "${DISTINCT[$k]:-?}"
  done
}
cost_table() {
  printf '| kernel | determinism (%s runs) |' 2
  for s in "${STRATS[@]}"; do printf ' %s |' "$s"; done
  printf ' all (default), mean of the seeded runs |\n|---|---|'
  for _ in "${STRATS[@]}"; do printf -- '---|'; done
  printf -- '---|\n'
  declare -A tot
  for k in "${RACY[@]}"; do
    printf '| %s |' "$k"
    for s in determinism "${STRATS[@]}"; do
      printf ' %s |' "${COST[$k.$s]:--}"
      local v=${COST[$k.$s]:--}
      v=${v%\*}
      [ "$v" != "-" ] && tot[$s]=$(awk -v a="${tot[$s]:-0}" -v b="$v" 'BEGIN {printf "%.3f", a + b}')
    done
    local n=${NRUN[$k]:-0}
    if [ "$n" -gt 0 ]; then
      printf ' %s |\n' "$(awk -v a="${DEFCOST[$k]}" -v n="$n" 'BEGIN {printf "%.3f", a / n}')"
    else
      printf ' - |\n'
    fi
  done
  printf '| **total** |'
  for s in determinism "${STRATS[@]}"; do printf ' %s |' "${tot[$s]:--}"; done
  printf ' |\n'
}
# The recall runs are a measurement, not a pass/fail check (section 1 is).

# ------------------------------------------------------------ 3. torch ops
echo "=== 3. torch ops (one process each, default options)"
for m in index_add scatter_add mm softmax layer_norm elementwise; do
  n="torch_$m"
  rc=0
  kc "$TMO" "$n" "" "$PYTHON" test/gpu/torch_nondet.py "$m" || rc=$?
  pinfo "$n"
  note_internal "$n"
  P=$LOGS/$n.pinfo
  ops=$(grep '^OP ' "$LOGS/$n.out" 2>/dev/null | awk '{printf "%s %s; ", $3, $4}')
  what="checks=$(kv checks "$P") violations=$(kv violations "$P") gates=$(kv violation_gates "$P") ops: ${ops:-none}"
  if [ "$rc" != 0 ] || [ "$(kv summary "$P")" != 1 ]; then
    record "torch $m: runs under kcheck" FAIL "exit $rc, summary=$(kv summary "$P") (see $n.err)"
    tail -n 8 "$LOGS/$n.err" | sed 's/^/    | /' || true
    continue
  fi
  nv=$(kv violations "$P")
  case "$m" in
    index_add | scatter_add)
      if [ "${nv:-0}" -gt 0 ] 2>/dev/null; then
        record "torch $m: flagged" PASS "$what"
        grep '^violation_kernel=' "$P" | head -n 3 | sed 's/^/    | /' || true
      else
        record "torch $m: flagged" FAIL "$what"
      fi
      ;;
    *)
      if [ "${nv:-1}" = 0 ] && [ "$(kv checks "$P")" -ge 1 ] 2>/dev/null; then
        record "torch $m: checked, not flagged" PASS "$what"
      else
        record "torch $m: checked, not flagged" FAIL "$what"
        evidence "$n"
      fi
      ;;
  esac
done

# ------------------------------------------------------------ 4. training
echo "=== 4. train_small.py ($STEPS steps) without and with kcheck (default options)"
trc=0
run_logged "$TMO" train_plain "$PYTHON" test/gpu/train_small.py --steps "$STEPS" || trc=$?
krc=0
kc "$TMO" train_kcheck "" "$PYTHON" test/gpu/train_small.py --steps "$STEPS" || krc=$?
pinfo train_kcheck
P=$LOGS/train_kcheck.pinfo
LA=$(field FINAL_LOSS "$LOGS/train_plain.out")
LB=$(field FINAL_LOSS "$LOGS/train_kcheck.out")
DA=$(field PARAM_DIGEST "$LOGS/train_plain.out")
DB=$(field PARAM_DIGEST "$LOGS/train_kcheck.out")
if [ "$trc" = 0 ] && [ "$krc" = 0 ] && [ -n "$LA" ] && [ "$LA" = "$LB" ]; then
  record "train: FINAL_LOSS bitwise equal with checking on" PASS "$LA"
else
  record "train: FINAL_LOSS bitwise equal with checking on" FAIL "exit $trc/$krc, plain '$LA' vs kcheck '$LB'"
  tail -n 8 "$LOGS/train_kcheck.err" | sed 's/^/    | /' || true
fi
if [ -n "$DA" ] && [ "$DA" = "$DB" ]; then
  record "train: parameters bitwise equal" PASS "sha256 ${DA:0:16}..."
else
  record "train: parameters bitwise equal" FAIL "plain '${DA:0:16}' vs kcheck '${DB:0:16}'"
fi
ie=$(kv internal_errors "$P")
tv=$(kv violations "$P")
tinfo="launches=$(kv launches "$P") checks=$(kv checks "$P") violations=$tv skips=$(kv skips "$P") check_cost_ms=$(kv check_cost_ms "$P"); $(summary_line train_kcheck)"
if [ "$ie" = 0 ]; then
  record "train: internal_errors == 0" PASS "$tinfo"
else
  record "train: internal_errors == 0" FAIL "internal_errors=${ie:-no report}; $tinfo"
fi
if [ "$tv" = 0 ]; then
  record "train: no violations (deterministic algorithms)" PASS "checks=$(kv checks "$P")"
else
  record "train: no violations (deterministic algorithms)" FAIL "violations=${tv:-?}: $(grep '^violation_kernel=' "$P" | head -n 3 | cut -c18-90 | tr '\n' ';')"
  evidence train_kcheck
fi
if [ ${#INTERNAL_BAD[@]} -eq 0 ]; then
  record "internal_errors == 0 in every kcheck report" PASS
else
  record "internal_errors == 0 in every kcheck report" FAIL "${INTERNAL_BAD[*]:0:10}"
fi

# ------------------------------------------------------------ results
nfail=0
for s in "${STATUS[@]}"; do [ "$s" = PASS ] || nfail=$((nfail + 1)); done
table() {
  printf '| check | result | detail |\n|---|---|---|\n'
  for i in "${!NAMES[@]}"; do
    printf '| %s | %s | %s |\n' "${NAMES[$i]}" "${STATUS[$i]}" "$(printf '%s' "${DETAILS[$i]}" | tr '|' '/' | cut -c1-220)"
  done
}
{
  echo "# kcheck GPU checks: determinism and race gates"
  echo
  echo "Result: $([ $nfail = 0 ] && echo "PASS (all ${#NAMES[@]} checks)" || echo "FAIL ($nfail of ${#NAMES[@]} checks failed)")"
  echo
  table
  echo
  echo "## Recall of the planted races (default options, seed=1..$NSEEDS; k/n = runs in which it differed)"
  echo
  recall_table
  echo
  echo "Plain repetition: the kernel run $NSEEDS times without kcheck (one process each); distinct results / runs."
  echo
  echo "## Check cost in ms (cost_ms of the check record: snapshot, application launch, re-runs, restore)"
  echo
  echo "Each column is one strategy alone (gates=race:race_strategies=S, seed=1), or the"
  echo "determinism gate alone (2 identical re-runs); '*' = that run flagged the kernel."
  echo
  cost_table
  echo
  echo "## Environment"
  echo '```'
  cat "$LOGS/env.txt"
  echo '```'
  if [ -s "$LOGS/evidence.txt" ]; then
    echo
    echo "## Evidence of unexpected violations"
    echo '```'
    head -c 20000 "$LOGS/evidence.txt"
    echo '```'
  fi
  echo
  echo "## Commands (relative to $ROOT; logs and reports in gpu-checks-logs.tar.gz)"
  echo '```'
  head -c 60000 "$CMDS"
  echo '```'
} >"$WORK/results.md"
cp "$WORK/results.md" "$OUTDIR/results.md"
tar -czf "$OUTDIR/gpu-checks-logs.tar.gz" -C "$WORK" logs reports
rm -rf "$WORK"

echo
echo "=== recall (also in $OUTDIR/results.md)"
recall_table
echo
cost_table
echo
echo "=== kcheck GPU checks: results"
table
echo
if [ $nfail = 0 ]; then
  echo "ALL PASS (${#NAMES[@]} checks)"
else
  echo "FAILED: $nfail of ${#NAMES[@]} checks"
fi
[ $nfail = 0 ]
