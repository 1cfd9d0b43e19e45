#!/usr/bin/env python3
"""bench/targets_table.py — the table of bench/run_targets.sh from its logs
and reports (kept beside them in targets-logs.tar.gz, so a table can be
remade from a device call's logs):

  targets_table.py LOGS REPORTS ROUNDS STEPS FIRST WALL_DECL SMALL_ARGS...

LOGS/<config>_r<round>.out hold bench/transformer_step.py's output (its
STEP lines: index, ms, then the phases), REPORTS/*.jsonl kcheck's reports;
WALL_DECL is bash's `declare -p WALL` (seconds per run name; LOGS/walls.txt,
"name seconds" lines, fills in the names it lacks). Exits 1
when a run that printed STEP lines gave no steady figure (a format this
reader does not know), so a broken table fails the bench."""
import glob, json, os, re, statistics, sys
# the device work each check needs over its floor: kcheck.report's, one
# implementation; L2 from the summary, else the H200's (PyTorch reported
# 60 MB there) for reports made before own_kernels carried l2_bytes
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from kcheck.report import device_work_over_floor, floor_without_queue, flush_bytes_of  # noqa: E402
L2_ASSUMED = 60 << 20
logs, reps, rounds, steps, first, wall_decl = sys.argv[1:7]
rounds, steps, first = int(rounds), int(steps), int(first)
WALL = dict(re.findall(r'\[([^\]]+)\]="([^"]*)"', wall_decl))
try:  # run_targets.sh also keeps them in the logs (a table remade from a device call's logs)
    for line in open(os.path.join(logs, "walls.txt")):
        name_s = line.split()
        if len(name_s) == 2:
            WALL.setdefault(name_s[0], name_s[1])
except OSError:
    pass
def steps_of(name):
    out = []
    try:
        for line in open(os.path.join(logs, name + ".out")):
            p = line.split()
            if len(p) >= 3 and p[0] == "STEP":
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
# The step's attention backward accumulates with atomics (kcheck's
# determinism gate names it), so plain processes themselves may end on
# different losses: a run's loss is compared with every plain round's.
plain_losses = {key(f"plain_r{r}", "FINAL_LOSS") for r in range(1, rounds + 1)} - {None}
# configurations of KC_T_CONFIGS only (run_targets.sh's opts_of), each
# with its own profile=1 run prof_<name>
OPTIONAL = ("hash", "words", "det2", "copyback", "detonly", "racenogreen")
CONFIGS = ("plain", "none", "default") + OPTIONAL + ("trace1", "trace2")
rows = {}
for c in CONFIGS:
    names = [f"{c}_r{r}" for r in range(1, rounds + 1)]
    if c in OPTIONAL and not any(steps_of(n) for n in names):
        continue
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
        same.append(key(n, "FINAL_LOSS") in plain_losses)
    rows[c] = dict(first=med(fs), steady=med(ss), wall=med(ws), checks=ck, skips=sk, launches=lr,
                   same=same, raw_steady=ss, raw_first=fs, raw_wall=ws)
def unread(name):
    """A run whose output has STEP lines this reader found no step in."""
    try:
        with open(os.path.join(logs, name + ".out")) as fh:
            has = any(line.startswith("STEP ") for line in fh)
    except OSError:
        return False
    return has and not steps_of(name)
UNREAD = [n for c in CONFIGS[:-1] for n in
          (f"{c}_r{r}" for r in range(1, rounds + 1)) if unread(n)] + \
         (["trace2_r1"] if unread("trace2_r1") else [])
P = rows["plain"]
def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b
print("# kcheck overhead targets on the GPT-style training step\n")
print(open(os.path.join(logs, "env.txt")).read().replace("\n", "; "))
print(f"\nbench/transformer_step.py, {steps} steps per process (trace2: 8), {rounds} alternating rounds, "
      f"medians. first = mean of steps 1-{first}; steady = median of steps {first + 1}..; wall = the "
      "whole process (start, model build, all steps, exit).\n")
