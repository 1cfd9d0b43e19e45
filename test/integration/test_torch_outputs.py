"""Ops with several judged outputs (Plan.more): every output of one call
judged on the application's inputs, the worst verdict the call's, each
output named in the op_check record and in a violation's evidence. The
table's multi-output rows (norm and attention backward, _foreach_ lists,
optimizers, convolution backward) rely on this; here a stand-in row (add
judged twice) isolates the mechanism."""
import pytest

from test_torch import of, run_py

pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps)")

_PATCH = """
import torch
from kcheck.torch import ops
first = ops._BY_NAME["add"]

def twice(a):
    p = first(a)
    q = first(a)
    q.label = "again"
    if WRONG:
        q.out = lambda res: res + 1e-3  # a second output that is not the op's
    p.more = [q]
    return p

ops._BY_NAME["add"] = twice
x = torch.linspace(-1, 1, 64)
y = torch.linspace(0, 2, 64)
for _ in range(3):
    z = torch.add(x, y)
print(float(z.sum()))
"""


def test_every_output_judged_and_named(tmp_path):
    p, recs = run_py(tmp_path, "WRONG = False\n" + _PATCH)
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::add")]
    assert checks, recs
    oracle = checks[0]["gates"]["oracle"]
    assert [o["label"] for o in oracle["outputs"]] == ["out", "again"]
    assert all(o["oracle_op"] == "add" for o in oracle["outputs"])
    assert {o["class"] for o in oracle["outputs"]} <= {"bitwise", "pass"}, oracle
    assert not of(recs, "violation")


def test_a_wrong_second_output_fails_the_call_by_its_name(tmp_path):
    p, recs = run_py(tmp_path, "WRONG = True\n" + _PATCH)
    assert p.returncode == 0, p.stderr
    checks = [c for c in of(recs, "op_check") if c["op"].startswith("aten::add")]
    oracle = checks[0]["gates"]["oracle"]
    classes = {o["label"]: o["class"] for o in oracle["outputs"]}
    assert classes["out"] in ("bitwise", "pass") and classes["again"].startswith("fail"), oracle
    assert oracle.get("status") == "fail" or oracle.get("class", "").startswith("fail"), oracle
    v = [r for r in of(recs, "violation") if r.get("gate") == "oracle"]
    assert len(v) == 1, v
    assert v[0].get("output") == "again"
    assert v[0]["evidence"].get("tensor") == "again" or "again" in str(v[0]["evidence"]), v[0]


# ------------------------------------------------ the judged share

_TRAIN = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 32)
y = torch.randint(0, 8, (16,))
for _ in range(6):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(float(loss))
"""


def _summary(recs):
    s = of(recs, "torch_summary")
    assert len(s) == 1, recs
    return s[0]


def test_judged_share_of_ops_and_of_the_timed_steps_time(tmp_path):
    """The step after steady state is timed (CPU time standing in for GPU
    time here); each op's time weighted by the share of its calls judged."""
    p, recs = run_py(tmp_path, _TRAIN)
    assert p.returncode == 0, p.stderr
    s = _summary(recs)
    assert 0 < s["ops_judged"] <= s["ops_covered"] <= s["ops_seen"], s
    seen = sum(k for _, k in s["judged_by_op"].values())
    assert seen == s["ops_seen"]
    assert s["judged_by_op"]["aten::addmm"][0] == s["judged_by_op"]["aten::addmm"][1] > 0
    t = s["time_judged"]
    assert t["source"] == "cpu" and 2 < t["step"] <= 6 and not t["partial"], t
    assert 0 < t["judged_us"] < t["total_us"] and 0 < t["share"] < 1, t
    ops = {r["op"]: r for r in t["by_op"]}
    assert ops["aten::addmm"]["judged"] == 1.0, ops
    assert "of their CPU time (step %d)" % t["step"] in p.stderr, p.stderr
    import glob
    import os
    import subprocess
    import sys
    from test_torch import PY
    rep = subprocess.run([sys.executable, "-m", "kcheck", "report"] +
                         glob.glob(str(tmp_path / "kc.*.jsonl")), capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=PY))
    assert "torch: judged %d of %d ops (" % (s["ops_judged"], s["ops_seen"]) in rep.stdout, \
        rep.stdout + rep.stderr
    assert "CPU time in optimizer step %d" % t["step"] in rep.stdout


