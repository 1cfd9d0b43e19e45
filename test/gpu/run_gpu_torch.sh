#!/usr/bin/env bash
# test/gpu/run_gpu_torch.sh — the PyTorch binding on the GPU (make test-gpu-torch).
#
#   test/gpu/run_gpu_torch.sh [OUTDIR]       (default: $OUT, else ./gpu-out)
#
# (a) torch_train.py, fp32 (TF32 off) and bf16 autocast: plain and under
#     `kcheck run --torch`: loss hex and parameter hash bitwise equal, no
#     violation, every covered op checked (torch_check.py train);
# (b) torch_bugs.py with torch_bugs.yaml: each planted bug caught by its
#     gate with the Python line of the call and accepted by
#     allclose(rtol=atol=1e-2) against its twin (measured in the run), the
#     correct ops silent;
# (c) torch_nondet.py index_add / scatter_add under the binding: still
#     flagged by determinism (kernel level);
# (d) activation: python -c, python -m pytest, torchrun --nproc-per-node=1,
#     torch.multiprocessing spawn, a program that never imports torch,
#     torch.compile (compiled graph results equal; its Triton kernels seen
#     at kernel level);
# (e) bench: bench/transformer_step.py, 6 layers, d 512, ratios to the plain
#     run in the same call (bench/torch_bench_table.py): plain; none
#     (kcheck gates=none, no binding); default (kcheck's default gates at
#     kernel level, no binding); torch_dispatch (--torch with gates=none
#     and torch_watch_every=1: the dispatch mode's cost alone); torch
#     (--torch, defaults); torch_all (torch_watch_every=1); torch_nobudget
#     (torch_budget=1: every check whole at the first call); torch_oracle
#     (gates=oracle). The torch configurations' torch_summary gives where
#     the binding's time went (cost_s).
#     torch_sync (torch_async_copies=0: every host copy of a check waits
#     for the device, the default before 2026-12-08), torch_async (the
#     same as torch since then: torch_async_copies=256M),
#     torch_w50 (torch_watch_every=50), torch_oldbudget (torch_steady_budget=0.5:
#     the first steps' share kept in steady state, as before that option).
#     To split the steady-state cost: torch_none (--torch, gates=none: the
#     mode and its watch interval, no check), torch_nomode (the binding
#     installed, its mode taken off before the model is built), torch_inline
#     (torch_workers=-1: judgments on the program's thread, no worker
#     threads), torch_notime (torch_time_step=0: no step timed by
#     torch.profiler), torch_w1 (one worker), torch_prof and default_prof (profile=1,
#     profile_mark=KC_BENCH_MARK (20000 launches, ~step 50): libkcheck's own
#     cost per launch by stage after the mark). Each run prints the medians of its
#     late steps (host phases, CPU time of the program's thread and of the
#     process) and the busiest threads; KC_BENCH_PYPROF=N adds N untimed
#     steps under cProfile. KC_BENCH_OPTS: options for every kcheck run.
# Environment: KC_TORCH_PARTS, KC_TORCH_MODES, KC_TORCH_STEPS (4),
# KC_BENCH_STEPS (25), KC_BENCH_MODEL (the bench's model arguments: "--layers
# 6 --d-model 512 --heads 8", seq 128 batch 16 by default; "... --seq 256" is
# bench/run_targets.sh's size), KC_BENCH_CONFIGS, KC_BENCH_ROUNDS (1: each round in its
# own logs/r<N>, with its own table, after every other part),
# KC_BENCH_CONFIGS_LATER (the configurations of rounds 2..N), KC_BENCH_PIN (CPUs for taskset), KC_ACT (activation paths), KC_TIMEOUT
# per command (200), KC_COMPILE_TIMEOUT for the torch.compile run under the
# binding (stopped with SIGABRT: Python stacks in its .err), KC_BUDGET for the whole (540 s: no command starts or
# runs past it). The load_inline extension of the bugs part is taken from
# build/torch_ext (test/gpu/torch_ext.py build build/torch_ext), else built.
# Writes OUTDIR/torch-results.md and OUTDIR/torch-logs.tar.gz.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUTDIR=${1:-${OUT:-$ROOT/gpu-out}}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
PYTHON=${PYTHON:-python3}
STEPS=${KC_TORCH_STEPS:-4}
TMO=${KC_TIMEOUT:-200}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kcheck-torch.XXXXXX")
LOGS=$WORK/logs
mkdir -p "$LOGS"
RES=$OUTDIR/torch-results.md
T0=$(date +%s)
export KCHECK_LIB=$BUILD/libkcheck.so
KC=("$PYTHON" "$ROOT/scripts/kcheck")
CHECK=("$PYTHON" "$ROOT/test/gpu/torch_check.py")
fails=0
rows=()
PARTS=${KC_TORCH_PARTS:-"train bugs nondet activation bench"}
MODES=${KC_TORCH_MODES:-"fp32 bf16"}
BENCH_CONFIGS=${KC_BENCH_CONFIGS:-"plain none default torch_dispatch torch torch_nobudget"}
ACT=${KC_ACT:-"python_c pytest torchrun spawn notorch compile"}
want_act() { [[ " $ACT " == *" $1 "* ]]; }
want() { [[ " $PARTS " == *" $1 "* ]]; }

