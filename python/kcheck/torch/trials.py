"""Op-level checks on kcheck's own tensors: the same op (same dtypes,
shapes, strides and non-tensor arguments) re-run on generated inputs.

- nonfinite, precision, extremes: the trials the C gates run for the
  oracle op (kcheck_op_trials: generator, transform, seed), inputs from
  kcheck_generate (input k: seed + k, role 0/1/2 as the C trials), judged
  by the oracle with the gate's failing verdicts;
- coverage: the op run twice on generated inputs with its output memory
  poisoned with two different patterns first (an out= tensor directly; a
  freshly allocated output through a poisoned block of kcheck's private
  memory pool); an element equal to each run's poison was never written.

kcheck's tensors live in a private CUDA memory pool (torch.cuda.MemPool),
never in the program's tensors; the program's results, RNG and autograd
graph are untouched. The pool is made for one check's generated-input part
and dropped after it (MemPool's destructor releases its free blocks), so
torch.cuda.memory_allocated() and memory_reserved() are the program's own
again between ops; the peak statistics (max_memory_allocated/reserved,
one set per device in PyTorch) include kcheck's transient use. Launches of
the re-runs are kcheck's own (kcheck_own_begin/end): not counted or
checked at kernel level.
"""
import contextlib
import ctypes

import torch

from kcheck import _defs
from kcheck.torch import guards, profiles

# The gates run as generated-input trials (gates.def op trials), each
# listing its own (kcheck_op_trials): a new one needs nothing here.
GATES = _defs.OP_TRIAL_GATES
_POOL = None


class OverBudget(Exception):
    """The re-runs would take kcheck over device_mem_budget (the reason)."""


def _reserved(device):
    """The caching allocator's reserved bytes on device. kcheck's pool is
    accounted by their growth while it is active, not by MemPool.snapshot():
    a snapshot of the pool after a backward pass corrupted Python's small-
    object heap on CUDA (torch 2.11; a fault in PyObject_Malloc a few
    hundred checks later, gone with only that call removed:
    test/gpu/results/2026-12-06-s19-validation.md)."""
    try:
        return int(torch.cuda.memory_reserved(device))
    except Exception:  # an allocator that keeps no statistics
        return 0


@contextlib.contextmanager
def own_memory(device, lib=None, estimate=0):
    """kcheck's own allocations: a private pool on CUDA, released when the
    block ends (a block still in use, e.g. a library workspace first
    allocated here, lives on until it is freed); plain on CPU. With lib,
    the pool is kcheck's device memory (category torch_pool): the block
    is refused (OverBudget) when `estimate` bytes do not fit
    device_mem_budget, and the pool's segments are accounted when it
    ends."""
    global _POOL
    if device.type != "cuda" or guards.active():
        # the guard-zone allocator (the audit's bounds gate) caches
        # nothing and has no pools: every block is freed when it goes
        yield
        return
    if lib is not None and estimate:
        why = ctypes.create_string_buffer(256)
        if lib.kcheck_torch_pool(int(estimate), 1, why, len(why)) != 0:
            raise OverBudget(why.value.decode(errors="replace") or "device_mem_budget")
    start = _reserved(device)
    _POOL = torch.cuda.MemPool()
    try:
        with torch.cuda.use_mem_pool(_POOL, device):
            yield
    finally:
        pool, _POOL = _POOL, None
        if lib is not None:
            # the segments reserved while the pool was active are its peak
            # (it frees none before it goes; another thread's new segments
            # meanwhile are counted too), then back to none held
            lib.kcheck_torch_pool(max(0, _reserved(device) - start), 0, None, 0)
            lib.kcheck_torch_pool(0, 0, None, 0)
        del pool  # the last reference: ~MemPool releases its free blocks


def pooled():
    """Are kcheck's allocations going to its private pool now?"""
    return _POOL is not None and torch.cuda.is_initialized()


def trials(lib, gate, op):
    """[(generator, transform, seed)], fail_mask for gate on oracle op."""
    buf = ctypes.create_string_buffer(2048)
    mask = ctypes.c_uint(0)
    n = lib.kcheck_op_trials(gate.encode(), op.encode(), buf, len(buf), ctypes.byref(mask))
    out = []
    for line in buf.value.decode().splitlines()[:max(0, n)]:
        g, t, s = line.split()
        out.append((g, t, int(s)))
    return out, mask.value


# Generated inputs beyond this many elements are made of the generator's
# first rows repeated (row i is generated row i mod R, R a multiple of 64 so
# that K-tile patterns of 16, 32 and 64 stay aligned): host generation costs
# ~15-30 ns an element, which made multi-million-element trials the largest
# cost of the binding on the GPU (test/gpu/results/2026-12-01-torch-cost.md).
# The oracle judges whatever the inputs are exactly, so this only changes
# what the trial exercises, and exposed_by says so.
GEN_CAP = 1 << 18


