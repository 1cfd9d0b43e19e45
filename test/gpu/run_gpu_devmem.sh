#!/usr/bin/env bash
# test/gpu/run_gpu_devmem.sh — kcheck's device memory on the GPU (issue 37):
# a small GPT-style training step (bench/transformer_step.py through
# test/gpu/devmem_step.py, which samples cuMemGetInfo) run plain and under
# kcheck, then each run's device memory beside the summary's device_mem.
#
#   test/gpu/run_gpu_devmem.sh [OUTDIR]      (default: $OUT, else ./gpu-out)
#
# Configurations (KC_DM_CONFIGS): plain; default (kcheck's defaults:
# device_mem_budget=256M); torch (--torch); nocap (device_mem_budget=0, the
# accounting without the cap); tiny (device_mem_budget=1M: checks become
# skips with the reason). PASS when every kcheck run's loss is bitwise the
# plain one, its summary has device_mem, the alloc categories' peak stays
# within the budget (default, tiny), and tiny has device_mem_budget skips.
# The table gives in-use peak and at exit minus plain's, kcheck's own peak
# and categories, checks and skips. KC_DM_MODEL: the step's arguments
# ("--layers 6 --d-model 512 --heads 8 --seq 256 --batch 16 --steps 20");
# KC_DM_SCRIPT: another program than bench/transformer_step.py (devmem_step.py),
# e.g. test/gpu/torch_models.py with KC_DM_MODEL="llama --steps 6", or
# test/gpu/serving/harness.py with KC_DM_MODEL="--requests 64" and the
# configuration serving (--serving; its result is the tokens' sha256,
# which must be plain's).
# Writes OUTDIR/devmem-results.md.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$ROOT/test/gpu/common.sh"
kc_gpu_init "$ROOT" devmem "${1:-}"
BUDGET=${KC_BUDGET:-540}
export KCHECK_LIB=$LIB
KC=("$PYTHON" "$ROOT/scripts/kcheck")
read -r -a MODEL <<<"${KC_DM_MODEL:---layers 6 --d-model 512 --heads 8 --seq 256 --batch 16 --steps 20}"
STEP=("$PYTHON" "$ROOT/test/gpu/devmem_step.py" "${MODEL[@]}")
CONFIGS=${KC_DM_CONFIGS:-"plain default torch nocap tiny"}
RES=$OUTDIR/devmem-results.md

for c in $CONFIGS; do
  case $c in
    plain) run_logged 300 plain "${STEP[@]}" ;;
    default) run_logged 300 default "${KC[@]}" run -o "log_path=$REPS/default" -- "${STEP[@]}" ;;
    torch) run_logged 300 torch "${KC[@]}" run --torch -o "log_path=$REPS/torch" -- "${STEP[@]}" ;;
    nocap) run_logged 300 nocap "${KC[@]}" run -o device_mem_budget=0 -o "log_path=$REPS/nocap" -- "${STEP[@]}" ;;
    serving) run_logged 300 serving "${KC[@]}" run --serving -o "log_path=$REPS/serving" -- "${STEP[@]}" ;;
    tiny) run_logged 300 tiny "${KC[@]}" run -o device_mem_budget=1M -o "log_path=$REPS/tiny" -- "${STEP[@]}" ;;
  esac
done

{
  echo "# kcheck's device memory on the GPU"
  echo
  bench_env
  echo "program: ${KC_DM_SCRIPT:-bench/transformer_step.py} ${MODEL[*]}"
  echo
} >"$RES"
"$PYTHON" - "$LOGS" "$REPS" "$CONFIGS" >>"$RES" <<'PY'
import glob, json, os, sys
logs, reps, configs = sys.argv[1], sys.argv[2], sys.argv[3].split()
def out(name):
    d = {}
    try:
        for l in open(os.path.join(logs, name + ".out")):
            p = l.split()
            if len(p) == 2 and p[0] in ("DEVICE_USED_PEAK", "DEVICE_USED_EXIT", "TORCH_MAX_RESERVED", "FINAL_LOSS"):
                d[p[0]] = p[1]
            elif len(p) == 3 and p[:2] == ["tokens", "sha256"]:  # the serving harness's result
                d["FINAL_LOSS"] = p[2]
    except OSError:
        pass
    return d
def mib(n):
    return "%.1f" % (int(n) / 1048576.0)
plain = out("plain")
fails = 0
print("| config | in use peak MiB (+plain) | at exit MiB (+plain) | torch reserved MiB | kcheck peak MiB | budget MiB | refused | checks | skips (budget) | loss | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
cats_rows = []
for c in configs:
    o = out(c)
    row = [c]
    for k in ("DEVICE_USED_PEAK", "DEVICE_USED_EXIT"):
        if k in o and k in plain and c != "plain":
            row.append("%s (%+d)" % (mib(o[k]), (int(o[k]) - int(plain[k])) // 1048576))
        else:
            row.append(mib(o[k]) if k in o else "?")
    row.append(mib(o["TORCH_MAX_RESERVED"]) if "TORCH_MAX_RESERVED" in o else "?")
    verdict = "PASS" if o.get("FINAL_LOSS") else "FAIL (no loss)"
    if c == "plain":
        row += ["", "", "", "", "", o.get("FINAL_LOSS", "?"), verdict]
    else:
        recs = []
        for f in glob.glob(os.path.join(reps, c + ".*.jsonl")):
            recs += [json.loads(l) for l in open(f) if l.strip()]
        summ = [r for r in recs if r.get("type") == "summary"]
        dm = summ[-1].get("device_mem") if summ else None
        skips = [r for r in recs if r.get("type") == "skip"]
        bskips = [s for s in skips if str(s.get("reason", "")).startswith("device_mem_budget:")]
        checks = sum(1 for r in recs if r.get("type") == "check")
        if not dm:
            verdict = "FAIL (no device_mem in the summary)"
            row += ["?", "?", "?", str(checks), "%d (%d)" % (len(skips), len(bskips))]
        else:
            allocs = {k: v for k, v in dm["categories"].items() if v["how"] == "alloc"}
            if dm["budget"] and any(v["peak"] > dm["budget"] for v in allocs.values()):
                verdict = "FAIL (a category past the budget)"
            if c == "tiny" and not bskips:
                verdict = "FAIL (no device_mem_budget skip)"
            row += [mib(dm["peak"]), mib(dm["budget"]), str(dm["refused"]), str(checks),
                    "%d (%d)" % (len(skips), len(bskips))]
            cats_rows.append((c, dm))
        if o.get("FINAL_LOSS") != plain.get("FINAL_LOSS"):
            verdict = "FAIL (loss differs from plain)"
        row += [o.get("FINAL_LOSS", "?"), verdict]
    fails += not row[-1].startswith("PASS")
    print("| " + " | ".join(row) + " |")
print()
for c, dm in cats_rows:
    print("%s, kcheck's categories (peak / allocated in all MiB, count, refused):" % c)
    print()
    for name, v in dm["categories"].items():
        print("- %s (%s): %.1f / %.1f, %d, %d" % (name, v["how"], v["peak"] / 1048576.0,
                                                   v["allocated"] / 1048576.0, v["count"], v["refused"]))
    print()
print("RESULT: %s" % ("PASS" if not fails else "%d FAIL" % fails))
PY
cat "$RES"
grep -q '^RESULT: PASS' "$RES"
