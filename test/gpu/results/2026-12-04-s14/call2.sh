#!/bin/bash
# Device call 2 (2026-12-04, session 14), right after call 1 on the same
# machine: the torch phase of the GPU validation (PyTorch binding, planted
# op bugs, the training run's loss bitwise against plain) with findings'
# stacks unwound from a copy and the setup's reserved staging buffer.
#   bash test/gpu/results/2026-12-04-s14/call2.sh OUTDIR
set -u
O=$1
mkdir -p "$O"
s=$(date +%s)
timeout 420 env PHASES=torch TORCH_BUDGET=380 bash test/gpu/run_gpu_validation.sh "$O/torch" >"$O/torch.log" 2>&1
echo "torch rc=$? $(($(date +%s) - s))s" >>"$O/rc.txt"
cat "$O/rc.txt"
