"""kcheck front end: run a program under libkcheck.so and read its reports.

  kcheck run [--torch] [--serving] [-o key=value ...] [--lib PATH] [--log-file F]
             [--error-exitcode N] [--allow-unchecked] -- CMD ...     run CMD under kcheck
  kcheck options                                        list KCHECK_OPTIONS
  kcheck gates                                          list the gates
  kcheck report [--merge] [--sarif F] [--junit F] [--html F] [--gen-suppressions]
                [--allow-unchecked] FILE...
                                                        summarize JSONL reports, export them
  kcheck repro REPORT --violation N [-o DIR]            a bundle that reproduces one violation
  kcheck repro BUNDLE [-o key=value]...                 replay a finding's bundle (repro_dir) standalone
  kcheck suppressions [NAME]                            path of a shipped suppressions list
  kcheck contract lint FILE|DIR...                      validate contract files
  kcheck gen -g GEN -s SEED -f FMT --shape R,C [...]     regenerate a violation's inputs
  kcheck audit TASK.py CAND.py... | DIR... [-o OUT]     judge generated kernels against their
                                                        PyTorch reference (docs/audit.md)

exit status of audit: 1 (--error-exitcode N) when a candidate is broken or
  error (or partial or with unsupported layouts, with --strict), 5 when every candidate is unjudged (--allow-unchecked: 0), 2 for a
  usage error, 0 otherwise.

exit status of run and report: the program's own when it failed, else
  N (--error-exitcode N) or 1 (report) when violations were found,
  1 when a report has no summary (the process crashed or was killed),
  5 when nothing was checked (no report, or 0 checks; --allow-unchecked: 0),
  2 for a usage error, 0 otherwise.
"""
import argparse
import ctypes
import os
import subprocess
import sys

from kcheck import __version__
from kcheck import report as kr
from kcheck import _lib
from kcheck._lib import LibraryError, find_library

# Exit statuses (the module docstring): nothing was checked.
EXIT_UNCHECKED = 5


class UsageError(Exception):
    """An ordinary mistake: printed as one line, exit status 2."""


def find_lib(explicit):
    try:
        path = find_library(explicit)
    except LibraryError as e:
        raise UsageError(str(e)) from None
    if path is None:
        raise UsageError("libkcheck.so not found (build with `make`, or pass --lib / KCHECK_LIB)")
    return path


def open_lib(explicit):
    path = find_lib(explicit)
    try:
        return _lib.prototyped(ctypes.CDLL(path))
    except OSError as e:
        raise UsageError("cannot load %s: %s" % (path, e)) from None


