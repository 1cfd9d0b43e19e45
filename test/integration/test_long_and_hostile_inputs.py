"""Inputs of any length or shape that kcheck's own files and tools take:
suppression lines longer than any buffer, the lines --gen-suppressions
writes for long C++ names, and `kcheck report` given a FIFO, deeply nested
JSON, a summary whose violations have no records, or control characters
headed for JUnit XML."""
import fnmatch
import json
import os
import subprocess
import sys

from conftest import ROOT, base_env, by_type, run

sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck import report as kr  # noqa: E402

KCHECK = [sys.executable, os.path.join(ROOT, "scripts", "kcheck")]


def kcheck(tmp_path, *args, timeout=60):
    return subprocess.run(KCHECK + [str(a) for a in args], capture_output=True, text=True,
                          env=base_env(tmp_path), timeout=timeout)


def test_suppression_lines_of_any_length(app, tmp_path):
    # A comment whose tail past byte 4095 (where a fixed buffer cut it)
    # would read as a rule, and a rule of 5,000 bytes (spaces around a
    # field are trimmed).
    supp = tmp_path / "long.supp"
    supp.write_text("#" + "x" * 4094 + "race:last_writer\n"
                    + "race:" + " " * 5000 + "neighbor_read\n")
    r = run([app("app_linked"), "races"], tmp_path, options="suppressions=%s:strict=1" % supp)
    assert r.rc == 0 and "error:" not in r.err, r.err[-2000:]
    recs = r.only_report()
    assert [s["kernel_name"] for s in by_type(recs, "suppressed")] == \
        ["neighbor_read(int*, int*, int)"]
    assert by_type(recs, "suppressed")[0]["suppressed_by"] == "%s:2" % supp
    assert "last_writer(int*)" in [v["kernel_name"] for v in by_type(recs, "violation")]
    # a NUL inside a line is refused, not a silent cut
    supp.write_bytes(b"race:last_writer\x00 # the rest\n")
    nul = run([app("app_linked"), "basic"], tmp_path, options="suppressions=%s:strict=1" % supp)
    assert nul.rc == 1 and "long.supp:1: error: a NUL byte in the line" in nul.err, nul.err


def test_gen_suppressions_for_long_names_parse_back(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path)
    assert r.rc == 0, r.err
    # One violation renamed to a 6,000-byte C++ name with a line break and a
    # lone ':' in it (a hostile or odd report): what --gen-suppressions
    # writes for it is one comment line and one rule line that match it.
    name = "ns::k<" + ", ".join("T%d" % i for i in range(1000)) + ">\nrace:x:y(int*)"
    recs = [json.loads(l) for l in open(r.reports[0])]
    renamed = next(x for x in recs if x.get("type") == "violation")
    renamed["kernel_name"] = name
    rep = tmp_path / "renamed.jsonl"
    rep.write_text("".join(json.dumps(x) + "\n" for x in recs))
    g = kcheck(tmp_path, "report", "--gen-suppressions", rep)
    assert g.returncode == 0, g.stderr
    lines = g.stdout.splitlines()
    assert all(l.startswith(("#", renamed["gate"] + ":", "race:", "nondeterminism:"))
               for l in lines), lines
    rules = [l for l in lines if not l.startswith("#")]
    long_rule = next(l for l in rules if len(l) > 4096)
    glob = long_rule.split(":", 1)[1]
    assert fnmatch.fnmatchcase(name, glob) and "\n" not in long_rule
    # libkcheck reads every line back under strict=1: no error, and the
    # other generated rules still silence their findings
    supp = tmp_path / "gen.supp"
    supp.write_text(g.stdout)
    again = run([app("app_linked"), "races"], tmp_path,
                options="suppressions=%s:strict=1" % supp)
    assert again.rc == 0 and "error:" not in again.err, again.err[-2000:]
    assert len(by_type(again.only_report(), "suppressed")) >= len(rules) - 1