print("| mode | first ms/step | ratio | steady ms/step | ratio | wall s | ratio | checks | skip records | launch records | loss bitwise one of plain's |")
print("|---|---:|---:|---:|---:|---:|---:|---|---|---|---|")
label = {"plain": "plain", "none": "`gates=none`", "default": "default options",
         "hash": "`hash_compare=1`", "words": "`hash_compare=0`", "det2": "`determinism_runs=2`",
         "copyback": "`hash_publish=0`", "detonly": "`gates=determinism`",
         "racenogreen": "`gates=determinism,race:race_no_code_strategies=smem`",
         "trace1": "`gates=none:trace=1`", "trace2": "`gates=none:trace=2` (8 steps)"}
for c, r in rows.items():
    print(f"| {label[c]} | {f(r['first'])} | {f(ratio(r['first'], P['first']), 3)} | {f(r['steady'])} | "
          f"{f(ratio(r['steady'], P['steady']), 3)} | {f(r['wall'])} | {f(ratio(r['wall'], P['wall']), 3)} | "
          f"{r['checks']} | {r['skips']} | {r['launches']} | {r['same']} |")
print("\nPer round (steady ms/step): " + "; ".join(
    f"{c} " + ", ".join(f(x) for x in r["raw_steady"]) for c, r in rows.items()))
print("Per round (wall s): " + "; ".join(
    f"{c} " + ", ".join(f(x) for x in r["raw_wall"]) for c, r in rows.items()))
print(f"Final losses of the plain rounds: {len(plain_losses)} distinct "
      f"({', '.join(sorted(plain_losses))})")
# profile: the mark record (after the first steps) and the exit record
def profs(n):
    out = {}
    for r in records(n):
        if r.get("type") == "profile":
            out[r.get("at", "exit")] = r
    return out
pd, pt = profs("prof_default"), profs("prof_trace")
def steady(p, s):
    a, b = p.get("exit"), p.get("mark")
    if not a:
        return None
    if not b:
        return a["stages"][s]["ns_per_launch"] if s in a["stages"] else None
    dl = a["launches"] - b["launches"]
    return (a["stages"][s]["ns"] - b["stages"][s]["ns"]) / dl if dl > 0 and s in a["stages"] else None
def allrun(p, s):
    a = p.get("exit")
    return a["stages"][s]["ns_per_launch"] if a and s in a["stages"] else None
a, b = pd.get("exit"), pd.get("mark")
if a:
    ta, tb = pt.get("exit"), pt.get("mark")
    print(f"\n## profile=1: ns per launch by stage\n\nsteady = (exit record - mark record at launch "
          f"{b['launches'] if b else '-'}) / the launches between (the first steps' first sights and "
          f"checks left out); whole = the exit record over every launch.\n")
    print("| stage | default, steady | default, whole run | gates=none:trace=1, steady | trace=1, whole run |")
    print("|---|---:|---:|---:|---:|")
    for s in a["stages"]:
        if s.startswith("chk_"):
            continue
        vals = [steady(pd, s), allrun(pd, s), steady(pt, s), allrun(pt, s)]
        print(f"| {s} | " + " | ".join("-" if v is None else f"{v:.0f}" for v in vals) + " |")
    def dcalls(p):
        a, b = p.get("exit"), p.get("mark")
        if not a:
            return None
        if not b:
            return a["driver_calls_per_launch"]
        dl = a["launches"] - b["launches"]
        return (a["driver_calls_total"] - b["driver_calls_total"]) / dl if dl > 0 else None
    dv = [dcalls(pd), pd["exit"]["driver_calls_per_launch"], dcalls(pt),
          pt["exit"]["driver_calls_per_launch"] if pt.get("exit") else None]
    print("| driver calls per launch | " + " | ".join("-" if v is None else f"{v:.3f}" for v in dv) + " |")
    # how parameter words were resolved (profile record "counts"), per launch
    def count(p, c, whole):
        a, b = p.get("exit"), p.get("mark")
        if not a or c not in a.get("counts", {}):
            return None
        if whole or not b:
            return a["counts"][c] / a["launches"] if a["launches"] else None
        dl = a["launches"] - b["launches"]
        return (a["counts"][c] - b["counts"].get(c, 0)) / dl if dl > 0 else None
    for c in (a.get("counts") or {}):
        cv = [count(pd, c, False), count(pd, c, True), count(pt, c, False), count(pt, c, True)]
        print(f"| words: {c} | " + " | ".join("-" if v is None else f"{v:.2f}" for v in cv) + " |")
    ck = [r for r in records("prof_default") if r.get("type") == "check"]
    print(f"\n## where a check's time goes (prof_default: {len(ck)} checks, default options; host time "
          "of each stage; a run's wait is in chk_compare when the comparison waits for it)\n")
    print("| stage | ms in all | count | us each |")
    print("|---|---:|---:|---:|")
    for s in a["stages"]:
        if not s.startswith("chk_") and s != "check":
            continue
        st = a["stages"][s]
        print(f"| {s} | {st['ns'] / 1e6:.1f} | {st['n']} | {st['ns_per_n'] / 1e3:.1f} |")
    fs = steps_of("prof_default")
    if fs:
        print(f"\nprof_default first steps (1-{first}) mean {statistics.fmean(fs[:first]):.2f} ms/step "
              f"(ratio {statistics.fmean(fs[:first]) / P['first']:.3f} to plain; profile=1 on), "
              f"against the default's {f(rows['default']['first'])}.")
