"""audit.jsonl as JUnit XML: a testsuite per task, a testcase per
candidate. broken is a <failure> per failed gate, error an <error>,
unjudged and partial a <skipped> with the reason (CI shows them without
failing; --strict makes partial fail the exit status instead)."""
import os
import xml.etree.ElementTree as ET

from kcheck.export import _xml_chars


def junit(records):
    root = ET.Element("testsuites", name="kcheck audit")
    suites = {}
    for r in records:
        if r["type"] == "audit_task":
            from kcheck.audit.driver import task_name
            suites[r["task"]] = ET.SubElement(root, "testsuite", name=task_name(r["task"]),
                                              tests="0", failures="0", errors="0", skipped="0")
        if r["type"] != "audit_candidate":
            continue
        suite = suites[r["task"]]
        tc = ET.SubElement(suite, "testcase", name=os.path.basename(r["candidate"]),
                           classname="kcheck.audit.%s" % suite.get("name"))
        suite.set("tests", str(int(suite.get("tests")) + 1))
        v = r["verdict"]
        if v == "broken":
            for gate in r["failed"]:
                ev = next(e for e in r["evidence"] if e["gate"] == gate)
                f = ET.SubElement(tc, "failure", type=gate, message=str(ev.get("message"))[:300])
                f.text = "%s\nline: %s\nexposed_by: %s\nregenerate: %s" % (
                    ev.get("message"), ev.get("line"), ev.get("exposed_by"), ev.get("regenerate"))
            suite.set("failures", str(int(suite.get("failures")) + 1))
        elif v == "error":
            e = r.get("error") or {}
            ET.SubElement(tc, "error", type=str(e.get("stage")),
                          message="%s %s" % (e.get("message"), e.get("line") or ""))
            suite.set("errors", str(int(suite.get("errors")) + 1))
        elif v in ("partial", "unjudged"):
            ET.SubElement(tc, "skipped", message="%s: %s" % (v, r.get("reason")))
            suite.set("skipped", str(int(suite.get("skipped")) + 1))
    return _xml_chars(ET.tostring(root, encoding="unicode", xml_declaration=True)) + "\n"
