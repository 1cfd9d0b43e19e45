"""Launch capture on the CPU stand-in: every way of reaching the driver is
seen, and the report describes kernels, layouts, pointers and attributes."""
import json
import re
import sys

import pytest

from conftest import CTYPES_APP, FAKECUDA, by_type, run


def checksums(text):
    return sorted(l for l in text.splitlines() if "checksum" in l or "sum " in l)


def kernels_by_name(recs):
    return {k["demangled"]: k for k in by_type(recs, "kernel")}


def test_runtime_style_app_is_fully_seen(app, tmp_path):
    plain = run([app("app_runtime"), "basic"], tmp_path, kcheck=False)
    assert plain.rc == 0, plain.err
    r = run([app("app_runtime"), "basic"], tmp_path, options="trace=1")
    assert r.rc == 0, r.err
    # The application's results are unchanged.
    assert checksums(r.out) == checksums(plain.out) and checksums(r.out)
    recs = r.only_report()
    run_rec = recs[0]
    assert run_rec["type"] == "run" and run_rec["schema"] == "kcheck.report/2"
    assert run_rec["options"]["trace"] == 1
    summary = by_type(recs, "summary")[-1]
    launches = by_type(recs, "launch")
    assert summary["launches"] == len(launches) > 0
    assert summary["internal_errors"] == 0
    assert [l["launch"] for l in launches] == list(range(len(launches)))
    # cuGetProcAddress handed out both the legacy and the _ptsz entry.
    assert {l["ptsz"] for l in launches} == {False, True}
    entries = {l["entry"] for l in launches}
    assert {"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel"} <= entries
    assert summary["graph_launches"] >= 1
    kinds = {k["handle_kind"] for k in by_type(recs, "kernel")}
    assert kinds == {"CUfunction", "CUkernel"}
    # Both parameter forms were captured.
    forms = {l["param_form"] for l in launches}
    assert {"params", "extra"} <= forms, forms


def test_kernel_records_have_names_layouts_and_images(app, tmp_path):
    r = run([app("app_runtime"), "basic"], tmp_path, options="trace=1")
    assert r.rc == 0, r.err
    recs = r.only_report()
    ks = kernels_by_name(recs)
    vecadd = ks["vecadd(float const*, float const*, float*, int)"]
    assert vecadd["name"] == "_Z6vecaddPKfS0_Pfi"
    assert [(p["offset"], p["size"]) for p in vecadd["params"]] == [(0, 8), (8, 8), (16, 8), (24, 4)]
    assert vecadd["param_bytes"] == 28
    images = {i["id"]: i for i in by_type(recs, "image")}
    for k in ks.values():
        assert k["image"] is not None, k
        img = images[k["image"]["id"]]
        assert re.fullmatch(r"[0-9a-f]{16}", img["hash"]) and img["size"] > 0
        assert img["kind"] == ("library" if k["handle_kind"] == "CUkernel" else "module")
    # Kernel records come once per kernel, before its first launch.
    first_launch = {}
    for rec in recs:
        if rec["type"] == "launch":
            first_launch.setdefault(rec["kernel"], rec["seq"])
    for k in by_type(recs, "kernel"):
        if k["id"] in first_launch:
            assert k["seq"] < first_launch[k["id"]]
    assert len(by_type(recs, "kernel")) == len({k["id"] for k in by_type(recs, "kernel")})


def test_pointers_found_inside_struct_parameters(app, tmp_path):
    r = run([app("app_runtime"), "basic"], tmp_path, options="trace=1")
    assert r.rc == 0, r.err
    recs = r.only_report()
    ks = {k["id"]: k for k in by_type(recs, "kernel")}
    seen = {}
    for l in by_type(recs, "launch"):
        seen.setdefault(ks[l["kernel"]]["name"], []).append(l)
    ti = seen["_Z13ti_add_kernel8TIParams"][0]
    assert ti["param_size"] == 1048
    assert [p["offset"] for p in ti["pointers"]] == [16, 528, 1032]
    for p in ti["pointers"]:
        assert int(p["base"], 16) <= int(p["value"], 16) < int(p["base"], 16) + p["alloc_size"]
        assert p["resolved_by"] == "map"
    # the parameter bytes, hex-encoded 16 at a time and then byte by byte
    # (1048 = 65 x 16 + 8): every pointer word is in them where it was found
    raw = bytes.fromhex(ti["param_bytes"])
    assert len(raw) == 1048 and ti["param_bytes"] == raw.hex()
    for p in ti["pointers"]:
        assert int.from_bytes(raw[p["offset"]:p["offset"] + 8], "little") == int(p["value"], 16)
    arr = [l for n, ls in seen.items() if "vectorized_elementwise_kernel" in n for l in ls][0]
    assert [p["offset"] for p in arr["pointers"]] == [16, 24, 32]
    va = [l for l in seen["_Z6vecaddPKfS0_Pfi"] if l["param_form"] == "params"][0]
    assert [p["offset"] for p in va["pointers"]] == [0, 8, 16]
    # The size parameter (n) is never taken for a pointer.
    assert all(p["offset"] != 24 for p in va["pointers"])


