#!/usr/bin/env bash
# test/gpu/run_gpu_serving.sh — kcheck on serving-shaped programs, on a GPU:
#   1. CUDA graphs through the runtime (test/gpu/graphs.cu): stream capture
#      with planted racy kernels that only run inside the graph, a clean
#      capture, a fork/join capture over two streams, an explicitly built
#      graph, a graph with a host node; plain vs kcheck (default, and every
#      launch replayed and checked): buffers bitwise equal, the racy kernels
#      found inside the graph, the host-node graph reported not checkable;
#   2. sixteen threads with their own streams (test/apps/app_shared.c on the
#      real driver): eager launches, and one captured graph per thread;
#      results exact, every launch counted once;
#   3. torch.cuda.graph (test/gpu/torch_graphs.py): eager prefill and a
#      decode step replayed from a graph, bitwise equal with and without
#      kcheck, coverage of the kernels inside the graph; with a one-rank
#      NCCL all_reduce captured into the graph (never re-run).
# usage: bash test/gpu/run_gpu_serving.sh [OUTDIR]   (BUILD, PYTHON, KC_SERVING_BUDGET)
# Writes OUTDIR/serving.md and OUTDIR/serving-logs.tar.gz; exit 1 on any failure.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" serving "${1:-}"
BUDGET=${KC_SERVING_BUDGET:-230}
EVERY="check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
export KC_SCALE_PTX="$BUILD/gpu/scale.ptx"

echo "=== serving checks on the GPU: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
bench_env | tee "$LOGS/env.txt"

# Builds what is missing where nvcc exists (a carried build/ has them).
if [ ! -x "$BUILD/gpu/graphs" ] && [ -x "$NVCC" ]; then
  "$NVCC" -O2 -arch=sm_90 -cudart static test/gpu/graphs.cu -o "$BUILD/gpu/graphs" \
    -L"$CUDA_HOME/lib64/stubs" -lcuda >"$LOGS/nvcc.txt" 2>&1
fi

kc() { # TAG OPTIONS TIMEOUT CMD... : the command under kcheck
  local tag=$1 opts=$2 tmo=$3
  shift 3
  run_logged "$tmo" "$tag" env LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$tag${opts:+:$opts}" "$@"
}

# 1. graphs
run_logged 30 graphs.plain1 "$BUILD/gpu/graphs"
run_logged 30 graphs.plain2 "$BUILD/gpu/graphs"
kc graphs.kc "" 60 "$BUILD/gpu/graphs"
kc graphs.every "graph_sample=1:$EVERY" 90 "$BUILD/gpu/graphs"

# 2. sixteen threads
APP="$BUILD/gpu/app_shared"
run_logged 30 threads.shared.plain "$APP" shared 16 20
kc threads.shared.kc "" 60 "$APP" shared 16 20
kc threads.shared.every "$EVERY" 90 "$APP" shared 16 6
run_logged 30 threads.graphs.plain "$APP" graphs 16 20
kc threads.graphs.kc "" 60 "$APP" graphs 16 20
kc threads.graphs.every "graph_sample=1:$EVERY" 90 "$APP" graphs 16 6

# 3. PyTorch
"$PYTHON" -c 'import torch' >/dev/null 2>&1 # warm the import caches
run_logged 60 torch.plain "$PYTHON" test/gpu/torch_graphs.py
kc torch.kc "" 120 "$PYTHON" test/gpu/torch_graphs.py
run_logged 60 torch.nccl.plain "$PYTHON" test/gpu/torch_graphs.py --nccl
kc torch.nccl.kc "" 120 "$PYTHON" test/gpu/torch_graphs.py --nccl

"$PYTHON" "$ROOT/test/gpu/serving_summary.py" "$LOGS" "$REPS" "$OUTDIR/serving.md"
rc=$?
cp "$OUTDIR/serving.md" "$LOGS/" 2>/dev/null
tar -C "$WORK" -czf "$OUTDIR/serving-logs.tar.gz" logs reports 2>/dev/null
cat "$OUTDIR/serving.md"
exit $rc