def tile_rows(rows, cols):
    """R when a rows x cols input is generated as R rows repeated, else None."""
    if rows * cols <= GEN_CAP or rows <= 64:
        return None
    r = -(-max(64, -(-GEN_CAP // max(1, cols))) // 64) * 64
    return r if r < rows else None


def _rows_cols(shape):
    cols = shape[-1] if shape else 1
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return rows, cols


def _expanded(t):
    return any(st == 0 and n > 1 for n, st in zip(t.shape, t.stride()))


def _base_shape(t):
    """The shape generate() fills for t: an expanded (broadcast) argument's
    base (1 along its stride-0 dimensions), else t's own."""
    if _expanded(t):
        return [1 if st == 0 else n for n, st in zip(t.shape, t.stride())]
    return list(t.shape)


def gen_rows(t):
    """The rows kcheck_generate makes for t in generate(): its base's rows
    (every extent but the last), or tile_rows() of them for a large one."""
    rows, cols = _rows_cols(_base_shape(t))
    return tile_rows(rows, cols) or rows


# oracle/adversarial.h's OC_SPECIALS_KINDS: from this many rows on, an input
# of the specials generator holds every special kind (NaN, +Inf, -Inf, a row
# of -0, subnormals, a -0 among +0: row r kind r % 6); below, row r gets
# kind (r + seed) % 6, and the seeds specials_seeds() names give it the rest.
SPECIALS_KINDS = _defs.SPECIALS_KINDS


def specials_seeds(seed, rows):
    """The seeds of the specials runs that give every input of at least
    `rows` rows every kind (oc_specials_runs, oc_specials_seed): [seed]
    from 6 rows on (or none); below, seed + i * rows for i < ceil(6 /
    rows). Input k of each run takes seed + k, as in every trial."""
    if rows <= 0 or rows >= SPECIALS_KINDS:
        return [seed]
    return [seed + i * rows for i in range(-(-SPECIALS_KINDS // rows))]


def generate(lib, gen, transform, t, role, seed):
    """A tensor like t (dtype, shape, strides, device) filled with
    generator gen's values: the packed rows x cols of kcheck_generate
    written into t's elements in row-major order (large inputs: the first
    tile_rows() rows, repeated)."""
    if _expanded(t):
        # an expanded (broadcast) argument: generate its base, expand it again
        base = torch.empty(_base_shape(t), dtype=t.dtype, device=t.device)
        return generate(lib, gen, transform, base, role, seed).expand(t.shape)
    fmt = profiles.fmt(t.dtype)
    shape = list(t.shape)
    rows, cols = _rows_cols(shape)
    tile = tile_rows(rows, cols)
    grow = tile or rows
    host = torch.empty(grow * cols, dtype=t.dtype)
    if host.numel() and lib.kcheck_generate(gen.encode(), transform.encode(), fmt.encode(), role,
                                            grow, cols, seed, ctypes.c_void_p(host.data_ptr())):
        raise ValueError("kcheck_generate refused %s/%s/%s" % (gen, transform, fmt))
    out = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    lib.kcheck_own_begin()  # the copies' launches are kcheck's own
    try:
        if tile:
            dev = host.reshape(grow, cols).to(t.device)
            out.copy_(dev.repeat(-(-rows // grow), 1)[:rows].reshape(shape))
        else:
            out.copy_(host.reshape(t.shape))
    finally:
        lib.kcheck_own_end()
    return out


def regen_command(gen, transform, seed, t, role):
    rows, cols = _rows_cols(list(t.shape))
    tile = tile_rows(rows, cols)
    shape = ",".join(str(d) for d in t.shape) or "1"
    if tile:
        return ("kcheck gen -g %s -t %s -s %d -f %s --shape %d,%d --role %d (rows repeated to "
                "shape %s: row i is row i mod %d)" % (gen, transform, seed, profiles.fmt(t.dtype),
                                                      tile, cols, role, shape, tile))
    return "kcheck gen -g %s -t %s -s %d -f %s --shape %s --role %d" % (
        gen, transform, seed, profiles.fmt(t.dtype), shape, role)


class TensorSpec:
    """A tensor's layout without its data (dtype, shape, strides, device):
    what the generated-input trials need of the application's call when
    they run later (torch_budget), without keeping its tensors alive."""
    __slots__ = ("dtype", "shape", "_stride", "device")

    def __init__(self, t):
        self.dtype, self.shape, self._stride, self.device = t.dtype, t.shape, t.stride(), t.device

    def stride(self):
        return self._stride

    def dim(self):
        return len(self.shape)

    @classmethod
    def contiguous(cls, like, shape):
        """The layout of a contiguous tensor of `shape` with like's dtype
        and device (the shapes gate's variants)."""
        t = cls.__new__(cls)
        t.dtype, t.device = like.dtype, like.device
        t.shape = tuple(int(d) for d in shape)
        st, acc = [], 1
        for d in reversed(t.shape):
            st.append(acc)
            acc *= max(1, d)
        t._stride = tuple(reversed(st))
        return t


def specs(args, kwargs, devices):
    """args and kwargs with every tensor on a checked device replaced by its
    TensorSpec (CPU scalars and other tensors kept: they are small)."""
    def make(t, k):
        return TensorSpec(t) if t.device.type in devices and t.dim() > 0 else t
    return substitute(args, kwargs, make)


def substitute(args, kwargs, make):
    """args and kwargs with every tensor t replaced by make(t, k) (k: the
    tensor's position among the call's tensors)."""
    k = [0]

    def sub(a):
        if isinstance(a, (torch.Tensor, TensorSpec)):
            r = make(a, k[0])
            k[0] += 1
            return r
        if isinstance(a, (list, tuple)):
            return type(a)(sub(x) for x in a)
        return a
    return tuple(sub(a) for a in args), {n: sub(v) for n, v in kwargs.items()}


def role(k):
    return 0 if k == 0 else (1 if k == 1 else 2)