# INFO: a row that states a fact and decides nothing (not a failure)
note() { rows+=("| $1 | $2 | $3 |"); echo "[$2] $1 - $3"; [ "$2" = PASS ] || [ "$2" = INFO ] || fails=$((fails + 1)); }
BUDGET=${KC_BUDGET:-540}
run() { # name cmd...: logs to $LOGS/name.{out,err}; no run starts or runs past BUDGET
  local name=$1
  shift
  echo "$name: $*" >>"$LOGS/commands.txt"
  local t=$(date +%s.%N) rc=0 left=$((BUDGET - ($(date +%s) - T0))) tmo=$TMO
  if [ "$left" -lt 8 ]; then
    echo "  left out: the time budget (${BUDGET}s) is spent" >>"$LOGS/commands.txt"
    : >"$LOGS/$name.out"
    : >"$LOGS/$name.err"
    return 125
  fi
  [ "$tmo" -gt "$left" ] && tmo=$left
  timeout -s "${TSIG:-TERM}" --kill-after=5 "$tmo" "$@" >"$LOGS/$name.out" 2>"$LOGS/$name.err" || rc=$?
  echo "  exit $rc, $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >>"$LOGS/commands.txt"
  return $rc
}
field() { awk -v k="$1" '$1 == k {v = $2} END {print v}' "$2"; }
reports() { ls "$WORK"/$1.*.jsonl 2>/dev/null; }

# (a) training, plain vs binding
want train || MODES=""
for mode in $MODES; do
  flag=""
  [ "$mode" = bf16 ] && flag=--bf16
  run "train_${mode}_plain" "$PYTHON" test/gpu/torch_train.py $flag --steps "$STEPS"
  run "train_${mode}_torch" "${KC[@]}" run --torch -o "log_path=$WORK/train_$mode" -- \
    "$PYTHON" test/gpu/torch_train.py $flag --steps "$STEPS"
  rc=$?
  a=$(field FINAL_LOSS "$LOGS/train_${mode}_plain.out")$(field PARAMS_SHA256 "$LOGS/train_${mode}_plain.out")
  b=$(field FINAL_LOSS "$LOGS/train_${mode}_torch.out")$(field PARAMS_SHA256 "$LOGS/train_${mode}_torch.out")
  if [ -n "$a" ] && [ "$a" = "$b" ] && [ $rc = 0 ]; then
    note "train $mode: loss and parameters bitwise equal" PASS "$(field FINAL_LOSS "$LOGS/train_${mode}_plain.out")"
  else
    note "train $mode: loss and parameters bitwise equal" FAIL "plain '$a' binding '$b' exit $rc"
  fi
  out=$("${CHECK[@]}" train $(reports "train_$mode") 2>&1)
  st=PASS
  echo "$out" | grep -q '^FAIL' && st=FAIL
  [ -z "$(reports "train_$mode")" ] && st=FAIL
  note "train $mode: report" $st "$(echo "$out" | tr '\n' ';' | cut -c1-600)"
  echo "$out" >"$LOGS/train_${mode}_check.txt"