def test_words_that_look_like_addresses_are_asked_about_once(tmp_path):
    """trace=1 resolves every parameter word that could be a pointer; a word
    the driver said is no device memory is remembered until the allocation
    map changes. 32 structs of 125 distinct int pairs (4000 words), launched
    in 4 rounds: the driver is asked about each word in the first round and
    about none after (a direct-mapped table of 16384 lost ~20% of them to
    collisions every round)."""
    variants, rounds, junk = 32, 4, 125
    r = run([sys.executable, CTYPES_APP, "junk", "--lib", FAKECUDA + "/libcuda.so.1"], tmp_path,
            options="trace=1:gates=none:profile=1:profile_mark=%d" % variants,
            stock=True)
    assert r.rc == 0, r.err
    assert "junk launches %d" % (variants * rounds) in r.out
    recs = r.only_report()
    prof = {p["at"]: p for p in by_type(recs, "profile")}

    def queries(p):
        return p["driver_calls"].get("cuMemGetAddressRange_v2", {}).get("n", 0)

    first, end = prof["mark"], prof["exit"]
    assert queries(first) == first["counts"]["ptr_not_device"] == variants * junk
    assert first["counts"]["ptr_map"] == 3 * variants
    steady = {k: end["counts"][k] - first["counts"][k] for k in end["counts"]}
    assert queries(end) - queries(first) == 0
    assert steady["ptr_remembered"] == (rounds - 1) * variants * junk
    assert steady["ptr_map"] == 3 * (rounds - 1) * variants
    ti = [l for l in by_type(recs, "launch") if l["param_size"] == 1048]
    assert len(ti) == variants * rounds
    assert all([p["offset"] for p in l["pointers"]] == [16, 528, 1032] for l in ti)


def test_linked_app_through_exported_symbols(app, tmp_path):
    plain = run([app("app_linked"), "basic"], tmp_path, kcheck=False)
    r = run([app("app_linked"), "basic"], tmp_path, options="trace=1")
    assert plain.rc == 0 and r.rc == 0, r.err
    assert checksums(r.out) == checksums(plain.out)
    recs = r.only_report()
    summary = by_type(recs, "summary")[-1]
    assert summary["launches"] == len(by_type(recs, "launch")) > 0
    by_entry = summary["launches_by_entry"]
    assert by_entry["cuLaunchKernel"] > 0 and by_entry["cuLaunchKernelEx"] > 0
    assert by_entry["cuLaunchCooperativeKernel"] > 0


def test_python_ctypes_app(tmp_path):
    cmd = [sys.executable, CTYPES_APP, "basic", "--lib", FAKECUDA + "/libcuda.so.1"]
    plain = run(cmd, tmp_path, kcheck=False)
    # ctypes releases the GIL around foreign calls: python_stack=2 takes it back.
    r = run(cmd, tmp_path, options="trace=2:python_stack=2")
    assert plain.rc == 0 and r.rc == 0, r.err
    assert checksums(r.out) == checksums(plain.out)
    recs = r.only_report()
    launches = by_type(recs, "launch")
    assert launches, r.err
    stack = launches[0]["stack"]
    assert stack["host"] and all("module" in f for f in stack["host"])
    # trace=2 names frames by module file and offset (symbolised later).
    import os
    assert all(os.path.isfile(f["module"]) and f["offset"].startswith("0x")
               for f in stack["host"] if f["module"] != "?")
    # The launching thread runs Python: its frames name this app's file.
    assert any(f["file"].endswith("app_ctypes.py") and f["line"] > 0 for f in stack["python"])
    # By default a thread that released the GIL (ctypes) gets its Python
    # frames too, read without the GIL; python_stack=0 takes none.
    r = run(cmd, tmp_path, options="trace=2")
    assert r.rc == 0, r.err
    stack = by_type(r.only_report(), "launch")[0]["stack"]
    assert stack.get("python_without_gil") is True, stack
    assert any(f["file"].endswith("app_ctypes.py") and f["line"] > 0 for f in stack["python"])
    r = run(cmd, tmp_path, options="trace=2:python_stack=0")
    assert "python" not in by_type(r.only_report(), "launch")[0]["stack"]


def test_summary_on_stderr(app, tmp_path):
    r = run([app("app_linked"), "basic"], tmp_path)
    lines = [l for l in r.err.splitlines() if "kcheck" in l]
    assert lines and all(l.startswith("kcheck:") or l.startswith("SUMMARY: kcheck:") for l in lines)
    assert lines[-1].startswith("SUMMARY: kcheck: 0 violations")


