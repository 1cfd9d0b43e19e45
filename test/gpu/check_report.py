#!/usr/bin/env python3
"""test/gpu/check_report.py — assertions on kcheck JSONL reports from GPU runs.

Usage:
  check_report.py --mode torch|cuda [--expect-launches N] REPORT [REPORT...]

Several report files may be given (a Python run can start helper processes,
e.g. ptxas or ldconfig, that load kcheck too). The main report is the one with
the most `launch` records; every other report must parse, and where it has a
summary, report zero internal errors.

Checks on the main report (run with trace=1:cupti_audit=1):
  - every line is a JSON object with type/seq/t, seq counts up from 0, the first
    record is `run` with schema kcheck.report/2, exactly one `summary`;
  - summary.internal_errors == 0;
  - number of `launch` records == summary.launches, launch indices 0..n-1,
    launches per entry agree with summary.launches_by_entry;
  - CUPTI audit: status done, missed_by_shim == 0, missed_by_cupti == 0,
    matched == summary.launches;
  - every launched kernel has a `kernel` record before its first launch, with a
    name, a demangled name and a non-null parameter layout;
  - no launch has param_form "unknown"; with param_form "params" the captured
    size equals the kernel's param_bytes;
  - every pointer in a launch record has base/alloc_size with
    base <= value < base + alloc_size, and some launches have pointers;
  - mode torch: launched CUkernel and CUfunction kernels, the Triton kernel
    kc_scaled_add_kernel as a CUfunction, a GEMM kernel;
  - mode cuda: each kernel of test/gpu/launches.cu with its launch path
    (struct pointers, non-default stream, cluster attribute, cooperative
    launch, driver cuLaunchKernel with kernelParams and with `extra`).

Prints a readable summary; exits 0 when all checks pass, 1 when any fails,
2 on usage errors or unreadable files. Standard library only.
"""
import argparse
import collections
import json
import os
import sys

# The one report reader of the package (python/kcheck/report.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kcheck import report as kr  # noqa: E402

SCHEMA = "kcheck.report/2"
ENTRIES = ("cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel")
ATTR_COOPERATIVE = 2
ATTR_CLUSTER_DIMENSION = 4


class Checker:
    def __init__(self):
        self.results = []  # (ok, name, detail)

    def check(self, ok, name, detail=""):
        self.results.append((bool(ok), name, detail))
        return bool(ok)

    def fail(self, name, detail):
        return self.check(False, name, detail)

    @property
    def failures(self):
        return [r for r in self.results if not r[0]]


def load(path):
    """Returns (records, errors)."""
    try:
        rep = kr.read(path)
    except kr.ReportError as e:
        return [], [str(e)]
    return rep.records, ["%s:%d: not a JSON record: %s" % (path, n, t) for n, t in rep.malformed]


def short(s, n=90):
    s = str(s)
    return s if len(s) <= n else s[: n - 3] + "..."


def hexint(v):
    if isinstance(v, int):
        return v
    return int(str(v), 16)


def check_structure(c, path, recs):
    keys_ok = all(list(r.keys())[:3] == ["type", "seq", "t"] for r in recs)
    c.check(keys_ok, "records start with type, seq, t",
            "" if keys_ok else "some record has other leading keys")
    seqs = [r.get("seq") for r in recs]
    c.check(seqs == list(range(len(recs))), "record seq counts up from 0",
            "" if seqs == list(range(len(recs))) else f"first seqs: {seqs[:10]}")
    c.check(recs and recs[0].get("type") == "run" and recs[0].get("schema") == SCHEMA,
            "first record is run with schema " + SCHEMA,
            "" if recs else "empty report")
    n_sum = sum(1 for r in recs if r.get("type") == "summary")
    c.check(n_sum == 1, "exactly one summary record", f"found {n_sum}")


