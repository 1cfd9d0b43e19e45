"""kcheck front end: run a program under libkcheck.so and read its reports.

  kcheck run [--torch] [-o key=value ...] [--lib PATH] -- CMD ...   run CMD under kcheck
  kcheck options                                        list KCHECK_OPTIONS
  kcheck gates                                          list the gates
  kcheck report FILE...                                 summarize JSONL reports
  kcheck contract lint FILE|DIR...                      validate contract files
  kcheck gen -g GEN -s SEED -f FMT --shape R,C [...]     regenerate a violation's inputs
"""
import argparse
import json
import os
import subprocess
import sys

from kcheck._lib import find_library


def find_lib(explicit):
    path = find_library(explicit)
    if path is None:
        sys.exit("kcheck: libkcheck.so not found (build with `make`, or pass --lib / KCHECK_LIB)")
    return path


def cmd_run(args):
    if not args.cmd:
        sys.exit("kcheck: nothing to run (kcheck run -- CMD ...)")
    lib = find_lib(args.lib)
    env = dict(os.environ)
    opts = [o for o in env.get("KCHECK_OPTIONS", "").split(":") if o]
    opts += args.option or []
    if args.torch:
        # the library's constructor puts the binding's boot folder on
        # PYTHONPATH; KCHECK_PYTHON tells it where this package lives
        opts.append("torch=1")
        env.setdefault("KCHECK_PYTHON", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if opts:
        env["KCHECK_OPTIONS"] = ":".join(opts)
    preload = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = lib + (" " + preload if preload else "")
    cmd = args.cmd[1:] if args.cmd[0] == "--" else args.cmd
    try:
        return subprocess.call(cmd, env=env)
    except FileNotFoundError:
        sys.exit("kcheck: command not found: %s" % cmd[0])


def cmd_options(args):
    import ctypes
    lib = ctypes.CDLL(find_lib(args.lib))
    lib.kcheck_print_options()
    return 0


def cmd_gates(args):
    import ctypes
    lib = ctypes.CDLL(find_lib(args.lib))
    lib.kcheck_print_gates()
    return 0


def cmd_contract(args):
    # libkcheck.so activates lazily (on the first CUDA call), so loading it
    # here only to parse YAML starts nothing and needs no driver.
    import ctypes
    lib = ctypes.CDLL(find_lib(args.lib))
    lib.kcheck_contract_lint.argtypes = [ctypes.c_char_p]
    lib.kcheck_contract_lint.restype = ctypes.c_int
    errors = 0
    for path in args.files:
        if not os.path.exists(path):
            print("%s: error: no such file or directory" % path, file=sys.stderr)
            errors += 1
            continue
        sys.stderr.flush()
        errors += lib.kcheck_contract_lint(path.encode())
    if errors:
        print("%d error%s" % (errors, "" if errors == 1 else "s"), file=sys.stderr)
        return 1
    return 0


# Element decoders for `kcheck gen` (little-endian bit patterns).
def _decode(fmt, raw):
    import struct
    if fmt in ("fp64", "float64", "double"):
        return struct.unpack("<d", raw)[0]
    if fmt in ("fp32", "float32", "float", "tf32"):
        return struct.unpack("<f", raw)[0]
    if fmt in ("fp16", "float16", "half"):
        return struct.unpack("<e", raw)[0]
    if fmt in ("bf16", "bfloat16"):
        return struct.unpack("<f", b"\0\0" + raw)[0]
    return None  # fp8: printed as hex only


def cmd_gen(args):
    """Regenerates inputs exactly as a trial fed them to a kernel: input k
    of a violation whose exposed_by says generator G, transform T, seed S is
    `kcheck gen -g G -t T -s S+k -f FORMAT --shape ROWS,COLS --role R`."""
    import ctypes
    lib = ctypes.CDLL(find_lib(args.lib))
    lib.kcheck_generate.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                    ctypes.c_longlong, ctypes.c_longlong, ctypes.c_ulonglong,
                                    ctypes.c_void_p]
    lib.kcheck_generate.restype = ctypes.c_int
    try:
        dims = [int(d) for d in args.shape.split(",")]
    except ValueError:
        sys.exit("kcheck gen: --shape wants integers, e.g. 16,1000")
    if not dims or any(d < 0 for d in dims):
        sys.exit("kcheck gen: --shape wants non-negative integers")
    cols = dims[-1]
    rows = 1
    for d in dims[:-1]:
        rows *= d
    esize = {"fp64": 8, "float64": 8, "double": 8, "fp16": 2, "float16": 2, "half": 2,
             "bf16": 2, "bfloat16": 2, "e4m3fn": 1, "e4m3": 1, "e5m2": 1}.get(args.format, 4)
    buf = ctypes.create_string_buffer(max(1, rows * cols * esize))
    if lib.kcheck_generate(args.generator.encode(), args.transform.encode(), args.format.encode(),
                           args.role, rows, cols, args.seed, buf):
        sys.exit("kcheck gen: unknown generator, transform or format "
                 "(generators: uniform all_positive stagnation fp16_overflow large_mean "
                 "large_logits specials duplicates cancel; transforms: none huge tiny "
                 "subnormal zeros)")
    raw = buf.raw[:rows * cols * esize]
    if args.raw:
        with open(args.raw, "wb") as f:
            f.write(raw)
        return 0
    for i in range(rows * cols):
        b = raw[i * esize:(i + 1) * esize]
        v = _decode(args.format, b)
        idx, rest = [], i
        for d in reversed(dims):
            idx.append(rest % d if d else 0)
            rest //= d if d else 1
        print("%s\t0x%s\t%s" % (",".join(str(x) for x in reversed(idx)), b[::-1].hex(),
                                  "" if v is None else repr(v)))
    return 0


