#!/bin/bash
# Device call 2 (2026-12-03, session 13), right after call 1 on the same
# machine: the torch phase of the GPU validation (PyTorch binding, planted
# op bugs, the training run's loss bitwise against plain) with the hash
# kernels publishing their sums (hash_publish=1) and the settled end.
#   bash test/gpu/results/2026-12-03-s13/call2.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
s=$(date +%s)
timeout 420 env PHASES=torch TORCH_BUDGET=380 bash test/gpu/run_gpu_validation.sh "$O/torch" >"$O/torch.log" 2>&1
echo "torch rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
