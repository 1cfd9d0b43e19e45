#!/usr/bin/env bash
# test/gpu/run_gpu_opinfo.sh — PyTorch's OpInfo sample inputs of the ops
# the binding judges, on CUDA under `kcheck run --torch` with every
# signature judged inline (torch_budget=1, sample=1): the judged calls per
# oracle op and ATen op and their verdicts, every oracle violation named.
#   usage: test/gpu/run_gpu_opinfo.sh [OUTDIR]   (BUILD=.. the build folder; KC_OPINFO_SECONDS)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/test/gpu/common.sh"
kc_gpu_init "$ROOT" opinfo "${1:-}"
BUDGET=${BUDGET:-330}
export KCHECK_LIB=$LIB
S=${KC_OPINFO_SECONDS:-240}
run_logged $((S + 60)) opinfo "$PYTHON" "$ROOT/scripts/kcheck" run --torch -o "log_path=$REPS/oi" \
  -o torch_budget=1 -o gates=oracle -o sample=1 -o kernel_clean_limit=-1 -o op_clean_limit=-1 -o torch_workers=-1 -- \
  "$PYTHON" test/gpu/torch_opinfo.py --seconds "$S"
rc=$?
{
  echo "# OpInfo sample inputs under the binding on CUDA"
  echo
  bench_env | sed 's/^/- /'
  echo "- command: test/gpu/run_gpu_opinfo.sh (KC_OPINFO_SECONDS=$S); the run exited $rc"
  echo
  "$PYTHON" test/gpu/torch_opinfo.py --table $(reports_of oi) <"$LOGS/opinfo.out"
  echo
  echo '```'
  tail -n 5 "$LOGS/opinfo.err"
  echo '```'
} >"$OUTDIR/opinfo.md"
grep -E '^(PASS|FAIL) opinfo' "$OUTDIR/opinfo.md"
grep -q '^PASS opinfo' "$OUTDIR/opinfo.md"
