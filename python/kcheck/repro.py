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
import stat

from kcheck import report as kr


class ReproError(kr.ReportError):
    pass


REPLAY = """#!/bin/sh
# Re-runs one launch of the program under kcheck (only this launch checked,
# only gate {gate}, seed {seed}) and checks that the violation comes back.
# Written by `kcheck repro` from {report}, violation {index}.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out="$here/replay-report"
rm -f "$out".*.jsonl
{command}
status=$?
if cat "$out".*.jsonl 2>/dev/null | grep -F '"type":"violation"' | grep -F '"gate":"{gate}"' \\
   | grep -qF '"kernel_mangled":"{mangled}"'; then
  echo "kcheck repro: the violation [{gate}] in {kernel_sh} is reproduced (program status $status)"
  exit 0
fi
echo "kcheck repro: the violation [{gate}] in {kernel_sh} did not reproduce (program status $status)" >&2
exit 1
"""


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
        os.makedirs(outdir, exist_ok=True)
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
    with open(os.path.join(outdir, "bundle.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(outdir, "violation.json"), "w") as f:
        json.dump(v, f, indent=1, sort_keys=True)
        f.write("\n")
    replay = os.path.join(outdir, "replay")
    mangled = v.get("kernel_mangled") or ""
    with open(replay, "w") as f:
        f.write(REPLAY.format(
            gate=v.get("gate"), seed=v.get("seed"), report=rep.path, index=index,
            command=_narrowed(v["reproduce"], "$out"),
            mangled="".join(c for c in mangled if c not in "'\"\\"),
            kernel_sh=(v.get("kernel_name") or "?").replace("'", "")))
    os.chmod(replay, os.stat(replay).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return outdir


def _gen_commands(inputs):
    """`kcheck gen` lines for generated inputs (shape and role per input are
    in the contract; the seed of input k is seed + k)."""
    if not inputs or inputs.get("inputs") != "generated":
        return []
    base = "kcheck gen -g %s -t %s -s %s" % (inputs.get("generator"), inputs.get("transform") or "none",
                                             inputs.get("seed"))
    return [base + " -f FORMAT --shape DIMS --role 0   # input 0 (input k: seed + k)"]
