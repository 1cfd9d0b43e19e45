"""Reports for CI: SARIF 2.1.0 (code scanning) and JUnit XML (test
dashboards), from one or more kcheck reports (findings de-duplicated)."""
import hashlib
import os
import re
import xml.etree.ElementTree as ET

from kcheck import __version__
from kcheck import report as kr

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(path):
    """A relative path stays relative (uri-reference); an absolute one is a file: URI."""
    path = path.replace("\\", "/")
    if path.startswith("/"):
        return "file://" + path
    return path


def _location(v, kernel):
    loc = {"logicalLocations": [{"name": kernel, "kind": "function"}]}
    where = kr.contract_location(v) or kr.user_frame(v)
    if where:
        f, line = where[0], where[1]
        phys = {"artifactLocation": {"uri": _uri(f)}}
        if isinstance(line, int) and line > 0:
            phys["region"] = {"startLine": line}
        loc["physicalLocation"] = phys
    return loc


def sarif(reports):
    """A SARIF 2.1.0 log (dict): one run, one rule per gate seen, one result
    per de-duplicated finding, located at the contract's FILE:LINE (contract
    gates) or the user's innermost frame with a source line."""
    findings = kr.merge(reports)
    rules, index = [], {}
    for f in findings:
        if f.gate not in index:
            index[f.gate] = len(rules)
            rule = {"id": f.gate, "name": f.gate,
                    "shortDescription": {"text": f.first.get("gate_contract") or f.gate},
                    "defaultConfiguration": {"level": "error"}}
            rules.append(rule)
    results = []
    for f in findings:
        v = f.first
        key = "|".join(str(x) for x in kr.finding_key(v))
        text = "%s in %s (%d occurrence%s%s): %s" % (
            f.gate, f.kernel, f.occurrences, "" if f.occurrences == 1 else "s",
            (", sites " + " -> ".join(f.sites)) if f.sites else "", " ".join(kr.evidence_text(v)))
        res = {"ruleId": f.gate, "ruleIndex": index[f.gate], "level": "error",
               "message": {"text": text},
               "locations": [_location(v, f.kernel)],
               "partialFingerprints": {"kcheckFinding/v1": hashlib.sha256(key.encode()).hexdigest()},
               "occurrenceCount": f.occurrences,
               "properties": {"kernel": f.kernel, "launch": v.get("launch"),
                              "signature": v.get("signature"), "seed": v.get("seed"),
                              "bug": v.get("bug"), "sites": f.sites,
                              "processes": [p for _, p, _ in f.where], "ranks": f.ranks,
                              "tests": f.tests, "reproduce": v.get("reproduce", "")}}
        results.append(res)
    run = {"tool": {"driver": {"name": "kcheck", "version": __version__,
                               "rules": rules}},
           "results": results,
           "invocations": [{"executionSuccessful": all(r.finished for r in reports),
                            "properties": {"reports": [r.path for r in reports]}}]}
    return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def junit(reports):
    """JUnit XML (str): one testcase per test when the pytest plugin ran
    (records carry a test id), else one per checked kernel; each finding is
    a <failure> of its testcase. A report without a summary is an <error>."""
    findings = kr.merge(reports)
    tests = []
    for r in reports:
        for rec in r.by_type("test"):
            if rec.get("id") and rec["id"] not in tests:
                tests.append(rec["id"])
        for v in r.violations:
            if v.get("test") and v["test"] not in tests:
                tests.append(v["test"])
    cases = {}
    if tests:
        for t in tests:
            cases[t] = []
        for f in findings:
            for t in f.tests or ["(outside any test)"]:
                cases.setdefault(t, []).append(f)
    else:
        for r in reports:
            for c in r.checks:
                cases.setdefault(r.kernel_name(c), [])
        for f in findings:
            cases.setdefault(f.kernel, []).append(f)
    suite = ET.Element("testsuite", name="kcheck", tests=str(len(cases)),
                       failures=str(sum(1 for fs in cases.values() if fs)), errors="0",
                       skipped="0")
    errors = 0
    for name, fs in cases.items():
        tc = ET.SubElement(suite, "testcase", name=name,
                           classname="kcheck.tests" if tests else "kcheck.kernels")
        for f in fs:
            fail = ET.SubElement(tc, "failure", type=f.gate,
                                 message="%s in %s (%d occurrence%s)" % (
                                     f.gate, f.kernel, f.occurrences,
                                     "" if f.occurrences == 1 else "s"))
            fail.text = "\n".join(kr.evidence_text(f.first) +
                                  (["sites: " + " -> ".join(f.sites)] if f.sites else []) +
                                  ["reproduce: %s" % f.first.get("reproduce", "")])
    for r in reports:
        if not r.finished:
            errors += 1
            tc = ET.SubElement(suite, "testcase", name=os.path.basename(r.path),
                               classname="kcheck.reports")
            ET.SubElement(tc, "error", type="unfinished",
                          message="the run did not finish (no summary record)")
    suite.set("errors", str(errors))
    suite.set("tests", str(len(cases) + errors))
    root = ET.Element("testsuites")
    root.append(suite)
    return _xml_chars(ET.tostring(root, encoding="unicode", xml_declaration=True)) + "\n"


# Characters XML 1.0 does not allow in a document, not even as character
# references (C0 controls other than tab, LF, CR; U+FFFE/U+FFFF) and lone
# surrogates (JSON's "\ud800" decodes to one; it cannot be encoded).
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_chars(text):
    """text with each character XML 1.0 forbids written as visible text
    (\\xNN, \\uNNNN): a kernel name or evidence with a control character
    in it still gives a well-formed file. ElementTree escapes markup but
    passes these through."""
    return _XML_FORBIDDEN.sub(lambda m: "\\x%02x" % ord(m.group()) if ord(m.group()) < 256
                              else "\\u%04x" % ord(m.group()), text)
