#!/usr/bin/env bash
# test/gpu/races/run_access_gpu.sh — one device call for the access-level
# check: the planted corpus with every race strategy (each gets its column)
# and racecheck side by side (run_corpus.sh), then what must not change
# (issue 12, requirement 5): test/gpu/races.cu's planted races and clean
# kernels under default options, and PyTorch's index_add_/scatter_add_
# (flagged) and mm (not).
#
#   bash test/gpu/races/run_access_gpu.sh OUTDIR
#
# OUTDIR/c: corpus.md, corpus.json, corpus-logs.tar.gz; OUTDIR/req5.txt:
# one line per races.cu kernel and torch mode (checks, violations by gate,
# the result hash with and without kcheck); OUTDIR/req5-logs.tar.gz.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
OUTDIR=${1:-${OUT:-gpu-out}}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
LIB="$ROOT/$BUILD/libkcheck.so"
RACES="$ROOT/$BUILD/gpu/races"
KC_CORPUS_OPTIONS=${KC_CORPUS_OPTIONS:-race_strategies=scrub,green,smem,hammer,l2flush,jitter,warporder,accesses} \
  bash test/gpu/races/run_corpus.sh "$OUTDIR/c" >"$OUTDIR/corpus.out" 2>&1
echo "corpus: exit $?" >"$OUTDIR/req5.txt"
W=$(mktemp -d "${TMPDIR:-/tmp}/kcheck-req5.XXXXXX")
summ() { # NAME: checks, violations by gate of the kcheck report W/NAME.*.jsonl
  "$PYTHON" - "$W/$1" <<'EOF'
import collections, glob, json, sys
recs = []
for f in glob.glob(sys.argv[1] + ".*.jsonl"):
    for line in open(f, errors="replace"):
        try:
            recs.append(json.loads(line))
        except ValueError:
            pass
chk = sum(r.get("type") == "check" for r in recs)
by = collections.Counter(r["gate"] for r in recs if r.get("type") == "violation")
acc = sum(1 for r in recs if r.get("type") == "check" and "access_conflict" in r.get("gates", {}).get("race", {}))
st = sorted({r.get("gates", {}).get("race", {}).get("strategies", {}).get("accesses", "-")
             for r in recs if r.get("type") == "check"})
print(f"checks={chk} violations={dict(by)} access_conflicts={acc} accesses_status={st}")
EOF
}
if [ -x "$RACES" ]; then
  for k in $("$RACES" list); do
    timeout 60 "$RACES" "$k" >"$W/$k.plain" 2>&1
    timeout 120 env LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$W/$k:verbosity=0" "$RACES" "$k" \
      >"$W/$k.kc" 2>"$W/$k.kcerr"
    hp=$(awk '$1 == "RESULT" {print $3}' "$W/$k.plain")
    hk=$(awk '$1 == "RESULT" {print $3}' "$W/$k.kc")
    echo "races $k: $(summ "$k") plain_$hp kcheck_$hk" >>"$OUTDIR/req5.txt"
  done
else
  echo "races: no $RACES" >>"$OUTDIR/req5.txt"
fi
for m in index_add scatter_add mm; do
  timeout 120 env LD_PRELOAD="$LIB" KCHECK_OPTIONS="log_path=$W/torch_$m:verbosity=0" \
    "$PYTHON" test/gpu/torch_nondet.py "$m" >"$W/torch_$m.out" 2>"$W/torch_$m.err"
  echo "torch $m: exit $? $(summ "torch_$m") $(grep '^OP' "$W/torch_$m.out" | head -1)" >>"$OUTDIR/req5.txt"
done
tar -C "$W" -czf "$OUTDIR/req5-logs.tar.gz" .
cat "$OUTDIR/req5.txt"