# every strategy's cost on the training step (check records of strat_all8)
ck = [r for r in records("strat_all8") if r.get("type") == "check"]
tot, cnt, stat = {}, {}, {}
for c in ck:
    race = (c.get("gates") or {}).get("race") or {}
    for k, v in (race.get("strategy_ms") or {}).items():
        tot[k] = tot.get(k, 0.0) + v
        cnt[k] = cnt.get(k, 0) + 1
    for k, v in (race.get("strategies") or {}).items():
        stat.setdefault(k, {}).setdefault(v, 0)
        stat[k][v] += 1
if tot:
    print(f"\n## what each race strategy cost on the training step (strat_all8: {len(ck)} checks, 5 steps, "
          "every strategy; wall time of its run(s) inside the check: set-up, run, comparison)\n")
    print("| strategy | ms in all | checks | ms per check | statuses |")
    print("|---|---:|---:|---:|---|")
    for k in tot:
        sts = "; ".join(f"{n}x {v[:48]}" for v, n in sorted(stat.get(k, {}).items(), key=lambda x: -x[1]))
        print(f"| {k} | {tot[k]:.1f} | {cnt[k]} | {tot[k] / cnt[k]:.3f} | {sts.replace('|', '/')} |")
# the default runs' checks against their own floors
for n in [f"{c}_r{r}" for c in ("default",) + OPTIONAL for r in range(1, rounds + 1)]:
    ck = [r for r in records(n) if r.get("type") == "check"]
    if not ck:
        continue
    rat = sorted(c["cost_ms"] / c["floor_ms"] for c in ck if c.get("floor_ms"))
    top = sorted(ck, key=lambda c: -c["cost_ms"])[:10]
    trat = [c["cost_ms"] / c["floor_ms"] for c in top if c.get("floor_ms")]
    saved = sum(c.get("saved_bytes", 0) for c in ck)
    rest = sum(c.get("restored_bytes", 0) for c in ck)
    runs = sum(c.get("runs", 0) for c in ck)
    full = sum(c.get("saved_bytes", 0) * (c.get("runs", 0) + 1) for c in ck)
    cs = sorted(c["cost_ms"] for c in ck)
    summ = [r for r in records(n) if r.get("type") == "summary"]
    ok = (summ[0].get("own_kernels") if summ else None) or {}
    terms = [c.get("floor_terms") or {} for c in ck]
    tm = {t: statistics.median([x.get(t, 0) for x in terms])
          for t in ("kernels_ms", "copies_ms", "syncs_ms", "queued_ms")} if terms else {}
    first_ck = min(ck, key=lambda c: c["launch"])
    fin = [c for c in ck if c.get("violations")]
    print(f"\n{n}: kcheck's kernels loaded as {ok.get('form', '?')} in {ok.get('load_ms', -1):.1f} ms; "
          f"device copy {ok.get('copy_gbps', 0):.0f} GB/s, launch+wait round trip {ok.get('sync_us', 0):.1f} us; "
          f"floor terms (median ms): kernels {tm.get('kernels_ms', 0):.3f}, copies {tm.get('copies_ms', 0):.3f}, "
          f"waits {tm.get('syncs_ms', 0):.3f}, queued work {tm.get('queued_ms', 0):.3f}; the process's first check (launch {first_ck['launch']}) "
          f"{first_ck['cost_ms']:.2f} ms; checks with findings: "
          + (", ".join(f"{c['cost_ms']:.2f} ms ({c['violations']} violations)" for c in fin) or "none"))
    print(f"\n{n}: {len(ck)} checks, cost ms median {cs[len(cs) // 2]:.3f}, total {sum(cs):.1f}; "
          f"cost/floor median {rat[len(rat) // 2] if rat else float('nan'):.1f} (of {len(rat)}), "
          f"ten costliest {min(trat) if trat else float('nan'):.1f}-{max(trat) if trat else float('nan'):.1f}; "
          f"runs {runs}; saved {saved / 2**20:.0f} MiB, restored {rest / 2**20:.0f} MiB (every saved "
          f"byte before each run and at the end would be {full / 2**20:.0f} MiB)")
    # a check with findings also pays for its violation records (host
    # stacks): the ten costliest of the clean checks, apart
    clean = sorted((c for c in ck if not c.get("violations")), key=lambda c: -c["cost_ms"])[:10]
    crat = [c["cost_ms"] / c["floor_ms"] for c in clean if c.get("floor_ms")]
    big = [c["cost_ms"] / c["floor_ms"] for c in ck if c.get("floor_ms") and c.get("saved_bytes", 0) >= 100 << 20]
    print(f"\n{n}: without the {len(fin)} check(s) with findings, the ten costliest "
          f"{min(crat) if crat else float('nan'):.1f}-{max(crat) if crat else float('nan'):.1f} over their floor; "
          f"checks saving >= 100 MiB: {len(big)}, cost/floor median "
          f"{statistics.median(big) if big else float('nan'):.1f}; 90th percentile of all "
          f"{rat[int(0.9 * (len(rat) - 1))] if rat else float('nan'):.1f}")
    l2 = ok.get("l2_bytes") or L2_ASSUMED
    fb = flush_bytes_of(ok) or 2 * L2_ASSUMED
    lbs = sorted(x for x in (device_work_over_floor(c, fb) for c in ck) if x is not None)
    if lbs:
        print(f"\n{n}: the device work these checks need at the measured copy bandwidth, no host time, "
              f"over the floor (L2 {l2 / 2**20:.0f} MiB"
              f"{'' if ok.get('l2_bytes') else ', assumed: not in this report'}): median "
              f"{lbs[len(lbs) // 2]:.2f}, 90th percentile {lbs[int(0.9 * (len(lbs) - 1))]:.2f}")
    # the part of cost_ms spent waiting for the application's queued work
    # before the pre-state is saved (wait_ms; in the floor as queued_ms
    # where the record has it), apart: cost and floor both without it
    ws = sorted(c["wait_ms"] for c in ck if c.get("wait_ms") is not None)
    wck = [c for c in ck if c.get("floor_ms") and c.get("wait_ms") is not None]
    wrat = sorted((c["cost_ms"] - c["wait_ms"]) / floor_without_queue(c) for c in wck)
    wtop = [(c["cost_ms"] - c["wait_ms"]) / floor_without_queue(c)
            for c in sorted(wck, key=lambda c: c["wait_ms"] - c["cost_ms"])[:10]]
    if ws:
        print(f"\n{n}: waiting for the application's queued work before the pre-state (wait_ms): "
              f"median {ws[len(ws) // 2]:.3f} ms, total {sum(ws):.1f} ms; cost less that wait over "
              f"the floor without it: median {wrat[len(wrat) // 2]:.1f}, 90th percentile "
              f"{wrat[int(0.9 * (len(wrat) - 1))]:.1f}, the ten costliest by that cost "
              f"{min(wtop):.1f}-{max(wtop):.1f}")
