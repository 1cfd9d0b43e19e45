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


def test_overstated_shape_is_skipped_before_any_allocation(app, tmp_path):
    """The output declared 4 GB on vecadd's 4 KB buffer, with both memory
    budgets out of the way (mem_budget=16G, device_mem_budget=0): the
    contract gates skip it with the reason, before allocating a shadow (it
    once cost 108 s and 15.7 GB for one check)."""
    import resource
    import time
    t0 = time.monotonic()
    r = basic(app, tmp_path, os.path.join(DATA, "shape_overstated.yaml"),
              ":mem_budget=16G:device_mem_budget=0")
    took = time.monotonic() - t0
    assert_host_fine(r)
    assert took < 30, took
    # the largest child this test process ran: far below the 4 GB shape
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 2 * 1024 * 1024
    checks = [c for c in by_type(r.only_report(), "check") if c["kernel_name"].startswith("vecadd")]
    assert checks
    for c in checks:
        for gate in ("coverage", "bounds", "immutability"):
            g = c["gates"][gate]
            assert g["status"] == "inconclusive", g
            assert "tensor 'c': the contract's shape declares 4000000000 bytes" in g["reason"], g
            assert "overstates it" in g["reason"], g


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


# ---- the shapes gate: relaunches at other shapes on kcheck's own buffers ----

def vecadd_contract(tmp_path, a="n", c="n", shapes="{n: 4099}", c_decl=None):
    """vecadd (the application's n is 1000) with the given extents of the
    input a and the output c, relaunched at the listed shapes."""
    path = tmp_path / "vecadd.yaml"
    path.write_text("""contracts:
  - kernel: {name: _Z6vecaddPKfS0_Pfi}
    params:
      - {name: a, tensor: {role: in, format: fp32, shape: [%s]}}
      - {name: b, tensor: {role: in, format: fp32, shape: [n]}}
      - %s
      - {name: n, scalar: i32}
    op: add
    profile: fp32
    shapes: [%s]
    launch: {grid: ["ceil_div(n, 128)"], block: [128]}
""" % (a, c_decl or "{name: c, tensor: {role: out, format: fp32, shape: [%s]}}" % c, shapes))
    return str(path)


def shapes_run(app, tmp_path, contracts):
    r = basic(app, tmp_path, contracts, ":gates=shapes:kernel_include=vecadd")
    assert_host_fine(r)
    recs = r.only_report()
    checks = [x["gates"]["shapes"] for x in by_type(recs, "check") if "shapes" in x["gates"]]
    assert checks, r.err[-2000:]
    return [v for v in by_type(recs, "violation") if v["gate"] == "shapes"], checks


def test_shapes_correct_contract_stays_silent(app, tmp_path):
    """Right extents, shapes up to 100000 (a hundred times the
    application's): every trial judged, no guard byte changed."""
    v, checks = shapes_run(app, tmp_path, vecadd_contract(tmp_path, shapes="{n: 4099}, {n: 100000}"))
    assert not v, v
    assert all(c["status"] == "pass" for c in checks), checks
    trials = checks[0]["trials"]
    assert {"n": 100000} in [t.get("scalars") for t in trials], trials


def test_shapes_calibration_refuses_an_understated_contract(app, tmp_path):
    """c declared [1] while the kernel writes n: the calibration run at the
    application's shape sees the stores past the declared extent (in the
    guard zone covering the application's allocation) and no other shape is
    run — with the relaunch at n=4099 on a 4-byte buffer the host used to
    die of SIGSEGV."""
    v, checks = shapes_run(app, tmp_path, vecadd_contract(tmp_path, c="1"))
    assert v, checks
    ev = v[0]["evidence"]
    assert ev["stage"] == "calibration" and ev["verdict"] == "out_of_bounds", ev
    assert ev["guard_damage"]["tensor"] == "c" and ev["guard_damage"]["side"] == "after_end"
    assert ev["exposed_by"]["scalars"] == {"n": 1000}
    assert "trials" not in checks[0], checks[0]


def test_shapes_understated_only_at_other_shapes_is_out_of_bounds(app, tmp_path):
    """c declared [1000]: right at the application's shape (the calibration
    passes), a hundred times too small at n=100000. The guard zone after c
    is sized from the application's allocation and the relaunch's thread
    count, not from the contract: the 396,000 bytes stored past the declared
    extent land in it and are reported."""
    v, _ = shapes_run(app, tmp_path, vecadd_contract(tmp_path, c="1000", shapes="{n: 100000}"))
    assert v
    ev = v[0]["evidence"]
    assert ev["verdict"] == "out_of_bounds" and "stage" not in ev, ev
    g = ev["guard_damage"]
    assert g["tensor"] == "c" and g["tensor_bytes"] == 4000 and g["bytes_past_end"] == 0
    assert g["changed_bytes"] > 300000 and g["guard_bytes"] >= 4 * 100000 - 4000, g
    assert "reached_guard_end" not in g, g
    assert ev["exposed_by"]["scalars"] == {"n": 100000}


def test_shapes_understated_input_never_reads_outside(app, tmp_path):
    """a declared [1000] is read up to n=100000 at the other shape: the reads
    land in its guard zone (no guard byte changes, nothing to report), the
    host goes on."""
    v, _ = shapes_run(app, tmp_path, vecadd_contract(tmp_path, a="1000", shapes="{n: 100000}"))
    assert not [x for x in v if x["evidence"].get("verdict") == "out_of_bounds"], v


