"""The serving profile (serving=1, `kcheck run --serving`): the time budget
holds per budget_window (a check may overrun what is left, then the rest
of the window is skipped), a budget_window record per window says what was
checked in it, and the profile's defaults yield to explicit settings."""
import json
import os
import subprocess
import sys

from conftest import ROOT, by_type, run

EVERY = "check_first=1000000:clean_limit=-1:kernel_clean_limit=-1"


def test_budget_holds_in_every_window(app, tmp_path):
    budget, window = 0.05, 0.05
    r = run([app("app_linked"), "steps3000"], tmp_path,
            options="serving=1:time_budget=%g:budget_window=%g:%s" % (budget, window, EVERY),
            timeout=300)
    assert r.rc == 0, r.err[-3000:]
    recs = r.only_report()
    wins = by_type(recs, "budget_window")
    assert len(wins) >= 2 and [w["window"] for w in wins] == list(range(len(wins)))
    checks = by_type(recs, "check")
    s = by_type(recs, "summary")[-1]
    assert 0 < s["checks"] < s["launches"] == 6000
    assert sum(w["checks"] for w in wins) == s["checks"]
    assert sum(w["launches"] for w in wins) == s["launches"]
    assert sum(w["skipped_for_budget"] for w in wins) > 0
    for w in wins:
        inside = [c["cost_ms"] / 1e3 for c in checks
                  if w["t_start"] <= c["t"] < w["t_start"] + w["wall_s"] + 1e-6]
        # What the window allowed, plus the one check that may overrun it:
        # kcheck's time outside checks (the launch path's capture, hash and
        # policy) counts against the budget with the checks.
        assert w["check_s"] + w["overhead_s"] <= budget * window + max(inside, default=0) + 0.02, \
            (w, inside)
        assert abs(w["fraction"] * w["wall_s"] - w["check_s"] - w["overhead_s"]) < 1e-6
    assert sum(w["overhead_s"] for w in wins) > 0


def test_profile_defaults_and_explicit_settings(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path, options="serving=1")
    o = by_type(r.only_report(), "run")[0]["options"]
    assert (o["time_budget"], o["budget_window"], o["sample"], o["graph_sample"]) == \
        (0.03, 60, 0.01, 0.01)
    r = run([app("app_linked"), "basic"], tmp_path, options="serving=1:time_budget=0.2:sample=0.5")
    o = by_type(r.only_report(), "run")[0]["options"]
    assert (o["time_budget"], o["sample"]) == (0.2, 0.5)
    # One window record at exit for a run shorter than a window.
    assert len(by_type(r.only_report(), "budget_window")) == 1
    # A value equal to the plain default is still the user's: time_budget=1
    # under the profile means no budget, sample=0 every launch.
    r = run([app("app_linked"), "basic"], tmp_path,
            options="serving=1:time_budget=1:sample=0:budget_window=0")
    o = by_type(r.only_report(), "run")[0]["options"]
    assert (o["time_budget"], o["sample"], o["budget_window"], o["graph_sample"]) == \
        (1, 0, 0, 0.01)


def test_kcheck_run_serving(app, tmp_path):
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(os.path.dirname(app("app_linked")),
                                                        "..", "fakecuda"),
               KCHECK_OPTIONS="log_path=%s" % (tmp_path / "kc"))
    p = subprocess.run([sys.executable, "-m", "kcheck", "--lib",
                        os.path.join(os.path.dirname(app("app_linked")), "..", "libkcheck.so"),
                        "run", "--serving", "--", app("app_linked"), "basic"],
                       env=dict(env, PYTHONPATH=os.path.join(ROOT, "python")),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    rep = [f for f in os.listdir(tmp_path) if f.startswith("kc.")]
    recs = [json.loads(l) for l in open(tmp_path / rep[0])]
    assert recs[0]["options"]["serving"] == 1 and recs[0]["options"]["time_budget"] == 0.03
