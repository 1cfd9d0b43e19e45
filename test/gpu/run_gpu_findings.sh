#!/bin/bash
# test/gpu/run_gpu_findings.sh — findings on the real driver, in one run:
#   1. test/gpu/races.cu's racy_last_writer under kcheck: the finding block
#      at detection (host frames to file:line from the program's debug info)
#   2. kcheck report, --sarif, --junit, --html on that report
#   3. kcheck repro on it, and the bundle's replay (the same violation again)
#   4. a PyTorch test file under `pytest -p kcheck`: index_add_ on CUDA (fp32
#      atomics, nondeterministic by PyTorch's documentation) fails its test
#      with the finding and the test's Python frame; a clean test passes
#   5. the same with suppressions= the shipped torch-nondeterministic list
#   6. nothing unchecked passes: race_strategies=all runs every strategy of
#      perturb.def (PTX ones included) on racy_last_writer; gates=racee stops
#      the program (exit 1); kcheck run exits 5 for gates=none, N for
#      --error-exitcode N with a violation
# usage: run_gpu_findings.sh [OUTDIR]   (BUILD=build; RACES=build/gpu/races)
# Everything goes to OUTDIR/findings.txt; the reports to OUTDIR/findings.tar.gz.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUTDIR=${1:-${OUT:-gpu-out}}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=${BUILD:-build}
LIB="$ROOT/$BUILD/libkcheck.so"
RACES=${RACES:-$ROOT/$BUILD/gpu/races}
NVCC=${NVCC:-${CUDA_HOME:-/usr/local/cuda}/bin/nvcc}
# (built with host debug info by `make` where nvcc exists: GPU_NVCCFLAGS)
if [ ! -x "$RACES" ] && [ -x "$NVCC" ]; then # a build made where nvcc was missing
  mkdir -p "$(dirname "$RACES")"
  "$NVCC" -O2 -g -arch=sm_90 -cudart static "$ROOT/test/gpu/races.cu" -o "$RACES" -lcuda
fi
[ -x "$RACES" ] || { echo "run_gpu_findings: no $RACES" >&2; exit 1; }
K=(python3 "$ROOT/scripts/kcheck")
W=$(mktemp -d /tmp/kcheck-findings.XXXXXX)
LOG="$OUTDIR/findings.txt"
step() { echo; echo "=== $*"; }
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(cat COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1

  step "1. racy_last_writer under kcheck (default options): the finding block on stderr"
  echo "\$ KCHECK_OPTIONS=log_path=$W/r1 LD_PRELOAD=$LIB $RACES racy_last_writer"
  KCHECK_OPTIONS=log_path=$W/r1 LD_PRELOAD=$LIB timeout 60 "$RACES" racy_last_writer
  echo "exit $?"

  step "2. kcheck report, --sarif, --junit, --html"
  "${K[@]}" report "$W"/r1.*.jsonl --sarif "$W/r1.sarif" --junit "$W/r1.xml" --html "$W/r1.html"
  echo "exit $? (1: violations)"
  python3 -c "import json,sys; l=json.load(open(sys.argv[1])); r=l['runs'][0]['results'];
print('sarif results', len(r), r[0]['ruleId'], r[0]['locations'][0].get('physicalLocation'))" "$W/r1.sarif"

  step "3. kcheck repro and replay"
  "${K[@]}" repro "$W"/r1.*.jsonl --violation 0 -o "$W/bundle"
  timeout 60 "$W/bundle/replay" 2>&1 | grep -E "^kcheck repro|SUMMARY"
  echo "replay exit ${PIPESTATUS[0]}"

  step "4. pytest -p kcheck on a PyTorch test file"
  cat >"$W/test_torch_findings.py" <<'EOF'
import torch


def test_index_add_nondeterministic():
    g = torch.Generator(device="cuda").manual_seed(0)
    idx = torch.randint(0, 8, (1 << 20,), device="cuda", generator=g)
    src = torch.randn(1 << 20, device="cuda", generator=g) * 1e4
    x = torch.zeros(8, device="cuda")
    x.index_add_(0, idx, src)
    torch.cuda.synchronize()


def test_clean_matmul():
    a = torch.ones(64, 64, device="cuda")
    assert float((a @ a).sum()) == 64.0 ** 3
EOF
  (cd "$W" && KCHECK_OPTIONS=log_path=$W/t4 LD_PRELOAD=$LIB PYTHONPATH=$ROOT/python \
     timeout 120 python3 -m pytest -p kcheck -p no:cacheprovider -q -rA \
     --kcheck-report="$W/t4.json" test_torch_findings.py >"$W/t4.out" 2>&1; echo "pytest exit $?")
  grep -vE "^\s*$" "$W/t4.out" | head -80
  cat "$W/t4.json"

  step "5. the same with the shipped torch-nondeterministic suppressions"
  S=$("${K[@]}" suppressions torch-nondeterministic)
  (cd "$W" && KCHECK_OPTIONS=log_path=$W/t5:suppressions=$S LD_PRELOAD=$LIB PYTHONPATH=$ROOT/python \
     timeout 120 python3 -m pytest -p kcheck -p no:cacheprovider -q test_torch_findings.py \
     >"$W/t5.out" 2>&1; echo "pytest exit $?")
  grep -E "passed|failed|suppressed|SUMMARY|violation in" "$W/t5.out"
  "${K[@]}" report "$W"/t5.*.jsonl | head -20

  step "6. list options and exit statuses on the real driver"
  KCHECK_OPTIONS=log_path=$W/r6:gates=race:race_strategies=all LD_PRELOAD=$LIB \
    timeout 120 "$RACES" racy_last_writer >/dev/null 2>"$W/r6.err"
  echo "race_strategies=all exit $?"
  python3 -c "import json,sys
st = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r['type'] == 'check':
        st.update(((r.get('gates') or {}).get('race') or {}).get('strategies') or {})
print('strategies run:', st)
want = {'scrub','green','smem','hammer','l2flush','jitter','warporder','accesses'}
print('PASS' if want <= set(st) and 'unknown strategy' not in st.values() else 'FAIL', 'every strategy ran')" $W/r6.*.jsonl
  KCHECK_OPTIONS=log_path=$W/r7:gates=racee LD_PRELOAD=$LIB timeout 60 "$RACES" racy_last_writer \
    >/dev/null 2>"$W/r7.err"
  echo "gates=racee exit $? (want 1): $(grep -c "unknown gate 'racee'" "$W/r7.err") line(s)"
  "${K[@]}" run --lib "$LIB" -o log_path=$W/r8 -o gates=none -- "$RACES" racy_last_writer \
    >/dev/null 2>"$W/r8.err"
  echo "kcheck run gates=none exit $? (want 5): $(grep 'nothing was checked' "$W/r8.err")"
  "${K[@]}" run --lib "$LIB" --error-exitcode 9 -o log_path=$W/r9 -- "$RACES" racy_last_writer \
    >/dev/null 2>&1
  echo "kcheck run --error-exitcode 9 exit $? (want 9)"
} >"$LOG" 2>&1
tar -C "$W" -czf "$OUTDIR/findings.tar.gz" . 2>/dev/null
cp "$W/r1.html" "$OUTDIR/r1.html" 2>/dev/null
echo "done: $LOG"
