#!/usr/bin/env bash
# bench/run_targets.sh — kcheck's overhead on the GPT-style training step,
# every figure a ratio to the plain run of the same device call.
#
#   bench/run_targets.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# bench/transformer_step.py at KC_T_MODEL (6 layers, d_model 512, seq 256,
# batch 16, AdamW, fp32), KC_T_STEPS (30) steps per process, configurations
# alternating for KC_T_ROUNDS (2) rounds, medians:
#   plain | gates=none | default | gates=none:trace=1 | gates=none:trace=2
# Reported per configuration: first steps (1-3) ms/step, steady (steps 4..)
# ms/step, the whole run's wall time (process start to exit), checks, skip
# records, launch records, and whether FINAL_LOSS is bitwise the plain one.
# Then: build/gpu/launch_overhead per config; profile=1 of the default and
# trace=1 runs (per-stage ns per launch); the costliest checks against their
# floor (plain torch.profiler run); anchors (compute-sanitizer memcheck and
# racecheck, TORCH_CUDA_SANITIZER=1) for a few steps each, as time allows.
# KC_BUDGET (300 s) bounds the whole. Writes OUTDIR/targets.md and
# OUTDIR/targets-logs.tar.gz.
set -euo pipefail

# shellcheck source=test/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/gpu/common.sh"
kc_gpu_init "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" targets "${1:-}"
BUDGET=${KC_BUDGET:-300}
ROUNDS=${KC_T_ROUNDS:-2}
STEPS=${KC_T_STEPS:-30}
FIRST=3
read -r -a MODEL <<<"${KC_T_MODEL:---layers 6 --d-model 512 --seq 256 --batch 16}"
T=("$PYTHON" bench/transformer_step.py "${MODEL[@]}")
SUMM=("$PYTHON" "$ROOT/test/gpu/kc_summarize.py")
errors=0

bench_env >"$LOGS/env.txt"
cat "$LOGS/env.txt"