done

# (b) planted bugs
if want bugs; then
# gates=all: the default gates and shapes (the op class's shapes show the
# three shape bugs)
run bugs "${KC[@]}" run --torch -o "log_path=$WORK/bugs" -o gates=all \
  -o "contracts=$ROOT/test/gpu/torch_bugs.yaml" -- \
  "$PYTHON" test/gpu/torch_bugs.py
out=$("$PYTHON" test/gpu/torch_bugs.py --check $(reports bugs) <"$LOGS/bugs.out" 2>&1)
echo "$out" >"$LOGS/bugs_check.txt"
while IFS= read -r line; do
  case "$line" in
  PASS*) note "bug: ${line#PASS }" PASS "" ;;
  FAIL*) note "bug: ${line#FAIL }" FAIL "" ;;
  esac
done <<<"$out"
[ -n "$out" ] || note "bugs" FAIL "no check output (see bugs.err)"
fi

# KC_BENCH_PIN=CPUS (e.g. 4-7): every bench run, plain and kcheck alike,
# under taskset -c CPUS, so that each process's threads get the same CPUs
run_b() { # name cmd...: run, pinned when KC_BENCH_PIN is set
  local name=$1
  shift
  if [ -n "${KC_BENCH_PIN:-}" ]; then run "$name" taskset -c "$KC_BENCH_PIN" "$@"; else run "$name" "$@"; fi
}
# (e) bench, KC_BENCH_ROUNDS rounds (1): round r > 1 in $LOGS/r<r> (its own table)
bench_round() { # dir: every configuration once; logs, reports and the table in dir
  local LOGS=$1 c
  local WORK=$WORK/bench-${1##*/}  # the reports' input copies (.pt) stay out of the logs
  mkdir -p "$LOGS" "$WORK"
  for c in $BENCH_CONFIGS; do
    read -r -a BM <<<"${KC_BENCH_MODEL:---layers 6 --d-model 512 --heads 8}"
    B=(bench/transformer_step.py "${BM[@]}" --steps "${KC_BENCH_STEPS:-25}"
      --memory-out "$LOGS/bench_$c.mem.json" --pyprof "${KC_BENCH_PYPROF:-0}")
    # KC_BENCH_OPTS: kcheck options for every configuration but plain
    # (e.g. "-o torch_exit_budget=0"; a configuration's own options win)
    local BO=(${KC_BENCH_OPTS:-})
    case $c in
    plain) run_b bench_plain "$PYTHON" "${B[@]}" ;;
    none) run_b bench_none "${KC[@]}" run ${BO[@]+"${BO[@]}"} -o gates=none -o "log_path=$WORK/bench_none" -- "$PYTHON" "${B[@]}" ;;
    default) run_b bench_default "${KC[@]}" run ${BO[@]+"${BO[@]}"} -o "log_path=$WORK/bench_default" -- "$PYTHON" "${B[@]}" ;;
    torch_dispatch) run_b bench_torch_dispatch "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o gates=none -o torch_watch_every=1 \
      -o "log_path=$WORK/bench_torch_dispatch" -- "$PYTHON" "${B[@]}" ;;
    torch_nobudget) run_b bench_torch_nobudget "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_budget=1 \
      -o "log_path=$WORK/bench_torch_nobudget" -- "$PYTHON" "${B[@]}" ;;
    torch_oracle) run_b bench_torch_oracle "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o gates=oracle \
      -o "log_path=$WORK/bench_torch_oracle" -- "$PYTHON" "${B[@]}" ;;
    torch) run_b bench_torch "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o "log_path=$WORK/bench_torch" -- "$PYTHON" "${B[@]}" ;;
    torch_all) run_b bench_torch_all "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_watch_every=1 \
      -o "log_path=$WORK/bench_torch_all" -- "$PYTHON" "${B[@]}" ;;
    torch_w50) run_b bench_torch_w50 "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_watch_every=50 \
      -o "log_path=$WORK/bench_torch_w50" -- "$PYTHON" "${B[@]}" ;;
    torch_none) run_b bench_torch_none "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o gates=none \
      -o "log_path=$WORK/bench_torch_none" -- "$PYTHON" "${B[@]}" ;;
    torch_nomode) run_b bench_torch_nomode "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch \
      -o "log_path=$WORK/bench_torch_nomode" -- "$PYTHON" "${B[@]}" --kcheck-mode-off ;;
    torch_prof) run_b bench_torch_prof "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o profile=1 \
      -o profile_mark="${KC_BENCH_MARK:-20000}" -o "log_path=$WORK/bench_torch_prof" -- "$PYTHON" "${B[@]}" ;;
    default_prof) run_b bench_default_prof "${KC[@]}" run ${BO[@]+"${BO[@]}"} -o profile=1 \
      -o profile_mark="${KC_BENCH_MARK:-20000}" -o "log_path=$WORK/bench_default_prof" -- "$PYTHON" "${B[@]}" ;;
    torch_notime) run_b bench_torch_notime "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_time_step=0 \
      -o "log_path=$WORK/bench_torch_notime" -- "$PYTHON" "${B[@]}" ;;
    torch_inline) run_b bench_torch_inline "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_workers=-1 \
      -o "log_path=$WORK/bench_torch_inline" -- "$PYTHON" "${B[@]}" ;;
    torch_w1) run_b bench_torch_w1 "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_workers=1 \
      -o "log_path=$WORK/bench_torch_w1" -- "$PYTHON" "${B[@]}" ;;
    torch_sync) run_b bench_torch_sync "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_async_copies=0 \
      -o "log_path=$WORK/bench_torch_sync" -- "$PYTHON" "${B[@]}" ;;
    torch_async) run_b bench_torch_async "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_async_copies=256M \
      -o "log_path=$WORK/bench_torch_async" -- "$PYTHON" "${B[@]}" ;;
    torch_oldbudget) run_b bench_torch_oldbudget "${KC[@]}" run ${BO[@]+"${BO[@]}"} --torch -o torch_steady_budget=0.5 \
      -o "log_path=$WORK/bench_torch_oldbudget" -- "$PYTHON" "${B[@]}" ;;
    esac
  done
  cp "$WORK"/bench_*.jsonl "$LOGS/" 2>/dev/null
  "$PYTHON" bench/torch_bench_table.py "$LOGS" $BENCH_CONFIGS >"$LOGS/bench.md"
  cat "$LOGS/bench.md"
}
if want bench; then
  bench_round "$LOGS"
  # the binding finds nothing in the training (its loss: after the rounds)
  if [[ " $BENCH_CONFIGS " == *" torch "* ]]; then
    # the bench model does not use every covered op (torch_train.py does):
    # here only no violation, no error and a summary
    out=$("${CHECK[@]}" clean $(ls "$LOGS"/bench_torch.*.jsonl 2>/dev/null) 2>&1)
    echo "$out" >"$LOGS/bench_torch_check.txt"
    case "$out" in PASS*) st=PASS ;; *) st=FAIL ;; esac
    note "bench torch: no violation on the training run (defaults)" $st "$(echo "$out" | head -1)"
  fi
