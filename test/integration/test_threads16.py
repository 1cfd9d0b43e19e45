"""Sixteen application threads, each with its own stream, launching at once
while checks run (test/apps/app_shared.c on the CPU stand-in): no deadlock,
every launch counted exactly once, every record whole, every result exact
(the program checks each value it gets back bitwise), with eager launches
and with CUDA graphs replayed node by node under the world lock while the
other threads' graph launches wait."""
import re

import pytest

from conftest import by_type, run

EVERY = "check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
LOCK_WAIT = "within check_lock_ms"
CAPTURING = "a stream capture is in progress (a check's device-wide sync would break it)"


def app_result(out):
    m = re.search(r"wrong (\d+) launches (\d+)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("options", ["", EVERY])
def test_sixteen_threads_eager_launches(app, tmp_path, options):
    r = run([app("app_shared"), "shared", "16", "12"], tmp_path, options=options, timeout=300)
    assert r.rc == 0, r.err[-3000:]
    wrong, launches = app_result(r.out)
    assert wrong == 0 and launches == 16 * 12
    recs = r.only_report()  # every line a whole JSON record
    s = by_type(recs, "summary")[-1]
    assert s["launches"] == launches  # each launch counted once
    assert s["violations"] == 0 and s["internal_errors"] == 0
    assert len(by_type(recs, "check")) == s["checks"] > 0
    if options:
        waited = [x for x in by_type(recs, "skip") if LOCK_WAIT in x["reason"]]
        assert s["checks"] + len(waited) == launches


@pytest.mark.parametrize("options", ["", EVERY + ":graph_sample=1"])
@pytest.mark.parametrize("mode", ["graphs", "graphs_global"])
def test_sixteen_threads_graph_launches(app, tmp_path, options, mode):
    """Each thread captures (thread-local mode; and global mode, as PyTorch
    does by default) and launches its own graph: a check on one thread must
    neither invalidate another's capture (its copies and syncs run in
    relaxed mode) nor revert or read another's graph launch."""
    r = run([app("app_shared"), mode, "16", "10"], tmp_path, options=options, timeout=300)
    assert r.rc == 0, r.err[-3000:]
    wrong, launches = app_result(r.out)
    assert wrong == 0 and launches == 160
    recs = r.only_report()
    s = by_type(recs, "summary")[-1]
    g = s["graphs"]
    assert s["launches"] == 0 and s["captured_launches"] == 16
    assert g["instantiated"] == 16 and g["launches"] == 160 and g["kernel_launches"] == 160
    assert s["violations"] == 0 and s["internal_errors"] == 0
    # A replay waits for the world; while another thread's capture is in
    # progress it is skipped (its device-wide syncs would break the capture).
    reasons = {x["reason"] for x in by_type(recs, "graph_skip")}
    allowed = {"not sampled (graph_sample)", CAPTURING} | {x for x in reasons if LOCK_WAIT in x}
    assert reasons <= allowed, reasons
    assert 1 <= g["replayed"] <= (160 if options else 16)
    if options:
        assert g["kernels_checked"] == g["replayed"]
    if CAPTURING not in reasons and not [x for x in reasons if LOCK_WAIT in x]:
        assert g["replayed"] == (160 if options else 16)
    assert g["kernels_checked"] == len([c for c in by_type(recs, "check") if "graph" in c])
