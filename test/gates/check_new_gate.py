"""test/gates/check_new_gate.py — a new gate is at most three hand-written
files for kernel and op level alike (docs/architecture.md, "A gate,
defined once"): scripts/new_gate.py --dry-run names them, and its skeleton
works as written. For a trials gate (the op level needs no Python of its
own) and a kernel-only one:

  - the files it writes by hand are at most 3 (gates.def, gates/ID.c, the
    fixtures index), the others generated;
  - its C file compiles with -Werror against the gate headers and a
    gates.def holding its row (the registry's prototypes included);
  - kcheck._defs generated from that gates.def lists it where the binding
    looks: OP_TRIAL_GATES (so mode.py runs it at op level) or not.

Run by `make gates-index-test` (part of `make test`); CC and KC_INC_gates
from the Makefile (without them the compile step is skipped)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NEW_GATE = os.path.join(ROOT, "scripts", "new_gate.py")


def dry_run(args):
    out = subprocess.run([sys.executable, NEW_GATE] + args + ["--dry-run"], check=True,
                         capture_output=True, text=True).stdout
    files = dict(re.findall(r"^=== (\S+)\n(.*?)(?=^=== |^hand-written:)", out, re.M | re.S))
    hand = re.search(r"^hand-written: (.*)$", out, re.M).group(1).split()
    gen = re.search(r"^generated: (.*)$", out, re.M).group(1).split()
    row = re.search(r"^=== gates/gates.def \+= \n(.*?)^=== ", out, re.M | re.S).group(1)
    return files, hand, gen, row


def compiles(gid, c_text, row, tmp):
    cc, inc = os.environ.get("CC"), os.environ.get("KC_INC_gates")
    if not cc or not inc:
        return None
    hdrs = os.path.join(tmp, "gates")
    os.makedirs(hdrs)
    for f in glob.glob(os.path.join(ROOT, "gates", "*.h")) + \
            glob.glob(os.path.join(ROOT, "gates", "*.def")):
        shutil.copy(f, hdrs)
    with open(os.path.join(hdrs, "gates.def"), "a") as f:
        f.write(row)
    src = os.path.join(hdrs, gid + ".c")
    with open(src, "w") as f:
        f.write(c_text)
    # the copied headers first: a quoted include looks beside its includer
    incs = ["-I" + hdrs] + [("-I" + os.path.join(ROOT, x[2:]) if x.startswith("-I") and
                             not os.path.isabs(x[2:]) else x) for x in inc.split()]
    cmd = [cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-Wshadow",
           "-Wundef", "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wno-unused-parameter",
           "-fsyntax-only"] + incs + [src]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode == 0 or r.stderr


def defs_with(row, tmp):
    """kcheck._defs as scripts/gen_defs.py makes it from a tree whose
    gates.def has the row."""
    tree = os.path.join(tmp, "tree")
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import gen_defs
    for rel in gen_defs.SOURCES:
        os.makedirs(os.path.join(tree, os.path.dirname(rel)), exist_ok=True)
        shutil.copy(os.path.join(ROOT, rel), os.path.join(tree, rel))
    with open(os.path.join(tree, "gates", "gates.def"), "a") as f:
        f.write(row)
    old, gen_defs.ROOT = gen_defs.ROOT, tree
    try:
        ns = {}
        exec(gen_defs.generate(), ns)
        return ns
    finally:
        gen_defs.ROOT = old
        sys.path.pop(0)


def main():
    problems = []
    cases = [("zz_trials", ["--needs-contract", "--op", "trials"], True),
             ("zz_kernel", [], False)]
    for gid, extra, at_op in cases:
        files, hand, gen, row = dry_run([gid, "a contract"] + extra)
        if len(hand) > 3:
            problems.append("%s: %d hand-written files (%s), not at most 3" % (
                gid, len(hand), " ".join(hand)))
        if set(hand) != {"gates/gates.def", "gates/%s.c" % gid, "test/gates/%s/fixtures" % gid}:
            problems.append("%s: hand-written files %s" % (gid, hand))
        if set(gen) != {"docs/gates.md", "python/kcheck/_defs.py"}:
            problems.append("%s: generated files %s" % (gid, gen))
        with tempfile.TemporaryDirectory() as tmp:
            ok = compiles(gid, files["gates/%s.c" % gid], row, tmp)
            if ok is not None and ok is not True:
                problems.append("%s: the skeleton does not compile:\n%s" % (gid, ok))
            d = defs_with(row, tmp)
            g = d["GATE"].get(gid)
            if g is None:
                problems.append("%s: not in the generated _defs.GATE" % gid)
            elif (gid in d["OP_TRIAL_GATES"]) != at_op or (g.levels == ("kernel", "op")) != at_op:
                problems.append("%s: op level %s, expected %s" % (gid, g.levels, at_op))
        print("%s: %d hand-written (%s), %d generated; compiled: %s" % (
            gid, len(hand), " ".join(hand), len(gen), "skipped" if ok is None else "yes"))
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