# profile=1 runs: the ten costliest checks stage by stage (stages_ms of
# each check record; chk_setup is nested in the others)
for n in [f"prof_{c}" for c in ("default",) + OPTIONAL]:
    ck = [r for r in records(n) if r.get("type") == "check" and r.get("stages_ms")]
    if not ck:
        continue
    top = sorted(ck, key=lambda c: -c["cost_ms"])[:10]
    st = list(top[0]["stages_ms"])
    print(f"\n## {n}: the ten costliest checks stage by stage (ms; other = cost less the stages; "
          "chk_setup is inside the stages)\n")
    print("| launch | kernel | cost | floor | wait | " + " | ".join(x.replace("chk_", "") for x in st) +
          " | other | violations | gates_ms (>= 0.05) |")
    print("|---:|---|---:|---:|---:|" + "---:|" * (len(st) + 1) + "---:|---|")
    for c in top:
        sm = c["stages_ms"]
        other = c["cost_ms"] - sum(v for k, v in sm.items() if k != "chk_setup")
        print(f"| {c['launch']} | {(c.get('kernel_name') or '?')[:40].replace('|', '/')} | {c['cost_ms']:.2f} | "
              f"{c.get('floor_ms', 0):.3f} | {c.get('wait_ms', 0):.2f} | " +
              " | ".join(f"{sm.get(x, 0):.3f}" for x in st) + f" | {other:.3f} | {c.get('violations', 0)} | " +
              ", ".join(f"{g} {v:.2f}" for g, v in (c.get("gates_ms") or {}).items() if v >= 0.05) + " |")
    med = {x: statistics.median(c["stages_ms"].get(x, 0) for c in ck) for x in st}
    print(f"\n{n}: median of all {len(ck)} checks: " + ", ".join(f"{x} {v:.3f}" for x, v in med.items()) +
          f"; cost {statistics.median(c['cost_ms'] for c in ck):.3f}, floor "
          f"{statistics.median(c.get('floor_ms', 0) for c in ck):.3f}")
