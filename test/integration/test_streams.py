"""Cross-stream ordering races (stream_races=1) on the CPU stand-in
(test/apps/app_streams.c): each buggy form gives exactly one stream_order
violation naming both operations and their streams; each correct form
(event wait, stream sync, event query, blocking stream with the legacy
stream) gives none; results are unchanged; off by default."""
import pytest

from conftest import by_type, run

MODES = ["copy", "sync", "query", "legacy", "reuse", "kernels"]
# (first, second) operation of each buggy mode
SIDES = {"copy": ("cuMemcpyHtoDAsync", "scale"), "sync": ("cuMemcpyHtoDAsync", "scale"),
         "query": ("cuMemcpyHtoDAsync", "scale"), "legacy": ("cuMemcpyHtoDAsync", "scale"),
         "reuse": ("vecadd", "cuMemcpyHtoDAsync"), "kernels": ("fill_i32", "vecadd")}


def checksum(out):
    return [l.split("checksum")[1] for l in out.splitlines() if "checksum" in l]


@pytest.mark.parametrize("mode", MODES)
def test_unordered_access_is_reported(app, tmp_path, mode):
    plain = run([app("app_streams"), mode], tmp_path, kcheck=False)
    r = run([app("app_streams"), mode], tmp_path, options="stream_races=1")
    assert r.rc == 0, r.err[-3000:]
    assert checksum(r.out) == checksum(plain.out)
    viol = by_type(r.only_report(), "violation")
    assert [v["gate"] for v in viol] == ["stream_order"], r.err[-3000:]
    ev = viol[0]["evidence"]
    first, second = SIDES[mode]
    assert ev["first"]["op"].startswith(first) and ev["second"]["op"].startswith(second), ev
    assert ev["first"]["stream"] != ev["second"]["stream"]
    assert "stack" in ev["first"] and viol[0]["stack"]["host"]
    assert "[stream_order]" in r.err


@pytest.mark.parametrize("mode", MODES)
def test_ordered_access_is_silent(app, tmp_path, mode):
    r = run([app("app_streams"), mode, "fixed"], tmp_path, options="stream_races=1")
    assert r.rc == 0, r.err[-3000:]
    assert not by_type(r.only_report(), "violation"), r.err[-3000:]


def test_off_by_default(app, tmp_path):
    r = run([app("app_streams"), "copy"], tmp_path)
    assert r.rc == 0 and not by_type(r.only_report(), "violation")


def test_graphs_and_threads_stay_silent_with_tracking(app, tmp_path):
    """Correct multi-stream programs: 16 threads with their own streams."""
    r = run([app("app_shared"), "shared", "16", "6"], tmp_path, options="stream_races=1",
            timeout=300)
    assert r.rc == 0, r.err[-3000:]
    assert not by_type(r.only_report(), "violation")
