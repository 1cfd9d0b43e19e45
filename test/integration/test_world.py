"""A check is atomic with respect to the rest of the process: while kcheck
checks one thread's launch, no other thread's launches, copies, memsets or
frees run (the world lock), so no application result is ever reverted or
read half-checked, and no other thread's work shows up as a false
determinism or race violation. Without the lock (check_lock=0) the same
programs get wrong results in most runs and SIGSEGV with save_all=1."""
import re

import pytest

from conftest import by_type, run, sweep

# Check every launch: the most checks, so the most chances to interleave.
EVERY = "check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
RUNS = 20


def outcome(app, tmp_path, n, mode, options):
    threads = (2, 4, 8)[n % 3]
    d = tmp_path / ("r%d" % n)
    d.mkdir()
    iters = "8" if "check_first" in options else "30"
    r = run([app("app_shared"), mode, str(threads), iters], d, options=options, timeout=300)
    m = re.search(r"wrong (\d+)", r.out)
    recs = r.only_report()
    return (r.rc, int(m.group(1)) if m else None, len(by_type(recs, "violation")),
            len(by_type(recs, "check")), r.err)


@pytest.mark.parametrize("mode,extra", [("shared", ""), ("shared", EVERY),
                                        ("churn", "save_all=1"),
                                        ("churn", "save_all=1:" + EVERY)])
def test_other_threads_results_never_reverted(app, tmp_path, mode, extra):
    """>= 20 runs with 2, 4 and 8 threads: 0 wrong results, 0 violations,
    and checks did run (the scenario is exercised, not skipped)."""
    res = sweep(lambda n: outcome(app, tmp_path, n, mode, extra), range(RUNS))
    checks = 0
    for rc, wrong, viol, nchecks, err in res:
        assert rc == 0 and wrong == 0, err[-3000:]
        assert viol == 0, err[-3000:]
        checks += nchecks
    assert checks >= RUNS


def test_check_waits_for_other_threads_and_they_for_it(app, tmp_path):
    """Every launch checked from 8 threads at once: the checks are serialised
    and every thread's own results stay exact (no deadlock, no timeout skip)."""
    r = run([app("app_shared"), "shared", "8", "10"], tmp_path, options=EVERY, timeout=300)
    assert r.rc == 0, r.err[-3000:]
    recs = r.only_report()
    assert len(by_type(recs, "check")) == 8 * 10
    assert not [s for s in by_type(recs, "skip") if "check_lock" in s["reason"]]