opts_of() {
  case "$1" in
    plain) echo - ;;
    none) echo gates=none ;;
    default) echo "" ;;
    trace1) echo gates=none:trace=1 ;;
    trace2) echo gates=none:trace=2 ;;
  esac
}
# one NAME OPTS(- = no kcheck) TIMEOUT CMD... ; WALL_<NAME> = seconds
declare -A WALL
one() {
  local name=$1 opts=$2 tmo=$3
  shift 3
  local envk=()
  [ "$opts" != - ] && envk=(LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$REPS/$name${opts:+:$opts}")
  local t0 t1 rc=0
  t0=$(date +%s.%N)
  run_logged "$tmo" "$name" env "${envk[@]}" "$@" || rc=$?
  t1=$(date +%s.%N)
  WALL[$name]=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
  if [ "$rc" != 0 ]; then
    echo "  $name: exit $rc" >&2
    tail -n 5 "$LOGS/$name.err" >&2 || true
  fi
  return "$rc"
}

echo "=== transformer_step.py ${MODEL[*]}: $ROUNDS rounds x $STEPS steps"
"${T[@]}" --steps 2 >"$LOGS/warmup.out" 2>&1 || true # page cache, cuBLAS files
CONFIGS=(plain none default trace1)
for r in $(seq 1 "$ROUNDS"); do
  for c in "${CONFIGS[@]}"; do
    one "${c}_r$r" "$(opts_of "$c")" 120 "${T[@]}" --steps "$STEPS" || errors=$((errors + 1))
    echo "  ${c}_r$r: $(grep -h -E '^STEADY_MEDIAN_MS' "$LOGS/${c}_r$r.out" || true) wall ${WALL[${c}_r$r]} s"
  done
done
one trace2_r1 "$(opts_of trace2)" 120 "${T[@]}" --steps 10 || errors=$((errors + 1))

echo "=== profile=1 (default: $STEPS and 5 steps; trace=1)"
one prof_default profile=1 120 "${T[@]}" --steps "$STEPS" || true
one prof_default5 profile=1 120 "${T[@]}" --steps 5 || true
one prof_trace gates=none:trace=1:profile=1 120 "${T[@]}" --steps "$STEPS" || true

echo "=== launch_overhead"
for c in plain none default trace1; do
  one "lo_$c" "$(opts_of "$c")" 60 "$BUILD/gpu/launch_overhead" 50000 2 || true
done

echo "=== kernel times (plain, torch.profiler) for the floor"
one floor_profile - 120 "${T[@]}" --steps 3 --profile-out "$LOGS/profile.json" || true

echo "=== anchors"
SAN=$(command -v compute-sanitizer || echo "$CUDA_HOME/bin/compute-sanitizer")
one san_memcheck - 90 "$SAN" --tool memcheck --print-limit 10 "${T[@]}" --steps 3 || true
one torch_sanitizer - 60 env TORCH_CUDA_SANITIZER=1 "${T[@]}" --steps 3 || true
one san_racecheck - 45 "$SAN" --tool racecheck --print-limit 10 "${T[@]}" --steps 2 || true

"$PYTHON" - "$LOGS" "$REPS" "$ROUNDS" "$STEPS" "$FIRST" "$(declare -p WALL)" >"$WORK/targets.md" <<'PY' || echo "(summary failed)" >>"$WORK/targets.md"
import glob, json, os, re, statistics, sys
logs, reps, rounds, steps, first, wall_decl = sys.argv[1:]
rounds, steps, first = int(rounds), int(steps), int(first)
WALL = dict(re.findall(r'\[([^\]]+)\]="([^"]*)"', wall_decl))
def steps_of(name):
    out = []
    try:
        for line in open(os.path.join(logs, name + ".out")):
            p = line.split()
            if len(p) == 3 and p[0] == "STEP":
                out.append(float(p[2]))
    except OSError:
        pass
    return out
def key(name, k):
    try:
        for line in open(os.path.join(logs, name + ".out")):
            p = line.split()
            if p and p[0] == k:
                return p[1]
    except OSError:
        pass
    return None
def records(name):
    recs = []
    for f in glob.glob(os.path.join(reps, name + ".*.jsonl")):
        for line in open(f):
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    return recs
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def f(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"
plain_loss = key("plain_r1", "FINAL_LOSS")
rows = {}
for c in ["plain", "none", "default", "trace1", "trace2"]:
    names = [f"{c}_r{r}" for r in range(1, rounds + 1)]
    if c == "trace2":
        names = ["trace2_r1"]
    fs, ss, ws, ck, sk, lr, same = [], [], [], [], [], [], []
    for n in names:
        st = steps_of(n)
        if not st:
            continue
        fs.append(statistics.fmean(st[:first]))
        ss.append(statistics.median(st[first:]) if len(st) > first else None)
        ws.append(float(WALL.get(n, "nan")))
        recs = records(n)
        ck.append(sum(1 for r in recs if r.get("type") == "check"))
        late = [r for r in recs if r.get("type") == "skip"]
        sk.append(len(late))
        lr.append(sum(1 for r in recs if r.get("type") == "launch"))
        same.append(key(n, "FINAL_LOSS") == plain_loss)
    rows[c] = dict(first=med(fs), steady=med(ss), wall=med(ws), checks=ck, skips=sk, launches=lr,
                   same=same, raw_steady=ss, raw_first=fs, raw_wall=ws)
P = rows["plain"]
def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b
print("# kcheck overhead targets on the GPT-style training step\n")
print(open(os.path.join(logs, "env.txt")).read().replace("\n", "; "))
print(f"\nbench/transformer_step.py, {steps} steps per process (trace2: 10), {rounds} alternating rounds, "
      f"medians. first = mean of steps 1-{first}; steady = median of steps {first + 1}..; wall = the "
      "whole process (start, model build, all steps, exit).\n")
print("| mode | first ms/step | ratio | steady ms/step | ratio | wall s | ratio | checks | skip records | launch records | loss bitwise = plain |")
print("|---|---:|---:|---:|---:|---:|---:|---|---|---|---|")
label = {"plain": "plain", "none": "`gates=none`", "default": "default options",
         "trace1": "`gates=none:trace=1`", "trace2": "`gates=none:trace=2` (10 steps)"}
for c, r in rows.items():
    print(f"| {label[c]} | {f(r['first'])} | {f(ratio(r['first'], P['first']), 3)} | {f(r['steady'])} | "
          f"{f(ratio(r['steady'], P['steady']), 3)} | {f(r['wall'])} | {f(ratio(r['wall'], P['wall']), 3)} | "
          f"{r['checks']} | {r['skips']} | {r['launches']} | {r['same']} |")
print("\nPer round (steady ms/step): " + "; ".join(
    f"{c} " + ", ".join(f(x) for x in r["raw_steady"]) for c, r in rows.items()))
print("Per round (wall s): " + "; ".join(
    f"{c} " + ", ".join(f(x) for x in r["raw_wall"]) for c, r in rows.items()))
# per-step check/skip growth in the default run: records after step `first`
d = records("default_r1")
# profile
def prof(n):
    for r in records(n):
        if r.get("type") == "profile":
            return r
a, b, t = prof("prof_default"), prof("prof_default5"), prof("prof_trace")
if a and b and t:
    dl = a["launches"] - b["launches"]
    print(f"\n## profile=1: ns per launch by stage\n\ndefault steady = (default at {steps} steps - at 5 "
          f"steps) / the {dl} launches between; trace=1 over all {t['launches']} launches.\n")
    print("| stage | default, steady | gates=none:trace=1 |")
    print("|---|---:|---:|")
    for s in a["stages"]:
        v = (a["stages"][s]["ns"] - b["stages"][s]["ns"]) / dl if dl > 0 else 0
        print(f"| {s} | {v:.0f} | {t['stages'][s]['ns_per_launch']:.0f} |")
    dv = (a["driver_calls_total"] - b["driver_calls_total"]) / dl if dl > 0 else 0
    print(f"| driver calls per launch | {dv:.3f} | {t['driver_calls_per_launch']:.3f} |")
lo = {}
for c in ["plain", "none", "default", "trace1"]:
    try:
        for line in open(os.path.join(logs, f"lo_{c}.out")):
            if line.startswith("RESULT driver"):
                lo[c] = float(line.split()[2].split("=")[1])
    except OSError:
        pass
if lo:
    print("\n## launch_overhead (50000 launches of a 1-block kernel, cuLaunchKernel + sync, best of 2)\n")
    print("| mode | ns/launch | kcheck ns/launch |")
    print("|---|---:|---:|")
    for c, v in lo.items():
        print(f"| {c} | {v:.0f} | {v - lo.get('plain', v):+.0f} |")
print("\n## anchors (same script, same device call)\n")
print("| tool | steps done | ms/step (steps 2..) | ratio to plain steady | wall s | found |")
print("|---|---|---:|---:|---:|---|")
for n, lab in [("san_memcheck", "compute-sanitizer --tool memcheck"), ("san_racecheck", "compute-sanitizer --tool racecheck"),
               ("torch_sanitizer", "TORCH_CUDA_SANITIZER=1")]:
    st = steps_of(n)
    per = statistics.fmean(st[1:]) if len(st) > 1 else (st[0] if st else None)
    found = []
    for ext in (".out", ".err"):
        try:
            for line in open(os.path.join(logs, n + ext)):
                if re.search(r"(ERROR SUMMARY|RACECHECK SUMMARY|Detected|CSAN|TIMED OUT)", line):
                    found.append(line.strip()[:120])
        except OSError:
            pass
    print(f"| {lab} | {len(st)} | {f(per)} | {f(ratio(per, P['steady']), 1)} | {WALL.get(n, '-')} | "
          f"{'; '.join(found[:3]).replace('|', '/') or '-'} |")
PY
if [ -f "$LOGS/profile.json" ]; then
  mapfile -t dreps < <(reports_of default_r1)
  {
    echo
    echo "## checks of the default run (round 1) against their floor"
    echo
    echo "floor = (1 + runs) x kernel time (plain torch.profiler mean by name) + 2 x saved_bytes / copy bandwidth"
    echo
    "${SUMM[@]}" costs --profile "$LOGS/profile.json" --top 10 "${dreps[@]}" 2>&1 || true
  } >>"$WORK/targets.md"
fi
{
  cat "$WORK/targets.md"
  echo
  echo "## Commands"
  echo '```'
  cat "$CMDS"
  echo '```'
} >"$OUTDIR/targets.md"
mkdir -p "$WORK/records"
for fr in "$REPS"/*.jsonl; do
  [ -e "$fr" ] || continue
  grep -v '"type":"launch"' "$fr" >"$WORK/records/$(basename "$fr")" || true
done
tar -czf "$OUTDIR/targets-logs.tar.gz" -C "$WORK" logs records
rm -rf "$WORK"
cat "$OUTDIR/targets.md"
[ "$errors" = 0 ]
