#!/usr/bin/env python3
"""test/gpu/check_contracts.py — expectations on the kcheck reports of the
contract-gate runs (test/gpu/run_gpu_contracts.sh).

  check_contracts.py [--md FILE] [--contracts YAML]
      --suite NAME PLAIN_LOG KCHECK_LOG REPORT... [--suite ...]

A suite is one program run without kcheck (PLAIN_LOG, its stdout) and with
it (KCHECK_LOG, its stdout; REPORT... its JSONL reports; a report that does
not exist is ignored). Suites: `cuda` (test/gpu/contract_bugs.cu) and
`triton` (test/gpu/triton_contracts.py). Expectations:

  * each planted bug: a violation of its gate (EXPECT_FIRE); gemm_fp16acc's
    precision violation must also have evidence.verdict == fail_precision
    and evidence.profile == bf16_fp32acc;
  * each correct kernel (CLEAN): a check record with contract gates, the
    oracle gate's verdict on the application's inputs bitwise or pass
    (so the contract bound to the launch), no contract gate with
    status error, no violation of any gate;
  * per suite: the RESULT lines and CHECKSUM of the plain and the kcheck run
    are identical, the plain run verified (no verify=MISMATCH), every report
    has a summary with internal_errors == 0;
  * triton: each kernel's contract matched (kernel record `contract`), and
    the compiled kernel (TRITON_KERNEL line) has the parameter count of the
    kernel record and the shared memory of the contract's launch section.

Prints one line per expectation, `PASS|FAIL <name> - <detail>` (with the
violation's verdict line or evidence), then a table of gate statuses per
kernel; --md writes the same as markdown. Exit status 1 when any
expectation failed, 2 on usage errors. Standard library only.
"""
import argparse
import json
import os
import re
import sys

# The one report reader of the package (python/kcheck/report.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kcheck import report as kr  # noqa: E402

CONTRACT_GATES = ("coverage", "immutability", "bounds", "oracle", "nonfinite", "precision",
                  "extremes", "shapes")
ALL_GATES = ("determinism", "race") + CONTRACT_GATES

# kernel -> (suite, gate that must fire)
EXPECT_FIRE = {
    "tail_unwritten": ("cuda", "coverage"),
    "input_scratch": ("cuda", "immutability"),
    "oob_tail_write": ("cuda", "bounds"),
    "exp_fast_wrong": ("cuda", "oracle"),
    "gemm_fp16acc": ("cuda", "precision"),
    "rowmax_fmaxf": ("cuda", "nonfinite"),
    "tiled_add_bug": ("cuda", "shapes"),
    "softmax_nomax": ("cuda", "extremes"),
    "layernorm_onepass": ("cuda", "precision"),
    "kc_matmul_fp16acc": ("triton", "precision"),
}
# extra evidence conditions: kernel -> {evidence key: required value}
EXPECT_EVIDENCE = {
    "gemm_fp16acc": {"verdict": "fail_precision", "profile": "bf16_fp32acc"},
}
CLEAN = {
    "vecadd": "cuda",
    "exp_correct": "cuda",
    "gemm_fp32acc": "cuda",
    "rowmax": "cuda",
    "softmax_rows": "cuda",
    "layernorm_twopass": "cuda",
    "kc_softmax_rows": "triton",
    "kc_matmul_fp32acc": "triton",
}
TRITON_KERNELS = ("kc_softmax_rows", "kc_matmul_fp16acc", "kc_matmul_fp32acc")


def base_name(name):
    """'vecadd(float const*, ...)' -> 'vecadd'; 'void f<int>(...)' -> 'f'."""
    s = str(name or "").split("(")[0].strip()
    s = s.split("<")[0].strip()
    if " " in s:
        s = s.split(" ")[-1]
    return s.split("::")[-1]


def mangled_base(name):
    """'_Z6vecaddPKfS0_Pfi' -> 'vecadd' (plain names pass through)."""
    m = re.match(r"_Z(\d+)", str(name or ""))
    if not m:
        return str(name or "")
    n = int(m.group(1))
    return name[m.end():m.end() + n]