def to_stdout(fn):
    """Runs fn (which prints to C's stderr) with stderr sent to stdout."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(1, 2)
        fn()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _log_prefix(opts):
    """The report prefix the run's processes use (the last log_path=,
    else "kcheck"), absolute from here; None for log_path=none."""
    prefix = "kcheck"
    for o in opts:
        if o.startswith("log_path="):
            prefix = o[len("log_path="):]
    return None if prefix in ("none", "") else os.path.abspath(prefix)


def _reports_since(prefix, before):
    """Reports under prefix written since the run began (before: the
    {path: mtime} that were there already)."""
    import glob
    out = []
    for path in sorted(glob.glob(glob.escape(prefix) + ".*.jsonl")):
        try:
            m = os.path.getmtime(path)
        except OSError:
            continue
        if path not in before or m != before[path]:
            out.append(path)
    return out


def unchecked_reason(reports):
    """Why reports give no verdict, or None: (status, line). A report
    without a summary is a run that did not finish; no report, or no check
    in any, is a run in which nothing was checked."""
    for rep in reports:
        if not rep.finished:
            return 1, ("%s has no summary: the process crashed or was killed before kcheck "
                       "finished, so its launches were not all checked" % rep.path)
    if not reports:
        return EXIT_UNCHECKED, "nothing was checked: no report (no process made a CUDA call)"
    # a violation (stream_order needs no check) is a verdict
    if any(r.violations or r.unrecorded_violations for r in reports) \
            or sum(r.checks_made for r in reports):
        return None
    launches = sum((r.summary or {}).get("launches", 0) for r in reports)
    why = {}
    for rep in reports:
        for s in rep.by_type("skip"):
            k = str(s.get("reason", "?"))
            why[k] = why.get(k, 0) + 1
    top = ", ".join("%s (%d)" % kv for kv in sorted(why.items(), key=lambda kv: -kv[1])[:3])
    return EXIT_UNCHECKED, ("nothing was checked: 0 checks of %d launch%s%s" % (
        launches, "" if launches == 1 else "es", "; skipped: " + top if top else ""))


def _check_options(lib, spec):
    """Checks the options as the run would, before starting the program: a
    list problem would stop it at its first CUDA call, after whatever it
    did before (the library prints each problem)."""
    try:
        fn = _lib.prototyped(ctypes.CDLL(lib)).kcheck_check_options
    except (OSError, AttributeError):
        return  # an older library: the run itself stops
    sys.stderr.flush()
    n = fn(spec.encode())
    if n > 0:
        raise UsageError("KCHECK_OPTIONS: %d problem%s above would stop the run; nothing was "
                         "started" % (n, "" if n == 1 else "s"))


def cmd_run(args):
    cmd = list(args.cmd or [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("nothing to run (kcheck run [-o key=value]... -- CMD ...)")
    lib = find_lib(args.lib)
    env = dict(os.environ)
    opts = [o for o in env.get("KCHECK_OPTIONS", "").split(":") if o]
    if args.serving:
        opts.insert(0, "serving=1")  # -o and KCHECK_OPTIONS settings still win
    opts += args.option or []
    if args.log_file:
        opts.append("log_file=" + os.path.abspath(args.log_file))
    if args.torch:
        # the library's constructor puts the binding's boot folder on
        # PYTHONPATH; KCHECK_PYTHON tells it where this package lives
        opts.append("torch=1")
        env.setdefault("KCHECK_PYTHON", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if opts:
        env["KCHECK_OPTIONS"] = ":".join(opts)
    preload = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = lib + (" " + preload if preload else "")
    _check_options(lib, env.get("KCHECK_OPTIONS", ""))
    prefix = _log_prefix(opts)
    before = {}
    if prefix:
        before = {p: os.path.getmtime(p) for p in _reports_since(prefix, {})}
    try:
        rc = subprocess.call(cmd, env=env)
    except FileNotFoundError:
        raise UsageError("command not found: %s" % cmd[0]) from None
    except PermissionError:
        raise UsageError("cannot execute %s: permission denied" % cmd[0]) from None
    if rc < 0:
        rc = 128 - rc  # killed by a signal, as a shell reports it
    if prefix is None:
        if not args.allow_unchecked:
            print("kcheck: log_path=none: no report to tell what was checked", file=sys.stderr)
        return rc
    reports = [kr.read(p) for p in _reports_since(prefix, before)]
    if args.error_exitcode and any(r.violations or r.unrecorded_violations for r in reports):
        return args.error_exitcode
    if rc:
        return rc
    why = None if args.allow_unchecked else unchecked_reason(reports)
    if why:
        print("kcheck: error: %s (--allow-unchecked accepts it)" % why[1], file=sys.stderr)
        return why[0]
    return 0


def cmd_options(args):
    lib = open_lib(args.lib)
    to_stdout(lib.kcheck_print_options)
    return 0


def cmd_gates(args):
    lib = open_lib(args.lib)
    to_stdout(lib.kcheck_print_gates)
    return 0


def cmd_contract(args):
    # libkcheck.so activates lazily (on the first CUDA call), so loading it
    # here only to parse YAML starts nothing and needs no driver.
    lib = open_lib(args.lib)
    errors = 0
    for path in args.files:
        if not os.path.exists(path):
            print("%s: error: no such file or directory" % path, file=sys.stderr)
            errors += 1
            continue
        sys.stderr.flush()
        errors += lib.kcheck_contract_lint(path.encode())
    if errors:
        print("%d error%s" % (errors, "" if errors == 1 else "s"), file=sys.stderr)
        return 1
    return 0


# Element decoders for `kcheck gen` (little-endian bit patterns).
def _decode(fmt, raw):
    import struct
    if fmt in ("fp64", "float64", "double"):
        return struct.unpack("<d", raw)[0]
    if fmt in ("fp32", "float32", "float", "tf32"):
        return struct.unpack("<f", raw)[0]
    if fmt in ("fp16", "float16", "half"):
        return struct.unpack("<e", raw)[0]
    if fmt in ("bf16", "bfloat16"):
        return struct.unpack("<f", b"\0\0" + raw)[0]
    return None  # fp8: printed as hex only


GEN_MAX_BYTES = 1 << 30


def cmd_gen(args):
    """Regenerates inputs exactly as a trial fed them to a kernel: input k
    of a violation whose exposed_by says generator G, transform T, seed S is
    `kcheck gen -g G -t T -s S+k -f FORMAT --shape ROWS,COLS --role R`."""
    lib = open_lib(args.lib)
    try:
        dims = [int(d) for d in args.shape.split(",")]
    except ValueError:
        raise UsageError("gen: --shape wants integers, e.g. 16,1000") from None
    if not dims or any(d < 0 for d in dims):
        raise UsageError("gen: --shape wants non-negative integers")
    cols = dims[-1]
    rows = 1
    for d in dims[:-1]:
        rows *= d
    esize = {"fp64": 8, "float64": 8, "double": 8, "fp16": 2, "float16": 2, "half": 2,
             "bf16": 2, "bfloat16": 2, "e4m3fn": 1, "e4m3": 1, "e5m2": 1}.get(args.format, 4)
    if rows * cols * esize > GEN_MAX_BYTES:
        raise UsageError("gen: --shape %s is %d elements (%d bytes); at most %d bytes are generated"
                         % (args.shape, rows * cols, rows * cols * esize, GEN_MAX_BYTES))
    buf = ctypes.create_string_buffer(max(1, rows * cols * esize))
    if lib.kcheck_generate(args.generator.encode(), args.transform.encode(), args.format.encode(),
                           args.role, rows, cols, args.seed, buf):
        raise UsageError("gen: unknown generator, transform or format "
                 "(generators: uniform all_positive stagnation fp16_overflow large_mean "
                 "large_logits specials duplicates cancel; transforms: none huge tiny "
                 "subnormal zeros)")
    raw = buf.raw[:rows * cols * esize]
    if args.raw:
        try:
            kr.write_file(args.raw, raw)
        except OSError as e:
            raise UsageError("cannot write %s: %s" % (args.raw, e.strerror or e)) from None
        return 0
    for i in range(rows * cols):
        b = raw[i * esize:(i + 1) * esize]
        v = _decode(args.format, b)
        idx, rest = [], i
        for d in reversed(dims):
            idx.append(rest % d if d else 0)
            rest //= d if d else 1
        print("%s\t0x%s\t%s" % (",".join(str(x) for x in reversed(idx)), b[::-1].hex(),
                                  "" if v is None else repr(v)))
    return 0


def _print_finding(f, merged):
    v = f.first
    n = f.occurrences
    times = " (%d occurrence%s)" % (n, "" if n == 1 else "s")
    where = ""
    if merged and (len(f.where) > 1 or f.ranks):
        where = " in %d process%s%s" % (len(f.where), "" if len(f.where) == 1 else "es",
                                        ", ranks %s" % ",".join(map(str, f.ranks)) if f.ranks else "")
    print("  bug [%s] in %s%s%s: %s" % (f.gate, f.kernel, times, where, v.get("message", "")))
    for line in kr.evidence_text(v)[1:]:
        print("    " + line)
    if f.sites:
        print("    sites: %s" % " -> ".join(f.sites))
    at = kr.contract_location(v) or kr.user_frame(v)
    if at:
        print("    at %s:%s" % (at[0], at[1]))
    if f.tests:
        print("    test: %s" % ", ".join(f.tests))
    print("    suppress: %s" % kr.suppression_line(f.gate, f.kernel))


def verdict(rep):
    """One line saying what a report's run found, from its summary."""
    if not rep.finished:
        return "none: the run did not finish"
    s = rep.summary
    checks, launches = rep.checks_made, s.get("launches", 0)
    n = len(rep.violations) + rep.unrecorded_violations
    failed = len(rep.gate_errors)
    # a run of kcheck's that failed (a faulting re-run: safety.md) is said
    # beside either verdict: what it would have judged was not
    also = "; %d gate entr%s failed to run (listed above)" % (
        failed, "y" if failed == 1 else "ies") if failed else ""
    if n:
        return "%d violation%s in %d check%s of %d launch%s%s" % (
            n, "" if n == 1 else "s", checks,
            "" if checks == 1 else "s", launches, "" if launches == 1 else "es", also)
    if not checks:
        return "none: nothing was checked (0 checks of %d launch%s)" % (
            launches, "" if launches == 1 else "es")
    return "clean: no violation in %d check%s of %d launch%s%s" % (
        checks, "" if checks == 1 else "s", launches, "" if launches == 1 else "es", also)


