#!/usr/bin/env python3
"""test/gpu/races/summarize.py WORK OUTDIR — the corpus tables from
run_corpus.sh's logs: OUTDIR/corpus.md and OUTDIR/corpus.json.

A racy case counts as found when kcheck reported a `race` or
`determinism` violation for it (a `nondeterminism` finding on a racy case
is counted apart: a misclassification). A clean case is falsely flagged by
any violation; a nondet case by a `race` or `determinism` violation (its
`nondeterminism` finding is the expected verdict). Exit status 0; the
tables say what failed."""
import glob
import json
import os
import re
import statistics
import sys

STRATS = ["identical", "scrub", "green", "smem", "hammer", "l2flush", "jitter", "warporder", "accesses"]
# What the default options run: determinism's identical re-runs and the
# default race_strategies (the corpus runs every strategy, so that each has
# its column; "default" counts a case found by any of these).
DEFAULT = {"identical", "scrub", "l2flush", "jitter", "warporder", "accesses"}
BETWEEN = {"identical", "scrub", "green", "smem", "hammer", "l2flush"}


def records(pattern):
    out = []
    for f in sorted(glob.glob(pattern)):
        for line in open(f, errors="replace"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def racecheck(path):
    if not os.path.exists(path):
        return None
    text = open(path, errors="replace").read()
    m = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
    if m:
        return int(m.group(2)) + int(m.group(3)) > 0
    if "RACECHECK SUMMARY: 0 hazards" in text:
        return False
    return None


def case(work, name, cls, racy):
    recs = records(os.path.join(work, name + ".kc*.jsonl"))
    checks = [r for r in recs if r.get("type") == "check"]
    viol = [r for r in recs if r.get("type") == "violation"]
    c = {"name": name, "class": cls, "racy": racy, "checked": bool(checks),
         "kcheck_rc": open(os.path.join(work, name + ".kcrc")).read().strip()}
    skips = [r.get("reason", "") for r in recs if r.get("type") == "skip"]
    if skips:
        c["skip"] = skips[0]
    gates = {v["gate"] for v in viol}
    c["violations"] = sorted(gates)
    c["race_found"] = bool(gates & {"race", "determinism"})
    c["nondeterminism"] = "nondeterminism" in gates
    exposed = set()
    ms = {}
    kernel_ms = None
    intra = None
    for chk in checks:
        kernel_ms = chk.get("kernel_ms", kernel_ms)
        g = chk.get("gates", {})
        for gid in ("race", "nondeterminism"):
            e = g.get(gid, {})
            for s, st in (e.get("strategies") or {}).items():
                if st in ("differs", "conflicting accesses"):
                    exposed.add(s)
            for s, t in (e.get("strategy_ms") or {}).items():
                ms[s] = t
            if gid == "race" and "access_conflict" in e:
                a = e["access_conflict"]
                c["access_conflict"] = {
                    k: a.get(k) for k in ("space", "address", "racing_words", "accesses_logged",
                                          "blocks_logged", "allocation", "parameter",
                                          "module_variable")}
                for k in ("first", "second"):
                    x = a.get(k, {})
                    c["access_conflict"][k] = {f: x.get(f) for f in ("kind", "block", "thread", "barrier_epoch", "instruction")}
            if gid == "race" and "intra_block" in e:
                intra = e["intra_block"]
                c["intra_sites"] = e.get("intra_sites")
                c["intra_jit_ms"] = e.get("intra_jit_ms")
        if g.get("determinism", {}).get("status") == "fail":
            exposed.add("identical")
        c["statuses"] = {k: v.get("status") for k, v in g.items()}
    for v in viol:
        ev = v.get("evidence", {})
        if v["gate"] == "nondeterminism" and "strategy" not in ev:
            exposed.add("identical")
    c["exposed"] = sorted(exposed, key=STRATS.index) if all(s in STRATS for s in exposed) else sorted(exposed)
    c["strategy_ms"] = ms
    c["kernel_ms"] = kernel_ms
    c["intra_block"] = intra
    c["racecheck"] = racecheck(os.path.join(work, name + ".racecheck"))
    plain = open(os.path.join(work, name + ".plain"), errors="replace").read().split()
    kco = open(os.path.join(work, name + ".kcout"), errors="replace").read().split()
    c["plain_hash"] = plain[1] if len(plain) > 1 else None
    c["kcheck_hash"] = kco[1] if len(kco) > 1 else None
    al = records(os.path.join(work, name + ".allowed*.jsonl"))
    if al:
        av = [r for r in al if r.get("type") == "violation"]
        ac = [r for r in al if r.get("type") == "check"]
        c["allowed_pass"] = {
            "violations": sorted({v["gate"] for v in av}),
            "nondeterminism_status": (ac[0]["gates"].get("nondeterminism", {}).get("status") if ac else None),
        }
    return c


def main():
    work, outdir = sys.argv[1], sys.argv[2]
    cases = []
    for line in open(os.path.join(work, "cases.txt")):
        name, cls, racy = line.split()
        cases.append(case(work, name, cls, racy == "1"))
    header = open(os.path.join(work, "header.txt")).read()
    classes = []
    for c in cases:
        if c["class"] not in classes:
            classes.append(c["class"])
    L = ["# Planted race corpus: kcheck and compute-sanitizer racecheck", "", "```", header.strip(), "```", ""]
    L += ["## Recall and false flags per class", "",
          "| class | cases | kcheck: race/determinism (all strategies) | default strategies | between-block strategies only | kcheck: nondeterminism | racecheck | not checked |",
          "|---|---|---|---|---|---|---|---|"]
    tot = {"racy": 0, "found": 0, "rc": 0}
    for cl in classes:
        cs = [c for c in cases if c["class"] == cl]
        n = len(cs)
        f = sum(c["race_found"] for c in cs)
        nd = sum(c["nondeterminism"] for c in cs)
        rc = sum(1 for c in cs if c["racecheck"])
        unk = sum(1 for c in cs if c["racecheck"] is None)
        nc = sum(1 for c in cs if not c["checked"])
        fd = sum(1 for c in cs if c["race_found"] and set(c["exposed"]) & DEFAULT)
        fb = sum(1 for c in cs if c["race_found"] and set(c["exposed"]) & BETWEEN)
        L.append(f"| {cl} | {n} | {f}/{n} | {fd}/{n} | {fb}/{n} | {nd}/{n} | "
                 f"{rc}/{n}{f' ({unk} unknown)' if unk else ''} | {nc} |")
        if cs[0]["racy"]:
            tot["racy"] += n
            tot["found"] += f
            tot["rc"] += rc
    L += ["", f"Racy cases found (race or determinism violation): **{tot['found']}/{tot['racy']}**; "
          f"racecheck: {tot['rc']}/{tot['racy']}. For `clean` every flag is false; for `nondet` a "
          "race/determinism flag is false and a nondeterminism finding is the expected verdict.", ""]
    L += ["## Racy cases exposed per strategy and class", "",
          "| class | " + " | ".join(STRATS) + " |", "|---|" + "---|" * len(STRATS)]
    for cl in classes:
        cs = [c for c in cases if c["class"] == cl and c["racy"]]
        if not cs:
            continue
        L.append(f"| {cl} ({len(cs)}) | " + " | ".join(str(sum(s in c["exposed"] for c in cs)) for s in STRATS) + " |")
    L += ["", "## Cost per strategy (median over checked cases)", "",
          "| strategy | ms | x kernel time | cases |", "|---|---|---|---|"]
    for s in STRATS[1:]:
        v = [c["strategy_ms"][s] for c in cases if s in c["strategy_ms"]]
        r = [c["strategy_ms"][s] / c["kernel_ms"] for c in cases
             if s in c["strategy_ms"] and c["kernel_ms"]]
        if v:
            L.append(f"| {s} | {statistics.median(v):.2f} | {statistics.median(r):.0f} | {len(v)} |")
    jit = [c["intra_jit_ms"] for c in cases if c.get("intra_jit_ms")]
    if jit:
        L.append(f"\nJIT of the perturbed copy (once per kernel): median {statistics.median(jit):.1f} ms, "
                 f"max {max(jit):.1f} ms. Kernel time median "
                 f"{statistics.median([c['kernel_ms'] for c in cases if c['kernel_ms']]):.3f} ms.")
    L += ["", "## Per case", "",
          "| case | class | kcheck verdict | exposed by | intra_block | racecheck | app result = plain run |",
          "|---|---|---|---|---|---|---|"]
    for c in cases:
        verdict = ",".join(c["violations"]) or ("clean" if c["checked"] else "not checked: " + c.get("skip", "?"))
        same = c["plain_hash"] == c["kcheck_hash"]
        L.append(f"| {c['name']} | {c['class']} | {verdict} | {','.join(c['exposed'])} | "
                 f"{c['intra_block']} | {c['racecheck']} | {'yes' if same else 'differs'} |")
    ac = [c for c in cases if "access_conflict" in c]
    if ac:
        L += ["", "## Access-level evidence (the accesses strategy's first racing pair)", "",
              "| case | space | racing words | logged | first | second | reaches it |", "|---|---|---|---|---|---|---|"]

        def side(x):
            return (f"{x['kind']} b{x['block']} t{x['thread']} e{x['barrier_epoch']}: "
                    f"`{(x['instruction'] or '').replace('|', '/')}`")

        for c in ac:
            a = c["access_conflict"]
            p = a.get("parameter")
            mv = a.get("module_variable")
            reach = (f"param {p['index']} +{p['pointer_offset']}" if p else
                     f"variable {mv['name']} +{mv['offset']}" if mv else "-")
            L.append(f"| {c['name']} | {a['space']} | {a['racing_words']} | {a['accesses_logged']} "
                     f"({a['blocks_logged']}) | {side(a['first'])} | {side(a['second'])} | {reach} |")
    al = [c for c in cases if "allowed_pass" in c]
    if al:
        L += ["", "## With `nondeterminism: allowed` (corpus_contracts.yaml)", "",
              "| case | violations | nondeterminism gate |", "|---|---|---|"]
        for c in al:
            a = c["allowed_pass"]
            L.append(f"| {c['name']} | {','.join(a['violations']) or 'none'} | {a['nondeterminism_status']} |")
    open(os.path.join(outdir, "corpus.md"), "w").write("\n".join(L) + "\n")
    json.dump(cases, open(os.path.join(outdir, "corpus.json"), "w"), indent=1)
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main())