def load_report(path):
    try:
        rep = kr.read(path)
    except kr.ReportError:
        return None, 0
    return rep.records, len(rep.malformed)


class KernelInfo:
    def __init__(self):
        self.contract = set()
        self.nparams = set()
        self.checks = []
        self.violations = []
        self.skips = []


def gather(reports):
    """Per base kernel name: contract, parameter counts, checks, violations,
    skips; and per report: (path, summary or None, bad lines)."""
    kinfo, files = {}, []
    for path in reports:
        recs, bad = load_report(path)
        if recs is None:
            continue
        ids = {}
        summary = None
        for r in recs:
            t = r.get("type")
            if t == "kernel":
                nm = base_name(r.get("demangled") or r.get("name"))
                if nm in ("", None) or nm.startswith("_Z"):
                    nm = mangled_base(r.get("name"))
                ids[r.get("id")] = nm
                k = kinfo.setdefault(nm, KernelInfo())
                k.contract.add(r.get("contract"))
                params = r.get("params")
                k.nparams.add(len(params) if isinstance(params, list) else None)
            elif t == "summary":
                summary = r
        for r in recs:
            t = r.get("type")
            if t not in ("check", "violation", "skip"):
                continue
            nm = ids.get(r.get("kernel"))
            if nm is None:
                nm = base_name(r.get("kernel_name")) or mangled_base(r.get("kernel_mangled"))
            k = kinfo.setdefault(nm, KernelInfo())
            {"check": k.checks, "violation": k.violations, "skip": k.skips}[t].append(r)
        files.append((path, summary, bad))
    return kinfo, files


def results_of(log):
    """RESULT lines (name -> (hash field, verify)), CHECKSUM, TRITON_KERNEL
    lines (name -> dict) of a program's stdout."""
    res, ck, tk = {}, None, {}
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                w = line.split()
                if len(w) >= 3 and w[0] == "RESULT":
                    h = next((x for x in w[2:] if x.startswith(("hash=", "sha256="))), "")
                    v = next((x[7:] for x in w[2:] if x.startswith("verify=")), "")
                    res[w[1]] = (h, v)
                elif len(w) == 2 and w[0] == "CHECKSUM":
                    ck = w[1]
                elif len(w) >= 2 and w[0] == "TRITON_KERNEL":
                    tk[w[1]] = dict(x.split("=", 1) for x in w[2:] if "=" in x)
    except OSError:
        pass
    return res, ck, tk


def contract_shmem(yaml_text, kernel):
    """The launch shmem of the contract of `kernel` (by name), read with a
    regex (no YAML module needed); None when not found."""
    m = re.search(r"kernel:\s*\{\s*name:\s*" + re.escape(kernel) + r"\s*\}", yaml_text)
    if not m:
        return None
    nxt = yaml_text.find("- kernel:", m.end())
    block = yaml_text[m.end(): nxt if nxt >= 0 else len(yaml_text)]
    s = re.search(r"shmem:\s*(\d+)", block)
    return int(s.group(1)) if s else 0


