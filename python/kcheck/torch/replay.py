"""python -m kcheck.torch.replay FILE — the inputs of a binding's finding.

A violation on the application's own inputs names a FILE (its
"regenerate" field) holding the host copies of the op's inputs and output.
This prints what the file holds, rebuilds the tensors (torch.as_strided
over the saved storage spans: exactly the bytes the op read) and asks
libkcheck's oracle for the verdict again. In your own code:
kcheck.torch.replay.load(FILE) gives {"inputs": {name: tensor}, "output":
tensor, "op", "oracle_op", "profile", "attrs", "settings"}.
"""
import ctypes
import sys

import torch


def load(path):
    d = torch.load(path, weights_only=False)
    ins = {name: torch.as_strided(flat, shape, strides) for name, flat, shape, strides in d["inputs"]}
    flat, shape, strides = d["output"]
    return dict(d, inputs=ins, output=torch.as_strided(flat, shape, strides))


def rejudge(path):
    """The oracle's verdict line on the saved tensors (libkcheck loaded
    with ctypes; no GPU needed)."""
    from kcheck import _api
    from kcheck._lib import LibraryError, find_library
    try:
        lib = find_library()
    except LibraryError as e:
        return str(e)
    if lib is None:
        return "libkcheck.so not found (KCHECK_LIB)"
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    api = _api.api()
    d = torch.load(path, weights_only=False)
    keep = []

    def tensor(name, flat, shape, strides):
        cs, st = (ctypes.c_long * len(shape))(*shape), (ctypes.c_long * len(shape))(*strides)
        keep.extend([flat, cs, st])
        return _api.Tensor(name.encode(), flat.data_ptr(), _fmt(flat.dtype).encode(), len(shape),
                           cs, st)
    arr = (_api.Tensor * max(1, len(d["inputs"])))(*[tensor(*i) for i in d["inputs"]])
    out = tensor("out", *d["output"])
    from kcheck.torch.judge import _attr_text
    attrs = " ".join("%s=%s" % (k, _attr_text(v)) for k, v in d["attrs"].items())
    res = ctypes.create_string_buffer(4096)
    api.kcheck_op_judge(b"oracle", d["oracle_op"].encode(), d["profile"].encode(), attrs.encode(),
                        len(d["inputs"]), arr, ctypes.byref(out), 1 << 30, None, res, len(res))
    return res.value.decode()


def _fmt(dtype):
    from kcheck.torch import profiles
    return profiles.fmt(dtype)


def main(argv):
    if len(argv) != 1:
        print(__doc__)
        return 2
    d = load(argv[0])
    print("op %s (oracle %s), profile %s, attrs %s" % (d["op"], d["oracle_op"], d["profile"],
                                                      d["attrs"]))
    print("settings %s" % d.get("settings"))
    for name, t in d["inputs"].items():
        print("input %s: %s %s strides %s" % (name, t.dtype, list(t.shape), list(t.stride())))
    print("output: %s %s" % (d["output"].dtype, list(d["output"].shape)))
    print("verdict: %s" % rejudge(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
