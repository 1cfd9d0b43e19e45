#!/usr/bin/env python3
"""Makes the skeleton of a new gate (as clang-tidy's add_new_check.py):

  scripts/new_gate.py ID "one-line contract" [--severity error|warning]
                      [--needs-contract] [--op none|trials]
                      [--evidence "f g"] [--op-evidence "f g"] [--dry-run]

A gate is three hand-written files, for kernel and op level alike:
  gates/gates.def             its KC_GATE row, appended (id, severity,
                              needs_contract, op, evidence, contract)
  gates/ID.c                  kc_gate_ID_run, setting KC_GS_NOT_RUN until
                              written; with --op trials also
                              kc_gate_ID_trials, the generated-input runs
                              the kernel level and the PyTorch binding
                              (kcheck_op_trials) share
  test/gates/ID/fixtures      the fixtures index, its fire and silent rows
                              to fill in (`make gates-index-test` fails
                              until they name real tests)
and two it generates:
  docs/gates.md               the gates-table row (`make docs-test`)
  python/kcheck/_defs.py      regenerated (scripts/gen_defs.py): the
                              binding runs the gate at op level from its row

--op trials: the binding runs the gate's trials on every covered op (the
oracle judges them), with no Python of the gate's own; none: kernel level
only. (The binding's other ways of running a gate — the op column's
oracle, inputs, poison, guards, shapes, layouts — are its built-in
gates'; layouts is op level only: no kernel evidence, its C run says
not_applicable.)
--dry-run prints what it would write, then the files by kind.
docs/architecture.md ("A gate, defined once") says what else a gate may
need (options, the default gates list; a gate for some launches only
defines kc_gate_ID_applies in gates/ID.c, no file more)."""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The oracle's evidence (gates/judge.c), what a trials gate's violations carry.
JUDGE_EVIDENCE = ("tensor op profile index kernel exact bound error ratio shape n_fail n_special "
                  "verdict_line explained_by detail")

C_HEAD = '''/* gates/{id}.c — contract: {contract}
 * (gates/gates.def). Given the launch, its shadow check and its contract
 * (struct kc_gate_ctx, gates/gate.h); sets ctx->out.status and adds a
 * violation (kc_gate_violation: message, evidence) per broken promise;
 * details of the run go into ctx->result. */
#include "gate.h"
#include "gate_util.h"
'''

C_RUN = '''
int kc_gate_{id}_run(struct kc_gate_ctx *ctx) {{
  /* TODO: run the check. Violations: kc_gate_violation(ctx, json_pack("{{s:s, s:o}}",
   * "message", "...", "evidence", ev)); status KC_GS_FAIL, else KC_GS_PASS. */
  ctx->out.status = KC_GS_NOT_RUN;
  return 0;
}}
'''

C_TRIALS = '''#include "trial.h"

/* The generated-input runs for oracle op `op` (NULL: none named), for the
 * kernel level (kc_trials_gate below) and the op level (kcheck_op_trials:
 * the PyTorch binding runs each on the op and the oracle judges it). */
int kc_gate_{id}_trials(const char *op, struct kc_trial *t, unsigned *fail_mask) {{
  (void)op;
  *fail_mask = KC_VERDICT_FAILS;
  /* TODO: t[n++] = (struct kc_trial){{OC_GEN_..., KC_TF_NONE, NULL, 0}}; */
  (void)t;
  return 0;
}}

int kc_gate_{id}_run(struct kc_gate_ctx *ctx) {{
  const struct kc_contract *c = ctx->contract;
  struct kc_trial t[KC_MAX_TRIALS];
  unsigned fails;
  int n = kc_gate_{id}_trials(c ? c->op : NULL, t, &fails);
  return kc_trials_gate(ctx, &kc_gate_{id}, t, n, fails, "TODO: what a violation means");
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


def c_file(a):
    if a.op == "trials":
        return C_HEAD.format(id=a.id, contract=a.contract) + C_TRIALS.format(id=a.id)
    return C_HEAD.format(id=a.id, contract=a.contract) + C_RUN.format(id=a.id)


def gates_row(a):
    kev = a.evidence if a.evidence is not None else (JUDGE_EVIDENCE if a.op == "trials" else "")
    oev = a.op_evidence if a.op_evidence is not None else (kev if a.op == "trials" else "")
    return "KC_GATE(%s, %s, %d, %s,\n        %s,\n        %s,\n        %s)\n" % (
        a.id, c_string(a.severity), int(a.needs_contract), a.op, c_string(kev), c_string(oev),
        c_string(a.contract))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("id")
    ap.add_argument("contract", help="the one-line contract (gates.def, `kcheck gates`)")
    ap.add_argument("--severity", default="error", choices=("error", "warning"))
    ap.add_argument("--needs-contract", action="store_true",
                    help="runs only on launches with a contract (shadow buffers)")
    ap.add_argument("--op", default="none", choices=("none", "trials"),
                    help="how the op level runs it (gates.def's op column)")
    ap.add_argument("--evidence", help="its evidence fields at kernel level (space-separated)")
    ap.add_argument("--op-evidence", help="its evidence fields at op level")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args(argv)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", a.id):
        ap.error("a gate id is lower case letters, digits and _")
    if a.op == "trials" and not a.needs_contract:
        ap.error("--op trials judges outputs with the oracle: it needs --needs-contract")
    defs = os.path.join(ROOT, "gates", "gates.def")
    text = open(defs).read()
    if re.search(r"^KC_GATE\(%s," % a.id, text, re.M):
        ap.error("gates.def has %s already" % a.id)
    row = gates_row(a)
    docs = os.path.join(ROOT, "docs", "gates.md")
    page = open(docs).read()
    end = page.index("<!-- gates-table-end -->")
    fence = page.rindex("```", 0, end)
    first, *rest = wrap(a.contract, " " * 15)
    trow = "  %-12s %s\n" % (a.id, first) + "".join(" " * 15 + l + "\n" for l in rest)
    hand = [os.path.join("gates", "gates.def"), os.path.join("gates", a.id + ".c"),
            os.path.join("test", "gates", a.id, "fixtures")]
    generated = [os.path.join("docs", "gates.md"), os.path.join("python", "kcheck", "_defs.py")]
    writes = [(hand[1], c_file(a)), (hand[2], FIXTURES.format(id=a.id))]
    if a.dry_run:
        for path, body in writes:
            print("=== %s\n%s" % (path, body))
        print("=== gates/gates.def += \n%s=== docs/gates.md gates-table += \n%s" % (row, trow))
        print("hand-written: %s" % " ".join(hand))
        print("generated: %s" % " ".join(generated))
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
    print("new gate %s: wrote %s; generated %s; fill in the TODOs" % (
        a.id, ", ".join(hand), ", ".join(generated)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
