"""Triton's own PTX: a cubin loaded from memory has none, but Triton keeps
the PTX of every kernel it compiles in its cache (<cache>/<key>/<name>.ptx
beside <name>.cubin). kcheck matches the loaded cubin's bytes (size and
hash) to a cache entry's cubin and runs the PTX route on that PTX. The
stand-in loads the test application's kernels from an ELF cubin
(APP_IMAGE); the test plants a cache folder holding it."""
import os

from conftest import ROOT, by_type, run
from cubin import app_kernel_names, app_ptx, make_cubin

APPS_H = os.path.join(ROOT, "test", "apps", "apps.h")


def name(rec):
    return rec["kernel_name"].split("(")[0]


def plant(cache, image, ptx=None):
    """One cache entry per kernel, as Triton files them (the stand-in's
    cubin holds every kernel of the app; a Triton cubin holds one)."""
    for i, k in enumerate(app_kernel_names(APPS_H)):
        d = cache / ("KEY%03dAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" % i)
        d.mkdir(parents=True)
        (d / (k + ".cubin")).write_bytes(image)
        (d / (k + ".ptx")).write_text(ptx if ptx is not None else app_ptx(APPS_H))
        (d / (k + ".json")).write_text('{"name": "%s"}' % k)


def races(app, tmp_path, env, options=""):
    image = tmp_path / "app.cubin"
    image.write_bytes(make_cubin(app_kernel_names(APPS_H)))
    env = dict({"APP_IMAGE": str(image), "HOME": str(tmp_path / "home")}, **env)
    r = run([app("app_linked"), "races"], tmp_path, options=options, stock=True, env_extra=env)
    assert r.rc == 0, r.err
    recs = r.only_report()
    return {name(c): c for c in by_type(recs, "check")}, by_type(recs, "image_ptx")


def test_ptx_from_triton_cache_dir(app, tmp_path):
    cache = tmp_path / "tcache"
    plant(cache, make_cubin(app_kernel_names(APPS_H)))
    checks, found = races(app, tmp_path, {"TRITON_CACHE_DIR": str(cache)})
    # looked up once for the image, at the first check that needed code
    assert len(found) == 1, found
    assert found[0]["source"] == "triton_cache"
    assert found[0]["path"].startswith(str(cache)) and found[0]["path"].endswith(
        found[0]["kernel"] + ".ptx"), found
    race = checks["atomic_sum"]["gates"]["race"]
    # atomic_sum's body has one global red: one delay site, as with a fatbin
    assert race["intra_block"] == "perturbed" and race["intra_sites"] == 1, race
    assert race["strategies"]["jitter"] == "same" and race["strategies"]["accesses"] == "same"
    assert "no_code" not in race and "green" not in race["strategies"], race
    # the nondeterminism gate reads the atomics of the same PTX
    nd = checks["float_accum"]["gates"]["nondeterminism"]
    assert nd["atomics"]["float_atomic_adds"] == 1, nd


def test_default_cache_under_home(app, tmp_path):
    cache = tmp_path / "home" / ".triton" / "cache"
    plant(cache, make_cubin(app_kernel_names(APPS_H)))
    checks, found = races(app, tmp_path, {})
    assert len(found) == 1 and found[0]["path"].startswith(str(cache)), found
    assert checks["atomic_sum"]["gates"]["race"]["intra_block"] == "perturbed"


def test_triton_home(app, tmp_path):
    cache = tmp_path / "th" / ".triton" / "cache"
    plant(cache, make_cubin(app_kernel_names(APPS_H)))
    checks, found = races(app, tmp_path, {"TRITON_HOME": str(tmp_path / "th")})
    assert len(found) == 1 and found[0]["path"].startswith(str(cache)), found


def test_another_compile_is_not_used(app, tmp_path):
    """An entry of the same kernel from another compile (other bytes, same
    size) is never taken for this cubin's code."""
    cache = tmp_path / "tcache"
    other = make_cubin(app_kernel_names(APPS_H), tag=b"other compile")
    plant(cache, other)
    checks, found = races(app, tmp_path, {"TRITON_CACHE_DIR": str(cache)})
    assert found == []
    race = checks["atomic_sum"]["gates"]["race"]
    assert race["intra_block"] == ("the image is a cubin (SASS only) and no Triton cache entry "
                                   "holds this cubin"), race
    # and the kernels without code get the block-order strategies
    assert race["no_code_added"] == "green,smem"
    # the nondeterminism gate reads the atomics from the cubin's SASS
    # instead (this stand-in cubin's .text sections are empty: none)
    nd = checks["float_accum"]["gates"]["nondeterminism"]
    assert nd["status"] == "pass" and nd["atomics"]["float_atomic_adds"] == 0, nd


def test_same_size_other_bytes(app, tmp_path):
    """Same size, one byte different: the hash tells them apart."""
    image = make_cubin(app_kernel_names(APPS_H), tag=b"A" * 8)
    cache = tmp_path / "tcache"
    plant(cache, make_cubin(app_kernel_names(APPS_H), tag=b"B" * 8))
    image_path = tmp_path / "app.cubin"
    image_path.write_bytes(image)
    r = run([app("app_linked"), "races"], tmp_path, stock=True,
            env_extra={"APP_IMAGE": str(image_path), "HOME": str(tmp_path / "home"),
                       "TRITON_CACHE_DIR": str(cache)})
    assert r.rc == 0, r.err
    assert by_type(r.only_report(), "image_ptx") == []


def test_no_cache_folder(app, tmp_path):
    checks, found = races(app, tmp_path, {"TRITON_CACHE_DIR": str(tmp_path / "missing")})
    assert found == []
    race = checks["atomic_sum"]["gates"]["race"]
    assert race["no_code"].startswith("the image is a cubin (SASS only) and no Triton cache"), race
