"""Cross-stream ordering races (stream_races=1) on the CPU stand-in
(test/apps/app_streams.c): each buggy form gives exactly one stream_order
violation naming both operations and their streams; each correct form
(event wait, stream sync, event query, blocking stream with the legacy
stream) gives none; results are unchanged; off by default. A Python
program's tracked operations reuse the stack of an earlier operation with
the same name, stream and Python frames (app_ctypes.py streams)."""
import os
import re
import sys

import pytest

from conftest import CTYPES_APP, FAKECUDA, ROOT, by_type, run

sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck import export, html as khtml, report as kr  # noqa: E402

MODES = ["copy", "sync", "query", "legacy", "reuse", "kernels", "copy2d", "graph", "array", "batch",
         "batch3d"]
# (first, second) operation of each buggy mode
SIDES = {"copy": ("cuMemcpyHtoDAsync", "scale"), "sync": ("cuMemcpyHtoDAsync", "scale"),
         "query": ("cuMemcpyHtoDAsync", "scale"), "legacy": ("cuMemcpyHtoDAsync", "scale"),
         "reuse": ("vecadd", "cuMemcpyHtoDAsync"), "kernels": ("fill_i32", "vecadd"),
         "copy2d": ("cuMemcpy2DAsync", "scale"), "graph": ("cuGraphLaunch", "scale"),
         "array": ("cuMemcpyDtoA", "cuMemcpyAtoHAsync"), "batch": ("cuMemcpyBatchAsync", "scale"),
         "batch3d": ("cuMemcpy3DBatchAsync", "scale")}
# The later operation of these is a copy: nothing to re-run as stream_delay.
COPY_SECOND = ("reuse", "array")


def first_op(mode):
    return SIDES[mode][0]


def checksum(out):
    return [l.split("checksum")[1] for l in out.splitlines() if "checksum" in l]


@pytest.mark.parametrize("mode", MODES)
def test_unordered_access_is_reported(app, tmp_path, mode):
    plain = run([app("app_streams"), mode], tmp_path, kcheck=False)
    r = run([app("app_streams"), mode], tmp_path, options="stream_races=1")
    assert r.rc == 0, r.err[-3000:]
    assert checksum(r.out) == checksum(plain.out)
    viol = by_type(r.only_report(), "violation")
    # A kernel that reads the unordered write is also re-run as if the
    # write had not landed: its changed result is a stream_delay finding.
    delayed = ["stream_delay"] if mode not in COPY_SECOND else []
    assert [v["gate"] for v in viol] == ["stream_order"] + delayed, r.err[-3000:]
    if delayed:
        d = viol[1]["evidence"]["delayed"]
        assert d["op"].startswith(first_op(mode)) and d["stream"] == viol[0]["evidence"]["first"][
            "stream"] and d["ranges"][0]["size"] == 4096
        assert viol[1]["kernel_name"].startswith(SIDES[mode][1])
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


def test_threads_with_an_unordered_array_read_back_are_reported(app, tmp_path):
    """app_shared unordered: each thread's device-to-array copy (default
    stream, the host does not wait) is read back on its non-blocking stream
    with no ordering; the correct form is the silent test above."""
    r = run([app("app_shared"), "unordered", "4", "4"], tmp_path, options="stream_races=1")
    assert r.rc == 0, r.err[-3000:]
    viol = by_type(r.only_report(), "violation")
    assert viol and all(v["gate"] == "stream_order" for v in viol), r.err[-3000:]
    arrays = [v["evidence"] for v in viol if v["evidence"]["memory"] == "cuda_array"]
    assert arrays, viol
    assert all(e["first"]["op"].startswith("cuMemcpyDtoA") and
               e["second"]["op"].startswith("cuMemcpyAtoHAsync") for e in arrays), arrays


def test_stream_delay_needs_a_kernel_that_reads_the_write(app, tmp_path):
    """reuse: the later operation is a copy (nothing to re-run): the race is
    reported, no stream_delay re-run is made; the fixed forms force no check."""
    r = run([app("app_streams"), "reuse"], tmp_path, options="stream_races=1")
    recs = r.only_report()
    assert all("stream_delay" not in c["gates"] for c in by_type(recs, "check"))
    f = run([app("app_streams"), "copy", "fixed"], tmp_path,
            options="stream_races=1:check_first=0")
    assert not by_type(f.only_report(), "check")