fi

# (c) nondeterministic ops still flagged at kernel level
NONDET="index_add scatter_add"
want nondet || NONDET=""
for m in $NONDET; do
  run "nondet_$m" "${KC[@]}" run --torch -o "log_path=$WORK/nondet_$m" -- "$PYTHON" test/gpu/torch_nondet.py $m
  out=$("${CHECK[@]}" nondet $(reports "nondet_$m") 2>&1)
  case "$out" in PASS*) st=PASS ;; *) st=FAIL ;; esac
  note "nondet $m flagged by determinism under the binding" $st "$out"
  # the binding names the op itself (python/kcheck/torch/nondet.py)
  out=$("$PYTHON" - $(reports "nondet_$m") 2>&1 <<'PYEOF'
import json, sys
recs = [json.loads(l) for p in sys.argv[1:] for l in open(p)]
n = [r for r in recs if r.get("type") == "violation" and r.get("gate") == "nondeterminism"
     and r.get("cause") == "documented by PyTorch"]
print(("PASS" if n else "FAIL") + " named: %s" % sorted({r.get("op") for r in n}))
PYEOF
)
  case "$out" in PASS*) st=PASS ;; *) st=FAIL ;; esac
  note "nondet $m named nondeterminism (documented by PyTorch) by the binding" $st "$out"
