"""Reading kcheck's JSONL reports: the one module the front end, the pytest
plugin and the tests use.

A report is one file per process (`<log_path>.<pid>[.rank<R>].jsonl`), one
JSON record per line (schema in docs/report-schema.md). Lines a crash cut short are
kept as `malformed` with their line number, never an exception; a report
without a `summary` record is from a run that did not finish.
"""
import json
import os
import statistics

from kcheck import _defs

# How the value gates write a worst error that is not finite (gates/judge.c).
_NONFINITE_ERRORS = ("nan", "inf", "-inf")

SCHEMA = "kcheck.report/2"


class ReportError(Exception):
    """An ordinary problem with a report (missing, unreadable): one line."""


class Report:
    def __init__(self, path, records, malformed):
        self.path = path
        self.records = records
        self.malformed = malformed  # [(line number, text)]
        self.run = next((r for r in records if r.get("type") == "run"), None)
        self.summary = next((r for r in records if r.get("type") == "summary"), None)
        self.kernels = {r.get("id"): r for r in self.by_type("kernel")}

    def by_type(self, t):
        return [r for r in self.records if r.get("type") == t]

    @property
    def violations(self):
        return self.by_type("violation")

    @property
    def unrecorded_violations(self):
        """Violations the summary counts beyond the report's records of them
        (a file cut or edited after the run): 0 when every one has its
        record. Each still counts against the run."""
        n = (self.summary or {}).get("violations")
        if not isinstance(n, int) or isinstance(n, bool):
            return 0
        return max(0, n - len(self.violations))

    @property
    def suppressed(self):
        return self.by_type("suppressed")

    @property
    def checks(self):
        return self.by_type("check")

    @property
    def checks_made(self):
        """Checks of any kind this run made: launches re-run (the summary's
        checks, graph kernels included) and PyTorch ops checked (op_check
        records)."""
        n = (self.summary or {}).get("checks")
        if not isinstance(n, int):
            n = len(self.checks)
        return n + len(self.by_type("op_check"))

    @property
    def gate_errors(self):
        """Gate entries of check records that failed to run (status error)
        or whose runs stopped at a failed one (an error beside a finding):
        (kernel name, gate, error, the perturbation of the failed run or
        None), in record order. A faulting re-run is one (safety.md)."""
        out = []
        for c in self.checks:
            for gate, e in (c.get("gates") or {}).items():
                if not isinstance(e, dict):
                    continue
                why = e.get("error")
                # a value gate's "error" is its worst error: a number, or
                # "nan", "inf", "-inf" where it is not finite
                if why in _NONFINITE_ERRORS:
                    why = None
                if e.get("status") == _defs.STATUS_ERROR or isinstance(why, str):
                    out.append((self.kernel_name(c), gate,
                                why if isinstance(why, str) else "?", e.get("error_run")))
        return out

    @property
    def finished(self):
        """False for a run that crashed or was killed before its summary."""
        return self.summary is not None

    @property
    def pid(self):
        return (self.run or {}).get("pid")

    @property
    def rank(self):
        base = os.path.basename(self.path)
        for part in base.split("."):
            if part.startswith("rank") and part[4:].isdigit():
                return int(part[4:])
        return None

    def kernel_name(self, rec):
        name = rec.get("kernel_name")
        if name:
            return name
        k = self.kernels.get(rec.get("kernel"))
        return (k or {}).get("demangled", "?")


def _parse(text):
    records, malformed = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            malformed.append((n, line[:80]))
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
            malformed.append((n, line[:80]))
            continue
        if "\\ud" in line or "\\uD" in line:
            rec = _no_lone_surrogates(rec)
        records.append(_sane(rec))
    return _settle_pending(records), malformed


def _no_surrogate(s):
    # json pairs a valid "\\ud83d\\ude00" into one character: any
    # surrogate left is a lone one.
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in s) \
        if any("\ud800" <= c <= "\udfff" for c in s) else s


