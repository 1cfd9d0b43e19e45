"""Contracts cannot make kcheck write outside memory: every shadow tensor
covers the application's allocation behind its pointer (the part the
contract does not declare is guard zone), so a contract or annotation that
understates a tensor yields a bounds violation or nothing, never a write
past kcheck's own buffer. Mutated contracts of the stand-in's `app_linked
basic` kernels never crash the host nor change its results."""
import os
import random
import re

from conftest import by_type, run, sweep

DATA = os.path.join(os.path.dirname(__file__), "data", "repro")
EVERY = "check_first=1000000:clean_limit=-1:kernel_clean_limit=-1:time_budget=1"


def basic(app, tmp_path, contracts, extra=""):
    r = run([app("app_linked"), "basic"], tmp_path,
            options="contracts=%s:%s%s" % (contracts, EVERY, extra), timeout=300)
    return r


def assert_host_fine(r):
    assert r.rc == 0, r.err[-3000:]
    assert "basic ok" in r.out, r.out + r.err[-2000:]
    assert "AddressSanitizer" not in r.err and "runtime error" not in r.err, r.err[-3000:]


def test_understated_shape_is_a_bounds_violation(app, tmp_path):
    """The output declared [n/2] while the kernel writes n: the writes past
    the declared half land in kcheck's guard zone (which covers the rest of
    the allocation) and are reported, never outside."""
    r = basic(app, tmp_path, os.path.join(DATA, "shape_understated.yaml"))
    assert_host_fine(r)
    v = [x for x in by_type(r.only_report(), "violation") if x["gate"] == "bounds"]
    assert v and v[0]["evidence"]["tensor"] == "c", v
    assert v[0]["evidence"]["side"] == "after_end"


def test_understated_format_refused_by_lint(app, tmp_path):
    """Matched by its mangled name, the kernel's parameter is a float*: lint
    refuses the bool format, the contract is not loaded, the run goes on."""
    r = basic(app, tmp_path, os.path.join(DATA, "format_understated.yaml"))
    assert_host_fine(r)
    assert "narrower than the 4-byte floats" in r.err


def test_understated_format_never_writes_outside(app, tmp_path):
    """The same contract matched by a glob (lint cannot read the types): an
    fp32 input declared bool (a quarter of its bytes) is run on a shadow
    buffer covering the allocation: the kernel's reads past the declared
    bytes see guard bytes, nothing crashes."""
    text = open(os.path.join(DATA, "format_understated.yaml")).read()
    text = text.replace("{name: _Z6vecaddPKfS0_Pfi}", '{glob: "vecadd*"}')
    path = tmp_path / "glob.yaml"
    path.write_text(text)
    r = basic(app, tmp_path, str(path))
    assert_host_fine(r)
    checks = by_type(r.only_report(), "check")
    assert any("coverage" in c["gates"] for c in checks), checks


def test_float_parameter_out_of_int_range(app, tmp_path):
    """A float scalar parameter whose integer view is out of range or NaN
    (libFuzzer found the cast): saturated, no undefined behaviour."""
    r = basic(app, tmp_path, os.path.join(DATA, "repro_float_cast.yaml"))
    assert_host_fine(r)


SHAPES = ["n/2", "1", "0", "-n", "n*2", "n+1", "n-1", "n/4", "n/128", "1-n", "n/3"]
FORMATS = ["bool", "int8", "fp16", "bf16", "fp64", "int32", "fp8_e4m3", "uint8", "fp32"]
STRIDES = ["[0]", "[2]", "[-1]", "[1]"]


def mutate(text, rng):
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        cand = [i for i, l in enumerate(lines) if re.search(r"shape: \[|format: |strides: \[", l)]
        i = rng.choice(cand)
        l = lines[i]
        what = rng.random()
        if what < 0.5 and "shape: [" in l:
            l = re.sub(r"shape: \[[^\]]*\]", "shape: [%s]" % rng.choice(SHAPES), l)
        elif what < 0.8 and "format: " in l:
            l = re.sub(r"format: \w+", "format: " + rng.choice(FORMATS), l)
        elif "strides: [" in l:
            l = re.sub(r"strides: \[[^\]]*\]", "strides: " + rng.choice(STRIDES), l)
        else:
            l = re.sub(r"shape: \[[^\]]*\]", "shape: [%s]" % rng.choice(SHAPES), l)
        lines[i] = l
    return "\n".join(lines) + "\n"


def test_mutated_contracts_never_crash(app, tmp_path):
    """60 seeded mutants of understated/overstated shapes, formats and
    strides: 0 crashes, the application's results unchanged every time."""
    base = open(os.path.join(DATA, "contracts_basic.yaml")).read()
    rng = random.Random(16)
    mutants = [mutate(base, rng) for _ in range(60)]

    def one(i):
        d = tmp_path / ("m%d" % i)
        d.mkdir()
        path = d / "c.yaml"
        path.write_text(mutants[i])
        r = basic(app, d, str(path))
        return i, r.rc, r.out, r.err

    for i, rc, out, err in sweep(one, range(len(mutants))):
        assert rc == 0 and "basic ok" in out, "mutant %d:\n%s\n%s" % (i, mutants[i], err[-3000:])
        assert "AddressSanitizer" not in err and "runtime error" not in err, \
            "mutant %d:\n%s\n%s" % (i, mutants[i], err[-3000:])
