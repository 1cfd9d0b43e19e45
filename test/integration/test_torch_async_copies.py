"""torch_async_copies: a check's host copies made without waiting for the
device, each read only after HostTensor.wait().

A CPU machine has no CUDA stream to copy on, so the copy itself is
stood in for here: the program replaces the binding's AsyncCopies.copy
with one that returns a host tensor holding stale values (what a
page-locked buffer of PyTorch's cache holds before an unfinished copy
fills it: another copy's bytes) and an event whose synchronize() writes
the bytes the copy took when it was made. Every judgment that read a
copy before waiting for it would judge stale values; the same program
with copies that never land shows that such a read is a violation, so
the first run's silence means something. The copy on a
real stream (pinned memory, non_blocking, an event on the op's stream)
is test/gpu's."""
import pytest

from test_torch import of, run_py, torch  # noqa: F401  (torch: skip without it)

PROG = r"""
import sys
import torch
import torch.nn.functional as F
from kcheck.torch import judge

LAND = sys.argv[1] == "land"
assert judge.ASYNC is not None, "torch_async_copies did not turn the copies on"


class InFlight:
    def __init__(self, land):
        self.land = land

    def synchronize(self):
        if self.land is not None:
            self.land()
            self.land = None


def copy(t, span):
    if not span:
        return None
    taken = judge._span_view(t, span).clone()  # the bytes the stream copies now
    with judge.ASYNC.lock:
        judge.ASYNC.copies += 1
        n = judge.ASYNC.copies
    pinned = torch.full((span,), 0.25 + 0.5 * (n % 7), dtype=t.dtype)  # stale: not there yet
    return pinned, InFlight((lambda: pinned.copy_(taken)) if LAND else None)


judge.ASYNC.copy = copy

torch.manual_seed(0)
x = torch.randn(16, 32)
w = torch.randn(32, 24, requires_grad=True)
ln = torch.nn.LayerNorm(24)
opt = torch.optim.AdamW([w] + list(ln.parameters()), lr=1e-3, foreach=True)
target = torch.randint(0, 24, (16,))
for _ in range(2):
    h = ln(x @ w)
    y = F.gelu(h).softmax(-1)
    loss = F.cross_entropy(h, target) + y.sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
z = torch.randn(64)
z.relu_()          # in place: its input copied before the op
print("done", float(z.sum()))
"""

OPTS = "torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_async_copies=64M"


def test_async_copies_are_waited_for_before_judging(tmp_path):
    p, recs = run_py(tmp_path, PROG, options=OPTS, args=("land",))
    assert p.returncode == 0, p.stderr[-3000:]
    s = of(recs, "torch_summary")[0]
    checks = of(recs, "op_check")
    assert s["async_copies"] >= 2 * len(checks) > 0, (s["async_copies"], len(checks))
    assert not of(recs, "violation"), [v.get("message") for v in of(recs, "violation")]
    judged = [c for c in checks if c["gates"].get("oracle", {}).get("status") in ("pass", "bitwise")]
    assert len(judged) >= 10, [(c["op"], c["gates"].get("oracle")) for c in checks]


def test_a_copy_read_before_it_lands_is_seen(tmp_path):
    """The control: copies that never land give the judges stale values,
    and the oracle says so."""
    p, recs = run_py(tmp_path, PROG, options=OPTS, args=("never",))
    assert p.returncode == 0, p.stderr[-3000:]
    viol = [v for v in of(recs, "violation") if v["gate"] == "oracle"]
    assert len(viol) >= 5, [v.get("message") for v in of(recs, "violation")]


def test_on_by_default_and_off_with_zero(tmp_path):
    """On by default (256 MiB of page-locked copies); torch_async_copies=0
    makes every copy wait: no AsyncCopies, the summary's count null."""
    code = ("import torch\nfrom kcheck.torch import judge\n"
            "print(judge.ASYNC is None, judge.ASYNC and judge.ASYNC.limit)\n"
            "(torch.ones(4, 4) @ torch.ones(4, 4)).sum()\n")
    (tmp_path / "on").mkdir()
    p, recs = run_py(tmp_path / "on", code)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "False %d" % (256 << 20), p.stdout
    # CPU tensors are copied synchronously: none counted, but the count is there
    assert of(recs, "torch_summary")[0]["async_copies"] == 0
    (tmp_path / "off").mkdir()
    p, recs = run_py(tmp_path / "off", code,
                     options="torch=1:torch_devices=cuda,cpu:torch_budget=1:torch_async_copies=0")
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "True None", p.stdout
    assert of(recs, "torch_summary")[0]["async_copies"] is None
