#!/usr/bin/env bash
# bench/run_bench.sh — kcheck pass-through cost on a GPU machine.
#
#   bench/run_bench.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# 1. bench/launch_overhead (200k launches of a one-block kernel per rep, via
#    <<<>>> and via cuLaunchKernel) without and with
#    LD_PRELOAD=build/libkcheck.so, default options (pass-through; only the
#    report location is set), alternating, KC_BENCH_ROUNDS rounds (5).
# 2. test/gpu/train_small.py ms/step without and with kcheck, alternating,
#    KC_BENCH_TORCH_ROUNDS rounds (3): the overall ratio.
#
# Reports medians: ns per launch (launch loop plus final sync, and the loop
# alone = submit), the difference in ns per launch and the ratio. Prints a
# markdown table and writes OUTDIR/bench.md; logs go to
# OUTDIR/bench-logs.tar.gz. Nonzero exit when a run failed or kcheck did not
# load.
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/gpu/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" bench "${1:-}"
ROUNDS=${KC_BENCH_ROUNDS:-5}
TROUNDS=${KC_BENCH_TORCH_ROUNDS:-3}
NLAUNCH=${KC_BENCH_LAUNCHES:-200000}
REPS=${KC_BENCH_REPS:-3} # repetitions (common.sh's report folder is $WORK/reports here)
TSTEPS=${KC_BENCH_TORCH_STEPS:-60}
BIN="$BUILD/gpu/launch_overhead"
RAW="$WORK/logs/raw.tsv"
printf 'round\tconfig\tmetric\tvalue\n' >"$RAW"
errors=0

echo "=== kcheck pass-through benchmark: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
nvidia-smi -L 2>&1 | tee "$WORK/logs/env.txt" || true
if [ ! -f "$LIB" ]; then
  echo "FAIL: $LIB missing (run make, carry build/)" >&2
  exit 1
fi

if [ -x "$NVCC" ] && { [ ! -x "$BIN" ] || [ bench/launch_overhead.cu -nt "$BIN" ]; }; then
  mkdir -p "$(dirname "$BIN")"
  echo "build: $NVCC -O2 -arch=sm_90 -cudart shared ..." | tee -a "$CMDS"
  "$NVCC" -O2 -arch=sm_90 -cudart shared -Xlinker "-rpath,$CUDA_HOME/lib64" \
    bench/launch_overhead.cu -o "$BIN" -L"$CUDA_HOME/lib64/stubs" -lcuda
fi
if [ ! -x "$BIN" ]; then
  echo "FAIL: no $BIN and no nvcc to build it" >&2
  exit 1
fi
BENV=()
if ldd "$BIN" 2>/dev/null | grep -q 'libcudart.*not found'; then
  d=$("$PYTHON" -c 'import glob,os,site
for r in site.getsitepackages():
    for p in glob.glob(os.path.join(r,"nvidia","**","libcudart.so.13*"),recursive=True):
        print(os.path.dirname(p)); raise SystemExit' 2>/dev/null || true)
  [ -n "$d" ] && BENV=(LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  echo "libcudart.so.13 from ${d:-nowhere}" | tee -a "$CMDS"
fi

# one CONFIG ROUND NAME CMD... : runs, logs, checks kcheck loaded when on.
one() {
  local cfg=$1 round=$2 name=$3
  shift 3
  local log="$WORK/logs/$name.r$round.$cfg"
  local envk=()
  [ "$cfg" = kcheck ] && envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$WORK/reports/$name.r$round")
  printf '%s r%s %s: env %s %s\n' "$name" "$round" "$cfg" "${envk[*]}" "$*" >>"$CMDS"
  if ! env "${BENV[@]}" "${envk[@]}" "$@" >"$log.out" 2>"$log.err"; then
    echo "  $name round $round ($cfg) FAILED:" >&2
    tail -n 10 "$log.err" | sed 's/^/    | /' >&2
    errors=$((errors + 1))
    return 0
  fi
  if [ "$cfg" = kcheck ] && ! grep -q '^SUMMARY: kcheck:' "$log.err"; then
    echo "  $name round $round: kcheck did not load (no SUMMARY line)" >&2
    errors=$((errors + 1))
  fi
  if [ "$name" = launch ]; then
    awk -v r="$round" -v c="$cfg" '$1 == "RESULT" {
      for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] ~ /ns_per_launch$/) printf "%s\t%s\t%s_%s\t%s\n", r, c, $2, kv[1], kv[2] } }' \
      "$log.out" >>"$RAW"
  else
    awk -v r="$round" -v c="$cfg" '$1 == "MS_PER_STEP" {printf "%s\t%s\ttorch_ms_per_step\t%s\n", r, c, $2}' \
      "$log.out" >>"$RAW"
  fi
  grep -h -E '^(RESULT|MS_PER_STEP)' "$log.out" | sed "s/^/  r$round $cfg: /" || true
}

