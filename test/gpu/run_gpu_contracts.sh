#!/usr/bin/env bash
# test/gpu/run_gpu_contracts.sh — kcheck's contract gates on a GPU: planted
# contract bugs must be caught by the gate meant for them, correct kernels
# must pass every gate, and the programs' results must not change.
#
#   test/gpu/run_gpu_contracts.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# 0. `kcheck contract lint` on test/gpu/contracts_gpu.yaml and
#    examples/contracts/*.yaml; build/gpu/contract_bugs built with nvcc when
#    it is missing or older than its source.
# 1. test/gpu/contract_bugs.cu (build/gpu/contract_bugs): every kernel once,
#    without kcheck and under kcheck (contracts=test/gpu/contracts_gpu.yaml,
#    gates=all: the default gates and the opt-in shapes gate, which
#    tiled_add_bug needs; every kernel here is safe at other shapes).
# 2. test/gpu/triton_contracts.py: the same for the Triton kernels.
# 3. test/gpu/check_contracts.py on the logs and reports: each planted bug
#    flagged by its gate (coverage, immutability, bounds, oracle, precision,
#    nonfinite, shapes, extremes), each correct kernel checked with contract
#    gates and not flagged, outputs identical with and without kcheck,
#    internal_errors == 0; one PASS/FAIL line per expectation with the
#    violation's verdict line or evidence, and a table of the gate statuses
#    per kernel.
# 4. test/gpu/torch_annotate.py without and under kcheck (no contract file,
#    default gates, check_first=100): PyTorch's add, softmax and mm each
#    declared with kcheck_annotate_* must be checked against the declared op
#    and stay silent; an add declared as sub must be flagged by the oracle
#    gate; results identical with and without kcheck.
# 5. build/gpu/launches (the shipped example) without and under kcheck with
#    examples/contracts/launches.yaml: kc_cluster_scale judged by the
#    oracle (pass or bitwise), no violation, checksum unchanged.
#
# Writes OUTDIR/results.md and OUTDIR/gpu-contracts-logs.tar.gz (every log
# and report); exit status nonzero when any check failed.
#
# Environment: BUILD (build), PYTHON (python3), CUDA_HOME (/usr/local/cuda),
# NVCC, KC_GATES (gates option for the kcheck runs, all; empty: kcheck's
# default list, without shapes),
# KC_TIMEOUT (seconds per run under kcheck, 300), KC_PLAIN_TIMEOUT (seconds
# per plain run, 120), KC_BUDGET (seconds; no command starts after it and
# none runs past it, so the results are always written, 540).
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" contracts "${1:-}"
GATES=${KC_GATES-all}
TMO=${KC_TIMEOUT:-300}
PTMO=${KC_PLAIN_TIMEOUT:-120}
BUDGET=${KC_BUDGET:-540}
BUGS="$BUILD/gpu/contract_bugs"
CONTRACTS="$ROOT/test/gpu/contracts_gpu.yaml"
# Triton's compile cache inside the work dir: both runs compile the same way.
export TRITON_CACHE_DIR="$WORK/triton-cache"

# kc TIMEOUT NAME CMD... : run_logged under kcheck with the contracts, report
# prefix $REPS/NAME.
kc() {
  local tmo=$1 name=$2
  shift 2
  local opts="log_path=$REPS/$name:contracts=$CONTRACTS"
  [ -n "$GATES" ] && opts="$opts:gates=$GATES"
  run_logged "$tmo" "$name" env LD_PRELOAD="$LIB" KCHECK_OPTIONS="$opts" "$@"
}

summary_line() { grep '^SUMMARY: kcheck:' "$LOGS/$1.err" 2>/dev/null | tail -n 1 || true; }

# pair NAME PLAIN_RC KCHECK_RC : records whether both runs of a program exited 0.
pair() {
  local name=$1 prc=$2 krc=$3
  if [ "$prc" = 0 ] && [ "$krc" = 0 ]; then
    record "$name: runs without and with kcheck (exit 0)" PASS "$(summary_line "kc_$name" | cut -c1-160)"
  else
    record "$name: runs without and with kcheck (exit 0)" FAIL "exit plain=$prc kcheck=$krc (see plain_$name.err, kc_$name.err)"
    tail -n 8 "$LOGS/kc_$name.err" | sed 's/^/    | /' || true
  fi
}

echo "=== kcheck GPU contract gates: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
echo "=== output: $OUTDIR (work dir $WORK)"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "repo: $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi failed"
  if [ -x "$NVCC" ]; then "$NVCC" --version 2>&1 | tail -n 1; else echo "no nvcc at $NVCC"; fi
  "$PYTHON" -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)' 2>&1 | tail -n 1 || true
  ls -l "$LIB" 2>&1 || true
  echo "gates: ${GATES:-kcheck default}"
  uname -srm
} >"$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"

