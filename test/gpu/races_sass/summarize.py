#!/usr/bin/env python3
"""test/gpu/races_sass/summarize.py WORK OUTDIR — the tables of the race
corpus without PTX from run_gpu_races_sass.sh's work folder:
OUTDIR/races_sass.md and OUTDIR/races_sass.json; the markdown is printed.

WORK holds cases.txt (name kind class expected), header.txt, plain/*.out
(RESULT lines of the runs without kcheck), kc/<cond>.<unit>.* (kcheck's
JSONL reports, the program's output, .rc: "status seconds names" or
"skipped: deadline") and san/<tool>.<name>.{out,rc}. Conditions: default
(Triton's cache without PTX), default_ptx (with it), s_<strategy> (that
strategy alone).

A kernel's verdict in a condition: `race` when kcheck reported a `race` or
`determinism` violation for it, else `nondeterminism` when it reported
that, else `clean` when it checked the kernel, else `not checked`. The goal
(default condition): every racy kernel `race`, no race-free kernel `race`,
every float-atomic kernel `nondeterminism`. Exit status 0 when the goal
holds, 1 when not, 2 on bad input."""
import glob
import json
import os
import re
import statistics
import sys

STRATS = ["scrub", "green", "smem", "hammer", "l2flush", "jitter", "warporder", "accesses"]
RAN = ("same", "differs", "conflicting accesses", "no conflicting accesses")
FOUND = ("differs", "conflicting accesses")