# trace=1: where the launch records' bytes and pointers are (round 1): the
# records' cost is per byte and per pointer, so a few kernels with large
# parameter structs (multi-tensor apply) can carry most of it
tr = records("trace1_r1")
if tr:
    names = {r.get("id"): (r.get("demangled") or r.get("name") or "?") for r in tr
             if r.get("type") == "kernel"}
    by = {}
    nl = 0
    for r in tr:
        if r.get("type") != "launch":
            continue
        nl += 1
        b = by.setdefault(r.get("kernel"), [0, 0, 0, 0, 0, 0])
        ptrs = r.get("pointers") or []
        b[0] += 1
        b[1] += len(json.dumps(r, separators=(",", ":")))
        b[2] += len(ptrs)
        b[3] += sum(1 for x in ptrs if x.get("resolved_by") == "driver")
        b[4] += r.get("param_size") or 0
        b[5] += len({x.get("base") for x in ptrs})
    tb = sum(b[1] for b in by.values()) or 1
    tp = sum(b[2] for b in by.values())
    print(f"\n## trace=1 launch records (round 1): {nl} records, {tb / 2**20:.1f} MiB, "
          f"{tp} pointers ({sum(b[3] for b in by.values())} resolved by the driver), "
          f"{len(by)} kernels\n")
    print("| kernel | records | share of bytes | bytes each | param bytes each | pointers each | distinct allocations each | by the driver |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for k, b in sorted(by.items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"| {names.get(k, k)[:70].replace('|', '/')} | {b[0]} | {b[1] / tb:.1%} | {b[1] / b[0]:.0f} | "
              f"{b[4] / b[0]:.0f} | {b[2] / b[0]:.1f} | {b[5] / b[0]:.1f} | {b[3]} |")
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
def results(n):
    out = {}
    try:
        for line in open(os.path.join(logs, n + ".out")):
            p = line.split()
            if len(p) >= 3 and p[0] == "RESULT":
                out[p[1]] = " ".join(p[2:])
    except OSError:
        pass
    return out
