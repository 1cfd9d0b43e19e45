"""`kcheck repro REPORT --violation N`: a bundle that reproduces one
violation.

The bundle holds what identifies the failing launch — the violation record,
the kernel (mangled and demangled names, image id and XXH3 hash), the launch
as captured (grid, block, shared memory, parameter bytes, the device
pointers in them and their allocations), the seed, and for generated inputs
the generator, transform and seed that regenerate them (`kcheck gen`) — and
`replay`, a script that re-runs the program with only that launch checked by
that gate at that seed, and exits 0 when the same violation (gate, kernel)
appears again, 1 when it does not.

The launch is replayed inside the original program (which recreates the
application's inputs); kcheck does not save device memory contents, so the
bundle cannot run the kernel without the program.
"""
import json
import os
import shlex

from kcheck import report as kr


class ReproError(kr.ReportError):
    pass


REPLAY = """#!/bin/sh
# Re-runs one launch of the program under kcheck (only this launch checked,
# only gate {gate_c}, seed {seed}) and checks that the violation comes back.
# Written by `kcheck repro` from {report_c}, violation {index}.
set -u
gate={gate}
mangled={mangled}
kernel={kernel}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/replay-report"
rm -f "$out".*.jsonl
{command}
status=$?
if cat "$out".*.jsonl 2>/dev/null | grep -F '"type":"violation"' | grep -F "\\"gate\\":\\"$gate\\"" \\
   | grep -qF "\\"kernel_mangled\\":\\"$mangled\\""; then
  echo "kcheck repro: the violation [$gate] in $kernel is reproduced (program status $status)"
  exit 0
fi
echo "kcheck repro: the violation [$gate] in $kernel did not reproduce (program status $status)" >&2
exit 1
"""


def _comment(text):
    """text for a comment line of the script: no control characters (a
    newline would end the comment and start a command)."""
    return "".join(c if c.isprintable() else "?" for c in str(text))


def _narrowed(reproduce, out_prefix):
    """The violation's reproduce command with log_path pointed into the bundle."""
    try:
        words = shlex.split(reproduce)
    except ValueError as e:
        raise ReproError("the violation's reproduce command cannot be parsed: %s" % e) from None
    outw = []
    for w in words:
        if w.startswith("KCHECK_OPTIONS="):
            opts = [o for o in w[len("KCHECK_OPTIONS="):].split(":") if o and
                    not o.startswith("log_path=")]
            opts.append("log_path=")
            # the bundle's report prefix is a shell variable of the script
            outw.append("KCHECK_OPTIONS=" + shlex.quote(":".join(opts)) + '"%s"' % out_prefix)
            continue
        name, eq, value = w.partition("=")
        if eq and name.isidentifier() and name.isupper():  # an assignment: quote the value only
            outw.append(name + "=" + shlex.quote(value))
        else:
            outw.append(shlex.quote(w) if w != "&&" else w)
    # `cd DIR && ENV=... CMD`: the shell operator stays unquoted.
    return " ".join(outw)


def _write(path, text, mode=0o600):
    kr.write_file(path, text, mode)


def bundle(rep, index, outdir=None):
    vs = rep.violations
    if not vs:
        raise ReproError("%s: no violations in this report" % rep.path)
    if index < 0 or index >= len(vs):
        raise ReproError("%s: --violation %d: the report has %d violation%s (0..%d)" % (
            rep.path, index, len(vs), "" if len(vs) == 1 else "s", len(vs) - 1))
    v = vs[index]
    if not v.get("reproduce"):
        raise ReproError("%s: violation %d has no reproduce command (report from an older kcheck)"
                         % (rep.path, index))
    outdir = outdir or "kcheck-repro-%s-%d" % (rep.pid, index)
    try:
        os.makedirs(outdir, mode=0o700, exist_ok=True)
    except OSError as e:
        raise ReproError("cannot create %s: %s" % (outdir, e.strerror or e)) from None
    kernel = rep.kernels.get(v.get("kernel"), {})
    image = None
    kimg = kernel.get("image") or {}
    for im in rep.by_type("image"):
        if im.get("id") == kimg.get("id"):
            image = im
    ev = v.get("evidence") or {}
    inputs = ev.get("exposed_by") if isinstance(ev.get("exposed_by"), dict) else None
    meta = {
        "report": os.path.abspath(rep.path),
        "violation_index": index,
        "gate": v.get("gate"),
        "kernel": {"demangled": v.get("kernel_name"), "mangled": v.get("kernel_mangled"),
                   "image": image or kimg, "params": kernel.get("params")},
        "launch": v.get("launch_record") or {k: v.get(k) for k in ("launch", "grid", "block", "shmem")},
        "seed": v.get("seed"),
        "signature": v.get("signature"),
        "inputs": inputs or {"inputs": "application",
                             "how": "re-created by the program itself (replay)"},
        "regenerate": _gen_commands(inputs),
        "reproduce": v.get("reproduce"),
    }
    _write(os.path.join(outdir, "bundle.json"), json.dumps(meta, indent=1, sort_keys=True) + "\n")
    _write(os.path.join(outdir, "violation.json"), json.dumps(v, indent=1, sort_keys=True) + "\n")
    replay = os.path.join(outdir, "replay")
    mangled = v.get("kernel_mangled") or ""
    seed = v.get("seed")
    # Every field of the report that goes into the script is quoted (a
    # report may come from elsewhere: it must not run commands of its own).
    # The names are matched in the report as JSON writes them (ASCII, and
    # quotes and backslashes escaped): grep -F with shell-quoted values.
    _write(replay, REPLAY.format(
            gate_c=_comment(v.get("gate")), seed=seed if isinstance(seed, int) else "?",
            report_c=_comment(rep.path), index=index,
            gate=shlex.quote(json.dumps(str(v.get("gate")))[1:-1]),
            mangled=shlex.quote(json.dumps(mangled)[1:-1]),
            kernel=shlex.quote(_comment(v.get("kernel_name") or "?")),
            command=_narrowed(v["reproduce"], "$out")), 0o700)
    return outdir


def _gen_commands(inputs):
    """`kcheck gen` lines for generated inputs (shape and role per input are
    in the contract; the seed of input k is seed + k)."""
    if not inputs or inputs.get("inputs") != "generated":
        return []
    base = "kcheck gen -g %s -t %s -s %s" % (inputs.get("generator"), inputs.get("transform") or "none",
                                             inputs.get("seed"))
    return [base + " -f FORMAT --shape DIMS --role 0   # input 0 (input k: seed + k)"]
