"""The race corpus without PTX (test/gpu/races_sass/): its summarizer reads a
work folder laid out as test/gpu/run_gpu_races_sass.sh writes it and judges
the goal from the default condition's records — checked here on hand-made
reports, so that one device call's tables cannot come out empty or wrong
for want of a reader. The manifests are checked too (no GPU needed)."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SUMMARIZE = os.path.join(ROOT, "test", "gpu", "races_sass", "summarize.py")
KERNELS = os.path.join(ROOT, "test", "gpu", "races_sass", "kernels.py")
CUDA_SRC = os.path.join(ROOT, "test", "gpu", "races_sass", "corpus_sass.cu")
STRATS = ["scrub", "green", "smem", "hammer", "l2flush", "jitter", "warporder", "accesses"]

CASES = [("c_lu_sum_2bins", "cuda", "lost-update", "race"),
         ("c_fa_sum", "cuda", "float-atomic", "nondeterminism"),
         ("t_lu_sum_2bins", "triton", "lost-update", "race"),
         ("t_fa_sum", "triton", "float-atomic", "nondeterminism"),
         ("t_cl_slots", "triton", "clean", "clean"),
         ("t_mb_shift", "triton", "missing-barrier", "race")]
NO_CODE = "the image is a cubin (SASS only) and no Triton cache entry holds this cubin"


def check(name, race=None, nondet=None, det="pass", kernel_ms=0.004):
    """A check record as kcheck writes it: race/nondet are gate entries."""
    gates = {"determinism": {"status": det}}
    if race is not None:
        gates["race"] = race
    if nondet is not None:
        gates["nondeterminism"] = nondet
    # CUDA kernels' names are demangled with their parameters
    kname = name + ("(const float*, float*)" if name.startswith("c_") else "")
    return {"type": "check", "kernel_name": kname, "kernel_ms": kernel_ms, "gates": gates}


def viol(name, gate, exposed_by=None, cause=None):
    v = {"type": "violation", "gate": gate, "kernel_name": name}
    if exposed_by:
        v["exposed_by"] = exposed_by
    if cause:
        v["cause"] = cause
    return v


def race_entry(status, strategies, ms=None, **extra):
    e = {"status": status, "strategies": strategies, "strategy_ms": ms or {s: 0.5 for s in strategies}}
    e.update(extra)
    return e


def default_records(name, flag_clean=False):
    """The default condition: the lost updates found by green (added for
    kernels without code), the float sums named nondeterminism."""
    if name.endswith("lu_sum_2bins"):
        return [check(name, race=race_entry("fail", {"scrub": "same", "l2flush": "same", "jitter": NO_CODE,
                                                     "green": "differs", "smem": "same"},
                                            no_code=NO_CODE, no_code_added="green,smem")),
                viol(name, "race", "green", "unclassified")]
    if name.endswith("fa_sum"):
        return [check(name, race={"status": "not run"},
                      nondet=race_entry("fail", {"l2flush": "differs"}, route="sanitizer")),
                viol(name, "nondeterminism", "l2flush", "atomic-order")]
    if name == "t_cl_slots":
        recs = [check(name, race=race_entry("fail" if flag_clean else "pass", {"l2flush": "same", "green":
                                                                               "differs" if flag_clean else "same"}))]
        return recs + ([viol(name, "race", "green")] if flag_clean else [])
    if name == "t_mb_shift":
        return [check(name, race=race_entry("fail", {"accesses": "conflicting accesses", "l2flush": "same"},
                                            route="sanitizer")),
                viol(name, "race", "accesses", "unordered-access")]
    raise KeyError(name)


def strategy_records(name, s):
    """Each strategy alone: green finds the lost updates, accesses the
    missing barrier; jitter does not run on the CUDA kernels (no code)."""
    if s == "jitter" and name.startswith("c_"):
        st = NO_CODE
    elif (s == "green" and "lu_sum" in name) or (s == "accesses" and name == "t_mb_shift"):
        st = "conflicting accesses" if s == "accesses" else "differs"
    else:
        st = "same"
    extra = {"route": "sanitizer"} if s in ("jitter", "accesses") and name.startswith("t_") else {}
    recs = [check(name, race=race_entry("fail" if st in ("differs", "conflicting accesses") else "pass",
                                        {s: st}, {s: 2.0 if s == "green" else 0.25}, **extra))]
    if st in ("differs", "conflicting accesses"):
        recs.append(viol(name, "race", s))
    return recs


def write_jsonl(path, recs):
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
        f.write("{not json\n")  # a torn last line: skipped


def make_work(tmp_path, flag_clean=False, lost_process=False, gsan="none"):
    work = tmp_path / "work"
    (work / "kc").mkdir(parents=True)
    (work / "san").mkdir()
    (work / "plain").mkdir()
    (work / "cases.txt").write_text("".join(" ".join(c) + "\n" for c in CASES))
    (work / "header.txt").write_text("date: test\ntriton: 3.6.0 (usable with CUDA: 1); gsan: %s; consan: mode\n" % gsan)
    names = [c[0] for c in CASES]
    (work / "plain" / "all.out").write_text("".join("RESULT %s h%s\n" % (n, n) for n in names))
    jobs = []
    for cond in ["default", "default_ptx"] + ["s_" + s for s in STRATS]:
        for i, n in enumerate(names):
            if cond == "default_ptx" and n.startswith("c_"):
                continue
            base = work / "kc" / ("%s.u%d" % (cond, i))
            jobs.append("%s u%d %s %s" % (cond, i, "cuda" if n.startswith("c_") else "triton", n))
            if lost_process and cond == "default" and n == "t_mb_shift":
                (base.parent / (base.name + ".rc")).write_text("124 180.0 %s\n" % n)
                continue
            if cond.startswith("s_"):
                recs = strategy_records(n, cond[2:])
            else:
                recs = default_records(n, flag_clean)
            if cond == "default_ptx":
                recs.insert(0, {"type": "image_ptx", "image": 3, "kernel": n, "source": "triton_cache",
                                "path": "/c/x/%s.ptx" % n})
            recs.insert(0, {"type": "kernel", "kernel": 7, "kernel_name": n})
            # a library kernel's records in the same report are not the corpus's
            recs.append(check("at::native::vectorized_elementwise_kernel", race=race_entry("pass", {"l2flush": "same"})))
            write_jsonl(str(base) + ".%d.jsonl" % (1000 + i), recs)
            (base.parent / (base.name + ".out")).write_text("RESULT %s h%s\n" % (n, n))
            (base.parent / (base.name + ".rc")).write_text("0 3.2 %s\n" % n)
    (work / "kcjobs.txt").write_text("\n".join(jobs) + "\n")
    for n in names:
        (work / "san" / ("racecheck.%s.rc" % n)).write_text("0 4.0\n")
        hazards = "1 hazard displayed (1 error, 0 warnings)" if n == "t_mb_shift" else "0 hazards displayed (0 errors, 0 warnings)"
        (work / "san" / ("racecheck.%s.out" % n)).write_text("========= RACECHECK SUMMARY: %s\n" % hazards)
        if n.startswith("t_"):
            (work / "san" / ("consan.%s.rc" % n)).write_text("0 5.0\n")
            (work / "san" / ("consan.%s.out" % n)).write_text("RESULT %s h\n" % n)
    return work


def summarize(work, out):
    return subprocess.run([sys.executable, SUMMARIZE, str(work), str(out)],
                          capture_output=True, text=True, timeout=60)


def test_goal_passes_and_tables_count(tmp_path):
    out = tmp_path / "out"
    r = summarize(make_work(tmp_path), out)
    assert r.returncode == 0, r.stdout + r.stderr
    md = (out / "races_sass.md").read_text()
    assert "GOAL: PASS" in md
    assert "**PASS** every racy kernel flagged `race` from one launch, default options: 3/3" in md
    assert "**PASS** every float-atomic kernel named `nondeterminism`: 2/2" in md
    # per class: lost updates of both kinds found, the clean kernel not flagged
    assert "| lost-update | triton | race | 1/1 | 1/1 |" in md
    assert "| clean | triton | clean | race 0/1 |" in md
    # racecheck flagged the missing barrier only; gsan unsupported; consan ran clean
    assert re.search(r"\| missing-barrier \| triton \| race \| 1/1 \| 1/1 \| 1/1 \| unsupported \| 0/1 \|", md)
    # each strategy alone: green found the 2 lost updates, accesses the barrier
    row = [l for l in md.splitlines() if l.startswith("| **all racy** (3)")][0].split("|")
    cols = dict(zip(["identical"] + STRATS, [c.strip() for c in row[3:3 + 9]]))
    assert cols["green"] == "2" and cols["accesses"] == "1" and cols["l2flush"] == "0"
    # jitter did not run on the CUDA kernels and the reason is shown
    jit = [l for l in md.splitlines() if l.startswith("| jitter | cuda |")][0]
    assert "0/2" in jit and "SASS only" in jit
    # the route field of the entry is reported
    acc = [l for l in md.splitlines() if l.startswith("| accesses | triton |")][0]
    assert "race.route: sanitizer (4)" in acc
    # kcheck found the PTX only where the cache kept it
    assert re.search(r"\| default \| 3/3 \| 0 \| 2/2 \| 0 \| 0/4 \|", md)
    assert re.search(r"\| default_ptx \(Triton\) \| 2/2 \| 0 \| 1/1 \| 0 \| 4/4 \|", md)
    # cost: green alone 2.00 ms median
    assert "| green | 2.00 | 6 |" in md
    js = json.loads((out / "races_sass.json").read_text())
    assert js["goal"]["pass"] is True
    c = {x["name"]: x for x in js["cases"]}
    assert c["c_lu_sum_2bins"]["kcheck"]["default"]["exposed"] == ["green"]
    assert c["t_fa_sum"]["kcheck"]["default"]["causes"] == ["atomic-order"]
    assert c["t_lu_sum_2bins"]["kcheck"]["default"]["race_entry"]["race.no_code_added"] == "green,smem"
    assert c["c_fa_sum"]["gsan"] == "n/a" and c["t_fa_sum"]["gsan"] == "unsupported"
    assert c["t_cl_slots"]["kcheck"]["default"]["result"] == "ht_cl_slots" == c["t_cl_slots"]["plain_result"]


def test_false_flag_and_lost_process_fail_the_goal(tmp_path):
    out = tmp_path / "out"
    r = summarize(make_work(tmp_path, flag_clean=True, lost_process=True, gsan="tool"), out)
    assert r.returncode == 1, r.stdout + r.stderr
    md = (out / "races_sass.md").read_text()
    assert "GOAL: FAIL" in md
    assert "**FAIL** no race-free kernel flagged `race`: 1 false flags — t_cl_slots" in md
    assert "**FAIL** every racy kernel flagged `race` from one launch, default options: 2/3 — t_mb_shift" in md
    line = [l for l in md.splitlines() if l.startswith("| t_mb_shift |")][0]
    assert "not checked" not in line and "| - 124" in line  # the timed-out process's status
    # gsan named as supported but not run: "not run", never "unsupported"
    assert re.search(r"\| missing-barrier \| triton \| race \| 0/1 \| 1/1 \| 1/1 \| not run \|", md)


def test_empty_work_is_an_error(tmp_path):
    (tmp_path / "w").mkdir()
    r = summarize(tmp_path / "w", tmp_path / "out")
    assert r.returncode == 2


def test_manifests():
    """Both manifests: unique names, known classes, at least 40 kernels, a
    majority of them Triton, every class labelled consistently."""
    classes = {"lost-update": "race", "last-writer": "race", "cross-read": "race", "intra-global": "race",
               "missing-barrier": "race", "float-atomic": "nondeterminism", "clean": "clean"}
    src = open(CUDA_SRC).read()
    cuda = re.findall(r'^\s*C\((\w+), "([\w-]+)", "(\w+)"', src, re.M)
    # the Triton manifest without importing Triton (the machine may lack it)
    py = open(KERNELS).read()
    triton = re.findall(r'^\s*\("(t_\w+)", "([\w-]+)", "(\w+)"\),', py, re.M)
    names = [c[0] for c in cuda + triton]
    assert len(names) == len(set(names)) >= 40
    assert len(triton) > len(cuda)
    for n, cl, exp in cuda + triton:
        assert classes[cl] == exp, n
        assert re.search(r"(def|void) %s\(" % n, src + py), n
    for cl in classes:
        assert any(c[1] == cl for c in cuda) and any(c[1] == cl for c in triton), cl


@pytest.mark.skipif(shutil.which("nvcc") is None and not os.path.exists("/usr/local/cuda/bin/nvcc"),
                    reason="no nvcc")
def test_cuda_kernels_carry_no_ptx(tmp_path):
    """Compiled as the runner compiles it, the fatbin has SASS for sm_90 and
    no PTX (nvcc needs no GPU for this)."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cubin = tmp_path / "c.fatbin"
    r = subprocess.run([nvcc, "-O2", "-gencode", "arch=compute_90,code=sm_90", "-fatbin", "-o", str(cubin), CUDA_SRC],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    data = cubin.read_bytes()
    assert b".version" not in data and b".target sm_90" not in data
    assert b"c_lu_sum_2bins" in data
