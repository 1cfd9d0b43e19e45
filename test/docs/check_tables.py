"""test/docs/check_tables.py — the README's tables say what the .def files
say: every option of libkcheck/base/options.def, gates/gate_options.def and
contract/contract_options.def is in the options table with its default,
and the table has no other; every gate of gates/gates.def is in the gates
table and no other; every strategy of libkcheck/exec/perturb.def is in the race
gate's strategy table, in order, and the race_strategies default is the
strategies perturb.def turns on. Run by `make test` (docs-test)."""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OPTION_DEFS = ["libkcheck/base/options.def", "gates/gate_options.def", "contract/contract_options.def"]


def read(path):
    return open(os.path.join(ROOT, path)).read()


def def_options():
    """name -> default text, in row order, from every options .def."""
    out = {}
    for path in OPTION_DEFS:
        for m in re.finditer(r'^KC_OPT\(\w+, (\w+), ("(?:[^"\\]|\\.)*"|[^,]+),', read(path), re.M):
            out[m.group(1)] = m.group(2).strip().strip('"')
    return out


def section(readme, title):
    """The lines of README section `title` (up to the next underlined title)."""
    lines = readme.split("\n")
    start = lines.index(title)
    end = len(lines)
    for i in range(start + 2, len(lines) - 1):
        if lines[i + 1] and set(lines[i + 1]) <= {"-", "="} and len(lines[i + 1]) >= 3:
            end = i
            break
    return lines[start + 2:end]


def readme_options(lines):
    """name -> default text (None when the row has none), from the table's
    4-space-indented rows; 'a / b' rows name two options."""
    out = {}
    i = 0
    while i < len(lines):
        m = re.match(r"^    (\w+(?: / \w+)*)(?:\s+(\S.*))?$", lines[i])
        if m and not lines[i].startswith("     "):
            names = m.group(1).split(" / ")
            rest = (m.group(2) or "").strip()
            default = None
            if rest.startswith('"'):
                text = rest
                while text.count('"') < 2 and i + 1 < len(lines):  # continued on the next line
                    i += 1
                    text += lines[i].strip()
                default = text[1:text.index('"', 1)]
            elif rest:
                default = rest.split()[0]
            for n in names:
                out[n] = default if len(names) == 1 else None
        i += 1
    return out


def same_default(a, b):
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def main():
    readme = read("README")
    problems = []
    # Options.
    want = def_options()
    have = readme_options(section(readme, "Options (KCHECK_OPTIONS)"))
    for name, default in want.items():
        if name not in have:
            problems.append("README options table lacks %s (default %s)" % (name, default))
        elif have[name] is not None and not same_default(have[name], default):
            problems.append("README says %s defaults to %r, the .def %r" % (name, have[name], default))
    for name in have:
        if name not in want:
            problems.append("README options table has %s, which no options .def has" % name)
    # Gates.
    gates = re.findall(r"^KC_GATE\((\w+),", read("gates/gates.def"), re.M)
    glines = section(readme, "Gates")
    listed = [m.group(1) for l in glines for m in [re.match(r"^  (\w+) +\S", l)] if m]
    for g in gates:
        if g not in listed:
            problems.append("README gates table lacks %s" % g)
    for g in listed:
        if g not in gates:
            problems.append("README gates table has %s, which gates.def lacks" % g)
    # Strategies.
    rows = re.findall(r"^KC_PERTURB\((\w+), ([01]),", read("libkcheck/exec/perturb.def"), re.M)
    strategies = [n for n, _ in rows]
    shown = [m.group(1) for l in glines for m in [re.match(r"^ {17}(\w+)\s{2,}\S", l)] if m]
    if shown != strategies:
        problems.append("README strategy table lists %s, perturb.def %s" % (shown, strategies))
    defaults = ",".join(n for n, on in rows if on == "1")
    if want.get("race_strategies") != defaults:
        problems.append("race_strategies defaults to %r, perturb.def turns on %r"
                        % (want.get("race_strategies"), defaults))
    for p in problems:
        print("FAIL " + p)
    if not problems:
        print("docs tables: ok (%d options, %d gates, %d strategies)"
              % (len(want), len(gates), len(strategies)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