def short(v, n=300):
    s = str(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def evidence_summary(v):
    ev = v.get("evidence") or {}
    parts = []
    if ev.get("verdict_line"):
        parts.append(str(ev["verdict_line"]))
    else:
        for k in ("verdict", "tensor", "index", "first_index", "unwritten", "changed", "count",
                  "side", "offset", "before", "after", "detail"):
            if k in ev:
                parts.append(f"{k}={json.dumps(ev[k]) if not isinstance(ev[k], str) else ev[k]}")
        if not parts:
            parts.append(v.get("message") or json.dumps(ev)[:200])
    for k in ("profile", "explained_by"):
        if k in ev and k not in str(parts):
            parts.append(f"{k}={ev[k]}")
    exp = ev.get("exposed_by") or v.get("exposed_by")
    if isinstance(exp, dict):
        e = ", ".join(f"{k}={json.dumps(exp[k])}" for k in
                      ("inputs", "generator", "transform", "seed", "scalars", "grid", "block")
                      if k in exp)
        parts.append(f"exposed_by {{{e}}}")
    elif exp:
        parts.append(f"exposed_by {exp}")
    return short("; ".join(parts), 400)


def gate_statuses(k):
    """gate -> status over the kernel's checks ('fail' wins, else distinct
    statuses joined by '/'), plus 'V' marks where violations exist."""
    st = {}
    for c in k.checks:
        for g, r in (c.get("gates") or {}).items():
            s = r.get("status") if isinstance(r, dict) else str(r)
            st.setdefault(g, [])
            if s not in st[g]:
                st[g].append(s)
    out = {}
    vg = {v.get("gate") for v in k.violations}
    for g, ss in st.items():
        s = "fail" if "fail" in ss else "/".join(str(x) for x in ss)
        out[g] = s + (" (V)" if g in vg and s != "fail" else "")
    for g in vg - set(out):
        out[g] = "violation"
    return out


def reasons(k, gate):
    """The reason(s) a gate gave in the kernel's checks (inconclusive or
    error), and the reasons of its skipped or inconclusive trials."""
    out = []
    for c in k.checks:
        r = (c.get("gates") or {}).get(gate)
        if not isinstance(r, dict):
            continue
        for key in ("reason", "error"):
            if r.get(key) and r[key] not in out:
                out.append(str(r[key]))
        for t in r.get("trials") or []:
            if isinstance(t, dict) and t.get("reason") and t["reason"] not in out:
                out.append(f"{t.get('generator')}: {t['reason']}")
    return short("; ".join(out), 200)


def contract_errors(k):
    errs = []
    for c in k.checks:
        for g, r in (c.get("gates") or {}).items():
            if g in CONTRACT_GATES and isinstance(r, dict) and r.get("status") == "error":
                errs.append(f"{g}: {r.get('error') or r.get('reason') or 'error'}")
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--md", help="write the results as markdown here")
    ap.add_argument("--contracts", help="the contract file (Triton shmem check)")
    ap.add_argument("--suite", nargs="+", action="append", default=[],
                    metavar="NAME PLAIN KCHECK REPORT",
                    help="suite name, plain stdout, kcheck stdout, reports")
    a = ap.parse_args()
    if not a.suite or any(len(s) < 3 for s in a.suite):
        ap.print_usage(sys.stderr)
        print("check_contracts.py: each --suite needs NAME PLAIN_LOG KCHECK_LOG [REPORT...]",
              file=sys.stderr)
        return 2
    yaml_text = ""
    if a.contracts:
        try:
            with open(a.contracts, encoding="utf-8") as f:
                yaml_text = f.read()
        except OSError as e:
            print(f"check_contracts.py: {e}", file=sys.stderr)

    lines = []  # (ok, name, detail)

    def record(ok, name, detail=""):
        lines.append((bool(ok), name, detail))

    kinfo_all = {}
    suites = {}
    for s in a.suite:
        name, plain, kc, reps = s[0], s[1], s[2], [r for r in s[3:] if os.path.exists(r)]
        kinfo, files = gather(reps)
        suites[name] = kinfo
        for kn, ki in kinfo.items():
            kinfo_all.setdefault((name, kn), ki)
        # outputs identical, plain run verified
        rp, cp, tkp = results_of(plain)
        rk, ckk, tkk = results_of(kc)
        diff = [k for k in sorted(set(rp) | set(rk)) if rp.get(k, ("", ""))[0] != rk.get(k, ("", ""))[0]]
        ok = bool(rp) and not diff and cp is not None and cp == ckk
        record(ok, f"{name}: outputs identical with and without kcheck",
               f"{len(rp)} results, CHECKSUM {cp} / {ckk}" if ok else
               f"plain {len(rp)} results CHECKSUM {cp}, kcheck {len(rk)} results CHECKSUM {ckk}; "
               f"differ: {', '.join(diff[:8]) or '-'}")
        bad = [k for k, (_, v) in rp.items() if v.startswith("MISMATCH") or not v]
        record(bool(rp) and not bad, f"{name}: plain run verified on the CPU",
               "every RESULT verify=ok|bug" if rp and not bad else
               f"no RESULT lines in {plain}" if not rp else f"MISMATCH: {', '.join(bad)}")
        # reports
        if not files:
            record(False, f"{name}: kcheck report present", f"no report among {len(s) - 3} paths")
        else:
            ie = [(os.path.basename(p), (sm or {}).get("internal_errors")) for p, sm, _ in files]
            badie = [f"{p}: {v if v is not None else 'no summary'}" for p, v in ie if v != 0]
            record(not badie, f"{name}: internal_errors == 0 in every report",
                   f"{len(files)} report(s)" if not badie else "; ".join(badie))
        # triton: the compiled parameter list and shared memory vs the contract
        if name == "triton":
            for tn in TRITON_KERNELS:
                t = tkk.get(tn) or tkp.get(tn)
                ki = kinfo.get(tn)
                contract = sorted(str(c) for c in (ki.contract if ki else set()))
                npk = sorted(str(n) for n in (ki.nparams if ki else set()))
                want_sh = contract_shmem(yaml_text, tn) if yaml_text else None
                problems = []
                if not t:
                    problems.append("no TRITON_KERNEL line")
                if not ki:
                    problems.append("no kernel record")
                else:
                    if not any(c not in ("None", "null") for c in contract):
                        problems.append("no contract matched")
                    if t and npk != [t.get("params")]:
                        problems.append(f"driver params {npk} != compiled {t.get('params')}")
                if t and want_sh is not None and str(want_sh) != t.get("shared"):
                    problems.append(f"contract shmem {want_sh} != compiled shared {t.get('shared')}")
                detail = (f"contract={','.join(contract) or '-'} params={','.join(npk) or '-'} "
                          f"compiled: {' '.join(f'{k}={v}' for k, v in (t or {}).items())}; "
                          f"contract shmem={want_sh}")
                record(not problems, f"triton {tn}: compiled kernel fits its contract",
                       ("; ".join(problems) + " | " if problems else "") + detail)

    # planted bugs
    for kn, (suite, gate) in EXPECT_FIRE.items():
        ki = suites.get(suite, {}).get(kn)
        if suite not in suites:
            record(False, f"{kn}: {gate} fires", f"suite {suite} not run")
            continue
        if ki is None:
            record(False, f"{kn}: {gate} fires", "kernel not in the report")
            continue
        vs = [v for v in ki.violations if v.get("gate") == gate]
        want = EXPECT_EVIDENCE.get(kn, {})
        good = [v for v in vs if all((v.get("evidence") or {}).get(k) == x for k, x in want.items())]
        others = sorted({str(v.get("gate")) for v in ki.violations} - {gate})
        extra = f" (also: {', '.join(others)})" if others else ""
        name = f"{kn}: {gate} fires" + (
            " with " + ", ".join(f"{k}={x}" for k, x in want.items()) if want else "")
        if good:
            record(True, name, evidence_summary(good[0]) + extra)
        elif vs:
            got = "; ".join(f"verdict={(v.get('evidence') or {}).get('verdict')} "
                            f"profile={(v.get('evidence') or {}).get('profile')}" for v in vs[:3])
            record(False, name, f"{len(vs)} {gate} violation(s) but none with {want}: {got} | "
                   + evidence_summary(vs[0]))
        else:
            st = gate_statuses(ki).get(gate, "not run")
            why = contract_errors(ki)
            record(False, name, f"no {gate} violation (status {st}; checks={len(ki.checks)}"
                   f" skips={len(ki.skips)}{'; ' + '; '.join(why[:2]) if why else ''})" + extra)

    # correct kernels
    for kn, suite in CLEAN.items():
        name = f"{kn}: checked with contract gates, no violation"
        if suite not in suites:
            record(False, name, f"suite {suite} not run")
            continue
        ki = suites[suite].get(kn)
        if ki is None:
            record(False, name, "kernel not in the report")
            continue
        ccheck = [c for c in ki.checks if set((c.get("gates") or {})) & set(CONTRACT_GATES)]
        st = gate_statuses(ki)
        stline = " ".join(f"{g}={st[g]}" for g in ALL_GATES if g in st)
        errs = contract_errors(ki)
        if not ccheck:
            skips = "; ".join(short(s.get("reason"), 80) for s in ki.skips[:2])
            record(False, name, f"no check with contract gates (checks={len(ki.checks)}"
                   f"{', skips: ' + skips if skips else ''}; contract={sorted(map(str, ki.contract))})")
        elif ki.violations:
            record(False, name, f"{len(ki.violations)} violation(s): "
                   + " | ".join(f"[{v.get('gate')}] {evidence_summary(v)}" for v in ki.violations[:3]))
        elif errs:
            record(False, name, "contract gate error: " + "; ".join(short(e, 160) for e in errs[:3]))
        elif st.get("oracle") not in ("bitwise", "pass"):
            record(False, name, f"the oracle gave no verdict (oracle={st.get('oracle', 'not run')}"
                   f"{': ' + reasons(ki, 'oracle') if reasons(ki, 'oracle') else ''}) | {stline}")
        else:
            inc = [f"{g}: {reasons(ki, g)}" for g in CONTRACT_GATES
                   if st.get(g) == "inconclusive" and reasons(ki, g)]
            record(True, name, stline + (" | inconclusive: " + "; ".join(inc) if inc else ""))

    # other kernels (torch's own in the triton run): violations are noted only
    notes = []
    for (s, k), ki in sorted(kinfo_all.items()):
        if k not in EXPECT_FIRE and k not in CLEAN and ki.violations:
            notes.append(f"note: {s} kernel {short(k, 60)} (no expectation) has violations: "
                         + " | ".join(f"[{v.get('gate')}] {evidence_summary(v)}"
                                      for v in ki.violations[:2]))

    # gate table
    names = list(EXPECT_FIRE) + list(CLEAN)
    infos = {}
    for k in names:
        suite = EXPECT_FIRE[k][0] if k in EXPECT_FIRE else CLEAN[k]
        infos[k] = suites.get(suite, {}).get(k) or KernelInfo()
    seen = set()
    for ki in infos.values():
        seen |= set(gate_statuses(ki))
    present = [g for g in ALL_GATES if g in seen] + sorted(seen - set(ALL_GATES))
    table_rows = []
    for k in names:
        st = gate_statuses(infos[k])
        expect = EXPECT_FIRE[k][1] if k in EXPECT_FIRE else "none"
        table_rows.append([k, expect, str(len(infos[k].checks))] + [st.get(g, "-") for g in present])

    nfail = sum(1 for ok, _, _ in lines if not ok)
    header = ["kernel", "must fire", "checks"] + list(present)
    for ok, n, d in lines:
        print(f"{'PASS' if ok else 'FAIL'} {n}{' - ' + d if d else ''}")
    for n in notes[:10]:
        print(n)
    print()
    print("gate statuses per kernel ('(V)': a violation of that gate; '-': not run)")
    widths = [max(len(str(r[i])) for r in [header] + table_rows) for i in range(len(header))]
    for r in [header] + table_rows:
        print("  ".join(str(x).ljust(widths[i]) for i, x in enumerate(r)))
    print()
    print(f"{len(lines) - nfail} passed, {nfail} failed")
    if a.md:
        with open(a.md, "w", encoding="utf-8") as f:
            f.write("| expectation | result | detail |\n|---|---|---|\n")
            for ok, n, d in lines:
                f.write(f"| {n} | {'PASS' if ok else 'FAIL'} | {d.replace('|', '/')} |\n")
            for n in notes[:10]:
                f.write(f"\n{n.replace('|', '/')}\n")
            f.write("\n### Gate statuses per kernel\n\n")
            f.write("'(V)': a violation of that gate; '-': the gate gave no result.\n\n")
            f.write("| " + " | ".join(header) + " |\n|" + "---|" * len(header) + "\n")
            for r in table_rows:
                f.write("| " + " | ".join(str(x).replace("|", "/") for x in r) + " |\n")
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