done

# (d) activation paths: each child process must have written a torch_summary
act() { # name cmd...
  local name=$1
  shift
  KCHECK_OPTIONS="torch=1:log_path=$WORK/act_$name" LD_PRELOAD="$KCHECK_LIB" run "act_$name" "$@"
  local rc=$?
  out=$("${CHECK[@]}" active $(reports "act_$name") 2>&1)
  case "$out" in PASS*) st=PASS ;; *) st=FAIL ;; esac
  [ $rc = 0 ] || st=FAIL
  note "activation: $name" $st "exit $rc; $out"
}
if want activation; then
want_act python_c && act python_c "$PYTHON" -c "import torch; x = torch.ones(64, 64, device='cuda'); print(float((x @ x).sum()))"
want_act pytest && act pytest "$PYTHON" -m pytest -q -p no:cacheprovider test/gpu/torch_activation.py -k pytest_case
want_act torchrun && act torchrun torchrun --nproc-per-node=1 test/gpu/torch_activation.py worker
want_act spawn && act spawn "$PYTHON" test/gpu/torch_activation.py spawn
if want_act notorch; then
KCHECK_OPTIONS="torch=1:log_path=$WORK/act_notorch" LD_PRELOAD="$KCHECK_LIB" run act_notorch \
  "$PYTHON" -c "import sys; print('torch' in sys.modules)"
if [ "$(cat "$LOGS/act_notorch.out")" = False ]; then
  note "activation: a program that never imports torch is untouched" PASS "torch never imported"
else
  note "activation: a program that never imports torch is untouched" FAIL "$(cat "$LOGS/act_notorch.out")"
fi
fi
if want_act compile; then
run compile_plain "$PYTHON" test/gpu/torch_activation.py compile
# a run held past its limit is stopped with SIGABRT: PYTHONFAULTHANDLER
# prints every thread's Python stack (of the process group) into the .err
TMO=${KC_COMPILE_TIMEOUT:-$TMO} TSIG=ABRT PYTHONFAULTHANDLER=1 run compile_torch "${KC[@]}" run --torch \
  -o "log_path=$WORK/compile" -- "$PYTHON" test/gpu/torch_activation.py compile
rc=$?
a=$(field COMPILED "$LOGS/compile_plain.out")
b=$(field COMPILED "$LOGS/compile_torch.out")
out=$("${CHECK[@]}" compile $(reports compile) 2>&1)
if [ -n "$a" ] && [ "$a" = "$b" ] && [ $rc = 0 ] && [[ "$out" == PASS* ]]; then st=PASS; else st=FAIL; fi
note "torch.compile: results equal, Triton kernels seen at kernel level" $st "plain $a binding $b exit $rc; $out"
fi
fi

