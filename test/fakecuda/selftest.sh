#!/bin/sh
# test/fakecuda/selftest.sh — runs the CPU stand-in driver's own tests (no
# kcheck): the C self-test, every test application, reproducibility and the
# seed/SM-count knobs on the planted kernels, and a fault-injection sweep
# that fails each counted driver call in turn (`make fakecuda-test`).
set -u
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
T=$BUILD/test
LIB=$BUILD/fakecuda/libcuda.so.1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
pass() { echo "fakecuda-test: ok   $1"; }
fail() { echo "fakecuda-test: FAIL $1"; fails=$((fails + 1)); }
run() { # name, command...
  name=$1; shift
  if "$@" >"$TMP/out" 2>&1; then pass "$name"; else fail "$name"; cat "$TMP/out"; fi
}

run "selftest" "$T/fakecuda_selftest"
run "fault leaves outputs alone" env FAKECUDA_FAIL_ENTRY=cuMemAlloc_v2 FAKECUDA_FAIL_AT=2 \
  "$T/fakecuda_selftest" faultcheck
run "child of an initialised process" "$T/fakecuda_selftest" forkinit
FAKECUDA_CALLS_OUT=$TMP/threads "$T/fakecuda_selftest" threads
if grep -qx "calls 80001" "$TMP/threads"; then pass "thread-safe call counting"
else fail "thread-safe call counting"; cat "$TMP/threads"; fi

for mode in basic races contracts all; do
  run "app_linked $mode" "$T/app_linked" $mode
  run "app_runtime $mode" "$T/app_runtime" $mode
done
run "app_linked --fork" "$T/app_linked" basic --fork
run "app_ctypes basic" "$PYTHON" test/apps/app_ctypes.py basic --lib "$LIB"
run "app_ctypes races" env FAKECUDA_LIB="$LIB" "$PYTHON" test/apps/app_ctypes.py races

# Same conditions, same bytes; a knob changes the racy lines only.
"$T/app_linked" races >"$TMP/r0" 2>&1
"$T/app_linked" races >"$TMP/r1" 2>&1
if cmp -s "$TMP/r0" "$TMP/r1"; then pass "races reproducible"; else fail "races reproducible"; fi
for knob in FAKECUDA_ORDER_SEED=7 FAKECUDA_SMS=16 FAKECUDA_ORDER_JITTER=1; do
  env "$knob" "$T/app_linked" races >"$TMP/rk" 2>&1 || fail "app_linked races under $knob"
  grep clean "$TMP/r0" >"$TMP/c0"; grep clean "$TMP/rk" >"$TMP/ck"
  grep races "$TMP/r0" >"$TMP/x0"; grep races "$TMP/rk" >"$TMP/xk"
  if cmp -s "$TMP/c0" "$TMP/ck" && ! cmp -s "$TMP/x0" "$TMP/xk"; then pass "$knob moves racy kernels only"
  else fail "$knob moves racy kernels only"; diff "$TMP/r0" "$TMP/rk"; fi
done

# Fault injection: fail call N for every N; each run must end with a clear
# error (status 1), never a crash or a success.
sweep() { # app, mode
  app=$1; mode=$2
  FAKECUDA_CALLS_OUT=$TMP/calls "$T/$app" $mode >/dev/null 2>&1
  total=$(awk '$1 == "calls" {print $2}' "$TMP/calls")
  bad=0; n=1
  while [ "$n" -le "$total" ]; do
    FAKECUDA_FAIL_AT=$n FAKECUDA_CALLS_OUT=$TMP/c.$n "$T/$app" $mode >/dev/null 2>"$TMP/err"
    st=$?
    if [ $st -ne 1 ] || ! grep -q "^failed $n " "$TMP/c.$n" || ! grep -q "failed" "$TMP/err"; then
      echo "  $app $mode: FAKECUDA_FAIL_AT=$n gave status $st"; cat "$TMP/err"; bad=1
    fi
    n=$((n + 1))
  done
  if [ "$total" -gt 0 ] && [ $bad -eq 0 ]; then pass "fault sweep $app $mode ($total calls)"
  else fail "fault sweep $app $mode"; fi
}
sweep app_linked basic
sweep app_runtime basic
sweep app_linked races

env FAKECUDA_FAIL_ENTRY=cuLaunchKernel FAKECUDA_FAIL_AT=2 FAKECUDA_FAIL_CODE=719 \
  FAKECUDA_CALLS_OUT=$TMP/entry "$T/app_linked" basic >/dev/null 2>"$TMP/err"
if [ $? -eq 1 ] && grep -qx "failed 2 cuLaunchKernel" "$TMP/entry" &&
   grep -q CUDA_ERROR_LAUNCH_FAILED "$TMP/err"; then pass "FAKECUDA_FAIL_ENTRY"
else fail "FAKECUDA_FAIL_ENTRY"; cat "$TMP/entry" "$TMP/err"; fi

if [ $fails -ne 0 ]; then echo "fakecuda-test: $fails failure(s)"; exit 1; fi
echo "fakecuda-test: all passed"
