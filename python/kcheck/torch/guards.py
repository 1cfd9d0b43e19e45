"""The guard-zone allocator (libkcheck's kcheck_guard_*, include/kcheck.h)
as PyTorch's CUDA allocator, for the audit's bounds gate (docs/audit.md).

PyTorch's caching allocator packs tensors next to each other in 2 MiB
segments (a MemPool too splits its segments into blocks), so a kernel's
store past a tensor's end lands in another tensor or in free memory and
goes unseen. Installed through torch.cuda.memory.CUDAPluggableAllocator
before CUDA is initialised, every allocation is a driver allocation of
its own, its data between zones of 0xCB bytes (256 before, 256 and the
rounding to 256 bytes after); check() reads the zones back. It replaces
the allocator for the whole process and cannot be undone: the audit
installs it in a candidate's own process only.

Costs: a driver allocation, two or three memsets per tensor; at each free
a device synchronisation and two small copies (a temporary's zones are
read before it goes); no caching (cuMemAlloc/cuMemFree each time).
"""
import ctypes
import json
import os

_ALLOCATOR = None  # the installed CUDAPluggableAllocator, kept alive
# the most damaged allocations one check returns (kcheck_guard_check)
MAX_REPORTED = 16


def library_path():
    """The path of the libkcheck.so mapped into this process, or None."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()) == "libkcheck.so":
                    return parts[5].strip()
    except OSError:
        pass
    return None


def install(device):
    """Makes the guard-zone allocator PyTorch's CUDA allocator for this
    process: None once installed, else why it cannot be (the gate is then
    not run, never passed). Must come before any CUDA allocation."""
    global _ALLOCATOR
    if _ALLOCATOR is not None:
        return None
    import torch
    from kcheck import _api
    dev = torch.device(device)
    if dev.type != "cuda":
        return "the device is %s: the guard zones are around CUDA allocations" % dev.type
    lib = _api.api()
    if lib is None or not hasattr(lib, "kcheck_guard_alloc"):
        return "no libkcheck.so with the guard-zone allocator is loaded"
    mem = getattr(torch.cuda, "memory", None)
    if not hasattr(mem, "CUDAPluggableAllocator") or not hasattr(mem, "change_current_allocator"):
        return "PyTorch %s has no CUDAPluggableAllocator" % torch.__version__
    if not torch.cuda.is_available():
        return "no CUDA device is available"
    if torch.cuda.is_initialized():
        return "CUDA was initialised before the guard-zone allocator could be installed " \
               "(PyTorch's allocator cannot be swapped once in use)"
    path = library_path()
    if path is None:
        return "the path of the loaded libkcheck.so was not found (/proc/self/maps)"
    try:
        alloc = mem.CUDAPluggableAllocator(path, "kcheck_guard_alloc", "kcheck_guard_free")
        mem.change_current_allocator(alloc)
    except Exception as e:  # an allocator already in use, an older torch
        return "PyTorch refused the allocator: %s: %s" % (type(e).__name__, str(e)[:200])
    _ALLOCATOR = alloc
    return None


def active():
    """Is the guard-zone allocator PyTorch's CUDA allocator in this process?"""
    return _ALLOCATOR is not None


def fill(byte):
    """Each new allocation's data is filled with byte (-1: none) from now
    on: a fresh output's unwritten elements hold it (the coverage gate's
    poison, where no pool block can be poisoned beforehand). Returns the
    previous byte."""
    from kcheck import _api
    return _api.api().kcheck_guard_fill(int(byte))


class CheckError(Exception):
    """The driver failed while the guard zones were read."""


def check():
    """(count, [damage]) of the allocations whose guard bytes changed since
    the last check, freed ones included (kcheck_guard_check: at most
    MAX_REPORTED listed). Raises CheckError when the driver failed."""
    from kcheck import _api
    buf = ctypes.create_string_buffer(512 * MAX_REPORTED)
    n = _api.api().kcheck_guard_check(buf, len(buf))
    text = buf.value.decode(errors="replace")
    if n < 0:
        raise CheckError("reading the guard zones failed: %s" % text)
    return n, (json.loads(text) if n else [])


def attribute(damage, tensors):
    """damage (one entry of check()) as bounds evidence: the tensor of
    `tensors` ({name: tensor}) whose storage it is, its shape and dtype,
    else an allocation no named tensor holds (a temporary, or a generated
    input or output of a gate's run)."""
    ev = {k: damage[k] for k in ("side", "bytes_past_end", "bytes_before_start",
                                 "changed_bytes_before", "changed_bytes_after", "freed")
          if k in damage}
    ev.update(verdict="out_of_bounds", tensor_bytes=damage["size"], written=damage["written"])
    for name, t in tensors.items():
        try:
            ptr = t.untyped_storage().data_ptr()
        except Exception:
            continue
        if ptr == damage["ptr"]:
            ev.update(tensor=name, shape=list(t.shape), dtype=str(t.dtype).replace("torch.", ""))
            break
    else:
        ev["tensor"] = "an allocation of %d bytes no input or output holds%s" % (
            damage["size"], " (freed before the check)" if damage.get("freed") else "")
    return ev


def describe(ev):
    """One line for a damaged allocation's evidence (attribute())."""
    what = ev["tensor"]
    if "shape" in ev:
        what += " (shape %s, %s, %d bytes)" % (tuple(ev["shape"]), ev["dtype"], ev["tensor_bytes"])
    n = ev.get("changed_bytes_before", 0) + ev.get("changed_bytes_after", 0)
    if ev["side"] == "after_end":
        where = "past the end of %s (the first at end + %d)" % (what, ev["bytes_past_end"])
    else:
        where = "before the start of %s (the first at start - %d)" % (
            what, ev["bytes_before_start"])
    return "%d guard bytes changed %s; bytes written from there: %s" % (n, where, ev["written"])
