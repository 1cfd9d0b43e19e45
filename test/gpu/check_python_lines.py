"""Checks the reports of run_gpu_python_lines.sh: Python lines on every
side of every serving finding, host frames named, one finding per bug.
usage: check_python_lines.py KIND REPORT... (KIND: streams | graph)
Prints PASS/FAIL lines and facts (INFO); exit 1 on a FAIL."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from kcheck import report as kr  # noqa: E402

HARNESS = os.environ.get("KC_PYLINES_FILE", "harness.py")  # the program whose lines count
failed = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (" - " + detail) if detail else ""))
    if not ok:
        failed.append(name)


def user_line(stack):
    """(file, line, function) of the stack's innermost frame in the harness."""
    for f in (stack or {}).get("python") or []:
        if f.get("file", "").endswith(HARNESS):
            return f["file"], f.get("line"), f.get("function")
    return None


def host_named(stacks):
    """(named, all) host frames of libtorch/libc10/libcudart modules."""
    named = total = 0
    for st in stacks:
        for f in (st or {}).get("host") or []:
            m = os.path.basename(f.get("module", ""))
            if m.startswith(("libtorch", "libc10", "libcudart")):
                total += 1
                named += bool(f.get("symbol"))
    return named, total


def main():
    kind, paths = sys.argv[1], sys.argv[2:]
    reps = kr.load(paths)
    viol = [v for r in reps for v in r.violations]
    why = sorted({(v.get("stack") or {}).get("python_not_taken") for v in viol} - {None})
    print("INFO %d violation records; python_not_taken reasons: %s" % (len(viol), why or "none"))
    stacks = [v.get("stack") for v in viol]
    if kind == "streams":
        order = [v for v in viol if v["gate"] == "stream_order"]
        check("streams: stream_order found (missing wait_stream)", bool(order),
              "%d records" % len(order))
        sides = [(v["evidence"][s].get("stack"), v["evidence"][s].get("op"))
                 for v in order for s in ("first", "second")]
        missing = [op for st, op in sides if not user_line(st)]
        check("streams: both sides of every stream_order name a line of %s" % HARNESS,
              bool(order) and not missing, "sides without: %s" % missing[:4])
        for v in order[:1]:
            for s in ("first", "second"):
                print("INFO %s: %s at %s (python_without_gil %s)" % (
                    s, v["evidence"][s].get("op"), user_line(v["evidence"][s].get("stack")),
                    v["evidence"][s].get("stack", {}).get("python_without_gil")))
        delay = [v for v in viol if v["gate"] == "stream_delay"]
        d_ok = all(user_line(v["evidence"].get("delayed", {}).get("stack")) and user_line(v["stack"])
                   for v in delay)
        check("streams: stream_delay names the delayed write's and the launch's lines", d_ok,
              "%d records" % len(delay))
        stacks += [st for st, _ in sides]
        found = [f for f in kr.merge(reps) if f.gate == "stream_order"]
        check("streams: one finding per bug (stream_order bugs <= 3)",
              0 < len(found) <= 3,
              "%d bugs for %d records: %s" % (len(found), len(order),
                                              ["%s (%d)" % (" -> ".join(f.sites), f.occurrences)
                                               for f in found]))
    else:
        graph = [v for v in viol if v.get("graph") and v["gate"] in ("race", "determinism")]
        check("graph: a finding in a node of a replayed CUDA graph", bool(graph),
              "%d records" % len(graph))
        lines = [user_line(v.get("stack")) for v in graph]
        check("graph: it names a line of %s (graph replay released the GIL)" % HARNESS,
              bool(graph) and all(lines), "lines: %s" % lines[:3])
        print("INFO python_without_gil: %s" % [
            (v.get("stack") or {}).get("python_without_gil") for v in graph[:3]])
    named, total = host_named(stacks)
    check("%s: libtorch/libc10/libcudart host frames named (.dynsym at least)" % kind,
          total == 0 or named > 0, "%d of %d named" % (named, total))
    print("INFO python_frames: %s" % [(r.summary or {}).get("python_frames") for r in reps])
    print("INFO summary bugs: %s" % json.dumps([s.get("bugs") for s in
                                               (r.summary or {} for r in reps)])[:1500])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