def check_main(c, recs, mode, expect_launches):
    by_type = collections.defaultdict(list)
    for r in recs:
        by_type[r.get("type")].append(r)
    summary = by_type["summary"][-1] if by_type["summary"] else {}
    launches = by_type["launch"]
    kernels = {}
    kernel_seq = {}
    for k in by_type["kernel"]:
        if k.get("id") in kernels:
            c.fail("kernel ids unique", f"kernel id {k.get('id')} recorded twice")
        kernels[k.get("id")] = k
        kernel_seq[k.get("id")] = k.get("seq")

    # Summary counters.
    c.check(summary.get("internal_errors") == 0, "summary.internal_errors == 0",
            f"internal_errors = {summary.get('internal_errors')}")
    n_sum = summary.get("launches")
    c.check(n_sum == len(launches), "launch records == summary.launches",
            f"{len(launches)} launch records, summary.launches = {n_sum}")
    idx = sorted(l.get("launch") for l in launches if isinstance(l.get("launch"), int))
    c.check(idx == list(range(len(launches))), "launch indices are 0..n-1 without gaps",
            "" if idx == list(range(len(launches))) else f"first indices {idx[:10]}")
    by_entry = collections.Counter(l.get("entry") for l in launches)
    lbe = summary.get("launches_by_entry", {}) or {}
    ok = all(by_entry.get(e, 0) == lbe.get(e, 0) for e in ENTRIES) and \
        sum(by_entry.values()) == sum(by_entry.get(e, 0) for e in ENTRIES)
    c.check(ok, "launch entries agree with summary.launches_by_entry",
            f"records {dict(by_entry)}, summary {lbe}")
    if expect_launches is not None:
        c.check(n_sum == expect_launches, "summary.launches == launches the program made",
                f"program made {expect_launches}, kcheck counted {n_sum}")

    # CUPTI audit.
    audits = by_type["audit"]
    if not audits:
        c.fail("CUPTI audit record present", "no audit record (was cupti_audit=1 set?)")
    else:
        a = audits[-1]
        if a.get("status") != "done":
            c.fail("CUPTI audit status done",
                   f"status {a.get('status')!r}, reason {a.get('reason')!r}")
        else:
            c.check(True, "CUPTI audit status done")
            c.check(a.get("missed_by_shim") == 0, "audit: missed_by_shim == 0",
                    f"missed_by_shim = {a.get('missed_by_shim')}; missed kernels: "
                    f"{short(a.get('missed_kernels'), 300)}")
            c.check(a.get("missed_by_cupti") == 0, "audit: missed_by_cupti == 0",
                    f"missed_by_cupti = {a.get('missed_by_cupti')}")
            c.check(a.get("matched") == n_sum, "audit: matched == summary.launches",
                    f"matched = {a.get('matched')}, launches = {n_sum}")

    # Kernels that were launched.
    launched = collections.Counter(l.get("kernel") for l in launches)
    bad_kernel = []
    for kid in launched:
        k = kernels.get(kid)
        if k is None:
            bad_kernel.append(f"launch of kernel id {kid} without a kernel record")
            continue
        first_launch_seq = min(l.get("seq") for l in launches if l.get("kernel") == kid)
        if kernel_seq[kid] > first_launch_seq:
            bad_kernel.append(f"kernel {kid} recorded after its first launch")
        if not k.get("name") or k.get("name") == "<unknown>":
            bad_kernel.append(f"kernel {kid}: no name")
        if not k.get("demangled"):
            bad_kernel.append(f"kernel {kid} {short(k.get('name'))}: no demangled name")
        if k.get("handle_kind") not in ("CUfunction", "CUkernel"):
            bad_kernel.append(f"kernel {kid}: handle_kind {k.get('handle_kind')!r}")
        if k.get("params") is None:
            later = [l.get("param_form") for l in launches if l.get("kernel") == kid]
            how = ("its launches did capture a layout later: the kernel record was written "
                   "before the layout was known" if any(f in ("params", "none") for f in later)
                   else "no launch of it had a known layout either")
            bad_kernel.append(f"kernel {kid} {short(k.get('demangled'), 60)}: params null ({how})")
    c.check(not bad_kernel, "launched kernels have a record, names and a params layout",
            "; ".join(bad_kernel[:8]) + (f" (+{len(bad_kernel) - 8} more)" if len(bad_kernel) > 8 else ""))

    unknown = [l for l in launches if l.get("param_form") == "unknown"]
    c.check(not unknown, "no launch with param_form unknown",
            f"{len(unknown)} launches, kernels {sorted(set(l.get('kernel') for l in unknown))[:10]}")
    size_bad = []
    for l in launches:
        k = kernels.get(l.get("kernel"))
        if k and l.get("param_form") == "params" and l.get("param_size") != k.get("param_bytes"):
            size_bad.append(f"launch {l.get('launch')}: param_size {l.get('param_size')} "
                            f"!= kernel param_bytes {k.get('param_bytes')}")
        if l.get("param_bytes") is not None and l.get("param_size") is not None and \
                len(l["param_bytes"]) != 2 * l["param_size"] and l["param_size"] <= 4096:
            size_bad.append(f"launch {l.get('launch')}: param_bytes hex length "
                            f"{len(l['param_bytes'])} != 2*param_size")
    c.check(not size_bad, "captured parameter sizes agree with the layout", "; ".join(size_bad[:5]))

    ptr_bad, with_ptrs = [], 0
    for l in launches:
        ps = l.get("pointers") or []
        if ps:
            with_ptrs += 1
        for p in ps:
            try:
                v, b, sz = hexint(p["value"]), hexint(p["base"]), int(p["alloc_size"])
                if sz <= 0 or not (b <= v < b + sz) or p.get("alloc_offset") != v - b:
                    ptr_bad.append(f"launch {l.get('launch')} offset {p.get('offset')}: "
                                   f"value {p['value']} base {p['base']} size {sz}")
                if p.get("resolved_by") not in ("map", "driver"):
                    ptr_bad.append(f"launch {l.get('launch')}: resolved_by {p.get('resolved_by')!r}")
            except (KeyError, TypeError, ValueError) as e:
                ptr_bad.append(f"launch {l.get('launch')}: malformed pointer {p} ({e})")
    c.check(with_ptrs > 0, "some launches have resolved device pointers",
            f"{with_ptrs} of {len(launches)} launches")
    c.check(not ptr_bad, "pointers have base/alloc_size containing the value", "; ".join(ptr_bad[:5]))

    def launched_kernels(pred):
        return [kernels[kid] for kid in launched if kid in kernels and pred(kernels[kid])]

    def launches_of(k):
        return [l for l in launches if l.get("kernel") == k.get("id")]

    if mode == "torch":
        cuk = launched_kernels(lambda k: k.get("handle_kind") == "CUkernel")
        cuf = launched_kernels(lambda k: k.get("handle_kind") == "CUfunction")
        c.check(cuk, "torch: a launched CUkernel kernel (ATen/cuBLAS)", f"{len(cuk)} found")
        c.check(cuf, "torch: a launched CUfunction kernel (Triton)", f"{len(cuf)} found")
        tri = launched_kernels(lambda k: "kc_scaled_add_kernel" in (k.get("name") or ""))
        if c.check(tri, "torch: Triton kc_scaled_add_kernel launched", f"{len(tri)} found"):
            t = tri[0]
            ls = launches_of(t)
            c.check(t.get("handle_kind") == "CUfunction", "torch: Triton kernel is a CUfunction",
                    f"handle_kind {t.get('handle_kind')}")
            c.check(all(len(l.get("pointers") or []) >= 3 for l in ls),
                    "torch: Triton launches show x, y, out pointers",
                    f"pointer counts {[len(l.get('pointers') or []) for l in ls[:5]]}, "
                    f"entries {sorted(set(l.get('entry') for l in ls))}")
        gemm = launched_kernels(lambda k: any(s in (k.get("demangled") or "").lower()
                                              for s in ("gemm", "cutlass", "sm90_xmma", "nvjet")))
        c.check(gemm, "torch: a GEMM kernel (cuBLAS/cuBLASLt) launched",
                f"{len(gemm)} found")
        c.check(len(launches) >= 50, "torch: at least 50 launches traced", f"{len(launches)}")

    if mode == "cuda":
        def one(sub):
            ks = launched_kernels(lambda k: sub in (k.get("demangled") or ""))
            c.check(ks, f"cuda: {sub} launched", f"{len(ks)} kernels match")
            return ks

        for sub in ("kc_axpy", "kc_transform<float, 3>", "kc_transform<int, 7>",
                    "kc_transform<double, 2>"):
            for k in one(sub):
                if sub.startswith("kc_transform"):
                    c.check(k.get("name", "").startswith("_Z") and k.get("name") != k.get("demangled"),
                            f"cuda: {sub} has a mangled name and a distinct demangled name",
                            f"name {k.get('name')!r}")
                ls = launches_of(k)
                c.check(all(len(l.get("pointers") or []) >= 2 for l in ls),
                        f"cuda: {sub} launch shows its 2 pointer arguments",
                        f"pointer counts {[len(l.get('pointers') or []) for l in ls]}")

        for k in one("kc_struct_gather"):
            for l in launches_of(k):
                ps = {p.get("offset"): p for p in l.get("pointers") or []}
                ok = 0 in ps and 16 in ps and ps[0].get("base") == ps[16].get("base")
                c.check(ok, "cuda: struct parameter: pointers at offsets 0 and 16 in one allocation",
                        f"pointers {short(l.get('pointers'), 300)}")
                if ok:
                    c.check(ps[0].get("alloc_offset") == 64,
                            "cuda: struct parameter: interior pointer offset 64 into its allocation",
                            f"alloc_offset {ps[0].get('alloc_offset')}")
                c.check(8 not in ps and 24 not in ps,
                        "cuda: struct parameter: scalars not taken for pointers",
                        f"offsets {sorted(ps)}")
        for k in one("kc_stream_fill"):
            for l in launches_of(k):
                c.check(hexint(l.get("stream", "0x0")) != 0, "cuda: kc_stream_fill on a non-default stream",
                        f"stream {l.get('stream')}")
        for k in one("kc_cluster_scale"):
            for l in launches_of(k):
                ids = [a.get("id") for a in l.get("attributes") or []]
                c.check(l.get("entry") == "cuLaunchKernelEx" and ATTR_CLUSTER_DIMENSION in ids,
                        "cuda: cudaLaunchKernelEx arrives as cuLaunchKernelEx with the cluster attribute",
                        f"entry {l.get('entry')}, attribute ids {ids}")
        for k in one("kc_coop_reduce"):
            for l in launches_of(k):
                ids = [a.get("id") for a in l.get("attributes") or []]
                ok = l.get("entry") == "cuLaunchCooperativeKernel" or \
                    (l.get("entry") == "cuLaunchKernelEx" and ATTR_COOPERATIVE in ids)
                c.check(ok, "cuda: cooperative launch recorded as cooperative",
                        f"entry {l.get('entry')}, attribute ids {ids}")
        for k in one("kc_driver_inc"):
            ls = launches_of(k)
            forms = sorted(l.get("param_form") for l in ls)
            c.check(forms == ["extra", "params"], "cuda: driver cuLaunchKernel with kernelParams and with extra",
                    f"param forms {forms}")
            c.check(k.get("handle_kind") == "CUfunction", "cuda: kc_driver_inc is a CUfunction",
                    f"handle_kind {k.get('handle_kind')}")
            c.check(all(0 in [p.get("offset") for p in l.get("pointers") or []] for l in ls),
                    "cuda: driver launches show the pointer at offset 0",
                    f"{[[p.get('offset') for p in l.get('pointers') or []] for l in ls]}")
            c.check(all(l.get("param_size") == 16 for l in ls), "cuda: driver launches carry 16 parameter bytes",
                    f"sizes {[l.get('param_size') for l in ls]}")

    return summary, kernels, launched, by_type


