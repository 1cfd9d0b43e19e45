"""kcheck_checks_pause (kcheck.h): while paused, no launch is checked and
the program's results are its own; checking resumes after. The PyTorch
binding pauses the checks while it times a step (the kernels' durations
must be the program's, not kcheck's re-runs)."""
import sys

from conftest import CTYPES_APP, by_type, run


def test_paused_launches_run_unchecked_and_checking_resumes(tmp_path):
    r = run([sys.executable, CTYPES_APP, "basic"], tmp_path, options="check_first=100",
            env_extra={"APP_PAUSE": "1"})
    assert r.rc == 0, r.err
    names = [c["kernel_name"].split("(")[0] for c in by_type(r.only_report(), "check")]
    assert names == ["scale"], names


def test_without_a_pause_both_launches_are_checked(tmp_path):
    r = run([sys.executable, CTYPES_APP, "basic"], tmp_path, options="check_first=100")
    assert r.rc == 0, r.err
    names = sorted(c["kernel_name"].split("(")[0] for c in by_type(r.only_report(), "check"))
    assert names == ["scale", "vecadd"], names