def _write(path, text):
    try:
        kr.write_file(path, text)
    except OSError as e:
        raise UsageError("cannot write %s: %s" % (path, e.strerror or e)) from None


# Gate entries that failed to run, listed by `kcheck report` (the records
# hold them all).
_GATE_ERRORS_SHOWN = 5


def cmd_report(args):
    from kcheck import op_report
    reports = kr.load(args.files)
    if args.gen_suppressions:
        # Only the lines, so the output can be redirected into a file as is.
        sys.stdout.write("".join(line + "\n" for line in kr.gen_suppressions(reports)))
        return 0
    status = 0
    for rep in reports:
        counts = {}
        for r in rep.records:
            counts[r["type"]] = counts.get(r["type"], 0) + 1
        print("%s: %s" % (rep.path, ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))
                          or "empty"))
        cost = kr.check_costs(rep.records)
        if cost:
            print("  checks cost %.1f ms in all, median %.2f ms%s" % (
                cost["total_ms"], cost["median_ms"],
                "; cost/floor median %.1f, ten costliest %.1f-%.1f" % (
                    cost["median_over_floor"], min(cost["top10_over_floor"]),
                    max(cost["top10_over_floor"])) if cost["median_over_floor"] is not None
                and cost["top10_over_floor"] else ""))
            if cost["median_less_wait_over_floor"] is not None and cost["top10_less_wait_over_floor"]:
                print("  less the wait for the application's queued work (wait_ms): cost/floor "
                      "median %.1f, ten costliest %.1f-%.1f" % (
                          cost["median_less_wait_over_floor"], min(cost["top10_less_wait_over_floor"]),
                          max(cost["top10_less_wait_over_floor"])))
            if cost["median_device_work_over_floor"] is not None:
                print("  the device work those checks need (restores, runs, comparisons, L2 flush, priced "
                      "as copies at the measured bandwidth, no host time) over their floor: median %.2f" %
                      cost["median_device_work_over_floor"])
            if cost["stages_median_ms"]:
                print("  check stages (profile=1), median ms over %d checks: %s" % (
                    cost["with_stages"], ", ".join("%s %.3f" % (k[4:] if k.startswith("chk_") else k, v)
                                                   for k, v in cost["stages_median_ms"].items())))
        for line in kr.device_mem_lines(rep.summary):
            print(line)
        errors = rep.gate_errors
        if errors:
            # Not findings, and not passes either: a re-run that faulted
            # may have ended the program's CUDA context (docs/safety.md).
            print("  %d gate entr%s failed to run%s:" % (
                len(errors), "y" if len(errors) == 1 else "ies",
                ", the first %d" % _GATE_ERRORS_SHOWN if len(errors) > _GATE_ERRORS_SHOWN else ""))
            for kernel, gate, error, run in errors[:_GATE_ERRORS_SHOWN]:
                print("    %s: %s%s: %s" % (kernel, gate, " (%s run)" % run if run else "", error))
        for n, text in rep.malformed:
            print("%s:%d: not a JSON record (cut short by a crash?): %s" % (rep.path, n, text))
            status = 1
        for line in op_report.lines(rep):
            print(line)
        if not args.merge:
            for f in kr.merge([rep]):
                _print_finding(f, False)
        if rep.suppressed:
            print("  %d suppressed" % len(rep.suppressed))
        if not rep.finished:
            print("  the run did not finish: no summary record (the process crashed or was killed)")
            status = 1
        elif rep.violations:
            status = 1
        if rep.finished and rep.unrecorded_violations:
            # A violation counted is never a clean run, record or not.
            print("  the summary counts %d violation%s without a record in this report (the "
                  "file was cut or edited after the run): not clean" % (
                      rep.unrecorded_violations, "" if rep.unrecorded_violations == 1 else "s"))
            status = 1
        print("  verdict: %s" % verdict(rep))
    why = None if args.allow_unchecked else unchecked_reason(reports)
    if why and not status:
        print("kcheck: error: %s (--allow-unchecked accepts it)" % why[1], file=sys.stderr)
        status = why[0]
    if args.merge:
        findings = kr.merge(reports)
        print("merged: %d report%s, %d finding%s: %d bug%s (%d occurrences)" % (
            len(reports), "" if len(reports) == 1 else "s", len(findings),
            "" if len(findings) == 1 else "s", len(findings), "" if len(findings) == 1 else "s",
            sum(f.occurrences for f in findings)))
        for f in findings:
            _print_finding(f, True)
    if args.sarif:
        import json
        from kcheck import export
        _write(args.sarif, json.dumps(export.sarif(reports), indent=1) + "\n")
    if args.junit:
        from kcheck import export
        _write(args.junit, export.junit(reports))
    if args.html:
        from kcheck import html
        _write(args.html, html.render(reports))
    return status