# later bench rounds last (KC_BUDGET leaves them out first), with
# KC_BENCH_CONFIGS_LATER (default: the same configurations)
BENCH_CONFIGS_ALL=$BENCH_CONFIGS
if want bench; then
  BENCH_CONFIGS=${KC_BENCH_CONFIGS_LATER:-$BENCH_CONFIGS}
  for r in $(seq 2 "${KC_BENCH_ROUNDS:-1}"); do
    bench_round "$LOGS/r$r"
  done
  # the rounds' log folders (the loss check and the results' tables)
  # the binding leaves the training bitwise unchanged: every round's final
  # loss equals plain's. Where plain's own rounds disagree (at seq 256 the
  # memory-efficient attention's backward accumulates in a varying order:
  # kcheck's determinism gate reports it), a loss is only required to be one
  # that plain itself gave, and the row says so.
  bench_dirs=("$LOGS")
  for r in $(seq 2 "${KC_BENCH_ROUNDS:-1}"); do [ -d "$LOGS/r$r" ] && bench_dirs+=("$LOGS/r$r"); done
  losses() { for d in "${bench_dirs[@]}"; do [ -f "$d/bench_$1.out" ] && field FINAL_LOSS "$d/bench_$1.out"; done; }
  plain_set=$(losses plain | sort -u | xargs)
  # the ops PyTorch documents as nondeterministic on CUDA that the binding
  # named in these runs (violations with cause "documented by PyTorch"):
  # with one of them in the step, plain's own losses vary from process to
  # process, and a loss outside the few plain gave decides nothing (the
  # models' runs, with deterministic settings, carry the bitwise check)
  documented=$("$PYTHON" - "$WORK" <<'PYEOF'
import glob, json, os, sys
ops = set()
for f in glob.glob(os.path.join(sys.argv[1], "bench-*", "*.jsonl")):
    for line in open(f):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("type") == "violation" and r.get("cause") == "documented by PyTorch":
            ops.add(str(r.get("op")))
print(" ".join(sorted(ops)))
PYEOF
)
  for c in $BENCH_CONFIGS_ALL; do
    [ "$c" = plain ] && continue
    got=$(losses "$c" | xargs)
    st=FAIL
    if [ -z "$plain_set" ] || [ -z "$got" ]; then
      detail="no loss: plain [$plain_set], $c [$got]"
    else
      st=PASS
      for l in $got; do [[ " $plain_set " == *" $l "* ]] || st=FAIL; done
      n=$(wc -w <<<"$plain_set")
      if [ "$n" -eq 1 ]; then
        detail="plain $plain_set, $c [$got]"
      else
        detail="plain itself gave $n losses [$plain_set]: each $c loss must be one of them; $c [$got]"
      fi
      if [ "$st" = FAIL ] && [ -n "$documented" ]; then
        st=INFO
        detail="not decided: the step runs ops PyTorch documents as nondeterministic on CUDA ($documented, named in these runs), so plain's own loss may differ between processes, and one outside the losses these plain runs gave proves nothing; plain [$plain_set], $c [$got]"
      fi
    fi
    note "bench $c: final loss bitwise equal to plain (every round)" $st "$detail"
  done
fi

{
  echo "# PyTorch binding on the GPU"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: $(cat "$ROOT/.commit" 2>/dev/null || git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "- command: test/gpu/run_gpu_torch.sh (KC_TORCH_STEPS=$STEPS)"
  echo "- machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  echo "- torch: $("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
  echo "- wall: $(($(date +%s) - T0)) s"
  echo
  echo "| check | status | detail |"
  echo "|---|---|---|"
  printf '%s\n' "${rows[@]}"
  if [ -f "$LOGS/bench.md" ]; then
    echo
    echo "## Bench: bench/transformer_step.py ${KC_BENCH_MODEL:---layers 6 --d-model 512 --heads 8} (--seq 128 --batch 16 unless given)"
    echo
    if [ "${KC_BENCH_ROUNDS:-1}" -gt 1 ]; then
      # the goals are read from the medians over the rounds
      echo "### Over every round"
      echo
      "$PYTHON" bench/torch_rounds_table.py "${bench_dirs[@]}" -- $BENCH_CONFIGS_ALL 2>&1
      echo
      echo "### Round 1"
      echo
    fi
    cat "$LOGS/bench.md"
    for r in $(seq 2 "${KC_BENCH_ROUNDS:-1}"); do
      echo
      echo "### Round $r (the same configurations again, in order)"
      echo
      cat "$LOGS/r$r/bench.md" 2>/dev/null
    done
  fi
} >"$RES"
cp "$WORK"/*.jsonl "$LOGS/" 2>/dev/null
tar -C "$WORK" -czf "$OUTDIR/torch-logs.tar.gz" logs
echo "$fails failed; results in $RES"
[ $fails = 0 ]
