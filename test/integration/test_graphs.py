"""Kernels inside CUDA graphs, on the CPU stand-in (test/apps/app_graphs.c).

A chosen graph launch is replayed node by node (kernel nodes through the
launch path, so the policy checks them; memcpy, memset and event nodes as
stream operations); the application's memory afterwards must equal a plain
run's byte for byte. Graphs kcheck cannot replay faithfully are launched
unchanged and reported with the reason; communication kernels never run
more often than the application launches them."""
import sys

import pytest

from conftest import CTYPES_APP, FAKECUDA, by_type, run

EVERY = "check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"
MODES = ["capture", "clean", "explicit", "host", "update", "nccl"]


def summary(recs):
    return by_type(recs, "summary")[-1]


def lines(out):
    return [l for l in out.splitlines() if "checksum" in l or "runs" in l or "calls" in l]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("options", ["", EVERY + ":graph_sample=1"])
def test_memory_after_equals_plain_graph_launch(app, tmp_path, mode, options):
    """Every buffer the graphs leave behind is bytewise what a plain run
    leaves (checksums of every buffer), replayed or not."""
    plain = run([app("app_graphs"), mode], tmp_path, kcheck=False)
    assert plain.rc == 0, plain.err
    r = run([app("app_graphs"), mode], tmp_path, options=options)
    assert r.rc == 0, r.err[-3000:]
    assert lines(r.out) == lines(plain.out) and lines(r.out)
    assert summary(r.only_report())["internal_errors"] == 0


