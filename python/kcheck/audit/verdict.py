"""One verdict per candidate from the binding's records and the child's
result (docs/audit.md, "The verdict"): clean, partial, broken, error or
unjudged, with the failed gates and the worst evidence of each."""
from kcheck.audit.wrapper import QUALNAME
from kcheck.torch import guards

WRAPPER_OP = QUALNAME + ".default"
VERDICTS = ("clean", "partial", "broken", "error", "unjudged")
# gate statuses that leave a gate undecided: the candidate is partial
_UNDECIDED = ("inconclusive", "error", "deferred", "unset")
# how bad a gate status is, to merge several op_check records of the op
_RANK = {"fail": 6, "error": 5, "inconclusive": 4, "deferred": 3, "unset": 3, "not run": 2,
         "skipped": 2, "allowed": 1, "pass": 0, "bitwise": 0, "not_applicable": -1}


def _gates(records):
    """{gate: its worst entry} over the wrapper op's op_check records."""
    out = {}
    for r in records:
        if r.get("type") != "op_check" or r.get("op") != WRAPPER_OP:
            continue
        for g, e in (r.get("gates") or {}).items():
            old = out.get(g)
            if old is None or _RANK.get(e.get("status"), 3) > _RANK.get(old.get("status"), 3):
                out[g] = e
    return out


def _passed_through(records):
    """Why the binding let the wrapper op pass unjudged (its summary)."""
    for r in records:
        if r.get("type") == "torch_summary":
            for reason, per_op in (r.get("passed_through_ops") or {}).items():
                if WRAPPER_OP in per_op:
                    return reason
    return None


def _evidence(v, line):
    """A violation record as audit evidence: its gate, message, what
    exposed it and where."""
    stack = (v.get("stack") or {}).get("python") or []
    return {"gate": v.get("gate"), "message": v.get("message"),
            "worst": v.get("evidence"), "exposed_by": v.get("exposed_by"),
            "regenerate": v.get("regenerate"), "stack": {"python": stack}, "line": line}


def judge(tier, result, records, reason=None, timed_out=False, rc=0):
    """(verdict, audit_candidate fields) for one candidate."""
    line = (result or {}).get("line")
    fields = {"allclose": (result or {}).get("allclose"), "weights": (result or {}).get("weights"),
              "failed": [], "gates": {}, "evidence": [], "line": line}
    for k in ("weights_reason", "cached"):  # weights as constants: why, which were cached
        if (result or {}).get(k):
            fields[k] = result[k]
    if timed_out:
        fields["error"] = {"stage": "timeout", "message": "the candidate's process timed out"}
        return "error", fields
    if result is None:
        fields["error"] = {"stage": "crash", "message": "the candidate's process ended without "
                                                        "a result (exit status %d)" % rc}
        return "error", fields
    if result.get("error"):
        fields["error"] = result["error"]
        return "error", fields
    judged = _gates(records)  # the binding's, on the wrapper op
    gates = dict(judged)
    evidence = [_evidence(v, line) for v in records
                if v.get("type") == "violation" and v.get("op") == WRAPPER_OP]
    for name in result.get("immutability") or []:
        evidence.append({"gate": "immutability", "line": line,
                         "message": "the candidate changed its %s" % name})
    for e in result.get("exact") or []:
        if not e["equal"]:
            evidence.append({"gate": "exact", "line": line, "worst": e["evidence"],
                             "exposed_by": e["exposed_by"], "regenerate": e.get("regenerate"),
                             "message": "not bitwise equal to the reference (%s inputs): %s" % (
                                 e["exposed_by"].get("generator") or "the task's", e["evidence"])})
    rtr = result.get("run_to_run")
    if rtr:
        gates["run_to_run"] = rtr
        if rtr["status"] == "fail":
            evidence.append({"gate": "run_to_run", "line": line, "worst": rtr["evidence"],
                             "exposed_by": {"inputs": "task", "seed": rtr["seed"], "call": rtr["call"]},
                             "message": "call %d on the same inputs differs from call 0: %s" % (
                                 rtr["call"], rtr["evidence"])})
    bounds = result.get("bounds")
    if bounds:
        # the child's guard zones around every allocation: the binding's
        # own bounds gate needs an out= overload, which the wrapper op lacks
        gates["bounds"] = {k: v for k, v in bounds.items() if k != "evidence"}
        for ev in bounds.get("evidence") or []:
            evidence.append({"gate": "bounds", "line": line, "worst": ev,
                             "exposed_by": ev.get("exposed_by"),
                             "message": "the candidate wrote outside a tensor: %s" %
                             guards.describe(ev)})
    if result.get("exact") is not None:
        gates["exact"] = {"status": "fail" if any(not e["equal"] for e in result["exact"])
                          else "bitwise"}
    failed = []
    for e in evidence:
        if e["gate"] not in failed:
            failed.append(e["gate"])
    fields.update(failed=failed, gates=gates, evidence=evidence)
    if failed:
        return "broken", fields
    if tier == "composition":
        fields["reason"] = "unjudged: %s" % reason
        return "unjudged", fields
    if result.get("weights") == "constants" and not result.get("weights_held"):
        # the reference could not be given the candidate's weights: no
        # value was compared (only the tolerance-free checks ran)
        why = result.get("weights_reason") or "its weights could not be held as constants"
        if tier == "A" and not judged:
            why += " (the binding: %s)" % (_passed_through(records) or "no op_check record")
        fields["reason"] = "the candidate's weights: %s" % why
        return "partial", fields
    if tier == "A":
        if not judged:
            why = _passed_through(records) or "no op_check record"
            fields["reason"] = "the binding did not judge the wrapper op: %s" % why
            return "partial", fields
        undecided = sorted(g for g, e in gates.items() if e.get("status") in _UNDECIDED)
        if undecided:
            fields["reason"] = "undecided gates: %s" % ", ".join(undecided)
            return "partial", fields
    return "clean", fields