# ------------------------------------------------------------ 0. preconditions
if [ ! -f "$LIB" ]; then
  record "libkcheck.so present" FAIL "$LIB missing (run make, carry build/)"
elif ldd "$LIB" 2>&1 | grep -q 'not found'; then
  record "libkcheck.so loads" FAIL "$(ldd "$LIB" | grep 'not found' | tr -s ' \t' ' ' | tr '\n' ';')"
else
  record "libkcheck.so loads" PASS "$LIB"
fi
lrc=0
run_logged 60 lint env KCHECK_LIB="$LIB" "$PYTHON" scripts/kcheck contract lint \
  "$CONTRACTS" examples/contracts || lrc=$?
if [ "$lrc" = 0 ]; then
  record "contracts lint clean" PASS "test/gpu/contracts_gpu.yaml examples/contracts/"
else
  record "contracts lint clean" FAIL "exit $lrc: $(head -c 300 "$LOGS/lint.err" | tr '\n' ' ')"
fi
mkdir -p "$BUILD/gpu"
if [ -x "$NVCC" ] && { [ ! -x "$BUGS" ] || [ test/gpu/contract_bugs.cu -nt "$BUGS" ]; }; then
  run_logged 300 build_contract_bugs "$NVCC" -O2 -arch=sm_90 -cudart static test/gpu/contract_bugs.cu \
    -o "$BUGS" -L"$CUDA_HOME/lib64/stubs" -lcuda || true
fi
if [ -x "$BUGS" ]; then
  record "build/gpu/contract_bugs present" PASS "$BUGS"
else
  record "build/gpu/contract_bugs present" FAIL "no $BUGS and no nvcc to build it (see build_contract_bugs.err)"
fi

# ------------------------------------------------------------ 1. CUDA kernels
echo "=== 1. contract_bugs without and with kcheck"
prc=0
krc=0
run_logged "$PTMO" plain_cuda "$BUGS" || prc=$?
kc "$TMO" kc_cuda "$BUGS" || krc=$?
pair cuda "$prc" "$krc"

# ------------------------------------------------------------ 2. Triton kernels
echo "=== 2. triton_contracts.py without and with kcheck"
prc=0
krc=0
run_logged "$PTMO" plain_triton "$PYTHON" test/gpu/triton_contracts.py || prc=$?
kc "$TMO" kc_triton "$PYTHON" test/gpu/triton_contracts.py || krc=$?
pair triton "$prc" "$krc"

# ------------------------------------------------------------ 3. expectations
echo "=== 3. check_contracts.py"
mapfile -t CUDA_REPS < <(reports_of kc_cuda)
mapfile -t TRITON_REPS < <(reports_of kc_triton)
crc=0
"$PYTHON" test/gpu/check_contracts.py --md "$WORK/expectations.md" --contracts "$CONTRACTS" \
  --suite cuda "$LOGS/plain_cuda.out" "$LOGS/kc_cuda.out" "${CUDA_REPS[@]}" \
  --suite triton "$LOGS/plain_triton.out" "$LOGS/kc_triton.out" "${TRITON_REPS[@]}" \
  >"$LOGS/check_contracts.out" 2>"$LOGS/check_contracts.err" || crc=$?
cat "$LOGS/check_contracts.out"
NEXP=$(grep -c '^PASS \|^FAIL ' "$LOGS/check_contracts.out" || true)
NEXPF=$(grep -c '^FAIL ' "$LOGS/check_contracts.out" || true)
if [ "$crc" = 0 ]; then
  record "check_contracts.py: every expectation" PASS "$NEXP expectations"
else
  record "check_contracts.py: every expectation" FAIL \
    "exit $crc: $NEXPF of $NEXP expectations failed $(head -c 200 "$LOGS/check_contracts.err" | tr '\n' ' ')"
fi

# ------------------------------------------------------------ 4. annotations
# PyTorch's own kernels checked through kcheck_annotate_* (no contract file):
# default gates, every launch of the script checked.
echo "=== 4. torch_annotate.py without and with kcheck (annotations)"
prc=0
krc=0
run_logged "$PTMO" plain_annotate "$PYTHON" test/gpu/torch_annotate.py || prc=$?
printf '%s: %s\n' kc_annotate "annotations, contracts=none, check_first=100" >>"$CMDS"
run_logged "$TMO" kc_annotate env LD_PRELOAD="$LIB" \
  KCHECK_OPTIONS="log_path=$REPS/kc_annotate:contracts=none:check_first=100" \
  "$PYTHON" test/gpu/torch_annotate.py || krc=$?
pair annotate "$prc" "$krc"
if diff <(grep '^RESULT \|^VERIFY ' "$LOGS/plain_annotate.out") \
  <(grep '^RESULT \|^VERIFY ' "$LOGS/kc_annotate.out") >/dev/null &&
  grep -q '^VERIFY ok' "$LOGS/plain_annotate.out"; then
  record "annotate: results identical with and without kcheck, verified" PASS \
    "$(grep -c '^RESULT ' "$LOGS/plain_annotate.out") results"
