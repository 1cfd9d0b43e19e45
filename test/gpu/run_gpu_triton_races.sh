#!/usr/bin/env bash
# test/gpu/run_gpu_triton_races.sh — the race gate on Triton's cubins, on a
# GPU with torch and Triton: (1) Triton's cache holds the PTX: kcheck finds
# it (image_ptx), the intra-block strategies run on it and the lost update
# is flagged; (2) the PTX is gone from the cache: the first check adds the
# block-order strategies (no_code_added) and the lost update is still
# flagged. kc_slots is flagged in neither. Default options in both.
#   usage: test/gpu/run_gpu_triton_races.sh [BUILD]   (default build/)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kcheck-triton-races.XXXXXX")
fail=0
for mode in cache drop; do
  export TRITON_CACHE_DIR="$WORK/tcache-$mode"
  args=()
  [ "$mode" = drop ] && args=(--drop-ptx)
  LD_PRELOAD="$BUILD/libkcheck.so" KCHECK_OPTIONS="log_path=$WORK/kc-$mode" \
    "$PY" "$ROOT/test/gpu/triton_races.py" "${args[@]}" >"$WORK/$mode.out" 2>&1
  rc=$?
  if [ $rc -eq 2 ]; then echo "[SKIP] triton_races: no CUDA or Triton"; exit 0; fi
  "$PY" - "$mode" "$WORK"/kc-$mode.*.jsonl <<'PYEOF' || fail=1
import json, sys
mode, paths = sys.argv[1], sys.argv[2:]
recs = [json.loads(l) for p in paths for l in open(p)]
def by(t): return [r for r in recs if r.get("type") == t]
viol = {v["kernel_name"].split("(")[0]: v for v in by("violation") if v["gate"] in ("race", "determinism")}
race = {c["kernel_name"].split("(")[0]: c["gates"].get("race", {}) for c in by("check")}
ok = "kc_lost_update" in viol and "kc_slots" not in viol
lu = race.get("kc_lost_update", {})
if mode == "cache":
    ok = ok and any(r["kernel"] == "kc_lost_update" for r in by("image_ptx")) and lu.get("intra_block") == "perturbed"
else:
    ok = ok and lu.get("no_code_added") == "green,smem"
print("[%s] triton_races %s: violations %s; race entry %s" % ("PASS" if ok else "FAIL", mode,
      {k: (v["gate"], v.get("exposed_by")) for k, v in viol.items()},
      {k: lu.get(k) for k in ("intra_block", "no_code", "no_code_added", "strategies", "strategy_ms")}))
sys.exit(0 if ok else 1)
PYEOF
done
echo "work folder: $WORK"
exit $fail
