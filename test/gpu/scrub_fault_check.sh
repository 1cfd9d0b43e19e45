#!/bin/bash
# test/gpu/scrub_fault_check.sh — the race gate's scrub fault on a GPU:
# build/gpu/scrub_fault plain (its run must not fault: the index it reads
# is what `wipe` left, 0) and under kcheck with default options but
# kernel_include=gather_uninit (a check of `wipe` would run kcheck's kernels
# between the two), where the scrub re-run fills shared memory with a
# pattern and the gather faults.
#   BUILD=build bash test/gpu/scrub_fault_check.sh OUTDIR
# Prints PASS/FAIL lines; exit 0 when every line passed.
set -u
BUILD=${BUILD:-build}
OUT=${1:-/tmp/kcheck-scrub-fault}
mkdir -p "$OUT"
bin=$BUILD/gpu/scrub_fault
plain=$("$bin" 2>&1)
echo "plain: rc=$? $plain"
KCHECK_OPTIONS="log_path=$OUT/kc:kernel_include=gather_uninit" LD_PRELOAD=$BUILD/libkcheck.so "$bin" >"$OUT/kc.out" 2>"$OUT/kc.err"
echo "under kcheck: rc=$? $(cat "$OUT/kc.out")"
grep -E "faulted|internal" "$OUT/kc.err" | head -5
python3 - "$OUT" "$plain" <<'PY'
import glob, json, sys
out, plain = sys.argv[1], sys.argv[2]
recs = [json.loads(l) for f in sorted(glob.glob(out + "/kc.*.jsonl")) for l in open(f)]
checks = [r for r in recs if r["type"] == "check" and "gather_uninit" in r.get("kernel_name", "")]
faults = [r for r in recs if r["type"] == "violation" and "gather_uninit" in r.get("kernel_name", "")
          and (r.get("evidence") or {}).get("verdict") == "faulted"]
for c in checks:
    print("gather_uninit check:", json.dumps({g: {k: e.get(k) for k in ("status", "error", "error_run", "strategies")}
                                              for g, e in c.get("gates", {}).items() if isinstance(e, dict)}))
fails = 0
def report(name, ok, detail=""):
    global fails
    fails += not ok
    print("%s %s %s" % ("PASS" if ok else "FAIL", name, detail))
report("the plain run gathers in[0] and its context keeps working", "gather=ok" in plain and "after=cudaSuccess" in plain, plain)
report("gather_uninit checked", bool(checks), len(checks))
report("one race finding: the scrub run faulted (cause uninit-shared-memory, exposed by scrub)",
       len(faults) == 1 and faults[0].get("gate") == "race" and faults[0].get("cause") == "uninit-shared-memory"
       and faults[0].get("exposed_by") == ["scrub"], json.dumps(faults)[:600])
sys.exit(1 if fails else 0)
PY