_META_INIT = """
import torch
torch.manual_seed(0)
# built on the meta device (as a model built on the CPU before .to("cuda")):
# its init ops run on no watched device
for _ in range(3):
    torch.nn.Linear(32, 64, device="meta")
    torch.zeros(8, device="meta").fill_(1.0)
""" + _TRAIN


def test_calls_on_no_watched_device_are_out_of_the_share(tmp_path):
    """A model's init on a device kcheck does not watch (the CPU before
    .to("cuda"), here meta) is no GPU work: its calls are counted apart
    (ops_off_device) and left out of the share's denominator, as views are;
    the training ops on the watched devices stay in it."""
    p, recs = run_py(tmp_path, _META_INIT)
    assert p.returncode == 0, p.stderr
    s = _summary(recs)
    off = s["off_device_ops"]
    # covered (zeros, fill_) and uncovered (uniform_ of the init) ops alike
    assert off.get("aten::zeros", 0) >= 3 and off.get("aten::fill_", 0) >= 3, s
    assert off.get("aten::uniform_", 0) >= 6, s
    assert s["ops_off_device"] == sum(off.values()) >= 12, s
    assert s["ops_computing"] == s["ops_seen"] - s["ops_no_values"] - s["ops_off_device"], s
    assert "aten::addmm" not in off and s["judged_by_op"]["aten::addmm"][0] > 0, s
    assert "%d calls on no watched device" % s["ops_off_device"] in _report(tmp_path), s
    # the same program with every call on the CPU and only cuda watched: nothing computes on it
    (tmp_path / "cuda_only").mkdir()
    p, recs = run_py(tmp_path / "cuda_only", _TRAIN, options="torch=1:torch_devices=cuda")
    assert p.returncode == 0, p.stderr
    s = _summary(recs)
    assert s["ops_judged"] == 0 and s["ops_computing"] == 0 < s["ops_off_device"], s


def _report(tmp_path):
    import glob
    import os
    import subprocess
    import sys
    from test_torch import PY
    rep = subprocess.run([sys.executable, "-m", "kcheck", "report"] +
                         glob.glob(str(tmp_path / "kc.*.jsonl")), capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=PY))
    assert rep.returncode in (0, 1), rep.stderr
    return rep.stdout


def test_timed_step_chosen_or_turned_off(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p, recs = run_py(tmp_path / "a", _TRAIN,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_time_step=5")
    assert p.returncode == 0, p.stderr
    assert _summary(recs)["time_judged"]["step"] == 6
    p, recs = run_py(tmp_path / "b", _TRAIN,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_time_step=0")
    t = _summary(recs)["time_judged"]
    assert "share" not in t and "torch_time_step=0" in t["not_measured"], t


def test_a_running_profiler_leaves_the_share_not_measured(tmp_path):
    """A user's own profiler session: the binding's cannot nest in it."""
    code = _TRAIN.replace("for _ in range(6):", "prof = torch.profiler.profile()\n"
                          "prof.__enter__()\nfor _ in range(6):") + "prof.__exit__(None, None, None)\n"
    p, recs = run_py(tmp_path, code)
    assert p.returncode == 0, p.stderr
    t = _summary(recs)["time_judged"]
    assert "share" not in t and t["not_measured"].startswith("profiler"), t


def test_timed_step_tears_cupti_down_and_reads_its_events_at_the_summary(tmp_path):
    """Kineto keeps CUPTI's callbacks on after a session unless
    TEARDOWN_CUPTI says otherwise, slowing every later launch: the timed
    step asks for the teardown (a user's own setting wins). Its events are
    parsed at the summary, not in the step after it."""
    code = _TRAIN.replace("print(float(loss))", """print(float(loss))
import os
from kcheck.torch import mode
print("TEARDOWN", os.environ.get("TEARDOWN_CUPTI"))
print("UNREAD", mode._MODE.timed is not None and mode._MODE.timed.done is not None)
""")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p, recs = run_py(tmp_path / "a", code)
    assert p.returncode == 0, p.stderr
    assert "TEARDOWN 1" in p.stdout and "UNREAD True" in p.stdout, p.stdout
    assert _summary(recs)["time_judged"]["share"] > 0
    p, recs = run_py(tmp_path / "b", code, env_extra={"TEARDOWN_CUPTI": "0"})
    assert p.returncode == 0, p.stderr
    assert "TEARDOWN 0" in p.stdout, p.stdout