def test_every_report_line_is_json_and_flushed(app, tmp_path):
    r = run([app("app_runtime"), "basic"], tmp_path, options="trace=1")
    with open(r.reports[0]) as f:
        raw = f.read()
    assert raw.endswith("\n")
    for line in raw.splitlines():
        json.loads(line)
    seqs = [json.loads(l)["seq"] for l in raw.splitlines()]
    assert seqs == list(range(len(seqs)))


def test_without_trace_no_launch_records(app, tmp_path):
    r = run([app("app_runtime"), "basic"], tmp_path)
    assert r.rc == 0
    recs = r.only_report()
    assert not by_type(recs, "launch")
    assert by_type(recs, "summary")[-1]["launches"] > 0


def test_concurrent_launches_from_threads(app, tmp_path):
    """Four threads launch 300 times each at once: every launch is counted
    once, records are whole lines, and each thread's results are right."""
    r = run([app("app_threads")], tmp_path, options="trace=1")
    assert r.rc == 0, r.err
    assert "launches 1200 failures 0" in r.out
    recs = r.only_report()
    launches = by_type(recs, "launch")
    assert len(launches) == 1200
    assert sorted(l["launch"] for l in launches) == list(range(1200))
    summary = by_type(recs, "summary")[-1]
    assert summary["launches"] == 1200 and summary["internal_errors"] == 0
    assert len(by_type(recs, "kernel")) == 1


def test_concurrent_contract_checks_from_threads(app, tmp_path):
    """The same four threads with vecadd's contract and 40 checks: the
    contract gates run from several threads at once (ASan build), every
    check judges vecadd bitwise, and each thread's results are right. No
    limit on the wait for the check lock: on a loaded machine an ASan check
    can outlast check_lock_ms, and the launch would rightly go unchecked."""
    import os
    from conftest import ROOT
    contracts = os.path.join(ROOT, "test", "integration", "data", "contracts_planted.yaml")
    r = run([app("app_threads")], tmp_path,
            options="contracts=%s:check_first=40:clean_limit=-1:kernel_clean_limit=-1:"
                    "time_budget=1:check_lock_ms=0" % contracts, timeout=600)
    assert r.rc == 0, r.err
    assert "launches 1200 failures 0" in r.out
    recs = r.only_report()
    checks = by_type(recs, "check")
    assert len(checks) == 40 and not by_type(recs, "violation")
    assert all(c["gates"]["oracle"]["status"] == "bitwise" for c in checks)
    assert by_type(recs, "summary")[-1]["internal_errors"] == 0


def _step_records(app, tmp_path, steps, options=""):
    sub = tmp_path / ("s%d" % steps)
    sub.mkdir()
    r = run([app("app_linked"), "steps%d" % steps], sub, options=options)
    assert r.rc == 0, r.err
    assert "steps %d ok" % steps in r.out
    recs = r.only_report()
    return by_type(recs, "check"), by_type(recs, "skip")


def test_per_step_scalars_stop_making_checks_and_skips(app, tmp_path):
    """A kernel whose scalar changes every step (a learning-rate schedule) is
    checked kernel_clean_limit times, then skipped with one skip record for
    the kernel: 20 more steps add no check and no skip record."""
    c20, s20 = _step_records(app, tmp_path, 20, "kernel_clean_limit=4")
    c40, s40 = _step_records(app, tmp_path, 40, "kernel_clean_limit=4")
    scale = [c for c in c40 if c["kernel_name"].startswith("scale")]
    assert len(scale) == 4
    assert (len(c20), len(s20)) == (len(c40), len(s40))
    reasons = [s["reason"] for s in s40 if s["kernel_name"].startswith("scale")]
    assert reasons == ["kernel already checked clean kernel_clean_limit times"]


def test_per_step_scalars_checked_every_step_without_kernel_limit(app, tmp_path):
    """Must fire: without kernel_clean_limit each step's scalar is a new
    signature, so every step is checked again."""
    c20, _ = _step_records(app, tmp_path, 20, "kernel_clean_limit=-1")
    c40, _ = _step_records(app, tmp_path, 40, "kernel_clean_limit=-1")
    assert len([c for c in c40 if c["kernel_name"].startswith("scale")]) == 40
    assert len(c40) - len(c20) == 20


@pytest.mark.parametrize("how", ["crash", "abort"])
def test_report_survives_a_crash(app, tmp_path, how):
    """Records are written by a background thread; a segmentation fault or
    abort() must still leave every completed record in the file, each line
    whole."""
    r = run([app("app_linked"), how], tmp_path, options="trace=1")
    assert r.rc != 0 and "crashing now" in r.out
    want = r.out.count(" ok checksum")  # each printed after its launch completed
    with open(r.reports[0]) as f:
        raw = f.read()
    assert raw.endswith("\n")
    recs = [json.loads(line) for line in raw.splitlines()]
    assert [x["seq"] for x in recs] == list(range(len(recs)))
    launches = [x["launch"] for x in by_type(recs, "launch")]
    assert launches == list(range(len(launches))) and len(launches) >= want > 0
    assert not by_type(recs, "summary")  # the process died before its exit summary