def test_mutated_contracts_at_other_shapes_never_crash(app, tmp_path):
    """30 seeded mutants run by the shapes gate (relaunches at shapes the
    application never made): 0 crashes, the application's results unchanged."""
    base = open(os.path.join(DATA, "contracts_basic.yaml")).read()
    rng = random.Random(1614)
    mutants = [mutate(base, rng) for _ in range(30)]

    def one(i):
        d = tmp_path / ("s%d" % i)
        d.mkdir()
        path = d / "c.yaml"
        path.write_text(mutants[i])
        r = basic(app, d, str(path), ":gates=shapes,bounds")
        return i, r.rc, r.out, r.err

    for i, rc, out, err in sweep(one, range(len(mutants))):
        assert rc == 0 and "basic ok" in out, "mutant %d:\n%s\n%s" % (i, mutants[i], err[-3000:])
        assert "AddressSanitizer" not in err and "runtime error" not in err, \
            "mutant %d:\n%s\n%s" % (i, mutants[i], err[-3000:])


def test_shapes_refuses_an_opaque_pointer(app, tmp_path):
    """c declared opaque: a relaunch at n=4099 would get the application's
    own 1000-float buffer unrelocated and store 4099 floats through it. The
    gate finds the undeclared pointer word, runs no other shape and says
    why; the application's results stay its own."""
    v, checks = shapes_run(app, tmp_path, vecadd_contract(
        tmp_path, c_decl="{name: c, opaque: true}"))
    assert not v, v
    assert all(c["status"] == "inconclusive" for c in checks), checks
    assert "offset 16" in checks[0]["reason"] and "opaque" in checks[0]["reason"], checks[0]
    assert "trials" not in checks[0], checks[0]


def test_shapes_with_launch_variables(app, tmp_path):
    """c's extent spelled with the launch variables (gridDim.x * blockDim.x:
    the grid rounds n up to 128): the gate's probe of which scalars size a
    tensor evaluates it with gridDim/blockDim (variables 64-69) at the
    probed value, inside its array (ASan: a stack read past vars[64]
    before), and relaunches at other shapes."""
    v, checks = shapes_run(app, tmp_path, vecadd_contract(
        tmp_path, c="gridDim.x * blockDim.x", shapes="{n: 4099}"))
    assert not [x for x in v if x["evidence"].get("verdict") == "out_of_bounds"], v
    assert checks[0].get("trials"), checks[0]
    assert {"n": 4099} in [t.get("scalars") for t in checks[0]["trials"]], checks[0]


TENSOR_LINE = re.compile(r"\{name: (\w+), (?:offset: (\d+), )?tensor: \{[^}]*\}\}")


def mutate_any(text, rng):
    """mutate, and sometimes a tensor made opaque (an undeclared pointer:
    a struct field drops out of the contract) or an extent spelled with the
    launch variables."""
    text = mutate(text, rng)
    lines = text.splitlines()
    for _ in range(rng.randint(0, 2)):
        cand = [i for i, l in enumerate(lines) if TENSOR_LINE.search(l)]
        i = rng.choice(cand)
        m = TENSOR_LINE.search(lines[i])
        if rng.random() < 0.5:
            if m.group(2) is None:
                lines[i] = lines[i][:m.start()] + "{name: %s, opaque: true}" % m.group(1) + \
                    lines[i][m.end():]
            else:  # a struct field: left out
                lines[i] = ""
        else:
            lines[i] = re.sub(r"shape: \[[^\]]*\]", "shape: [%s]" % rng.choice(
                ["gridDim.x * blockDim.x", "gridDim.x", "blockDim.x * 2", "n + blockDim.x"]),
                lines[i])
    return "\n".join(l for l in lines if l) + "\n"


def mutants_all_gates(app, tmp_path, seed, count):
    base = open(os.path.join(DATA, "contracts_basic.yaml")).read()
    rng = random.Random(seed)
    mutants = [mutate_any(base, rng) for _ in range(count)]

    def one(i):
        d = tmp_path / ("g%d" % i)
        d.mkdir()
        path = d / "c.yaml"
        path.write_text(mutants[i])
        r = basic(app, d, str(path), ":gates=all")
        return i, r.rc, r.out, r.err

    ran = 0
    for i, rc, out, err in sweep(one, range(len(mutants))):
        assert rc == 0 and "basic ok" in out, "mutant %d:\n%s\n%s" % (i, mutants[i], err[-3000:])
        assert "AddressSanitizer" not in err and "runtime error" not in err, \
            "mutant %d:\n%s\n%s" % (i, mutants[i], err[-3000:])
        ran += 1
    return ran


def test_mutated_contracts_all_gates_never_crash(app, tmp_path):
    """Seeded mutants, opaque parameters and launch-variable extents among
    them, under gates=all (shapes included): 0 crashes, the application's
    results unchanged. `make test` runs 24; `make test-mutants` (CI runs it
    after `make test`) runs 1,024 (KCHECK_MUTANTS=N, seed from
    KCHECK_MUTANT_SEED). The count run is stated on stdout (pytest -s)."""
    count = int(os.environ.get("KCHECK_MUTANTS", "24"))
    seed = int(os.environ.get("KCHECK_MUTANT_SEED", "3838"))
    ran = mutants_all_gates(app, tmp_path, seed, count)
    assert ran == count
    print("\ncontract mutants under gates=all: %d run (seed %d), 0 crashes, results unchanged"
          % (ran, seed))
