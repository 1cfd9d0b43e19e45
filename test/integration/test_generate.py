"""The seed in a violation's evidence regenerates the inputs that exposed
it: `kcheck gen` (kcheck_generate) with exposed_by's generator, transform
and seed gives back the exact input values the evidence quotes."""
import os
import subprocess
import sys

from conftest import BUILD, ROOT, by_type, kcheck_generate, run

CONTRACTS = os.path.join(ROOT, "test", "integration", "data", "contracts_planted.yaml")
KCHECK = os.path.join(ROOT, "scripts", "kcheck")
LIB = os.path.join(BUILD, "libkcheck.so")


def gen(*args):
    r = subprocess.run([sys.executable, KCHECK, "--lib", LIB, "gen"] + list(args),
                       capture_output=True, text=True, timeout=60)
    return r


def violations(app, tmp_path, gates):
    r = run([app("app_linked"), "contracts"], tmp_path,
            options="contracts=" + CONTRACTS + ":gates=" + gates)
    assert r.rc == 0, r.err
    return by_type(r.only_report(), "violation")


def test_seed_regenerates_the_exposing_inputs(app, tmp_path):
    checked = 0
    for gate in ("precision", "extremes"):
        for v in violations(app, tmp_path, gate):
            ev = v["evidence"]
            exp = ev["exposed_by"]
            if "inputs" not in ev or exp["inputs"] != "generated":
                continue
            # exp_fast_wrong's; the planted memory bugs (x + 1, ...) fail
            # here too, their unwritten or clobbered elements being wrong values
            if not v["kernel_name"].startswith("exp_fast_wrong"):
                continue
            assert v["gate"] == gate and isinstance(exp["seed"], int) and exp["seed"] >= 0
            (name, want), = ev["inputs"].items()  # exp: one input, role 0, seed + 0
            shape = exp["shapes"][name]
            r = gen("-g", exp["generator"], "-t", exp.get("transform", "none"), "-s",
                    str(exp["seed"]), "-f", "fp32", "--shape", ",".join(map(str, shape)))
            assert r.returncode == 0, r.stderr
            rows = [line.split("\t") for line in r.stdout.splitlines()]
            assert len(rows) == shape[0]
            idx = ",".join(map(str, ev["index"]))
            got = {row[0]: float(row[2]) for row in rows}[idx]
            assert got == want, (gate, exp, idx, got, want)
            checked += 1
    # exp_fast_wrong fails precision (uniform) and extremes (huge).
    assert checked == 2


def test_generate_api():
    def f(g, t, fmt, seed):
        return kcheck_generate(g, t, fmt, 0, 8, 8, seed)

    rc, a = f("cancel", "huge", "fp32", 5)
    rc2, b = f("cancel", None, "fp32", 5)
    assert rc == 0 and rc2 == 0
    # huge is the plain values times 2^(emax/4) = 2^32 for fp32 (exact).
    assert all(x == y * 2.0 ** 32 for x, y in zip(a, b)) and any(y != 0 for y in b)
    assert all(-1 <= y < 1 for y in b)
    rc, a = f("cancel", "zeros", "fp32", 5)
    assert rc == 0 and all(x == 0 for x in a)
    rc, a = f("cancel", None, "fp32", 6)
    assert rc == 0 and a != b  # seed matters
    assert f("nosuch", None, "fp32", 5)[0] == -1
    assert f("cancel", "enormous", "fp32", 5)[0] == -1
    assert f("cancel", None, "fp7", 5)[0] == -1
    bad = gen("-g", "nosuch", "-s", "1", "--shape", "4")
    assert bad.returncode != 0 and "unknown generator" in bad.stderr
