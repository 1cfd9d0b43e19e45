#!/usr/bin/env python3
"""test/gpu/races_sass/kernels.py — Triton kernels for the race corpus
without PTX (Triton loads cubins; run_gpu_races_sass.sh deletes the .ptx
files from Triton's cache for the SASS-only condition). Each named kernel
is launched exactly once, on fresh deterministic inputs.

  python3 kernels.py list          one line per kernel: name class expected
  python3 kernels.py run NAME...   runs each kernel once, in order, printing
                                   "RESULT NAME <hash of its outputs>" (a
                                   kernel that raises prints "ERROR NAME ..."
                                   and the next one runs)
  python3 kernels.py run --drop-ptx NAME...
                                   compiles the kernels first (warmup: no
                                   launch), deletes every .ptx file of
                                   Triton's cache (TRITON_CACHE_DIR: give
                                   each process its own), then runs them:
                                   kcheck finds the cubins and no PTX, as
                                   for ATen's and cuBLAS's kernels

expected: race, nondeterminism (float atomics: the order changes the
rounding, no racing plain access) or clean. Triton has no shared memory of
its own (tl.dot and reductions get theirs with the compiler's barriers), so
its missing-barrier kernels leave out tl.debug_barrier() between a
program's store of a global scratch tile and its load of another thread's
part of it. With TRITON_INTERPRET=1 and no GPU the kernels run on the CPU
(the CPU test checks the corpus that way). Exit status 0; 1 when a kernel
raised; 2 without Triton or a device.
"""
import hashlib
import os
import sys

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # pragma: no cover - only on machines without them
    print(f"kernels.py: {e}", file=sys.stderr)
    sys.exit(2)

B = 128  # elements per program of most kernels


# ------------------------------------------ lost updates between programs
# Few programs, few bins, short kernels: plain re-runs almost never differ.
@triton.jit
def t_lu_sum_2bins(x, bins, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    b = bins + pid % 2
    tl.store(b, tl.load(b) + s)  # not atomic


@triton.jit
def t_lu_count_1bin(x, cnt, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    c = tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)) & 1, axis=0)
    tl.store(cnt, tl.load(cnt) + c)


@triton.jit
def t_lu_hist_4bins(x, bins, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    k = tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)) & 3
    h = tl.sum((k[:, None] == tl.arange(0, 4)[None, :]).to(tl.int32), axis=0)
    o = bins + tl.arange(0, 4)
    tl.store(o, tl.load(o) + h)