else
  record "annotate: results identical with and without kcheck, verified" FAIL \
    "see plain_annotate.out, kc_annotate.out"
fi
mapfile -t ANN_REPS < <(reports_of kc_annotate)
arc=0
"$PYTHON" test/gpu/torch_annotate.py --check "${ANN_REPS[@]}" >"$LOGS/annotate_check.out" 2>&1 ||
  arc=$?
cat "$LOGS/annotate_check.out"
record "annotate: declared ops checked (silent), add declared as sub flagged" \
  "$([ "$arc" = 0 ] && echo PASS || echo FAIL)" \
  "$(tr '\n' ';' <"$LOGS/annotate_check.out" | cut -c1-600)"

# ------------------------------------------------------------ 5. examples
# The shipped example program with the shipped example contracts.
echo "=== 5. build/gpu/launches with examples/contracts/launches.yaml"
LAUNCHES="$BUILD/gpu/launches"
prc=0
krc=0
run_logged "$PTMO" plain_launches "$LAUNCHES" || prc=$?
run_logged "$TMO" kc_launches env LD_PRELOAD="$LIB" \
  KCHECK_OPTIONS="log_path=$REPS/kc_launches:contracts=$ROOT/examples/contracts/launches.yaml" \
  "$LAUNCHES" || krc=$?
pair launches "$prc" "$krc"
mapfile -t EX_REPS < <(reports_of kc_launches)
erc=0
"$PYTHON" - "${EX_REPS[@]}" >"$LOGS/examples_check.out" 2>&1 <<'PY' || erc=$?
import json, sys
recs = [json.loads(l) for p in sys.argv[1:] for l in open(p)]
chk = [c for c in recs if c["type"] == "check" and c["kernel_name"].startswith("kc_cluster_scale")]
viol = [v for v in recs if v["type"] == "violation"]
oracle = [c["gates"].get("oracle", {}).get("status") for c in chk]
print("kc_cluster_scale checks=%d oracle=%s violations=%d" % (len(chk), oracle, len(viol)))
sys.exit(0 if chk and all(s in ("pass", "bitwise") for s in oracle) and not viol else 1)
PY
if [ "$erc" = 0 ] && [ "$(grep '^CHECKSUM' "$LOGS/plain_launches.out")" = "$(grep '^CHECKSUM' "$LOGS/kc_launches.out")" ]; then
  record "examples: launches.yaml contract checked, silent, checksum unchanged" PASS \
    "$(cat "$LOGS/examples_check.out")"
else
  record "examples: launches.yaml contract checked, silent, checksum unchanged" FAIL \
    "$(tr '\n' ' ' <"$LOGS/examples_check.out")"
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
  echo "# kcheck GPU contract gates: planted bugs and correct kernels"
  echo
  echo "Result: $([ $nfail = 0 ] && echo "PASS (all ${#NAMES[@]} checks)" || echo "FAIL ($nfail of ${#NAMES[@]} checks failed)")"
  echo
  table
  echo
  echo "## Expectations (test/gpu/check_contracts.py)"
  echo
  if [ -s "$WORK/expectations.md" ]; then cat "$WORK/expectations.md"; else echo "(none: check_contracts.py wrote nothing; see its .err log)"; fi
  echo
  echo "## Program output (plain runs)"
  echo '```'
  grep -h '^RESULT \|^CHECKSUM \|^TRITON_KERNEL ' "$LOGS/plain_cuda.out" "$LOGS/plain_triton.out" 2>/dev/null | head -c 8000 || true
  echo '```'
  echo
  echo "## Annotations (test/gpu/torch_annotate.py --check)"
  echo '```'
  cat "$LOGS/annotate_check.out" 2>/dev/null || true
  echo '```'
  echo
  echo "## Environment"
  echo '```'
  cat "$LOGS/env.txt"
  echo '```'
  echo
  echo "## Commands (relative to $ROOT; logs and reports in gpu-contracts-logs.tar.gz)"
  echo '```'
  head -c 20000 "$CMDS"
  echo '```'
} >"$WORK/results.md"
cp "$WORK/results.md" "$OUTDIR/results.md"
tar -czf "$OUTDIR/gpu-contracts-logs.tar.gz" -C "$WORK" logs reports
rm -rf "$WORK"

echo
echo "=== kcheck GPU contract gates: results (also in $OUTDIR/results.md)"
table
echo
if [ $nfail = 0 ]; then
  echo "ALL PASS (${#NAMES[@]} checks, $NEXP expectations)"
else
  echo "FAILED: $nfail of ${#NAMES[@]} checks"
fi
[ $nfail = 0 ]