def cmd_repro(args):
    from kcheck import repro, replay
    if os.path.isfile(os.path.join(args.report, "bundle.json")):
        status, msg = replay.run(args.report, find_lib(args.lib), args.option or [])
        print(msg, file=sys.stdout if status == 0 else sys.stderr)
        return status
    out = repro.bundle(kr.read(args.report), args.violation, args.output)
    print("kcheck: repro bundle in %s (run %s)" % (out, os.path.join(out, "replay")))
    return 0


SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "suppressions")


def cmd_suppressions(args):
    """Prints the path of a shipped suppressions list (or lists them)."""
    names = sorted(f[:-5] for f in os.listdir(SHIPPED) if f.endswith(".supp"))
    if not args.name:
        for n in names:
            print("%s\t%s" % (n, os.path.join(SHIPPED, n + ".supp")))
        return 0
    if args.name not in names:
        raise UsageError("no shipped suppressions list %r (have: %s)" % (args.name, ", ".join(names)))
    print(os.path.join(SHIPPED, args.name + ".supp"))
    return 0


def cmd_audit(args):
    """kcheck audit: each candidate in its own process under kcheck run
    --torch, judged against its task's reference (kcheck.audit)."""
    from kcheck.audit import driver, table
    lib = find_lib(args.lib)
    try:
        if args.reference:
            if args.paths or not args.inputs or not args.candidate:
                raise ValueError("--reference takes --inputs and one --candidate or more, "
                                 "and no PATH")
            pairs = [(driver.synthesize_task(args.reference, args.inputs, args.init,
                                             os.path.abspath(args.output)), args.candidate)]
        elif not args.paths or args.inputs or args.init or args.candidate:
            raise ValueError("expected TASK.py CANDIDATE.py..., DIR..., or --reference with "
                             "--inputs and --candidate")
        else:
            pairs = driver.discover(args.paths)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.jobs < 1 or args.timeout <= 0:
        raise UsageError("--jobs and --timeout must be positive")
    if args.profile is not None:
        _check_profile(lib, args.profile)
    device = args.device or _audit_device()
    opts = driver.Options(lib, os.path.abspath(args.output), device, args.timeout, args.jobs,
                          args.option or [], args.profile)

    def show(task, cand):
        print(table.task_header(task) if cand is None else table.candidate_line(cand), flush=True)
    records = driver.audit(pairs, opts, show)
    print(table.summary_line(records[-1]))
    print("kcheck: audit: %s, %s" % (os.path.join(args.output, "audit.jsonl"),
                                     os.path.join(args.output, "audit.html")))
    if args.junit:
        from kcheck.audit.junit import junit
        _write(args.junit, junit(records))
    return driver.exit_status(records, args.error_exitcode, args.allow_unchecked, args.strict)