def test_stream_delay_off_without_stream_races(app, tmp_path):
    r = run([app("app_streams"), "copy"], tmp_path)
    assert all("stream_delay" not in c["gates"] for c in by_type(r.only_report(), "check"))


def test_a_new_race_forces_the_check_that_shows_it(app, tmp_path):
    """With check_first=0 the policy checks nothing; the launch that races
    is checked anyway (once per pair of operations) for stream_delay."""
    r = run([app("app_streams"), "copy"], tmp_path, options="stream_races=1:check_first=0")
    recs = r.only_report()
    assert [v["gate"] for v in by_type(recs, "violation")] == ["stream_order", "stream_delay"]
    assert len(by_type(recs, "check")) == 1


def ctypes_launch_lines():
    """The source lines of the streams mode's two launches."""
    with open(CTYPES_APP) as f:
        lines = f.read().splitlines()
    return [i + 1 for i, l in enumerate(lines)
            if l.strip().startswith(("launch(d, scale,", "launch(d, vecadd,")) and "stream=" in l]


@pytest.mark.parametrize("python_stack", [2, 0])
def test_tracked_stacks_of_a_python_program(tmp_path, python_stack):
    """The race is in the last of 4 rounds launched from the same lines:
    with Python frames to key on (python_stack=2 takes the GIL back from
    ctypes), both sides' stacks are those kept from the first round
    (marked reused) and name the right lines; without (python_stack=0) they
    are keyed on the native return addresses, reused too and hold no Python
    frames. kcheck's own frames are never in the evidence."""
    r = run([sys.executable, CTYPES_APP, "streams", "--lib", FAKECUDA + "/libcuda.so.1"], tmp_path,
            options="stream_races=1:python_stack=%d" % python_stack, stock=True)
    assert r.rc == 0, r.err
    assert "streams ok" in r.out
    recs = r.only_report()
    v = [x for x in by_type(recs, "violation") if x["gate"] == "stream_order"]
    assert v, [x["gate"] for x in by_type(recs, "violation")]
    scale_line, vecadd_line = ctypes_launch_lines()
    for x in v:
        ev = x["evidence"]
        assert ev["first"]["op"].startswith("scale") and ev["second"]["op"].startswith("vecadd")
        for side, line in (("first", scale_line), ("second", vecadd_line)):
            st = ev[side]["stack"]
            assert st["host"] and not any("libkcheck" in f["module"] for f in st["host"]), st
            assert st.get("reused") is True
            if python_stack:
                assert [f["line"] for f in st["python"] if f["function"] == "streams"] == [line]
            else:
                assert "python" not in st