def print_overview(path, recs, summary, kernels, launched, by_type):
    run = next((r for r in recs if r.get("type") == "run"), {})
    print(f"report: {path}")
    print(f"  exe: {run.get('exe')}  pid: {run.get('pid')}  kcheck {run.get('kcheck_version')}")
    print(f"  records: " + ", ".join(f"{t}={len(v)}" for t, v in sorted(by_type.items())))
    print(f"  summary: " + json.dumps({k: v for k, v in summary.items() if k not in ("type", "seq", "t")}))
    for a in by_type.get("audit", []):
        print(f"  audit: " + json.dumps({k: v for k, v in a.items() if k not in ("type", "seq", "t")})[:400])
    kinds = collections.Counter(kernels[k].get("handle_kind") for k in launched if k in kernels)
    print(f"  launched kernels by handle kind: {dict(kinds)}")
    print("  kernels (launches, kind, params, demangled name):")
    for kid, n in sorted(launched.items(), key=lambda kv: -kv[1]):
        k = kernels.get(kid, {})
        np_ = "null" if k.get("params") is None else len(k.get("params"))
        print(f"    {n:6d}  {k.get('handle_kind', '?'):10s} {str(np_):>4s}  "
              f"{short(k.get('demangled', '?'), 100)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("torch", "cuda"), required=True)
    ap.add_argument("--expect-launches", type=int, default=None,
                    help="number of launches the program reports it made")
    ap.add_argument("reports", nargs="+")
    args = ap.parse_args()

    c = Checker()
    loaded = []
    for path in args.reports:
        recs, errs = load(path)
        for e in errs:
            c.fail("report parses", e)
        loaded.append((path, recs))
    if not loaded or all(not r for _, r in loaded):
        print("check_report: no records in " + " ".join(args.reports), file=sys.stderr)
        return 2

    def n_launch(recs):
        return sum(1 for r in recs if r.get("type") == "launch")

    main_path, main_recs = max(loaded, key=lambda pr: n_launch(pr[1]))
    for path, recs in loaded:
        if path == main_path:
            continue
        s = [r for r in recs if r.get("type") == "summary"]
        run = next((r for r in recs if r.get("type") == "run"), {})
        print(f"other report: {path} (exe {run.get('exe')}, {n_launch(recs)} launches, "
              f"{'summary' if s else 'no summary'})")
        if s:
            c.check(s[-1].get("internal_errors") == 0, f"{path}: internal_errors == 0",
                    f"internal_errors = {s[-1].get('internal_errors')}")

    check_structure(c, main_path, main_recs)
    summary, kernels, launched, by_type = check_main(c, main_recs, args.mode, args.expect_launches)
    print_overview(main_path, main_recs, summary, kernels, launched, by_type)

    print(f"checks ({args.mode}):")
    for ok, name, detail in c.results:
        line = f"  {'PASS' if ok else 'FAIL'}  {name}"
        if detail and (not ok or len(detail) < 80):
            line += f"  [{detail}]"
        print(line)
    fails = c.failures
    if fails:
        print(f"check_report: {len(fails)} of {len(c.results)} checks FAILED", file=sys.stderr)
        for _, name, detail in fails:
            print(f"check_report: FAIL {name}: {detail}", file=sys.stderr)
        return 1
    print(f"check_report: all {len(c.results)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