def records(paths):
    out = []
    for f in sorted(paths):
        for line in open(f, errors="replace"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def read(path, default=""):
    try:
        return open(path, errors="replace").read()
    except OSError:
        return default


def results(text):
    """{name: hash} from RESULT lines; {name: message} from ERROR lines."""
    res, err = {}, {}
    for line in text.splitlines():
        p = line.split(None, 2)
        if len(p) >= 3 and p[0] == "RESULT":
            res[p[1]] = p[2].strip()
        elif len(p) >= 2 and p[0] == "ERROR":
            err[p[1]] = p[2] if len(p) > 2 else ""
    return res, err


def owner(kernel_name, names):
    """The corpus kernel a record's kernel_name is (None: a library kernel:
    torch's fills and copies)."""
    if not isinstance(kernel_name, str):  # absent, or a kernel id
        return None
    for n in names:
        if re.search(r"(?<![A-Za-z0-9_])" + re.escape(n) + r"(?![A-Za-z0-9_])", kernel_name):
            return n
    return None


def condition(work, cond, cases):
    """{name: result of that kernel under cond}."""
    names = [c["name"] for c in cases]
    recs = records(glob.glob(os.path.join(work, "kc", cond + ".*.jsonl")))
    out = {n: {"checks": [], "violations": [], "skips": []} for n in names}
    for r in recs:
        n = owner(r.get("kernel_name") or r.get("kernel"), names)
        if n is None:
            continue
        t = r.get("type")
        if t == "check":
            out[n]["checks"].append(r)
        elif t == "violation":
            out[n]["violations"].append(r)
        elif t == "skip":
            out[n]["skips"].append(r.get("reason", "?"))
        elif t == "image_ptx":  # kcheck found the cubin's PTX in Triton's cache
            out[n]["image_ptx"] = True
    # what each process said and how it ended
    ran, rcs, errs = {}, {}, {}
    for rc_path in glob.glob(os.path.join(work, "kc", cond + ".*.rc")):
        base = rc_path[:-3]
        text = read(rc_path).strip()
        res, err = results(read(base + ".out"))
        ran.update(res)
        errs.update(err)
        p = text.split()
        for n in p[2:] if p and p[0] != "skipped:" else []:
            rcs[n] = p[0]
        if text.startswith("skipped"):
            # the job's names are in kcjobs.txt
            unit = os.path.basename(base)[len(cond) + 1:]
            for line in read(os.path.join(work, "kcjobs.txt")).splitlines():
                q = line.split()
                if len(q) > 3 and q[0] == cond and q[1] == unit:
                    for n in q[3:]:
                        rcs[n] = "skipped: deadline"
    table = {}
    for n in names:
        o = out[n]
        gates = sorted({v.get("gate") for v in o["violations"]})
        exposed, ms, status, extra = set(), {}, {}, {}
        kernel_ms = None
        for chk in o["checks"]:
            kernel_ms = chk.get("kernel_ms", kernel_ms)
            g = chk.get("gates", {})
            if g.get("determinism", {}).get("status") == "fail":
                exposed.add("identical")
            for gid in ("race", "nondeterminism"):
                e = g.get(gid) or {}
                for s, st in (e.get("strategies") or {}).items():
                    status.setdefault(s, st)
                    if st in FOUND:
                        exposed.add(s)
                for s, t in (e.get("strategy_ms") or {}).items():
                    ms.setdefault(s, t)
                for k, v in e.items():
                    if "route" in k or k in ("no_code", "no_code_added", "not_run", "intra_block"):
                        extra.setdefault(gid + "." + k, v)
        causes = set()
        for v in o["violations"]:
            eb = v.get("exposed_by") or (v.get("evidence") or {}).get("strategy")
            for s in (eb if isinstance(eb, list) else str(eb or "").split(",")):
                if s:
                    exposed.add(s.strip())
            if v.get("cause"):
                causes.add(v["cause"])
        if gates and set(gates) & {"race", "determinism"}:
            verdict = "race"
        elif "nondeterminism" in gates:
            verdict = "nondeterminism"
        elif o["checks"]:
            verdict = "clean"
        else:
            verdict = "not checked"
        why = None
        if verdict == "not checked":
            why = (o["skips"][0] if o["skips"] else errs.get(n) or
                   (rcs[n] if rcs.get(n, "0") != "0" and n not in ran else None) or
                   ("no record" if n in ran else "no result (process failed or timed out)"))
        table[n] = {"verdict": verdict, "violations": gates, "causes": sorted(causes),
                    "exposed": sorted(exposed), "strategies": status, "strategy_ms": ms,
                    "kernel_ms": kernel_ms, "race_entry": extra, "why_not_checked": why,
                    "result": ran.get(n), "rc": rcs.get(n), "image_ptx": bool(o.get("image_ptx"))}
    return table


def sanitizer(work, tool, name, supported):
    """flagged / clean / error: ... / skipped: deadline / unsupported / None
    (not run)."""
    if not supported:
        return "unsupported"
    rc_text = read(os.path.join(work, "san", f"{tool}.{name}.rc"), None)
    if rc_text is None:
        return None
    if rc_text.startswith("skipped"):
        return "skipped: deadline"
    text = read(os.path.join(work, "san", f"{tool}.{name}.out"))
    rc = rc_text.split()[0] if rc_text.split() else "?"
    if tool == "racecheck":
        m = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
        if m:
            return "flagged" if int(m.group(2)) + int(m.group(3)) > 0 else "clean"
        if "RACECHECK SUMMARY: 0 hazards" in text:
            return "clean"
        if re.search(r"ERROR SUMMARY: 0 errors", text):
            return "clean"
        return f"error: exit {rc}"
    hit = [l for l in text.splitlines()
           if not l.startswith("RESULT") and re.search(r"(?i)\brace\b|data race|device-side assert|assertion", l)]
    if hit:
        return "flagged"
    if re.search(r"(?m)^RESULT " + re.escape(name) + " ", text) and rc == "0":
        return "clean"
    last = [l for l in text.splitlines() if l.strip()]
    return f"error: exit {rc}" + (f" ({last[-1][:80]})" if last else "")


def main(argv):
    if len(argv) != 3:
        print("usage: summarize.py WORK OUTDIR", file=sys.stderr)
        return 2
    work, outdir = argv[1], argv[2]
    cases = []
    for line in read(os.path.join(work, "cases.txt")).splitlines():
        p = line.split()
        if len(p) == 4:
            cases.append({"name": p[0], "kind": p[1], "class": p[2], "expected": p[3]})
    if not cases:
        print("summarize.py: no cases in " + work, file=sys.stderr)
        return 2
    header = read(os.path.join(work, "header.txt")).strip()
    m = re.search(r"gsan: (\S+); consan: (\S+)", header)
    have = {"racecheck": True, "gsan": bool(m and m.group(1) != "none"),
            "consan": bool(m and m.group(2) != "none")}
    conds = ["default", "default_ptx"] + ["s_" + s for s in STRATS]
    by = {c: condition(work, c, cases) for c in conds}
    plain = {}
    for f in glob.glob(os.path.join(work, "plain", "*.out")):
        plain.update(results(read(f))[0])
    for c in cases:
        n = c["name"]
        c["kcheck"] = {cond: by[cond][n] for cond in conds}
        for tool in ("racecheck", "gsan", "consan"):
            c[tool] = sanitizer(work, tool, n, have[tool] and (tool == "racecheck" or c["kind"] == "triton"))
            if tool != "racecheck" and c["kind"] != "triton":
                c[tool] = "n/a"
        c["plain_result"] = plain.get(n)

    racy = [c for c in cases if c["expected"] == "race"]
    free = [c for c in cases if c["expected"] != "race"]
    fa = [c for c in cases if c["expected"] == "nondeterminism"]
    d = lambda c, cond="default": c["kcheck"][cond]  # noqa: E731

    L = ["# Race corpus without PTX: kcheck, compute-sanitizer racecheck, Triton's sanitizers", "",
         "```", header, "```", ""]
    # ----- the goal
    miss = [c["name"] for c in racy if d(c)["verdict"] != "race"]
    false = [c["name"] for c in free if d(c)["verdict"] == "race"]
    unnamed = [c["name"] for c in fa if d(c)["verdict"] != "nondeterminism"]
    goal = [("every racy kernel flagged `race` from one launch, default options", not miss,
             f"{len(racy) - len(miss)}/{len(racy)}", miss),
            ("no race-free kernel flagged `race`", not false, f"{len(false)} false flags", false),
            ("every float-atomic kernel named `nondeterminism`", not unnamed,
             f"{len(fa) - len(unnamed)}/{len(fa)}", unnamed)]
    L += ["## Goal (default options, Triton's cache without PTX)", ""]
    for text, ok, count, names in goal:
        L.append(f"- **{'PASS' if ok else 'FAIL'}** {text}: {count}"
                 + (f" — {', '.join(names)}" if names else ""))
    ok_all = all(g[1] for g in goal)
    L += ["", f"GOAL: {'PASS' if ok_all else 'FAIL'}", ""]

    # ----- per class
    groups = []
    for c in cases:
        k = (c["class"], c["kind"], c["expected"])
        if k not in groups:
            groups.append(k)

    def frac(cs, pred):
        return f"{sum(1 for c in cs if pred(c))}/{len(cs)}"

    L += ["## Verdicts per class", "",
          "Racy classes count kernels flagged `race`; float-atomic ones kernels named "
          "`nondeterminism` (and, after the slash, flagged `race`); clean ones kernels "
          "flagged `race` (false flags). racecheck, gsan, consan: kernels they flagged.", "",
          "| class | kind | expected | default (no PTX) | default (PTX in cache) | racecheck | gsan | consan | not checked (default) |",
          "|---|---|---|---|---|---|---|---|---|"]
    for cl, kind, exp in groups:
        cs = [c for c in cases if (c["class"], c["kind"], c["expected"]) == (cl, kind, exp)]

        def col(cond):
            if exp == "race":
                return frac(cs, lambda c: d(c, cond)["verdict"] == "race")
            if exp == "nondeterminism":
                return (frac(cs, lambda c: d(c, cond)["verdict"] == "nondeterminism") + " / race "
                        + str(sum(d(c, cond)["verdict"] == "race" for c in cs)))
            return "race " + frac(cs, lambda c: d(c, cond)["verdict"] == "race")

        def san(tool):
            vals = [c[tool] for c in cs]
            if all(v in ("n/a",) for v in vals):
                return "n/a"
            if all(v == "unsupported" for v in vals):
                return "unsupported"
            if all(v is None for v in vals):
                return "not run"
            other = sum(1 for v in vals if v not in ("flagged", "clean"))
            return frac(cs, lambda c: c[tool] == "flagged") + (f" ({other} error/skipped)" if other else "")

        ptx = col("default_ptx") if kind == "triton" else "-"
        L.append(f"| {cl} | {kind} | {exp} | {col('default')} | {ptx} | {san('racecheck')} | "
                 f"{san('gsan')} | {san('consan')} | {sum(d(c)['verdict'] == 'not checked' for c in cs)} |")
    L += ["", "gsan / consan: Triton's own sanitizers (TRITON_INSTRUMENTATION_MODE=gsan: global memory "
          "between programs; consan: shared memory and async operations); `unsupported` when the "
          "installed Triton has neither (the header says which it has). n/a: not a Triton kernel.", ""]

    # ----- per strategy alone
    L += ["## Racy kernels exposed per strategy, each strategy alone", "",
          "`race_strategies=<one>:race_no_code_strategies=` (nothing added for kernels without "
          "code); a kernel counts when that strategy's run differed or its access log had a "
          "conflicting pair. `identical`: the determinism gate's identical re-run (default "
          "options).", "",
          "| class | kind | " + " | ".join(["identical"] + STRATS) + " |",
          "|---|---|" + "---|" * (len(STRATS) + 1)]
    for cl, kind, exp in groups:
        if exp != "race":
            continue
        cs = [c for c in racy if (c["class"], c["kind"]) == (cl, kind)]
        row = [str(sum("identical" in d(c)["exposed"] for c in cs))]
        row += [str(sum(s in d(c, "s_" + s)["exposed"] for c in cs)) for s in STRATS]
        L.append(f"| {cl} ({len(cs)}) | {kind} | " + " | ".join(row) + " |")
    L.append(f"| **all racy** ({len(racy)}) | | "
             + " | ".join([str(sum("identical" in d(c)["exposed"] for c in racy))]
                          + [str(sum(s in d(c, "s_" + s)["exposed"] for c in racy)) for s in STRATS]) + " |")

    # ----- what ran
    def what_ran(title, cond_of):
        rows = ["", title, "",
                "The strategy's status in the race entry (or the nondeterminism gate's) per kernel "
                "kind, and any route field the entry carries (`*route*`, `no_code`, `intra_block`).", "",
                "| strategy | kind | ran | statuses (kernels) | route / reasons |", "|---|---|---|---|---|"]
        for s in STRATS:
            for kind in ("cuda", "triton"):
                cs = [c for c in cases if c["kind"] == kind]
                if not cs:
                    continue
                hist, routes = {}, {}
                for c in cs:
                    r = d(c, cond_of(s))
                    st = r["strategies"].get(s) or ("not checked: " + str(r["why_not_checked"])
                                                     if r["verdict"] == "not checked" else "absent")
                    hist[st] = hist.get(st, 0) + 1
                    for k, v in r["race_entry"].items():
                        if "route" in k or k.endswith("no_code") or k.endswith("intra_block"):
                            key = f"{k}: {v if isinstance(v, str) else json.dumps(v)}"[:140]
                            routes[key] = routes.get(key, 0) + 1
                ran = sum(v for k, v in hist.items() if k in RAN)
                rows.append(f"| {s} | {kind} | {ran}/{len(cs)} | "
                            + "; ".join(f"{k.replace('|', '/')} ({v})"
                                        for k, v in sorted(hist.items(), key=lambda x: -x[1]))
                            + " | " + "; ".join(f"{k.replace('|', '/')} ({v})"
                                                for k, v in sorted(routes.items(), key=lambda x: -x[1]))
                            + " |")
        return rows

    L += what_ran("## What each strategy did on these kernels (its run alone)", lambda s: "s_" + s)
    L += what_ran("## What each strategy did under the default options (no PTX)", lambda s: "default")
    L += ["", "`absent`: the strategy was not in the entry (not listed, nor added for a kernel "
          "without code).", ""]

    # ----- false flags and float atomics per condition
    L += ["", "## False flags and float atomics per condition", "",
          "PTX found: Triton kernels whose PTX kcheck found in Triton's cache (image_ptx "
          "records): none where the .ptx files were deleted, every one where they were kept.", "",
          "| condition | racy flagged `race` | race-free flagged `race` (false) | float-atomic named `nondeterminism` | not checked | PTX found |",
          "|---|---|---|---|---|---|"]
    for cond in conds:
        # default_ptx runs the Triton kernels only (the CUDA ones have no PTX anywhere)
        cs = [c for c in cases if cond != "default_ptx" or c["kind"] == "triton"]
        ry = [c for c in cs if c["expected"] == "race"]
        fr = [c for c in cs if c["expected"] != "race"]
        fc = [c for c in cs if c["expected"] == "nondeterminism"]
        ff = [c["name"] for c in fr if d(c, cond)["verdict"] == "race"]
        L.append(f"| {cond}{' (Triton)' if cond == 'default_ptx' else ''} | "
                 f"{frac(ry, lambda c: d(c, cond)['verdict'] == 'race')} | "
                 f"{len(ff)}{': ' + ', '.join(ff) if ff else ''} | "
                 f"{frac(fc, lambda c: d(c, cond)['verdict'] == 'nondeterminism')} | "
                 f"{sum(d(c, cond)['verdict'] == 'not checked' for c in cs)} | "
                 f"{frac([c for c in cs if c['kind'] == 'triton'], lambda c: d(c, cond)['image_ptx'])} |")

    # ----- cost
    L += ["", "## Cost per strategy (ms per check, median over the kernels it ran on)", "",
          "| strategy | alone: ms | kernels | under default options: ms | kernels |", "|---|---|---|---|---|"]
    for s in STRATS:
        a = [d(c, "s_" + s)["strategy_ms"][s] for c in cases if s in d(c, "s_" + s)["strategy_ms"]]
        b = [d(c)["strategy_ms"][s] for c in cases if s in d(c)["strategy_ms"]]
        fmt = lambda v: f"{statistics.median(v):.2f}" if v else "-"  # noqa: E731
        L.append(f"| {s} | {fmt(a)} | {len(a)} | {fmt(b)} | {len(b)} |")
    km = [d(c)["kernel_ms"] for c in cases if d(c)["kernel_ms"]]
    if km:
        L.append(f"\nKernel time: median {statistics.median(km):.4f} ms over {len(km)} kernels.")

    walls = {}
    for rc_path in glob.glob(os.path.join(work, "kc", "*.rc")):
        p = read(rc_path).split()
        kind = "cuda" if len(p) > 2 and p[2].startswith("c_") else "triton"
        try:
            walls.setdefault(kind, []).append(float(p[1]))
        except (IndexError, ValueError):
            pass
    for kind, w in sorted(walls.items()):
        L.append(f"kcheck processes ({kind}): {len(w)}, wall median {statistics.median(w):.1f} s, "
                 f"max {max(w):.1f} s, sum {sum(w):.0f} s.")

    # ----- per kernel
    L += ["", "## Per kernel", "",
          "Verdicts: R race, N nondeterminism, c clean, - not checked. Strategy columns: x = "
          "that strategy alone exposed it, . = ran and saw nothing, blank = did not run.", "",
          "| kernel | kind | class | expected | default (exposed by) | default, PTX | "
          + " | ".join(STRATS) + " | racecheck | gsan | consan | result = plain |",
          "|---|---|---|---|---|---|" + "---|" * len(STRATS) + "---|---|---|---|"]
    short = {"race": "R", "nondeterminism": "N", "clean": "c", "not checked": "-"}
    for c in cases:
        r = d(c)
        v = short[r["verdict"]] + (f" ({','.join(r['exposed'])})" if r["exposed"] else "")
        if r["verdict"] == "not checked":
            v += f" {str(r['why_not_checked'])[:60]}"
        p = short[d(c, "default_ptx")["verdict"]] if c["kind"] == "triton" else ""
        cols = []
        for s in STRATS:
            rs = d(c, "s_" + s)
            cols.append("x" if s in rs["exposed"] else "." if rs["strategies"].get(s) in RAN else "")
        same = ("yes" if r["result"] == c["plain_result"] else "differs") if r["result"] and c["plain_result"] else "?"
        L.append(f"| {c['name']} | {c['kind']} | {c['class']} | {c['expected']} | {v.replace('|', '/')} | {p} | "
                 + " | ".join(cols) + " | " + " | ".join((c[t] or "not run").replace("|", "/")
                                                   for t in ("racecheck", "gsan", "consan")) + f" | {same} |")
    text = "\n".join(L) + "\n"
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "races_sass.md"), "w") as f:
        f.write(text)
    with open(os.path.join(outdir, "races_sass.json"), "w") as f:
        json.dump({"goal": {"pass": ok_all, "missed": miss, "false_flags": false,
                            "float_atomic_not_named": unnamed}, "cases": cases}, f, indent=1)
    print(text)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