@triton.jit
def t_lu_max(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    m = tl.max(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.store(out, tl.maximum(tl.load(out), m))


@triton.jit
def t_lu_fsum(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.store(out, tl.load(out) + s)


@triton.jit
def t_lu_rows_2d(x, acc, BLOCK: tl.constexpr):
    # grid (2, 3): program (m, n) adds chunk n of row m into acc[m]
    m = tl.program_id(0)
    n = tl.program_id(1)
    s = tl.sum(tl.load(x + (m * 3 + n) * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.store(acc + m, tl.load(acc + m) + s)


# ---------------------------------------------------- last writer wins
@triton.jit
def t_lw_scalar(out):
    tl.store(out, tl.program_id(0) * 7 + 1)


@triton.jit
def t_lw_overlap(x, out, n, BLOCK: tl.constexpr):
    # program p writes [p*BLOCK/2, p*BLOCK/2 + BLOCK): two programs per half
    pid = tl.program_id(0)
    offs = pid * (BLOCK // 2) + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n, other=0.0) + pid, mask=offs < n)


@triton.jit
def t_lw_scatter_dup(x, out, BLOCK: tl.constexpr):
    # every program scatters into the same 64 slots (no duplicate inside one)
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs % 64, tl.load(x + pid * BLOCK + offs))


# --------------------------- reads of another program's output, same launch
@triton.jit
def t_xr_neighbor(x, part, out):
    pid = tl.program_id(0)
    v = tl.load(x + pid) + 1
    tl.store(part + pid, v)
    prev = tl.load(part + pid - 1, mask=pid > 0, other=0)  # another program's
    tl.store(out + pid, v + prev)


@triton.jit
def t_xr_chain_scan(x, part, BLOCK: tl.constexpr):
    # a chained scan with no flag: program p reads p-1's partial sum
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    prev = tl.load(part + pid - 1, mask=pid > 0, other=0)
    tl.store(part + pid, prev + s)


@triton.jit
def t_xr_inplace_shift(x, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs - 1, mask=(offs > 0) & (offs < n), other=0)
    tl.store(x + offs, v + 1, mask=offs < n)


@triton.jit
def t_xr_inplace_blur(x, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    l = tl.load(x + offs - 1, mask=(offs > 0) & (offs < n), other=0.0)
    c = tl.load(x + offs, mask=offs < n, other=0.0)
    r = tl.load(x + offs + 1, mask=offs + 1 < n, other=0.0)
    tl.store(x + offs, 0.5 * c + 0.25 * (l + r), mask=offs < n)


# --------------- missing barrier inside a program (global scratch tile)
@triton.jit
def t_mb_shift(x, scratch, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = scratch + pid * BLOCK
    tl.store(base + offs, tl.load(x + pid * BLOCK + offs))
    # missing tl.debug_barrier(): the other half is other warps' stores
    tl.store(out + pid * BLOCK + offs, tl.load(base + (offs + BLOCK // 2) % BLOCK))


@triton.jit
def t_mb_reverse(x, scratch, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = scratch + pid * BLOCK
    tl.store(base + offs, tl.load(x + pid * BLOCK + offs))
    tl.store(out + pid * BLOCK + offs, tl.load(base + BLOCK - 1 - offs))


@triton.jit
def t_mb_loop(x, scratch, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = scratch + pid * BLOCK
    acc = tl.load(x + pid * BLOCK + offs)
    for i in range(4):
        tl.store(base + offs, acc)
        acc = acc + tl.load(base + (offs + 32 * (i + 1)) % BLOCK)
    tl.store(out + pid * BLOCK + offs, acc)


# ---------------------------- other races among one program's threads (global)
@triton.jit
def t_ig_inplace_reverse(x, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = x + pid * BLOCK
    tl.store(base + offs, tl.load(base + BLOCK - 1 - offs) * 2 + 1)


@triton.jit
def t_ig_hist_plain(k, h, BLOCK: tl.constexpr):
    # one program: colliding bins read-modify-written without atomics
    offs = tl.arange(0, BLOCK)
    b = h + (tl.load(k + offs) & 7)
    tl.store(b, tl.load(b) + 1)


# ------------------------------------------- float atomics: nondeterminism
@triton.jit
def t_fa_sum(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.atomic_add(out, tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))


@triton.jit
def t_fa_elem(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(out + offs * 0, tl.load(x + pid * BLOCK + offs))


@triton.jit
def t_fa_hist(k, x, h, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(h + (tl.load(k + offs) & 7), tl.load(x + offs))


@triton.jit
def t_fa_index_add(idx, src, out, BLOCK: tl.constexpr):
    # index_add_: out[idx[r], :] += src[r, :], one program per source row
    r = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    dst = tl.load(idx + r) & 3
    tl.atomic_add(out + dst * BLOCK + cols, tl.load(src + r * BLOCK + cols))


# ----------------------------------------------------- race-free controls
@triton.jit
def t_cl_slots(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out + pid, tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))


@triton.jit
def t_cl_int_atomic_sum(x, bins, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.atomic_add(bins + pid % 2, s)


@triton.jit
def t_cl_int_atomic_hist(k, h, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(h + (tl.load(k + offs) & 7), offs * 0 + 1)


@triton.jit
def t_cl_cumsum(x, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + offs, tl.cumsum(tl.load(x + offs), axis=0))


@triton.jit
def t_cl_atomic_max(x, out, BLOCK: tl.constexpr):
    # max does not depend on the order of the atomics
    pid = tl.program_id(0)
    tl.atomic_max(out, tl.max(tl.load(x + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))


@triton.jit
def t_cl_barrier_scratch(x, scratch, out, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    base = scratch + pid * BLOCK
    tl.store(base + offs, tl.load(x + pid * BLOCK + offs))
    tl.debug_barrier()
    tl.store(out + pid * BLOCK + offs, tl.load(base + (offs + BLOCK // 2) % BLOCK))


@triton.jit
def t_cl_dot(a, b, c, M: tl.constexpr):
    r = tl.arange(0, M)
    x = tl.load(a + r[:, None] * M + r[None, :])
    y = tl.load(b + r[:, None] * M + r[None, :])
    tl.store(c + r[:, None] * M + r[None, :], tl.dot(x, y))


@triton.jit
def t_cl_softmax(x, out, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = row * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs)
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + offs, e / tl.sum(e, axis=0))


# ------------------------------------------------------------ harness
def _dev():
    return "cuda" if torch.cuda.is_available() else "cpu"


def _ints(n, seed=1, hi=1000):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, hi, (n,), generator=g, dtype=torch.int32).to(_dev())


def _floats(n, seed=2):
    """Mixed magnitudes: the order of float additions changes the rounding."""
    g = torch.Generator().manual_seed(seed)
    v = 1.0 + torch.randint(0, 1000, (n,), generator=g).float() / 1000.0
    big = torch.randint(0, 4, (n,), generator=g) == 0
    sign = torch.randint(0, 2, (n,), generator=g) * 2 - 1
    return torch.where(big, sign.float() * 1e7, v).to(_dev())


def _zeros(n, dtype=torch.int32):
    return torch.zeros(n, dtype=dtype, device=_dev())


def _ascending_blocks(progs):
    """Program p's elements peak at 400 - 100 p: the program that must win
    the max is the first, so a lost update shows when a later one stores last."""
    return (torch.arange(progs * B, dtype=torch.int32) % B + (progs - torch.arange(progs * B) // B) * 100
            ).to(torch.int32).to(_dev())


_WARM = False  # True: _launch compiles (warmup) and launches nothing


def _launch(k, grid, *args, **kw):
    if _WARM:
        k.warmup(*args, grid=grid, **kw)
    else:
        k[grid](*args, **kw)


def _run(name):
    """Launches kernel NAME once on fresh inputs (with _WARM: compiles it
    for them); returns its outputs."""
    k = globals()[name]
    if name == "t_lu_sum_2bins":
        x, o = _ints(4 * B), _zeros(2)
        _launch(k, (4,), x, o, BLOCK=B)
    elif name == "t_lu_count_1bin":
        x, o = _ints(3 * B), _zeros(1)
        _launch(k, (3,), x, o, BLOCK=B)
    elif name == "t_lu_hist_4bins":
        x, o = _ints(8 * B), _zeros(4)
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_lu_max":
        x, o = _ascending_blocks(4), _zeros(1)
        _launch(k, (4,), x, o, BLOCK=B)
    elif name == "t_lu_fsum":
        x, o = _floats(4 * B), _zeros(1, torch.float32)
        _launch(k, (4,), x, o, BLOCK=B)
    elif name == "t_lu_rows_2d":
        x, o = _ints(6 * B), _zeros(2)
        _launch(k, (2, 3), x, o, BLOCK=B)
    elif name == "t_lw_scalar":
        o = _zeros(1)
        _launch(k, (4,), o)
    elif name == "t_lw_overlap":
        x, o = _floats(8 * B // 2 + B), _zeros(8 * B // 2 + B, torch.float32)
        _launch(k, (8,), x, o, o.numel(), BLOCK=B)
    elif name == "t_lw_scatter_dup":
        x, o = _ints(4 * B), _zeros(64)
        _launch(k, (4,), x, o, BLOCK=B)
    elif name == "t_xr_neighbor":
        x, part, o = _ints(8), _zeros(8), _zeros(8)
        _launch(k, (8,), x, part, o)
        return [part, o]
    elif name == "t_xr_chain_scan":
        x, o = _ints(8 * B), _zeros(8)
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_xr_inplace_shift":
        o = _ints(8 * B)
        _launch(k, (8,), o, o.numel(), BLOCK=B)
    elif name == "t_xr_inplace_blur":
        o = _floats(8 * B)
        _launch(k, (8,), o, o.numel(), BLOCK=B)
    elif name in ("t_mb_shift", "t_mb_reverse", "t_mb_loop", "t_cl_barrier_scratch"):
        x, s, o = _ints(4 * 256), _zeros(4 * 256), _zeros(4 * 256)
        _launch(k, (4,), x, s, o, BLOCK=256)
        return [s, o]
    elif name == "t_ig_inplace_reverse":
        o = _ints(4 * 256)
        _launch(k, (4,), o, BLOCK=256)
    elif name == "t_ig_hist_plain":
        x, o = _ints(B), _zeros(8)
        _launch(k, (1,), x, o, BLOCK=B)
    elif name == "t_fa_sum":
        x, o = _floats(8 * B), _zeros(1, torch.float32)
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_fa_elem":
        x, o = _floats(4 * B), _zeros(1, torch.float32)
        _launch(k, (4,), x, o, BLOCK=B)
    elif name == "t_fa_hist":
        kk, x, o = _ints(8 * B), _floats(8 * B), _zeros(8, torch.float32)
        _launch(k, (8,), kk, x, o, BLOCK=B)
    elif name == "t_fa_index_add":
        idx, src, o = _ints(16), _floats(16 * B), _zeros(4 * B, torch.float32)
        _launch(k, (16,), idx, src, o, BLOCK=B)
    elif name == "t_cl_slots":
        x, o = _ints(8 * B), _zeros(8)
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_cl_int_atomic_sum":
        x, o = _ints(8 * B), _zeros(2)
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_cl_int_atomic_hist":
        x, o = _ints(8 * B), _zeros(8)
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_cl_cumsum":
        x, o = _ints(8 * B), _zeros(8 * B)
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_cl_atomic_max":
        x, o = _floats(8 * B), torch.full((1,), -3e38, device=_dev())
        _launch(k, (8,), x, o, BLOCK=B)
    elif name == "t_cl_dot":
        a = (_ints(32 * 32, 3, 8).float() / 8).half()
        b = (_ints(32 * 32, 4, 8).float() / 8).half()
        o = _zeros(32 * 32, torch.float32)
        _launch(k, (1,), a, b, o, M=32)
    elif name == "t_cl_softmax":
        x, o = _floats(4 * B) / 1e7, _zeros(4 * B, torch.float32)
        _launch(k, (4,), x, o, BLOCK=B)
    else:
        raise KeyError(name)
    return [o]


# name, class, expected: the manifest (run_gpu_races_sass.sh reads `list`)
CASES = [
    ("t_lu_sum_2bins", "lost-update", "race"),
    ("t_lu_count_1bin", "lost-update", "race"),
    ("t_lu_hist_4bins", "lost-update", "race"),
    ("t_lu_max", "lost-update", "race"),
    ("t_lu_fsum", "lost-update", "race"),
    ("t_lu_rows_2d", "lost-update", "race"),
    ("t_lw_scalar", "last-writer", "race"),
    ("t_lw_overlap", "last-writer", "race"),
    ("t_lw_scatter_dup", "last-writer", "race"),
    ("t_xr_neighbor", "cross-read", "race"),
    ("t_xr_chain_scan", "cross-read", "race"),
    ("t_xr_inplace_shift", "cross-read", "race"),
    ("t_xr_inplace_blur", "cross-read", "race"),
    ("t_mb_shift", "missing-barrier", "race"),
    ("t_mb_reverse", "missing-barrier", "race"),
    ("t_mb_loop", "missing-barrier", "race"),
    ("t_ig_inplace_reverse", "intra-global", "race"),
    ("t_ig_hist_plain", "intra-global", "race"),
    ("t_fa_sum", "float-atomic", "nondeterminism"),
    ("t_fa_elem", "float-atomic", "nondeterminism"),
    ("t_fa_hist", "float-atomic", "nondeterminism"),
    ("t_fa_index_add", "float-atomic", "nondeterminism"),
    ("t_cl_slots", "clean", "clean"),
    ("t_cl_int_atomic_sum", "clean", "clean"),
    ("t_cl_int_atomic_hist", "clean", "clean"),
    ("t_cl_cumsum", "clean", "clean"),
    ("t_cl_atomic_max", "clean", "clean"),
    ("t_cl_barrier_scratch", "clean", "clean"),
    ("t_cl_dot", "clean", "clean"),
    ("t_cl_softmax", "clean", "clean"),
]


def main(argv):
    if len(argv) >= 1 and argv[0] == "list":
        for c in CASES:
            print(*c)
        return 0
    if len(argv) < 2 or argv[0] != "run":
        print(__doc__, file=sys.stderr)
        return 2
    if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        print("kernels.py: no CUDA", file=sys.stderr)
        return 2
    global _WARM
    names = {c[0] for c in CASES}
    todo = argv[1:]
    rc = 0
    if todo and todo[0] == "--drop-ptx":
        todo = todo[1:]
        cache = os.environ.get("TRITON_CACHE_DIR", "")
        if not cache:
            print("kernels.py: --drop-ptx needs TRITON_CACHE_DIR", file=sys.stderr)
            return 2
        if os.environ.get("TRITON_INTERPRET") != "1":  # the interpreter compiles nothing
            _WARM = True
            for name in todo:
                try:
                    if name in names:
                        _run(name)
                except Exception as e:
                    print(f"ERROR {name} warmup {type(e).__name__}: {e}", flush=True)
            _WARM = False
        dropped = 0
        for d, _, files in os.walk(cache):
            for f in files:
                if f.endswith(".ptx"):
                    os.unlink(os.path.join(d, f))
                    dropped += 1
        print("DROPPED", dropped, flush=True)
    for name in todo:
        if name not in names:
            print(f"ERROR {name} no such kernel", flush=True)
            rc = 1
            continue
        try:
            outs = _run(name)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            h = hashlib.sha1()
            for o in outs:
                h.update(o.cpu().contiguous().numpy().tobytes())
            print(f"RESULT {name} {h.hexdigest()[:16]}", flush=True)
        except Exception as e:  # one kernel's failure must not hide the rest
            print(f"ERROR {name} {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
