#!/usr/bin/env python3
"""Makes the skeleton of a new gate (as clang-tidy's add_new_check.py):

  scripts/new_gate.py ID "one-line contract" [--severity error|warning]
                      [--needs-contract] [--dry-run]

writes
  gates/ID.c                  kc_gate_ID_run, setting KC_GS_NOT_RUN until
                              written (the registry row makes kc_gate_ID)
  gates/gates.def             the KC_GATE row, appended
  test/gates/ID/fixtures      the fixtures index, its fire and silent rows
                              to fill in (`make gates-index-test` fails
                              until they name real tests)
  docs/gates.md               the gates-table row (`make docs-test`)
  python/kcheck/_defs.py      regenerated (scripts/gen_defs.py)

--dry-run prints what it would write. docs/architecture.md ("A gate, defined
once") says what else a gate may need (options, the default gates list, the
op level)."""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

C_FILE = '''/* gates/{id}.c — contract: {contract}
 * (gates/gates.def). Given the launch, its shadow check and its contract
 * (struct kc_gate_ctx, gates/gate.h); sets ctx->out.status and adds a
 * violation (kc_gate_violation: message, evidence) per broken promise;
 * details of the run go into ctx->result. */
#include "gate.h"
#include "gate_util.h"

int kc_gate_{id}_run(struct kc_gate_ctx *ctx) {{
  /* TODO: run the check. Violations: kc_gate_violation(ctx, json_pack("{{s:s, s:o}}",
   * "message", "...", "evidence", ev)); status KC_GS_FAIL, else KC_GS_PASS. */
  ctx->out.status = KC_GS_NOT_RUN;
  return 0;
}}
'''

FIXTURES = '''# test/gates/{id}/fixtures — where the {id} gate's tests and planted kernels are.
# fire: the gate must report these kernels; silent: it must not (or must pass).
# Rows: fire|silent TEST_FILE::TEST_FUNCTION [KERNEL ...]; source FILE (the
# kernels and contracts). Checked by test/gates/check_fixtures.py (make test).
# TODO: one fire and one silent row (and the sources of their kernels).
'''


def c_string(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def wrap(text, indent, width=76):
    words, lines, cur = text.split(), [], ""
    for w in words:
        if cur and len(indent) + len(cur) + 1 + len(w) > width:
            lines.append(cur)
            cur = w
        else:
            cur = (cur + " " + w).strip()
    lines.append(cur)
    return lines


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("id")
    ap.add_argument("contract", help="the one-line contract (gates.def, `kcheck gates`)")
    ap.add_argument("--severity", default="error", choices=("error", "warning"))
    ap.add_argument("--needs-contract", action="store_true",
                    help="runs only on launches with a contract (shadow buffers)")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", a.id):
        ap.error("a gate id is lower case letters, digits and _")
    defs = os.path.join(ROOT, "gates", "gates.def")
    text = open(defs).read()
    if re.search(r"^KC_GATE\(%s," % a.id, text, re.M):
        ap.error("gates.def has %s already" % a.id)
    row = "KC_GATE(%s, %s, %d, %s)\n" % (a.id, c_string(a.severity), int(a.needs_contract),
                                         c_string(a.contract))
    docs = os.path.join(ROOT, "docs", "gates.md")
    page = open(docs).read()
    end = page.index("<!-- gates-table-end -->")
    fence = page.rindex("```", 0, end)
    first, *rest = wrap(a.contract, " " * 15)
    trow = "  %-12s %s\n" % (a.id, first) + "".join(" " * 15 + l + "\n" for l in rest)
    writes = [(os.path.join("gates", a.id + ".c"), C_FILE.format(id=a.id, contract=a.contract)),
              (os.path.join("test", "gates", a.id, "fixtures"), FIXTURES.format(id=a.id))]
    if a.dry_run:
        for path, body in writes:
            print("=== %s\n%s" % (path, body))
        print("=== gates/gates.def += %s=== docs/gates.md gates-table += \n%s" % (row, trow))
        return 0
    for path, body in writes:
        full = os.path.join(ROOT, path)
        if os.path.exists(full):
            sys.exit("new_gate: %s exists" % path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(body)
    with open(defs, "a") as f:
        f.write(row)
    with open(docs, "w") as f:
        f.write(page[:fence] + trow + page[fence:])
    subprocess.check_call([sys.executable, os.path.join(ROOT, "scripts", "gen_defs.py")])
    print("new gate %s: gates/%s.c, gates/gates.def, test/gates/%s/fixtures, docs/gates.md, "
          "python/kcheck/_defs.py; fill in the TODOs" % (a.id, a.id, a.id))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