def cmd_report(args):
    status = 0
    for path in args.files:
        counts, kernels, violations, summary = {}, {}, [], None
        with open(path) as f:
            for n, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    print("%s:%d: not JSON (truncated by a crash?)" % (path, n))
                    status = 1
                    continue
                t = rec.get("type")
                counts[t] = counts.get(t, 0) + 1
                if t == "kernel":
                    kernels[rec["id"]] = rec["demangled"]
                elif t == "violation":
                    violations.append(rec)
                elif t == "summary":
                    summary = rec
        print("%s: %s" % (path, ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()))))
        for v in violations:
            print("  violation [%s] in %s: %s" % (v.get("gate"), kernels.get(v.get("kernel"), "?"),
                                                  v.get("message", "")))
            ev = v.get("evidence") or {}
            if ev.get("verdict_line"):
                print("    " + ev["verdict_line"])
            exp = ev.get("exposed_by")
            if exp and exp.get("inputs") == "generated":
                how = exp.get("generator", "?") + (
                    " (%s)" % exp["transform"] if exp.get("transform") else "")
                scal = ", ".join("%s=%s" % kv for kv in (exp.get("scalars") or {}).items())
                print("    exposed by generated inputs: %s, seed %s; %s" % (how, exp.get("seed"), scal))
        if summary is None:
            print("  no summary record: the process did not exit normally")
        elif summary.get("violations"):
            status = 1
    return status


def main():
    p = argparse.ArgumentParser(prog="kcheck", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", help="path to libkcheck.so")
    sub = p.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run", help="run a command under kcheck")
    r.add_argument("-o", "--option", action="append", help="a KCHECK_OPTIONS key=value (repeatable)")
    r.add_argument("--torch", action="store_true",
                   help="check PyTorch programs op by op (the binding, kcheck.torch)")
    r.add_argument("cmd", nargs=argparse.REMAINDER)
    sub.add_parser("options", help="print the option table")
    sub.add_parser("gates", help="list the gates and their contracts")
    rp = sub.add_parser("report", help="summarize report files")
    rp.add_argument("files", nargs="+")
    cp = sub.add_parser("contract", help="contract files")
    csub = cp.add_subparsers(dest="contract_verb", required=True)
    cl = csub.add_parser("lint", help="validate contract files (FILE:LINE:COL: error: ...)")
    cl.add_argument("files", nargs="+")
    g = sub.add_parser("gen", help="regenerate the inputs a violation's exposed_by names")
    g.add_argument("-g", "--generator", required=True, help="exposed_by.generator")
    g.add_argument("-t", "--transform", default="none", help="exposed_by.transform (none)")
    g.add_argument("-s", "--seed", type=int, required=True, help="exposed_by.seed + k for input k")
    g.add_argument("-f", "--format", default="fp32", help="the input's format (fp32)")
    g.add_argument("--shape", required=True, help="the input's shape, e.g. 16,1000")
    g.add_argument("--role", type=int, default=0,
                   help="0: first input or matmul A; 1: second or matmul B; 2: later ones")
    g.add_argument("--raw", help="write the packed bytes to this file instead of printing")
    args = p.parse_args()
    return {"run": cmd_run, "options": cmd_options, "gates": cmd_gates,
            "report": cmd_report, "contract": cmd_contract, "gen": cmd_gen}[args.verb](args)