def _no_lone_surrogates(v):
    """v with each lone surrogate (JSON's "\\ud800" decodes to one) as
    U+FFFD: no text, file or XML can be written with one in it. A record is
    a few levels deep; the parser has bounded that already."""
    if isinstance(v, str):
        return _no_surrogate(v)
    if isinstance(v, list):
        return [_no_lone_surrogates(x) for x in v]
    if isinstance(v, dict):
        return {_no_surrogate(k): _no_lone_surrogates(x) for k, x in v.items()}
    return v


def _settle_pending(records):
    """A violation is first written through as violation_pending (before
    the launch returns), then in full by kcheck's findings thread with the
    same `pending` id (violation or suppressed). A pending record whose full
    one is missing (the process was killed in between) stands in for it, as
    a violation marked `unfinished`; the others are dropped."""
    done = {r.get("pending") for r in records
            if r["type"] in ("violation", "suppressed") and r.get("pending") is not None}
    out = []
    for r in records:
        if r["type"] == "violation_pending":
            if r.get("pending") in done:
                continue
            r["type"] = "violation"
            r["unfinished"] = ("the process ended before this violation was symbolised, "
                               "matched against the suppressions and printed")
        out.append(r)
    return out


_DICTS = ("evidence", "stack", "gates", "launch_record", "image")
_STRS = ("gate", "kernel_name", "kernel_mangled", "message", "signature", "reproduce",
         "contract", "gate_contract", "test", "demangled")


def _sane(rec):
    """Fields of the wrong type (a hand-edited or foreign file) become empty,
    so that every reader can rely on the schema's types."""
    for k in _DICTS:
        if k in rec and not isinstance(rec[k], dict):
            rec[k] = {}
    for k in _STRS:
        if k in rec and rec[k] is not None and not isinstance(rec[k], str):
            rec[k] = str(rec[k])
    st = rec.get("stack")
    if isinstance(st, dict):
        for k in ("host", "python"):
            if k in st and not (isinstance(st[k], list) and all(isinstance(f, dict) for f in st[k])):
                st[k] = []
    ev = rec.get("evidence")
    if isinstance(ev, dict):
        for k in ("expected", "got", "allocation"):
            if k in ev and not isinstance(ev[k], dict):
                ev[k] = {}
        if "exposed_by" in ev and not isinstance(ev["exposed_by"], dict):
            del ev["exposed_by"]
    # a kernel-level finding's strategies (a list), the binding's inputs
    # and variant (an object)
    if "exposed_by" in rec and not isinstance(rec["exposed_by"], (list, dict)):
        del rec["exposed_by"]
    for k in ("launch", "seed", "violations", "checks", "launches", "skips", "suppressed", "pid",
              "cost_ms", "floor_ms"):
        if k in rec and not isinstance(rec[k], (int, float)) or isinstance(rec.get(k), bool):
            rec.pop(k, None)
    if "cost_ms" in rec and not isinstance(rec["cost_ms"], (int, float)):
        rec.pop("cost_ms")
    return rec