def test_racy_kernel_that_only_runs_inside_a_graph_is_found(app, tmp_path):
    r = run([app("app_graphs"), "capture"], tmp_path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    viol = by_type(recs, "violation")
    assert [v["kernel_name"] for v in viol] == ["last_writer(int*)"], r.err[-3000:]
    assert viol[0]["gate"] == "race"
    # The record says where in which graph the node sits.
    assert viol[0]["graph"] == {"graph": 0, "graph_launch": 0, "node": 4, "nodes": 6}
    assert "graph:      node 4 of 6 of CUDA graph 0" in r.err
    s = summary(recs)
    # Three launches of a graph with three kernel nodes; the first replayed.
    assert s["graphs"] == {"instantiated": 1, "launches": 3, "replayed": 1, "kernel_launches": 9,
                           "kernels_replayed": 3, "kernels_checked": 3}
    # The captured launches ran only as graph nodes: none is an eager launch.
    assert s["launches"] == 0 and s["captured_launches"] == 3
    checks = by_type(recs, "check")
    assert len(checks) == 3 and all(c["graph"]["graph"] == 0 for c in checks)
    gc = by_type(recs, "graph_check")
    assert len(gc) == 1 and gc[0]["kernels_checked"] == 3 and gc[0]["result"] == 0


def test_clean_graph_is_silent(app, tmp_path):
    r = run([app("app_graphs"), "clean"], tmp_path, options=EVERY + ":graph_sample=1")
    assert r.rc == 0, r.err
    recs = r.only_report()
    assert not by_type(recs, "violation"), r.err[-3000:]
    s = summary(recs)["graphs"]
    assert s["replayed"] == 3 and s["kernel_launches"] == 6 and s["kernels_checked"] == 6


def test_graph_sample_zero_replays_only_the_first_launch(app, tmp_path):
    r = run([app("app_graphs"), "clean"], tmp_path, options="graph_sample=0")
    recs = r.only_report()
    assert summary(recs)["graphs"]["replayed"] == 1
    skips = by_type(recs, "graph_skip")
    # One record per graph and reason, not one per launch.
    assert [s["reason"] for s in skips] == ["not sampled (graph_sample)"]


def test_explicit_graph_is_replayed_in_topological_order(app, tmp_path):
    r = run([app("app_graphs"), "explicit"], tmp_path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    g = by_type(recs, "graph")[0]
    # Two fills, the child graph's fill, event record, memset, D2H copy
    # (the empty node runs nothing).
    assert g["nodes"] == 6 and g["kernel_nodes"] == 3 and g["checkable"]
    assert summary(recs)["graphs"]["kernels_checked"] == 3
    assert not by_type(recs, "violation")


def test_host_node_graph_is_reported_not_checkable(app, tmp_path):
    r = run([app("app_graphs"), "host"], tmp_path, options=EVERY + ":graph_sample=1")
    assert r.rc == 0, r.err
    assert "host calls 2" in r.out
    recs = r.only_report()
    g = by_type(recs, "graph")[0]
    assert not g["checkable"] and "host node" in g["reason"]
    assert [s["reason"] for s in by_type(recs, "graph_skip")] == [g["reason"]]
    s = summary(recs)["graphs"]
    assert s["replayed"] == 0 and s["kernel_launches"] == 2 and s["kernels_checked"] == 0


def test_updates_of_an_executable_graph(app, tmp_path):
    """Kernel-node updates and whole-graph updates are mirrored (the app
    checks the values each launch leaves, so a stale replay would fail it);
    an edit kcheck does not mirror stops the replays of that graph."""
    r = run([app("app_graphs"), "update"], tmp_path)
    assert r.rc == 0, r.err[-3000:]
    recs = r.only_report()
    assert summary(recs)["graphs"]["replayed"] == 3
    reasons = [s["reason"] for s in by_type(recs, "graph_skip")]
    assert reasons == ["it was changed by cuGraphExecMemsetNodeSetParams, which kcheck does "
                       "not mirror"]
    # Each parameter set was checked as its own signature.
    assert len(by_type(recs, "check")) == 3


@pytest.mark.parametrize("options", ["", EVERY + ":graph_sample=1"])
def test_communication_kernels_are_never_rerun(app, tmp_path, options):
    plain = run([app("app_graphs"), "nccl"], tmp_path, kcheck=False)
    r = run([app("app_graphs"), "nccl"], tmp_path, options=options)
    assert r.rc == 0, r.err
    assert "comm runs 3" in plain.out and "comm runs 3" in r.out
    recs = r.only_report()
    g = by_type(recs, "graph")[0]
    assert not g["checkable"] and "communication kernel" in g["reason"]
    assert not [c for c in by_type(recs, "check") if "nccl" in c["kernel_name"]]
    assert summary(recs)["graphs"]["replayed"] == 0


UNINIT = "graph_uninit=1"


def test_graph_node_reading_never_written_memory_is_found(app, tmp_path):
    """A kernel node whose input nothing ever wrote (graph_uninit=1): the
    uninit gate's poisoned run changes its output; the application's result
    is the plain run's."""
    plain = run([app("app_graphs"), "uninit"], tmp_path, kcheck=False)
    r = run([app("app_graphs"), "uninit"], tmp_path, options=UNINIT)
    assert r.rc == 0, r.err[-3000:]
    assert lines(r.out) == lines(plain.out) and lines(r.out)
    recs = r.only_report()
    viol = by_type(recs, "violation")
    assert [(v["gate"], v["kernel_name"]) for v in viol] == [
        ("uninit", "vecadd(float const*, float const*, float*, int)")], r.err[-3000:]
    assert viol[0]["graph"]["node"] == 0
    ev = viol[0]["evidence"]
    assert len(ev["untouched"]) == 1 and ev["untouched"][0]["size"] == 4096
    # The difference is in the output z, not in the poisoned input.
    assert ev["allocation"]["base"] != ev["untouched"][0]["allocation"]
    assert summary(recs)["internal_errors"] == 0


def test_uninit_gate_needs_graph_uninit(app, tmp_path):
    r = run([app("app_graphs"), "uninit"], tmp_path)
    assert r.rc == 0, r.err
    recs = r.only_report()
    assert not by_type(recs, "violation")
    assert all("uninit" not in c["gates"] for c in by_type(recs, "check"))


@pytest.mark.parametrize("options", [UNINIT, UNINIT + ":" + EVERY + ":graph_sample=1"])
def test_memory_written_before_the_graph_reads_it_is_silent(app, tmp_path, options):
    """Written by an eager memset, by a memset node and by a kernel node of
    the graph before a node reads it: no uninit finding, every node judged."""
    r = run([app("app_graphs"), "uninit_ok"], tmp_path, options=options)
    assert r.rc == 0, r.err[-3000:]
    recs = r.only_report()
    assert not by_type(recs, "violation"), r.err[-3000:]
    checks = by_type(recs, "check")
    assert checks and all(c["gates"]["uninit"]["status"] == "pass" for c in checks)
    if "graph_sample=1" in options:
        assert len(checks) == 8  # four kernel nodes, two launches



def test_graph_finding_names_the_python_line_of_the_replay(tmp_path):
    """app_ctypes graph: a race captured into a CUDA graph, found when the
    graph launch is replayed node by node. ctypes released the GIL around
    cuGraphLaunch (as torch.cuda.CUDAGraph.replay does): the finding still
    names the Python line that launched the graph, read without the GIL."""
    r = run([sys.executable, CTYPES_APP, "graph", "--lib", FAKECUDA + "/libcuda.so.1"], tmp_path)
    assert r.rc == 0 and "graph ok" in r.out, r.err[-3000:]
    v = [x for x in by_type(r.only_report(), "violation") if x.get("graph")]
    assert v and v[0]["gate"] in ("race", "determinism"), r.err[-3000:]
    st = v[0]["stack"]
    assert st["python_without_gil"] is True, st
    with open(CTYPES_APP) as f:
        lines = f.read().splitlines()
    replay = 1 + lines.index("        d.cuGraphLaunch(e, s)")
    assert [(f["function"], f["line"]) for f in st["python"]][1] == ("replay", replay), st["python"]
    assert "graph:      node 0 of 1 of CUDA graph" in r.err
