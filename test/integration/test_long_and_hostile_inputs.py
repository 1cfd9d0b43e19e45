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


def a_report(app, tmp_path):
    """A real report with violations (the races of app_linked), as records."""
    r = run([app("app_linked"), "races"], tmp_path)
    assert r.rc == 0, r.err
    return [json.loads(l) for l in open(r.reports[0])]


def write_report(path, recs):
    path.write_text("".join(json.dumps(x) + "\n" for x in recs))
    return path


def test_report_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "kc.fifo.jsonl"
    os.mkfifo(fifo)
    # no writer ever opens it: reading it would block for good
    r = kcheck(tmp_path, "report", fifo, timeout=30)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "kcheck: error: %s: not a regular file" % fifo in r.stderr
    dev = kcheck(tmp_path, "report", "/dev/zero", timeout=30)
    assert dev.returncode == 2 and "not a regular file" in dev.stderr, dev.stderr


def test_report_of_deeply_nested_json_is_a_clear_error(app, tmp_path):
    recs = a_report(app, tmp_path)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("".join(json.dumps(x) + "\n" for x in recs) + "[" * 100000 + "]" * 100000 + "\n")
    for args in (["report"], ["report", "--junit", tmp_path / "j.xml"], ["report", "--merge"],
                 ["report", "--gen-suppressions"]):
        r = kcheck(tmp_path, *args, deep)
        assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
        assert "Traceback" not in r.stderr
        assert "nests JSON deeper than Python's parser takes" in r.stderr, r.stderr[-2000:]
    # nesting the parser takes: an ordinary malformed-looking record, no traceback
    deep.write_text("".join(json.dumps(x) + "\n" for x in recs) + "[" * 500 + "]" * 500 + "\n")
    ok = kcheck(tmp_path, "report", "--junit", tmp_path / "j.xml", "--sarif", tmp_path / "s.json",
                "--html", tmp_path / "h.html", deep)
    assert ok.returncode == 1 and "Traceback" not in ok.stderr, ok.stderr[-2000:]


def test_report_with_violations_counted_but_not_recorded_is_not_clean(app, tmp_path):
    recs = a_report(app, tmp_path)
    n = next(x for x in recs if x["type"] == "summary")["violations"]
    assert n >= 3
    kept = [x for x in recs if x["type"] not in ("violation", "violation_pending")]
    rep = write_report(tmp_path / "cut.jsonl", kept)
    r = kcheck(tmp_path, "report", rep)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("the summary counts %d violations without a record in this report" % n) in r.stdout
    assert "verdict: %d violations in" % n in r.stdout
    # one record kept: the others still count
    one = write_report(tmp_path / "one.jsonl",
                       kept[:1] + [next(x for x in recs if x["type"] == "violation")] + kept[1:])
    r1 = kcheck(tmp_path, "report", one)
    assert r1.returncode == 1 and "counts %d violations without a record" % (n - 1) in r1.stdout
    # the complete report has none missing
    full = kcheck(tmp_path, "report", write_report(tmp_path / "full.jsonl", recs))
    assert full.returncode == 1 and "without a record" not in full.stdout


def test_junit_is_well_formed_xml_for_control_characters(app, tmp_path):
    import xml.etree.ElementTree as ET
    recs = a_report(app, tmp_path)
    hostile = "k\x01\x02\x0b\x1f\ud800\ufffe<&>\"'\t"
    for x in recs:
        if x["type"] == "violation":
            x["kernel_name"] = hostile + x["kernel_name"]
            x["test"] = "test_x.py::t[\x00\x07]"
            x["reproduce"] = "echo \x1b[31m"
    rep = write_report(tmp_path / "ctl.jsonl", recs)
    junit = tmp_path / "j.xml"
    r = kcheck(tmp_path, "report", "--junit", junit, rep)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    root = ET.parse(junit).getroot()  # a parse error here: not well-formed
    names = [c.get("name") for c in root.iter("testcase")]
    assert "test_x.py::t[\\x00\\x07]" in names, names
    msgs = [f.get("message") for f in root.iter("failure")]
    # a lone surrogate is U+FFFD from the moment the report is read
    assert any(m.startswith("race in k\\x01\\x02\\x0b\\x1f\ufffd\\ufffe<&>\"'\t") for m in msgs), msgs
    assert any("echo \\x1b[31m" in (f.text or "") for f in root.iter("failure"))
