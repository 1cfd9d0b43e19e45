"""Builds a stand-in cubin: an ELF64 image whose `.text.NAME` sections name
its kernels, as nvcc's and Triton's cubins do. The CPU stand-in binds each
to its C kernel by name; kcheck finds no PTX in it, as in a real cubin."""
import struct


# One SASS instruction (16 bytes) the SASS reader takes for a float atomic
# add from sm_90 on (ATOMG.E.ADD.F32: opcode 0x9a3 in the low 12 bits;
# libkcheck/base/sass_atomics.c).
SASS_FLOAT_ATOMIC_ADD = struct.pack("<QQ", 0x9a3, 0)


def make_cubin(names, tag=b"", text=None):
    """The image's bytes. tag: extra bytes that make otherwise equal images
    differ (a different compile); text: {kernel name: its .text bytes} (SASS
    instructions, 16 bytes each; the others have none)."""
    text = text or {}
    shstr = b"\0.shstrtab\0" + b"".join(b".text." + n.encode() + b"\0" for n in names)
    body = tag + b"\0" * (-len(tag) % 16)
    at_text = {}
    for n in names:
        if n in text:
            at_text[n] = len(body)
            body += text[n] + b"\0" * (-len(text[n]) % 16)
    ehsize, shentsize = 64, 64
    str_off = ehsize + len(body)
    sh_off = (str_off + len(shstr) + 7) // 8 * 8
    nsec = 2 + len(names)
    eh = b"\x7fELF" + bytes([2, 1, 1, 0x33, 7]) + b"\0" * 7
    eh += struct.pack("<HHIQQQIHHHHHH", 2, 190, 1, 0, 0, sh_off, 0x5a055a,
                      ehsize, 0, 0, shentsize, nsec, 1)
    assert len(eh) == ehsize
    secs = [b"\0" * shentsize,
            struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, str_off, len(shstr), 0, 0, 1, 0)]
    at = 11
    for n in names:
        off, size = (ehsize + at_text[n], len(text[n])) if n in at_text else (ehsize, 0)
        secs.append(struct.pack("<IIQQQQIIQQ", at, 1, 6, 0, off, size, 0, 0, 128, 0))
        at += len(".text.") + len(n) + 1
    img = eh + body + shstr
    img += b"\0" * (sh_off - len(img))
    return img + b"".join(secs)


def app_kernel_names(apps_h):
    """The `.entry` names of the test applications' image (test/apps/apps.h)."""
    import re
    with open(apps_h) as f:
        text = f.read()
    return sorted(set(re.findall(r"\.entry \"?\s*\"?([_A-Za-z0-9$.]+)", text)))


def app_ptx(apps_h):
    """The text of the test applications' image (app_ptx in apps.h): the
    PTX a Triton cache entry would keep beside its cubin."""
    import codecs
    import re
    with open(apps_h) as f:
        text = f.read()
    start = text.index("static const char app_ptx[] =")
    body = text[start:start + re.search(r'"\s*;[ \t]*\n', text[start:]).end()]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return codecs.decode("".join(parts), "unicode_escape")
