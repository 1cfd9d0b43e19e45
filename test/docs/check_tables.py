"""test/docs/check_tables.py — the documentation says what the .def files
say, and its links lead somewhere. Run by `make docs-test` (part of
`make test`).

Tables: every table is found by its markers (`<!-- NAME-begin... -->` and
`<!-- NAME-end -->`) in whichever page of docs/ (or the README) holds it,
so a table can move between pages. What each table must list is read from
every .def file with KC_OPT, KC_GATE or KC_PERTURB rows, wherever it lives;
a new option, gate or strategy is a new .def row plus a new table row,
nothing here.

  options-table  every option of the options .def files, with its default,
                 and no other (4-space-indented rows; 'a / b' rows name two)
  gates-table    every gate of gates/gates.def and no other (2-space rows);
                 every strategy of libkcheck/exec/perturb.def in order (17-space
                 rows); the race_strategies default is the strategies
                 perturb.def turns on

Links: every relative link of the README and docs/*.md ([text](target),
images included) names a file or folder that exists; a #anchor into a
markdown page names one of its headings (GitHub's anchor rules)."""
import glob
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def def_files(macro):
    """Every tracked .def file with MACRO(...) rows, wherever it lives (so a
    .def file may move, or a layer add its own list of options)."""
    out = []
    for d, subdirs, files in os.walk(ROOT):
        subdirs[:] = sorted(s for s in subdirs if s not in ("build", ".git") and not s.startswith("."))
        for f in sorted(files):
            if f.endswith(".def"):
                path = os.path.relpath(os.path.join(d, f), ROOT)
                with open(os.path.join(ROOT, path)) as fh:
                    if re.search(r"^%s\(" % macro, fh.read(), re.M):
                        out.append(path)
    return out


def one_def(macro):
    files = def_files(macro)
    if len(files) != 1:
        sys.exit("FAIL %d .def files have %s rows: %s" % (len(files), macro, files))
    return files[0]