def test_one_finding_per_bug(tmp_path):
    """app_ctypes bugs: a missing wait that recurs with other operations
    (copy sizes, kernels) between the same two lines is one bug, printed
    once, with its occurrences counted; another pair of lines is another
    bug. Every stream_order side names its Python line (ctypes released the
    GIL), and report, SARIF, JUnit and HTML count bugs."""
    r = run([sys.executable, CTYPES_APP, "bugs", "--lib", FAKECUDA + "/libcuda.so.1"], tmp_path,
            options="stream_races=1", stock=True)
    assert r.rc == 0 and "bugs ok" in r.out, r.err[-3000:]
    recs = r.only_report()
    order = [v for v in by_type(recs, "violation") if v["gate"] == "stream_order"]
    bugs = {}
    for v in order:
        bugs.setdefault(v["bug"], []).append(v)
        for side in ("first", "second"):
            st = v["evidence"][side]["stack"]
            assert st["python_without_gil"] is True and st["python"], st
    assert len(bugs) == 2, {b: [v["sites"] for v in vs] for b, vs in bugs.items()}
    first, second = sorted(bugs.values(), key=len, reverse=True)
    assert len(first) >= 3 and len(second) == 1
    # other operations at the same sites: other kernels and copy sizes
    assert len({v["kernel_name"] for v in first}) == 2
    with open(CTYPES_APP) as f:
        lines = f.read().splitlines()
    upload = 1 + lines.index("        upload(N // (r + 1))")
    compute = 1 + lines.index("        launch(d, k, grid, 128, *args, stream=s2)")
    a, b = first[0]["sites"]
    assert a.startswith(CTYPES_APP + ":") and a.endswith(":%d" % upload), a
    assert b.endswith(":%d" % compute), b
    # stream_delay's records of the same two lines are the same bug (the
    # missing wait shown as a changed result): its occurrences count them all
    every = [v for v in by_type(recs, "violation") if v["bug"] == first[0]["bug"]]
    assert {v["gate"] for v in every} == {"stream_order", "stream_delay"}, every
    assert [v["occurrence"] for v in every] == list(range(1, len(every) + 1))
    # one block per bug, the occurrences in the exit summary
    assert r.err.count("[stream_order]\n") == 2, r.err[-4000:]
    assert "first:      cuMemcpyHtoDAsync_v2 on stream 1 at %s:" % CTYPES_APP in r.err
    assert "[stream_order,stream_delay] %s -> %s: %d occurrences" % (a, b, len(every)) in r.err, \
        r.err[-3000:]
    assert re.search(r"SUMMARY: kcheck: \d+ violations in \d+ checks of \d+ launches: 2 bugs",
                     r.err), r.err[-500:]
    summary = by_type(recs, "summary")[0]
    counts = {g["bug"]: g["occurrences"] for g in summary["bugs"]}
    assert summary["unique_bugs"] == 2 and counts[first[0]["bug"]] == len(every)
    # the frames were read without the GIL, checked once with reads that
    # cannot fault, then directly (a layout that never passes would read
    # every frame through a system call)
    pf = summary["python_frames"]
    assert pf["layout"] == "3.%d" % sys.version_info[1] and pf["state"] == "checked", pf
    assert pf["checked_reads"] <= 2 and pf["reads"] > 4 * pf["checked_reads"], pf
    # the report tools count bugs with their occurrences
    rep = kr.load(r.reports)
    found = [f for f in kr.merge(rep) if f.gate == "stream_order"]
    assert sorted(f.occurrences for f in found) == [1, len(every)]
    sarif = export.sarif(rep)
    occ = sorted(x["occurrenceCount"] for x in sarif["runs"][0]["results"]
                 if x["ruleId"] == "stream_order")
    assert occ == [1, len(every)]
    junit = export.junit(rep)
    assert junit.count('type="stream_order"') == 2 and "(%d occurrences)" % len(every) in junit
    page = khtml.render(rep)
    assert "&times;%d (occurrences)" % len(every) in page and "sites: " in page


@pytest.mark.parametrize("python_stack", [1, 0])
def test_tracked_stacks_of_many_call_sites_are_kept(tmp_path, python_stack):
    """A serving loop tracks a few hundred (operation, Python line) pairs at
    every step. 300 call sites launched in 4 rounds from one line: each
    site's stack is taken once and reused in the next three rounds (a
    direct-mapped table of 512 slots lost most of them to collisions, and
    every miss takes a whole native stack: stream_races=1 cost ~5x a
    launch's time over such a loop). Without Python frames (python_stack=0)
    the key is the native return addresses, the interpreter's own and the
    same for every site here: one stack taken, reused by every launch."""
    r = run([sys.executable, CTYPES_APP, "sites", "--lib", FAKECUDA + "/libcuda.so.1"], tmp_path,
            options="stream_races=1:gates=none:profile=1:python_stack=%d" % python_stack,
            stock=True)
    assert r.rc == 0, r.err
    assert "sites launches 1200" in r.out
    end = [p for p in by_type(r.only_report(), "profile") if p["at"] == "exit"][0]
    taken = 300 if python_stack else 1
    assert end["counts"]["stack_taken"] == taken, end["counts"]
    assert end["counts"]["stack_reused"] == 1200 - taken, end["counts"]


def test_tracked_stacks_of_a_c_program_are_keyed_on_return_addresses(app, tmp_path):
    """A program with no Python frames (a C++ service, or autograd's
    threads): a tracked operation's stack is keyed on its native return
    addresses, so a loop's operations reuse the stacks of its first step
    instead of unwinding and writing each one whole. app_linked steps100:
    100 steps of the same launches, a handful of stacks taken."""
    r = run([app("app_linked"), "steps100"], tmp_path,
            options="stream_races=1:gates=none:profile=1")
    assert r.rc == 0, r.err
    end = [p for p in by_type(r.only_report(), "profile") if p["at"] == "exit"][0]
    taken, reused = end["counts"]["stack_taken"], end["counts"]["stack_reused"]
    assert 0 < taken <= 10 and reused >= 190, end["counts"]