def _check_profile(lib, spec):
    """--profile's spec, checked by the oracle's parser before any task
    runs: a bad one is a usage error (the known presets listed), never a
    contract the candidates' runs would refuse."""
    h = open_lib(lib)
    err = ctypes.create_string_buffer(1024)
    if h.kcheck_profile_check(spec.encode(), err, len(err)) != 0:
        raise UsageError("--profile %s: %s" % (spec, err.value.decode(errors="replace")))


def _audit_device():
    """cuda where a GPU is there, else cpu (the binding then judges CPU
    tensors: torch_devices=cuda,cpu)."""
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        raise UsageError("kcheck audit needs PyTorch") from None


def version_text():
    lib = find_library(None)
    cver = None
    if lib:
        try:
            h = _lib.prototyped(ctypes.CDLL(lib))
            cver = h.kcheck_version().decode()
        except (OSError, AttributeError):
            cver = None
    return "kcheck %s (libkcheck %s)" % (
        __version__, "%s at %s" % (cver, lib) if cver else "not found")


class _Version(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit(0)


def main(argv=None):
    p = argparse.ArgumentParser(prog="kcheck", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", help="path to libkcheck.so")
    # --lib after the verb too (kcheck run --lib X -- CMD), as
    # compute-sanitizer takes its options before the program
    lib_opt = argparse.ArgumentParser(add_help=False)
    lib_opt.add_argument("--lib", default=argparse.SUPPRESS, help="path to libkcheck.so")
    p.add_argument("--version", action=_Version, nargs=0, help="print the versions and exit")
    sub = p.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run", help="run a command under kcheck", parents=[lib_opt])
    r.add_argument("-o", "--option", action="append", help="a KCHECK_OPTIONS key=value (repeatable)")
    r.add_argument("--torch", action="store_true",
                   help="check PyTorch programs op by op (the binding, kcheck.torch)")
    r.add_argument("--serving", action="store_true",
                   help="audit a running service: time budget per window, sampling (serving=1)")
    r.add_argument("--log-file", metavar="FILE",
                   help="kcheck's text output (findings, summary) to FILE instead of stderr "
                        "(%%p: the process id; log_file=)")
    r.add_argument("--error-exitcode", type=int, metavar="N", default=0,
                   help="exit with N when any process of the run reported a violation")
    r.add_argument("--allow-unchecked", action="store_true",
                   help="exit 0 even when nothing was checked (else 5) or a report has no summary")
    r.add_argument("cmd", nargs=argparse.REMAINDER)
    sub.add_parser("options", help="print the option table", parents=[lib_opt])
    sub.add_parser("gates", help="list the gates and their contracts", parents=[lib_opt])
    rp = sub.add_parser("report", help="summarize report files")
    rp.add_argument("files", nargs="+")
    rp.add_argument("--merge", action="store_true",
                    help="one list of findings over all files (processes, ranks), de-duplicated")
    rp.add_argument("--sarif", metavar="FILE", help="write SARIF 2.1.0")
    rp.add_argument("--junit", metavar="FILE", help="write JUnit XML")
    rp.add_argument("--html", metavar="FILE", help="write one self-contained HTML report")
    rp.add_argument("--gen-suppressions", action="store_true",
                    help="print the suppressions=FILE lines that silence these findings (stdout)")
    rp.add_argument("--allow-unchecked", action="store_true",
                    help="exit 0 for reports without any check (else 5)")
    sp = sub.add_parser("suppressions", help="path of a shipped suppressions list (none: list them)")
    sp.add_argument("name", nargs="?")
    rr = sub.add_parser("repro", help="write a bundle that reproduces one violation",
                        parents=[lib_opt])
    rr.add_argument("report")
    rr.add_argument("--violation", type=int, default=0, help="index of the violation in the report (0)")
    rr.add_argument("-o", "--output", help="bundle directory (default: kcheck-repro-<pid>-<N>)")
    rr.add_argument("--option", action="append", metavar="KEY=VALUE",
                    help="with a BUNDLE (a folder written under repro_dir): more KCHECK_OPTIONS")
    cp = sub.add_parser("contract", help="contract files")
    csub = cp.add_subparsers(dest="contract_verb", required=True)
    cl = csub.add_parser("lint", help="validate contract files (FILE:LINE:COL: error: ...)",
                         parents=[lib_opt])
    cl.add_argument("files", nargs="+")
    g = sub.add_parser("gen", help="regenerate the inputs a violation's exposed_by names",
                       parents=[lib_opt])
    g.add_argument("-g", "--generator", required=True, help="exposed_by.generator")
    g.add_argument("-t", "--transform", default="none", help="exposed_by.transform (none)")
    g.add_argument("-s", "--seed", type=int, required=True, help="exposed_by.seed + k for input k")
    g.add_argument("-f", "--format", default="fp32", help="the input's format (fp32)")
    g.add_argument("--shape", required=True, help="the input's shape, e.g. 16,1000")
    g.add_argument("--role", type=int, default=0,
                   help="0: first input or matmul A; 1: second or matmul B; 2: later ones")
    g.add_argument("--raw", help="write the packed bytes to this file instead of printing")
    au = sub.add_parser("audit", help="judge generated kernels against their PyTorch reference",
                        parents=[lib_opt])
    au.add_argument("paths", nargs="*", metavar="PATH",
                    help="TASK.py CANDIDATE.py..., or DIR with <task>/reference.py beside "
                    "candidates (or a manifest DIR/audit.jsonl)")
    au.add_argument("--reference", metavar="MOD:FN",
                    help="a reference function (module or file:function) instead of a task file")
    au.add_argument("--inputs", metavar="MOD:FN", help="with --reference: returns the inputs")
    au.add_argument("--init", metavar="MOD:FN",
                    help="with --reference: returns values passed after the inputs")
    au.add_argument("--candidate", action="append", metavar="SPEC",
                    help="with --reference: a candidate file or module:function (repeatable)")
    au.add_argument("-o", "--output", default="kcheck-audit", help="output folder (kcheck-audit)")
    au.add_argument("--device", choices=("cuda", "cpu"),
                    help="where the task runs (cuda when a GPU is there, else cpu)")
    au.add_argument("--jobs", type=int, default=1, help="candidates run at once (1)")
    au.add_argument("--timeout", type=float, default=600, help="seconds per candidate (600)")
    au.add_argument("--option", action="append", metavar="KEY=VALUE",
                    help="more KCHECK_OPTIONS for each candidate's run (repeatable)")
    au.add_argument("--error-exitcode", type=int, default=1, metavar="N",
                    help="exit status when a candidate is broken or error (1)")
    au.add_argument("--allow-unchecked", action="store_true",
                    help="exit 0 when every candidate is unjudged (else 5)")
    au.add_argument("--strict", action="store_true",
                    help="a partial candidate, or one with unsupported layouts (a layout or "
                    "dtype it refuses), counts as a failure (exit status 1 or N)")
    au.add_argument("--junit", metavar="FILE", help="write JUnit XML: a testcase per candidate")
    au.add_argument("--profile", metavar="SPEC",
                    help="the precision profile of every tier-A task at its own dtype, instead "
                    "of the one PyTorch's settings imply: an oracle profile spec, "
                    "preset[:key=value...], e.g. tensorcore_tf32:ftz=1 (recorded beside the "
                    "derived one)")
    args = p.parse_args(argv)
    verbs = {"audit": cmd_audit, "run": cmd_run, "options": cmd_options, "gates": cmd_gates, "report": cmd_report,
             "repro": cmd_repro, "suppressions": cmd_suppressions, "contract": cmd_contract, "gen": cmd_gen}
    try:
        return verbs[args.verb](args)
    except (UsageError, kr.ReportError) as e:
        print("kcheck: error: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kcheck: interrupted", file=sys.stderr)
        return 130
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        if args.verb not in ("report", "repro"):
            raise
        # A report that parses but does not follow the schema.
        print("kcheck: error: the report does not follow kcheck.report/1 (%s: %s)"
              % (type(e).__name__, e), file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 1