OPTION_DEFS = def_files("KC_OPT")      # the core's, the gates' and the contracts' options
GATES_DEF = one_def("KC_GATE")         # gates/gates.def
PERTURB_DEF = one_def("KC_PERTURB")    # the race strategies (libkcheck)
# The pages checked for tables and links: the front page and the manual.
PAGES = ["README", "README.md"] + sorted(
    os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def pages():
    return [p for p in PAGES if os.path.exists(os.path.join(ROOT, p))]


def def_rows(path, macro, nfields):
    """The first nfields fields of every MACRO(...) row of a .def file."""
    pat = r"^%s\(%s" % (macro, r",\s*".join([r'("(?:[^"\\]|\\.)*"|[^,()]+)'] * nfields))
    return [tuple(f.strip().strip('"') for f in m.groups()) for m in re.finditer(pat, read(path), re.M)]


def def_options():
    """name -> default text, in row order, from every options .def."""
    out = {}
    for path in OPTION_DEFS:
        for _type, name, default in def_rows(path, "KC_OPT", 3):
            out[name] = default
    return out


def table(name):
    """(page, lines between the markers of table `name`), from the one page
    that holds it; None when no page does."""
    found = []
    for page in pages():
        lines = read(page).split("\n")
        begin = [i for i, l in enumerate(lines) if l.startswith("<!-- %s-begin" % name)]
        end = [i for i, l in enumerate(lines) if l.startswith("<!-- %s-end" % name)]
        if begin and end:
            found.append((page, lines[begin[0] + 1:end[0]]))
    return found[0] if len(found) == 1 else (found or None)


def doc_options(lines):
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
                if n in out:
                    out.setdefault("\0dup", []).append(n)
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


def check_tables(problems):
    counts = {}
    # Options.
    want = def_options()
    got = table("options-table")
    if not isinstance(got, tuple):
        problems.append("options-table: %s" % ("no page has its markers" if got is None
                                                else "on several pages: %s" % [p for p, _ in got]))
    else:
        page, lines = got
        have = doc_options(lines)
        for n in have.pop("\0dup", []):
            problems.append("%s: the options table lists %s twice" % (page, n))
        for name, default in want.items():
            if name not in have:
                problems.append("%s: the options table lacks %s (default %s)" % (page, name, default))
            elif have[name] is not None and not same_default(have[name], default):
                problems.append("%s says %s defaults to %r, the .def %r" % (page, name, have[name], default))
        for name in have:
            if name not in want:
                problems.append("%s: the options table has %s, which no options .def has" % (page, name))
    counts["options"] = len(want)
    # Gates and race strategies.
    gates = [r[0] for r in def_rows(GATES_DEF, "KC_GATE", 1)]
    rows = def_rows(PERTURB_DEF, "KC_PERTURB", 2)
    strategies = [n for n, _ in rows]
    got = table("gates-table")
    if not isinstance(got, tuple):
        problems.append("gates-table: %s" % ("no page has its markers" if got is None
                                              else "on several pages: %s" % [p for p, _ in got]))
    else:
        page, glines = got
        listed = [m.group(1) for l in glines for m in [re.match(r"^  (\w+) +\S", l)] if m]
        for g in gates:
            if g not in listed:
                problems.append("%s: the gates table lacks %s" % (page, g))
        for g in listed:
            if g not in gates:
                problems.append("%s: the gates table has %s, which %s lacks" % (page, g, GATES_DEF))
        shown = [m.group(1) for l in glines for m in [re.match(r"^ {17}(\w+)\s{2,}\S", l)] if m]
        if shown != strategies:
            problems.append("%s: the strategy table lists %s, %s %s" % (page, shown, PERTURB_DEF, strategies))
    defaults = ",".join(n for n, on in rows if on == "1")
    if want.get("race_strategies") != defaults:
        problems.append("race_strategies defaults to %r, %s turns on %r"
                        % (want.get("race_strategies"), PERTURB_DEF, defaults))
    counts["gates"] = len(gates)
    counts["strategies"] = len(strategies)
    return counts


def anchor(title):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces
    to '-'."""
    t = re.sub(r"`|\*\*|__", "", title.strip().lower())
    t = re.sub(r"[^\w\- ]", "", t)
    return t.replace(" ", "-")


def anchors(path):
    """The anchors of a markdown page's headings (ATX and setext)."""
    out = set()
    lines = read(path).split("\n")
    fenced = False
    for i, l in enumerate(lines):
        if l.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", l)
        if m:
            out.add(anchor(m.group(1)))
        elif i + 1 < len(lines) and l.strip() and re.match(r"^(=+|-+)\s*$", lines[i + 1]) \
                and not l.startswith("    "):
            out.add(anchor(l))
    for m in re.finditer(r'<a (?:name|id)="([^"]+)"', read(path)):
        out.add(m.group(1))
    return out


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def links(path):
    """(line number, target) of every markdown link outside code."""
    out = []
    fenced = False
    for n, l in enumerate(read(path).split("\n"), 1):
        if l.startswith("```"):
            fenced = not fenced
            continue
        if fenced or l.startswith("    "):
            continue
        l = re.sub(r"`[^`]*`", "", l)
        out += [(n, m.group(1)) for m in LINK.finditer(l)]
    return out


def check_links(problems):
    count = 0
    for page in pages():
        for n, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            count += 1
            file, _, frag = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            if not os.path.exists(os.path.join(ROOT, path)):
                problems.append("%s:%d: link to %s: no such file" % (page, n, target))
            elif frag and path.endswith(".md") and frag not in anchors(path):
                problems.append("%s:%d: link to %s: %s has no heading #%s" % (page, n, target, path, frag))
    return count


def main():
    problems = []
    counts = check_tables(problems)
    counts["links"] = check_links(problems)
    for p in problems:
        print("FAIL " + p)
    if not problems:
        print("docs: ok (%(options)d options, %(gates)d gates, %(strategies)d strategies, "
              "%(links)d relative links)" % counts)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
