#!/usr/bin/env bash
# test/gpu/run_gpu_models.sh — the binding's reach over whole training
# steps (issue: the oracle over the whole training step): each model of
# test/gpu/torch_models.py trained a few steps plain and under
# `kcheck run --torch`: loss and parameters bitwise equal, 0 violations,
# and the binding's judged share of the ops (by count) and of the timed
# step's GPU time, with the ops whose time was not judged.
#   usage: test/gpu/run_gpu_models.sh [OUTDIR]   (BUILD=.. the build folder)
#   KC_MODELS="gpt llama gpt2 bert cnn"  KC_MODEL_STEPS=6  KC_MODEL_MODES="fp32 bf16"
#   KC_MODEL_OPTS="-o torch_time_step=3"  (further kcheck options for the runs under --torch)
#   BUDGET=seconds for the whole run (default 300)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/test/gpu/common.sh"
kc_gpu_init "$ROOT" models "${1:-}"
BUDGET=${BUDGET:-300}
export KCHECK_LIB=$LIB
KC=("$PYTHON" "$ROOT/scripts/kcheck")
RES=$OUTDIR/models.md
: >"$OUTDIR/models-details.jsonl"
fails=0
rows=()
for mode in ${KC_MODEL_MODES:-fp32 bf16}; do
  flag=""
  [ "$mode" = bf16 ] && flag=--bf16
  for m in ${KC_MODELS:-gpt llama gpt2 bert cnn}; do
    n="${m}_$mode"
    args=(test/gpu/torch_models.py "$m" --steps "${KC_MODEL_STEPS:-6}" $flag)
    run_logged 120 "${n}_plain" "$PYTHON" "${args[@]}" --profile 4
    # shellcheck disable=SC2086  # KC_MODEL_OPTS: further "-o key=value" words
    run_logged 240 "${n}_torch" "${KC[@]}" run --torch -o "log_path=$REPS/$n" ${KC_MODEL_OPTS:-} -- \
      "$PYTHON" "${args[@]}"
    rc=$?
    row=$(DETAILS=$OUTDIR/models-details.jsonl RUN=$n PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" - "$LOGS/${n}_plain.out" "$LOGS/${n}_torch.out" "$rc" $(reports_of "$n") <<'PYEOF'
import json, os, sys
plain, torch_out, rc, reports = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def digest(p):
    d = dict(l.split(None, 1) for l in open(p) if l.startswith(("FINAL_LOSS", "PARAMS_SHA256")))
    return (d.get("FINAL_LOSS", "").strip(), d.get("PARAMS_SHA256", "").strip())
a, b = digest(plain), digest(torch_out)
recs = [json.loads(l) for p in reports for l in open(p)]
summ = [r for r in recs if r.get("type") == "torch_summary"]
viol = [r for r in recs if r.get("type") == "violation"]
# PyTorch's documented nondeterminism (embedding backward) is named, not a failure of the step
real = [v for v in viol if v.get("cause") != "documented by PyTorch"]
s = summ[0] if summ else {}
# the share of the ops that compute values on the GPU (views, item(), markers and calls on
# no watched device, a model built on the CPU, left out, as the summary)
from kcheck.op_report import computing
seen = computing(s)
judged = s.get("ops_judged", 0)
t = s.get("time_judged") or {}
share = t.get("share")
top = ", ".join("%s %.0fus %.0f%%" % (r["op"].replace("aten::", ""), r["us"], 100 * r["judged"])
                for r in t.get("by_op", []) if r["judged"] < 1)[:400]
ok = rc == 0 and a[0] and a == b and summ and not real
prof = [l.split(None, 1)[1] for l in open(plain) if l.startswith("PLAIN_PROFILE")]
with open(os.environ["DETAILS"], "a") as f:  # the evidence behind the row
    f.write(json.dumps({"run": os.environ["RUN"], "summary": s,
                        "plain_profile": json.loads(prof[0]) if prof else None,
                        "violations": [{k: v.get(k) for k in ("gate", "op", "kernel_name", "message",
                                        "evidence", "attrs", "inputs", "profile", "output")}
                                       for v in real[:6]]}) + "\n")
print("%s|%s|%d (%d named)|%d/%d (%.1f%%)|%s|%s|%s" % (
    "PASS" if ok else "FAIL", "equal" if a == b and a[0] else "DIFFER %s %s" % (a[0], b[0]),
    len(real), len(viol) - len(real), judged, seen, 100.0 * judged / seen if seen else 0,
    ("%.1f%% of %.0f us (step %s)" % (100 * share, t["total_us"], t.get("step"))) if share is not None
    else "not measured: %s" % t.get("not_measured"),
    top or "-", ", ".join(sorted({v.get("gate", "?") + ":" + str(v.get("op") or v.get("kernel_name", "?"))[:60] for v in real}))[:300] or "-"))
PYEOF
)
    st=${row%%|*}
    [ "$st" = PASS ] || fails=$((fails + 1))
    rows+=("| $n | ${row//|/ | } |")
    echo "[$st] $n $row"
  done
done
{
  echo "# Training steps under the binding: bitwise results, violations, judged share"
  echo
  bench_env | sed 's/^/- /'
  echo "- command: test/gpu/run_gpu_models.sh (KC_MODELS='${KC_MODELS:-gpt llama gpt2 bert cnn}' KC_MODEL_STEPS=${KC_MODEL_STEPS:-6} KC_MODEL_OPTS='${KC_MODEL_OPTS:-}')"
  echo "- wall: $(elapsed) s"
  echo
  echo "| run | status | loss and parameters | violations | ops judged (of those computing values) | GPU time judged | time not judged (op, us, judged share) | violations by gate:op |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo '```'
  cat "$CMDS"
  echo '```'
} >"$RES"
echo "results: $RES ($fails failed)"
exit $((fails > 0))