rp = results("races_plain")
if rp:
    print("\n## planted races (build/gpu/races all, one process each)\n")
    print("| options | checks | flagged (gate: kernels) | clean kernels: output bitwise = plain, verify=ok |")
    print("|---|---|---|---|")
    for n, lab in [("races_default", "default options"), ("races_all8", "every strategy")]:
        recs = records(n)
        fl = {}
        for v in recs:
            if v.get("type") == "violation":
                fl.setdefault(v.get("gate"), set()).add((v.get("kernel_name") or "?").split("(")[0])
        got = results(n)
        clean = [k for k in rp if k.startswith("clean_")]
        same = sum(1 for k in clean if got.get(k) == rp[k] and "verify=ok" in got.get(k, ""))
        print(f"| {lab} | {sum(1 for r in recs if r.get('type') == 'check')} | "
              + "; ".join(f"{g}: {', '.join(sorted(ks))}" for g, ks in sorted(fl.items())) +
              f" | {same}/{len(clean)} |")
    # which strategy exposed which planted race (every strategy's run)
    ex, ms = {}, {}
    for c in records("races_all8"):
        if c.get("type") != "check":
            continue
        kn = (c.get("kernel_name") or "?").split("(")[0]
        race = (c.get("gates") or {}).get("race") or {}
        for k, v in (race.get("strategies") or {}).items():
            ex.setdefault(k, set())
            ms.setdefault(k, []).append((race.get("strategy_ms") or {}).get(k, 0))
            if v in ("differs", "conflicting accesses"):
                ex[k].add(kn)
        if (c.get("gates") or {}).get("determinism", {}).get("status") == "fail":
            ex.setdefault("identical (determinism)", set()).add(kn)
    if ex:
        print("\n| strategy (races_all8) | planted kernels it exposed | median ms per check |")
        print("|---|---|---:|")
        for k, ks in ex.items():
            print(f"| {k} | {len(ks)}: {', '.join(sorted(ks))} | "
                  f"{statistics.median(ms[k]) if ms.get(k) else float('nan'):.3f} |")

print("\n## anchors (same device call)\n")
sp = steps_of("small_plain")
small_per = statistics.fmean(sp[1:]) if len(sp) > 1 else None
print(f"small configuration for racecheck: bench/transformer_step.py {' '.join(sys.argv[7:])}; "
      f"its plain run: {f(small_per)} ms/step (steps 2..)\n")
print("| tool | configuration | steps done | ms/step (steps 2..) | ratio to its plain | wall s | found |")
print("|---|---|---|---:|---:|---:|---|")
for n, lab, base, conf in [("san_racecheck_small", "compute-sanitizer --tool racecheck", small_per, "small"),
                           ("san_memcheck", "compute-sanitizer --tool memcheck", P["steady"], "full"),
                           ("torch_sanitizer", "TORCH_CUDA_SANITIZER=1", P["steady"], "full")]:
    if n not in WALL:
        continue
    st = steps_of(n)
    per = statistics.fmean(st[1:]) if len(st) > 1 else None
    found = []
    for ext in (".out", ".err"):
        try:
            for line in open(os.path.join(logs, n + ext)):
                if re.search(r"(ERROR SUMMARY|RACECHECK SUMMARY|Detected|CSAN|TIMED OUT)", line):
                    found.append(line.strip()[:120])
        except OSError:
            pass
    first_ms = (f" (step 1: {st[0]:.0f} ms, {st[0] / sp[0]:.0f}x its plain step 1)" if st and sp and conf == "small"
                else f" (step 1: {st[0]:.0f} ms)" if st else "")
    print(f"| {lab} | {conf} | {len(st)}{first_ms} | {f(per)} | {f(ratio(per, base), 1)} | {WALL.get(n, '-')} | "
          f"{'; '.join(found[:3]).replace('|', '/') or '-'} |")
if UNREAD:
    sys.stderr.write("targets_table.py: STEP lines in a format it cannot read: %s\n" % ", ".join(UNREAD))
    sys.exit(1)
