#!/usr/bin/env bash
# bench/run_profile.sh — where kcheck's per-launch time goes on the real
# driver: profile=1 (per-stage time of the launch path, kcheck's driver calls)
# on a launch-heavy microbenchmark and on the GPT-style training step.
#
#   bench/run_profile.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# 1. build/gpu/launch_overhead KC_PROF_LAUNCHES (50000) launches x 1 rep:
#    plain, gates=none, default options, gates=none:trace=1 (all but plain
#    with profile=1).
# 2. bench/transformer_step.py at the GPT-style size (6 layers, d_model 512,
#    seq 256, batch 16, AdamW, fp32; KC_PROF_MODEL overrides the arguments):
#    plain, gates=none, default, gates=none:trace=1 for KC_PROF_STEPS (14)
#    steps, and default for KC_PROF_WARM (4) steps: the difference of the two
#    default runs is the steady state (launches after the warm-up steps).
# Writes OUTDIR/profile.md (per-stage ns per launch of every run) and
# OUTDIR/profile-logs.tar.gz (logs, the profile/skip/check records).
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/gpu/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" profile "${1:-}"
BUDGET=${KC_BUDGET:-240}
NL=${KC_PROF_LAUNCHES:-50000}
STEPS=${KC_PROF_STEPS:-14}
WARM=${KC_PROF_WARM:-4}
read -r -a MODEL <<<"${KC_PROF_MODEL:---layers 6 --d-model 512 --seq 256 --batch 16}"
BIN="$BUILD/gpu/launch_overhead"
errors=0

bench_env >"$LOGS/env.txt"
cat "$LOGS/env.txt"

one() { # NAME OPTIONS(or -) CMD...
  local name=$1 opts=$2
  shift 2
  local envk=()
  [ "$opts" != - ] && envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$name${opts:+:$opts}")
  if ! run_logged 120 "$name" env "${envk[@]}" "$@"; then
    echo "  $name FAILED" >&2
    tail -n 8 "$LOGS/$name.err" >&2 || true
    errors=$((errors + 1))
  fi
  grep -h -E '^(RESULT|STEADY_MS|FIRST_SIGHT)' "$LOGS/$name.out" | sed "s/^/  $name: /" || true
}

echo "=== launch_overhead ($NL launches)"
one lo_plain - "$BIN" "$NL" 1
one lo_none gates=none:profile=1 "$BIN" "$NL" 1
one lo_default profile=1 "$BIN" "$NL" 1
one lo_trace gates=none:trace=1:profile=1 "$BIN" "$NL" 1

echo "=== transformer_step.py ${MODEL[*]} ($STEPS steps; default also $WARM)"
T=("$PYTHON" bench/transformer_step.py "${MODEL[@]}")
one ts_plain - "${T[@]}" --steps "$STEPS"
one ts_none gates=none:profile=1 "${T[@]}" --steps "$STEPS"
one ts_default profile=1 "${T[@]}" --steps "$STEPS"
one ts_default_warm profile=1 "${T[@]}" --steps "$WARM"
one ts_trace gates=none:trace=1:profile=1 "${T[@]}" --steps "$STEPS"

