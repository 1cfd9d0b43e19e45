"""test/gates/check_fixtures.py — every gate of gates/gates.def has its
fixtures index test/gates/<id>/fixtures naming at least one must-fire and
one must-stay-silent test; every test named exists, and every kernel named
is defined in one of the listed sources. No index for a gate that does not
exist. Run by `make test` (gates-index-test)."""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def gates():
    text = open(os.path.join(ROOT, "gates", "gates.def")).read()
    return re.findall(r"^KC_GATE\((\w+),", text, re.M)


def check(gate):
    problems = []
    path = os.path.join(ROOT, "test", "gates", gate, "fixtures")
    if not os.path.exists(path):
        return ["%s: no test/gates/%s/fixtures" % (gate, gate)]
    rows, sources = [], []
    for n, line in enumerate(open(path), 1):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        if line[0] in ("fire", "silent") and len(line) >= 2 and "::" in line[1]:
            rows.append((n, line[0], line[1], line[2:]))
        elif line[0] == "source" and len(line) == 2:
            sources.append(line[1])
        else:
            problems.append("%s:%d: not a fixtures row: %s" % (path, n, " ".join(line)))
    kinds = {r[1] for r in rows}
    for kind in ("fire", "silent"):
        if kind not in kinds:
            problems.append("%s: no %s test" % (path, kind))
    text = {}
    for s in sources:
        try:
            text[s] = open(os.path.join(ROOT, s)).read()
        except OSError:
            problems.append("%s: source %s does not exist" % (path, s))
    for n, kind, node, kernels in rows:
        f, fn = node.split("::", 1)
        try:
            body = open(os.path.join(ROOT, f)).read()
        except OSError:
            problems.append("%s:%d: %s does not exist" % (path, n, f))
            continue
        if not re.search(r"^def %s\(" % re.escape(fn), body, re.M):
            problems.append("%s:%d: %s defines no %s" % (path, n, f, fn))
        for k in kernels:
            if not any(k in t for t in text.values()):  # mangled names too
                problems.append("%s:%d: kernel %s is in none of the sources" % (path, n, k))
    return problems


def main():
    problems = []
    known = gates()
    for g in known:
        problems += check(g)
    for d in sorted(os.listdir(os.path.join(ROOT, "test", "gates"))):
        if os.path.isdir(os.path.join(ROOT, "test", "gates", d)) and d not in known:
            problems.append("test/gates/%s: no such gate in gates/gates.def" % d)
    for p in problems:
        print("FAIL " + p)
    if not problems:
        print("gates index: ok (%d gates, each with must-fire and must-stay-silent tests)"
              % len(known))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