def write_file(path, data, mode=0o600):
    """path's new contents (str or bytes): a private file made beside it and
    renamed over it, so a symlink or file someone planted at path (a shared
    /tmp) is replaced, never written through. mode: 0600 unless asked."""
    import tempfile
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".kcheck-")
    try:
        with os.fdopen(fd, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _read_regular(path):
    """path's bytes, when it is a regular file. Opened without blocking and
    checked on the open descriptor: a FIFO (or a device, /dev/zero) would
    block or never end, and a check before the open could be raced."""
    import stat
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise ReportError("%s: no such report" % path) from None
    except IsADirectoryError:
        raise ReportError("%s: is a directory, not a report" % path) from None
    except OSError as e:
        raise ReportError("%s: cannot read it (%s)" % (path, e.strerror or e)) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ReportError("%s: is a directory, not a report" % path)
        if not stat.S_ISREG(st.st_mode):
            raise ReportError("%s: not a regular file (a FIFO, socket or device): kcheck "
                              "reads reports only from regular files" % path)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as f:
            fd = None
            return f.read()
    except OSError as e:
        raise ReportError("%s: cannot read it (%s)" % (path, e.strerror or e)) from None
    finally:
        if fd is not None:
            os.close(fd)


def read(path):
    """The report at path. Raises ReportError (one line) when it cannot be
    read: missing, not a regular file, or a record nested too deeply."""
    text = _read_regular(path).decode("utf-8", errors="replace")
    try:
        records, malformed = _parse(text)
    except RecursionError:
        # json's parser recurses per level: a hostile line of 100,000 "["
        # would end in a traceback. kcheck's records nest a few levels.
        raise ReportError("%s: a line nests JSON deeper than Python's parser takes; "
                          "kcheck writes no such record" % path) from None
    return Report(path, records, malformed)


def read_records(path):
    """Every record of a report, in order; a malformed line is an error
    (for tests, where a broken line is a bug)."""
    r = read(path)
    if r.malformed:
        n, text = r.malformed[0]
        raise ReportError("%s:%d: not a JSON record: %s" % (path, n, text))
    return r.records


def load(paths):
    return [read(p) for p in paths]


# ------------------------------------------------------------- findings

def flush_bytes_of(own_kernels):
    """What one run of the l2flush strategy writes, from the summary's
    own_kernels: l2flush_bytes, else (reports made before it was recorded,
    when the flush wrote twice the L2) 2 x l2_bytes; None when unknown."""
    own = own_kernels or {}
    if own.get("l2flush_bytes"):
        return own["l2flush_bytes"]
    return 2 * own["l2_bytes"] if own.get("l2_bytes") else None


def floor_without_queue(c):
    """c's floor without the wait for the application's queued work
    (floor_terms.queued_ms, in the floor of checks recorded since it was
    added): kcheck's own device work and round trips."""
    q = (c.get("floor_terms") or {}).get("queued_ms")
    return float(c["floor_ms"]) - (float(q) if isinstance(q, (int, float)) else 0.0)


def device_work_over_floor(c, flush_bytes):
    """What check c's device work costs, priced as copies at its measured
    copy bandwidth with no host time at all, over its floor; None when the
    record lacks the terms (or l2flush ran and flush_bytes is unknown). The
    work: the pre-state (a copy of the S saved bytes), the application's
    launch and its comparison with the pre-state (reading 2S: the traffic of
    a copy of S; pre_hashed: a hash of S, one read), post-state A (a copy of the C bytes the launch changed),
    one wait; per run the restore of C, the kernel, the comparison of every
    region (a copy of S; by hash, compare "hash", one read of S: half
    that; records with hashed_bytes: one read of those), one wait; and the l2flush kernel's writes of flush_bytes (the
    traffic of a copy of half as many). restored_bytes is runs x C: a run
    equal to post-state A needs no restore at the end."""
    ft = c.get("floor_terms") or {}
    runs, saved = c.get("runs") or 0, c.get("saved_bytes") or 0
    if not c.get("floor_ms") or not saved or not ft.get("measured_device") or c.get("kernel_ms") is None:
        return None
    flushed = ((c.get("gates") or {}).get("race") or {}).get("strategies", {}).get("l2flush") \
        in ("same", "differs")
    if flushed and not flush_bytes:
        return None
    per_byte = ft["copies_ms"] / (2 * saved)
    k, wait = c["kernel_ms"], ft["syncs_ms"] / (1 + runs)
    changed = (c.get("restored_bytes") or 0) / runs if runs else 0
    # the save (a copy of S) and the pass after the application's launch:
    # a comparison with the saved copy (reading 2S, a copy's traffic) or,
    # with pre_hashed, a hash of S (one read)
    fixed = k + (1.5 if c.get("pre_hashed") else 2) * saved * per_byte + changed * per_byte + wait
    compare = saved * per_byte * (0.5 if c.get("compare") == "hash" else 1)
    per_run = k + changed * per_byte + wait
    # by hash, the bytes the hashes read (hashed_bytes: only what each run
    # may have changed, and the rest once); older records: every region
    hashed = c.get("hashed_bytes") if c.get("compare") == "hash" else None
    compares = hashed * per_byte / 2 if isinstance(hashed, int) else runs * compare
    flush = flush_bytes / 2 * per_byte if flushed else 0
    return (fixed + runs * per_run + compares + flush) / floor_without_queue(c)


def check_costs(records):
    """What the checks of a report cost against their floor ((1 + runs) x the
    kernel's device time + 2 x the snapshot's, recorded by each check), or
    None without checks: count, total and median cost in ms, median
    cost/floor and the cost/floor of the ten costliest checks."""
    checks = [r for r in records if r.get("type") == "check" and isinstance(r.get("cost_ms"), (int, float))]
    if not checks:
        return None
    costs = sorted(float(c["cost_ms"]) for c in checks)

    def has_floor(c):
        return isinstance(c.get("floor_ms"), (int, float)) and c["floor_ms"] > 0

    # cost less wait_ms, the application's own queued work a check waits
    # for before its pre-state, over the floor without it (checks without
    # it as they are)
    def less_wait(c):
        w = c.get("wait_ms")
        return float(c["cost_ms"]) - (float(w) if isinstance(w, (int, float)) else 0.0)

    def over_floor(cost, floor):  # sorted cost(c)/floor(c), and that of the ten costliest by cost(c)
        top = sorted(checks, key=lambda c: -cost(c))[:10]
        return (sorted(cost(c) / floor(c) for c in checks if has_floor(c)),
                [cost(c) / floor(c) for c in top if has_floor(c)])

    ratios, top_ratios = over_floor(lambda c: float(c["cost_ms"]), lambda c: float(c["floor_ms"]))
    net, net_top = over_floor(less_wait, floor_without_queue)
    # the device work the checks need over their floor (the L2 from the summary)
    own = next((r.get("own_kernels") for r in records if r.get("type") == "summary"), None) or {}
    work = sorted(x for x in (device_work_over_floor(c, flush_bytes_of(own)) for c in checks)
                  if x is not None)
    # profile=1: each check's stages (stages_ms), medians over the checks
    staged = [c["stages_ms"] for c in checks if isinstance(c.get("stages_ms"), dict)]
    stages = {k: statistics.median(float(s.get(k, 0)) for s in staged) for k in staged[0]} if staged else None
    return {"checks": len(checks), "total_ms": sum(costs), "median_ms": costs[len(costs) // 2],
            "median_over_floor": ratios[len(ratios) // 2] if ratios else None,
            "with_floor": len(ratios), "top10_over_floor": top_ratios,
            "median_less_wait_over_floor": net[len(net) // 2] if net else None,
            "top10_less_wait_over_floor": net_top, "stages_median_ms": stages,
            "median_device_work_over_floor": work[len(work) // 2] if work else None,
            "with_stages": len(staged)}


def finding_key(v):
    """Violations of one bug are one finding: libkcheck groups them by their
    code sites ("bug", from the Python lines or host frames of both sides,
    not the operation; one bug whichever gate of its family saw it:
    stream_order and stream_delay, determinism and race); records without
    one by (gate, kernel, signature)."""
    if v.get("bug"):
        return ("bug", v["bug"])
    return (v.get("gate"), v.get("kernel_name") or v.get("kernel"), v.get("signature"))


class Finding:
    """One de-duplicated violation across processes and ranks."""

    def __init__(self, first, report):
        self.first = first
        self.report = report
        self.count = 0  # violation records
        self.counted = 0  # occurrences the reports' summaries counted (repeats included)
        self.where = []  # [(path, pid, rank)] in order of first sight
        self.tests = []

    def add(self, v, report):
        self.count += 1
        w = (report.path, report.pid, report.rank)
        if w not in self.where:
            self.where.append(w)
        t = v.get("test")
        if t and t not in self.tests:
            self.tests.append(t)

    @property
    def occurrences(self):
        """How many times the bug happened: its summaries' count where the
        reports have one (checks that repeat a finding write no record),
        else its records."""
        return max(self.count, self.counted)

    @property
    def sites(self):
        """The bug's code sites: both sides' of a two-sided finding
        (stream_order, stream_delay), else the launch's."""
        return self.first.get("sites") or []

    @property
    def gate(self):
        return self.first.get("gate")

    @property
    def kernel(self):
        return self.report.kernel_name(self.first)

    @property
    def ranks(self):
        return sorted({r for _, _, r in self.where if r is not None})


def merge(reports):
    """De-duplicated findings of several reports (processes, ranks), in
    order of first sight."""
    found = {}
    for rep in reports:
        for v in rep.violations:
            k = finding_key(v)
            if k not in found:
                found[k] = Finding(v, rep)
            found[k].add(v, rep)
        for b in (rep.summary or {}).get("bugs") or []:
            f = found.get(("bug", b.get("bug")))
            if f is not None:
                f.counted += int(b.get("occurrences") or 0)
    return list(found.values())


def evidence_text(v):
    """The evidence of a violation in words (one or two lines)."""
    ev = v.get("evidence") or {}
    lines = [v.get("message", "")]
    if ev.get("verdict_line"):
        lines.append(ev["verdict_line"])
    elif "expected" in ev and "got" in ev:
        al = ev.get("allocation") or {}
        lines.append("first difference at byte %s of allocation %s (%s bytes): expected %s, got %s;"
                     " %s differing 32-bit word(s)" % (
                         ev.get("offset"), al.get("base"), al.get("size"),
                         (ev["expected"] or {}).get("bits32"), (ev["got"] or {}).get("bits32"),
                         ev.get("differing_words")))
    elif ev:
        parts = ["%s %s" % (k, val) for k, val in ev.items()
                 if not isinstance(val, (dict, list)) and k != "exposed_by"]
        if parts:
            lines.append(", ".join(parts))
    exp = ev.get("exposed_by")
    if isinstance(exp, dict) and exp.get("inputs") == "generated":
        how = exp.get("generator", "?") + (" (%s)" % exp["transform"] if exp.get("transform") else "")
        scal = ", ".join("%s=%s" % kv for kv in (exp.get("scalars") or {}).items())
        lines.append("exposed by generated inputs: %s, seed %s; %s" % (how, exp.get("seed"), scal))
    strat = v.get("exposed_by")
    if isinstance(strat, list):
        lines.append("exposed by strategies %s" % ", ".join(strat))
    return [l for l in lines if l]


def user_frame(v):
    """(file, line, function) of the innermost Python frame in the user's
    code, else the innermost host frame with a source line, else None."""
    st = v.get("stack") or {}
    for fr in st.get("python") or []:
        f = fr.get("file", "")
        if f and not any(s in f for s in ("/kcheck/", "/torch/", "site-packages", "<frozen")):
            return f, fr.get("line"), fr.get("function")
    for fr in st.get("host") or []:
        f = fr.get("file") or ""
        if (f and fr.get("line") and not _toolkit_frame(f, fr.get("symbol") or "")
                and not _interpreter_frame(fr.get("module") or "")):
            return f, fr["line"], fr.get("symbol")
    return None


def _interpreter_frame(module):
    """A host frame of the Python interpreter itself (ctypes, libffi,
    libpython) or of the C library's start-up: the launch came from code
    above them (Python code whose frame was not taken), never from their
    source."""
    base = os.path.basename(module)
    return base.startswith(("libpython", "_ctypes", "libffi", "python", "libc.so", "ld-linux"))


def _toolkit_frame(path, symbol):
    """A host frame of the CUDA toolkit's own code (headers, the runtime's
    launch stubs): not where the user's code is."""
    return ("/cuda/" in path or "/targets/" in path or path.startswith("/usr/include/")
            or "__device_stub__" in symbol)


def contract_location(v):
    """(file, line) of the contract a contract gate's violation broke."""
    c = v.get("contract") or ""
    if ":" in c and not c.startswith("annotation"):
        f, _, line = c.rpartition(":")
        if line.isdigit():
            return f, int(line)
    return None


# -------------------------------------------------------- suppressions

def _glob_escape(name):
    # A character the file cannot hold (a line break, any control
    # character) or that it reads as a field separator (a ':' not paired
    # into C++'s '::', scanned as libkcheck's suppress.c does) becomes '?':
    # one line that still matches the name.
    out, i = [], 0
    while i < len(name):
        c = name[i]
        if name.startswith("::", i):
            out.append("::")
            i += 2
            continue
        if ord(c) < 32 or ord(c) == 127 or c == ":":
            out.append("?")
        elif c in "*?[":
            out.append("[%s]" % c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _comment_text(s):
    """s on one comment line: control characters (a line break would end
    the comment and start a rule) as '?'."""
    return "".join("?" if ord(c) < 32 or ord(c) == 127 else c for c in s)


def suppression_line(gate, kernel):
    """The suppressions=FILE line `gate:kernel-glob` that silences findings
    of gate in kernel: its demangled name up to the argument list, so the
    same kernel at any spelling of its parameters. One line of any length
    (libkcheck reads whole lines)."""
    base, paren, _ = (kernel or "?").partition("(")
    return "%s:%s" % (_glob_escape(gate or "?"), _glob_escape(base.strip()) + ("(*" if paren else ""))


def gen_suppressions(reports):
    """Lines `gate:kernel-glob` (suppressions=FILE) that silence every
    finding of the reports, one per finding, with a comment naming it."""
    out = []
    for f in merge(reports):
        kernel = f.kernel or "?"
        out.append(_comment_text("# %s in %s (%d time%s)" % (f.gate, kernel, f.count,
                                                              "" if f.count == 1 else "s")))
        out.append(suppression_line(f.gate, kernel))
    return out


def _mib(n):
    """Bytes as B, KiB or MiB, whichever reads best."""
    if n < 1024:
        return "%d B" % n
    if n < 1048576:
        return "%.1f KiB" % (n / 1024.0)
    return "%.1f MiB" % (n / 1048576.0)


def device_mem_lines(summary):
    """`kcheck report`'s lines on the device memory kcheck held for itself
    (the summary's device_mem): the peak against device_mem_budget, then
    each category used or refused. None before it was recorded."""
    dm = (summary or {}).get("device_mem")
    if not dm:
        return []
    budget = dm.get("budget", 0)
    lines = ["  kcheck's device memory: peak %s, %s at exit, budget %s, %d refused" % (
        _mib(dm.get("peak", 0)), _mib(dm.get("current", 0)),
        _mib(budget) if budget else "none (0)", dm.get("refused", 0))]
    for name, c in (dm.get("categories") or {}).items():
        if not (c.get("peak") or c.get("refused") or c.get("count")):
            continue
        lines.append("    %-16s peak %10s, %10s in all, %d %s%s%s" % (
            name, _mib(c.get("peak", 0)), _mib(c.get("allocated", 0)), c.get("count", 0),
            "allocation(s)" if c.get("how") == "alloc" else "object(s), measured",
            ", %d refused" % c["refused"] if c.get("refused") else "",
            ", %s held at exit" % _mib(c["current"]) if c.get("current") else ""))
    return lines
