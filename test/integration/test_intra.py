"""The intra-block strategies on the CPU stand-in: kcheck builds its PTX copy
of a kernel from the image's PTX (the stand-in runs the copy as the kernel
itself, so no delay happens here: the GPU corpus measures that,
test/gpu/races/run_corpus.sh); the race entry says whether the copy was made
(intra_block, intra_sites) and each strategy's status says why not."""
from conftest import by_type, run


def name(rec):
    return rec["kernel_name"].split("(")[0]


def test_copy_made_and_reported(app, tmp_path):
    r = run([app("app_linked"), "races"], tmp_path,
            options="gates=race:race_strategies=jitter,warporder,accesses")
    assert r.rc == 0, r.err
    checks = {name(c): c for c in by_type(r.only_report(), "check")}
    race = checks["atomic_sum"]["gates"]["race"]
    # atomic_sum's body has one global red: one delay site
    assert race["intra_block"] == "perturbed" and race["intra_sites"] == 1
    assert race["strategies"]["jitter"] == "same" and race["strategies"]["warporder"] == "same"
    # its global red is logged; the stand-in writes no log: nothing races
    assert race["strategies"]["accesses"] == "same"
    assert set(race["strategy_ms"]) == {"jitter", "warporder", "accesses"}
    # the stand-in's copy computes what the kernel does: clean kernels stay clean
    for k in ("block_disjoint", "atomic_sum", "shared_reverse"):
        assert checks[k]["gates"]["race"]["status"] == "pass", k
