#!/bin/sh
# test/tsan/run.sh — the concurrency tests under ThreadSanitizer: the
# TSan build of libkcheck preloaded into the multi-threaded stand-in apps,
# every launch checked (the most interleavings of checks with other
# threads' launches, copies, memsets, allocations and frees). The stand-in's
# device memory is host memory, so TSan also sees a check touching bytes
# another thread's copy or kernel touches at the same time: exactly what the
# world lock must prevent. Any TSan report fails the run.
# usage: BUILD=build sh test/tsan/run.sh
set -u
BUILD=${BUILD:-build}
RT=$(${CC:-cc} -print-file-name=libtsan.so)
LIB="$BUILD/tsan/libkcheck.so"
EVERY="check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
SUPP=$(cd "$(dirname "$0")" && pwd)/tsan.supp
OUT=$(mktemp -d "${TMPDIR:-/tmp}/kcheck-tsan.XXXXXX")
fail=0
run() { # name options app args...
  name=$1 opts=$2
  shift 2
  if TSAN_OPTIONS="halt_on_error=1:exitcode=66:report_signal_unsafe=0:suppressions=$SUPP" \
     KCHECK_OPTIONS="log_path=$OUT/$name:$opts" LD_PRELOAD="$RT $LIB" \
     LD_LIBRARY_PATH="$BUILD/fakecuda" timeout 300 "$@" >"$OUT/$name.log" 2>&1; then
    echo "test-tsan: ok   $name"
  else
    echo "test-tsan: FAIL $name (exit $?)"
    grep -A30 "ThreadSanitizer" "$OUT/$name.log" | head -60
    fail=1
  fi
}
run threads "$EVERY" "$BUILD/test/app_threads"
run shared "$EVERY" "$BUILD/test/app_shared" shared 4 8
run churn "save_all=1:$EVERY" "$BUILD/test/app_shared" churn 4 8
run shared_default "" "$BUILD/test/app_shared" shared 8 30
# Sixteen threads with their own streams; CUDA graphs replayed node by node
# while the other threads capture and launch theirs.
run shared16 "$EVERY" "$BUILD/test/app_shared" shared 16 6
run graphs16 "graph_sample=1:$EVERY" "$BUILD/test/app_shared" graphs_global 16 6
run graphs_app "graph_sample=1:$EVERY" "$BUILD/test/app_graphs" all
run streams16 "stream_races=1:$EVERY" "$BUILD/test/app_shared" shared 16 6
# Violations on four Python threads at once: the Python-stack lookup.
FAKECUDA_LIB="$BUILD/fakecuda/libcuda.so.1"
export FAKECUDA_LIB
run py_threads "python_stack=1" "${PYTHON:-python3}" "$(dirname "$0")/py_threads.py"
[ "$fail" = 0 ] && rm -rf "$OUT"
exit "$fail"