echo "=== launch_overhead: $ROUNDS rounds x ($NLAUNCH launches x $REPS reps, best rep)"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="plain kcheck"; else order="kcheck plain"; fi
  for cfg in $order; do one "$cfg" "$r" launch "$BIN" "$NLAUNCH" "$REPS"; done
done

echo "=== train_small.py: $TROUNDS rounds x $TSTEPS steps"
# Warm the Triton cache so no round pays for compilation.
"$PYTHON" test/gpu/train_small.py --steps 2 >"$WORK/logs/torch_warmup.out" 2>&1 || true
for r in $(seq 1 "$TROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="plain kcheck"; else order="kcheck plain"; fi
  for cfg in $order; do
    one "$cfg" "$r" torch "$PYTHON" test/gpu/train_small.py --steps "$TSTEPS" --warmup 10
  done
done

"$PYTHON" - "$RAW" "$WORK/bench.md" "$ROUNDS" "$TROUNDS" "$NLAUNCH" "$REPS" "$TSTEPS" "$errors" <<'EOF'
import collections, statistics, sys, datetime, platform, subprocess
raw, out, rounds, trounds, nlaunch, reps, tsteps, errors = sys.argv[1:]
vals = collections.defaultdict(list)
with open(raw) as f:
    next(f)
    for line in f:
        r, cfg, metric, v = line.rstrip("\n").split("\t")
        vals[(metric, cfg)].append(float(v))
rows = [
    ("runtime_ns_per_launch", "`<<<>>>` launch + sync, ns/launch", "ns"),
    ("runtime_submit_ns_per_launch", "`<<<>>>` launch loop only, ns/launch", "ns"),
    ("driver_ns_per_launch", "`cuLaunchKernel` launch + sync, ns/launch", "ns"),
    ("driver_submit_ns_per_launch", "`cuLaunchKernel` launch loop only, ns/launch", "ns"),
    ("torch_ms_per_step", "train_small.py, ms/step (overall)", "ms"),
]
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
except OSError:
    gpu = "?"
lines = [
    "# kcheck pass-through overhead",
    "",
    f"{datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}, {gpu}, "
    f"host {platform.node()}. kcheck with default options (pass-through), runs alternating "
    f"with/without. Medians over {rounds} rounds of bench/launch_overhead ({nlaunch} launches "
    f"of a 1-block kernel per rep, best of {reps} reps per process) and {trounds} rounds of "
    f"test/gpu/train_small.py ({tsteps} steps, first 10 untimed).",
    "",
    "| metric | without kcheck | with kcheck | difference | ratio |",
    "|---|---:|---:|---:|---:|",
]
for key, label, unit in rows:
    a, b = vals.get((key, "plain"), []), vals.get((key, "kcheck"), [])
    if not a or not b:
        lines.append(f"| {label} | {'n/a' if not a else f'{statistics.median(a):.2f}'} | "
                     f"{'n/a' if not b else f'{statistics.median(b):.2f}'} | n/a | n/a |")
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    lines.append(f"| {label} | {ma:.2f} | {mb:.2f} | {mb - ma:+.2f} {unit} | {mb / ma:.3f} |")
lines += ["", "Raw values per round (without / with):", ""]
for key, label, unit in rows:
    a, b = vals.get((key, "plain"), []), vals.get((key, "kcheck"), [])
    lines.append(f"- {key}: " + ", ".join(f"{x:.2f}" for x in a) + " / " + ", ".join(f"{x:.2f}" for x in b))
if int(errors):
    lines += ["", f"**{errors} run(s) failed or ran without kcheck loaded; see bench-logs.tar.gz.**"]
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
EOF

{
  cat "$WORK/bench.md"
  echo
  echo "## Commands"
  echo '```'
  cat "$CMDS"
  echo '```'
} >"$OUTDIR/bench.md"
tar -czf "$OUTDIR/bench-logs.tar.gz" -C "$WORK" logs reports
rm -rf "$WORK"
echo "wrote $OUTDIR/bench.md and $OUTDIR/bench-logs.tar.gz"
if [ "$errors" != 0 ]; then
  echo "FAIL: $errors benchmark run(s) failed" >&2
  exit 1
fi