# Keep the small records of every report (trace reports are large).
mkdir -p "$WORK/records"
for f in "$REPS"/*.jsonl; do
  [ -e "$f" ] || continue
  grep -v '"type":"launch"' "$f" >"$WORK/records/$(basename "$f")" || true
  grep -m 3 '"type":"launch"' "$f" >>"$WORK/records/$(basename "$f")" || true
done
"$PYTHON" - "$WORK/records" "$LOGS" "$STEPS" "$WARM" >"$WORK/profile.md" <<'PY' || echo "(summary failed)" >>"$WORK/profile.md"
import glob, json, os, sys
recdir, logs, steps, warm = sys.argv[1:]
def prof(name):
    for f in glob.glob(os.path.join(recdir, name + ".*.jsonl")):
        for line in open(f):
            r = json.loads(line)
            if r.get("type") == "profile":
                return r
    return None
def ms(name, key):
    try:
        for line in open(os.path.join(logs, name + ".out")):
            p = line.split()
            if p and p[0] == key:
                return p[1]
    except OSError:
        pass
    return "-"
def lo(name):
    try:
        for line in open(os.path.join(logs, name + ".out")):
            if line.startswith("RESULT driver"):
                return line.split()[2].split("=")[1]
    except OSError:
        pass
    return "-"
runs = ["lo_none", "lo_default", "lo_trace", "ts_none", "ts_default", "ts_default_warm", "ts_trace"]
P = {n: prof(n) for n in runs}
stages = []
for n in runs:
    if P[n]:
        stages = list(P[n]["stages"].keys())
        break
cols = runs + ["ts_steady"]
def steady(stage):
    a, b = P.get("ts_default"), P.get("ts_default_warm")
    if not a or not b:
        return None
    dl = a["launches"] - b["launches"]
    if dl <= 0:
        return None
    if stage == "_drv":
        return (a["driver_calls_total"] - b["driver_calls_total"]) / dl
    return (a["stages"][stage]["ns"] - b["stages"][stage]["ns"]) / dl
print("# kcheck launch-path profile (profile=1) on the real driver\n")
print(open(os.path.join(logs, "env.txt")).read().replace("\n", "; "))
print()
print("ns per launch of each stage (stage total / all launches of the process); ts_steady = "
      f"(ts_default at {steps} steps - ts_default_warm at {warm} steps) / the launches between.\n")
print("| stage | " + " | ".join(cols) + " |")
print("|---|" + "---:|" * len(cols))
print("| launches | " + " | ".join(str(P[n]["launches"]) if P[n] else "-" for n in runs) + " | " +
      (str(P["ts_default"]["launches"] - P["ts_default_warm"]["launches"]) if P["ts_default"] and P["ts_default_warm"] else "-") + " |")
for s in stages:
    row = [f"{P[n]['stages'][s]['ns_per_launch']:.0f}" if P[n] else "-" for n in runs]
    v = steady(s)
    row.append("-" if v is None else f"{v:.0f}")
    print(f"| {s} | " + " | ".join(row) + " |")
row = [f"{P[n]['driver_calls_per_launch']:.3f}" if P[n] else "-" for n in runs]
v = steady("_drv")
row.append("-" if v is None else f"{v:.3f}")
print("| driver calls per launch (outside checks) | " + " | ".join(row) + " |")
print("| timer point, ns | " + " | ".join(f"{P[n]['timer_ns']:.0f}" if P[n] else "-" for n in runs) + " | |")
print()
print("Driver calls by entry:\n")
for n in runs:
    if P[n]:
        print(f"- {n}: " + ", ".join(f"{k} {v['n']} ({v['per_launch']:.3f}/launch)" for k, v in P[n]["driver_calls"].items()))
print()
print("Wall: launch_overhead cuLaunchKernel ns/launch (incl. sync): " +
      ", ".join(f"{n} {lo(n)}" for n in ["lo_plain", "lo_none", "lo_default", "lo_trace"]))
print()
print("transformer_step ms/step (first 5 / steady 6..): " +
      ", ".join(f"{n} {ms(n, 'FIRST_SIGHT_MS_PER_STEP')} / {ms(n, 'STEADY_MS_PER_STEP')}"
                for n in ["ts_plain", "ts_none", "ts_default", "ts_trace"]))
PY
{
  cat "$WORK/profile.md"
  echo
  echo "## Commands"
  echo '```'
  cat "$CMDS"
  echo '```'
} >"$OUTDIR/profile.md"
tar -czf "$OUTDIR/profile-logs.tar.gz" -C "$WORK" logs records
rm -rf "$WORK"
cat "$OUTDIR/profile.md"
[ "$errors" = 0 ]
