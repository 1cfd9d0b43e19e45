#!/usr/bin/env python3
"""test/gpu/torch_attention_grad.py — SDPA's backward under the binding on
the GPU at a GPT step's sizes (batch 16, heads 8, seq 256, head dim 64):
flash (bf16, fp16), memory-efficient (fp32, bf16) and cuDNN (bf16, where
this machine has it) forward + backward, causal and not, and grouped-query
attention (8 query heads over 2 key/value heads) where a backend takes it,
every output of
each backward op (dq, dk, dv) judged by the oracle's attention_backward
and passing; a planted custom backward that drops D_i = rowsum(dO o),
declared by a torch_op contract, caught by the oracle with its Python
line, its correct twin silent.

  python3 torch_attention_grad.py --all OUTDIR   run under `kcheck run --torch`
                                                 (scripts/kcheck, KCHECK_LIB or
                                                 build/libkcheck.so), then check
  python3 torch_attention_grad.py                the program itself
  python3 torch_attention_grad.py --check R...   check kcheck's report(s) R

Prints PASS/FAIL/INFO lines; exits 1 on any FAIL.
"""
import glob
import os
import re
import subprocess
import sys

from torch_check import load  # the reports' records (test/gpu, this script's folder)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEV = os.environ.get("KC_ATTN_DEVICE", "cuda")  # cpu: a smoke run of the script's own paths
B, H, S, D = 16, 8, 256, 64
# (backend, dtype): the backward op each must reach
CASES = [("FLASH_ATTENTION", "bfloat16", "_scaled_dot_product_flash_attention_backward"),
         ("FLASH_ATTENTION", "float16", "_scaled_dot_product_flash_attention_backward"),
         ("EFFICIENT_ATTENTION", "float32", "_scaled_dot_product_efficient_attention_backward"),
         ("EFFICIENT_ATTENTION", "bfloat16", "_scaled_dot_product_efficient_attention_backward"),
         ("CUDNN_ATTENTION", "bfloat16", "_scaled_dot_product_cudnn_attention_backward")]
# grouped-query attention (8 query heads over 2 key/value heads), where the
# backend takes it
GQA = [("FLASH_ATTENTION", "bfloat16"), ("EFFICIENT_ATTENTION", "float32"),
       ("CUDNN_ATTENTION", "bfloat16")]
CONTRACTS = """contracts:
  - {torch_op: "kcagb::attn_bwd_nod", op: attention_backward, args: {q: q, k: k, v: v, o: o, g: g, lse: lse, out: "0"}, attrs: {which: q, causal: true, scale: 0.125}, profile: fp32}
  - {torch_op: "kcagb::attn_bwd_ok", op: attention_backward, args: {q: q, k: k, v: v, o: o, g: g, lse: lse, out: "0"}, attrs: {which: q, causal: true, scale: 0.125}, profile: fp32}
"""


def drain():
    """Waits for the binding's pending judgments: it defers a new signature
    while its workers hold many (host copies of GPT-size tensors), and
    each signature here is called once."""
    try:
        from concurrent.futures import wait
        from kcheck.torch import mode
        if mode._MODE is not None:
            wait(list(mode._MODE.futures), timeout=300)
    except ImportError:  # not under kcheck
        pass


def program():
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    for backend, dt, op in CASES:
        for causal in (False, True):
            try:
                with sdpa_kernel(getattr(SDPBackend, backend)):
                    q, k, v = (torch.randn(B, H, S, D, device=DEV, dtype=getattr(torch, dt),
                                           requires_grad=True) for _ in range(3))
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    o.backward(torch.randn_like(o))
                if DEV == "cuda":
                    torch.cuda.synchronize()
                print("RAN %s %s causal=%d" % (backend, dt, causal), flush=True)
                drain()
            except RuntimeError as e:  # a backend this machine lacks
                print("SKIPPED %s %s causal=%d: %s" % (backend, dt, causal,
                                                       str(e).splitlines()[0][:200]), flush=True)

    for backend, dt in GQA:
        try:
            with sdpa_kernel(getattr(SDPBackend, backend)):
                q = torch.randn(B, H, S, D, device=DEV, dtype=getattr(torch, dt),
                                requires_grad=True)
                k, v = (torch.randn(B, 2, S, D, device=DEV, dtype=getattr(torch, dt),
                                    requires_grad=True) for _ in range(2))
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                o.backward(torch.randn_like(o))
            if DEV == "cuda":
                torch.cuda.synchronize()
            print("RAN-GQA %s %s" % (backend, dt), flush=True)
            drain()
        except RuntimeError as e:
            print("SKIPPED-GQA %s %s: %s" % (backend, dt, str(e).splitlines()[0][:200]),
                  flush=True)

    def grads(q, k, v, o, g, lse, drop_d):
        qd, kd, vd, od, gd = (t.double() for t in (q, k, v, o, g))
        s = qd @ kd.transpose(-1, -2) * 0.125
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1),
                          float("-inf"))
        p = torch.exp(s - lse.double().unsqueeze(-1))
        dp = gd @ vd.transpose(-1, -2)
        d = (gd * od).sum(-1, keepdim=True)
        ds = p * dp if drop_d else p * (dp - d)  # the bug: D_i dropped
        return ((ds @ kd) * 0.125).float(), ((ds.transpose(-1, -2) @ qd) * 0.125).float(), \
            (p.transpose(-1, -2) @ gd).float()

    @torch.library.custom_op("kcagb::attn_bwd_nod", mutates_args=())
    def attn_bwd_nod(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                     g: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                  torch.Tensor]:
        return grads(q, k, v, o, g, lse, True)

    @torch.library.custom_op("kcagb::attn_bwd_ok", mutates_args=())
    def attn_bwd_ok(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
                    g: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                 torch.Tensor]:
        return grads(q, k, v, o, g, lse, False)

    q, k, v = (torch.randn(2, H, S, D, device=DEV) for _ in range(3))
    with torch.no_grad():  # the forward's o and logsumexp, in double (no kernel's convention)
        s = (q.double() @ k.double().transpose(-1, -2) * 0.125).masked_fill(
            torch.ones(S, S, dtype=torch.bool, device=DEV).triu(1), float("-inf"))
        lse = torch.logsumexp(s, -1)
        o = (torch.exp(s - lse.unsqueeze(-1)) @ v.double()).float()
        lse = lse.float()
    g = torch.randn_like(o)
    drain()
    for _ in range(2):  # a second call is checked if the first was deferred anyway
        attn_bwd_nod(q, k, v, o, g, lse)  # the planted bug
        attn_bwd_ok(q, k, v, o, g, lse)
    if DEV == "cuda":
        torch.cuda.synchronize()
    print("ran")


def check(paths, ran_text=""):
    recs = load(paths)
    bad = 0

    def say(ok, what):
        nonlocal bad
        bad += not ok
        print("%s %s" % ("PASS" if ok else "FAIL", what))

    checks = [r for r in recs if r["type"] == "op_check"]
    viol = [r for r in recs if r["type"] == "violation"]
    ran = {tuple(l.split()[1:3]) for l in ran_text.splitlines() if l.startswith("RAN ")}
    for l in ran_text.splitlines():
        if l.startswith(("SKIPPED", "RAN-GQA")):
            print("INFO " + l)
    for backend, dt, op in CASES:
        mine = [c for c in checks if c["op"].startswith("aten::%s." % op) and
                (re.search(r"torch\.(\w+),", c.get("key", "")) or [None, None])[1] == dt]
        if ran_text and (backend, dt) not in ran:
            continue  # the machine has no such kernel (INFO above)
        if not mine:
            say(False, "%s %s: no op_check of %s (ran: %s)" % (backend, dt, op,
                                                             (backend, dt) in ran))
            continue
        for c in mine:
            o = c["gates"].get("oracle") or {}
            outs = o.get("outputs") or []
            labels = [x["label"] for x in outs]
            classes = {x["label"]: x["class"] for x in outs}
            ok = labels == ["dq", "dk", "dv"] and set(classes.values()) <= {"pass", "bitwise"}
            say(ok, "%s %s %s: %s; %s" % (backend, dt, op, classes or o.get("status"),
                                          o.get("verdict", o.get("reason", ""))[:240]))
    att = [v for v in viol if "attention" in v.get("op", "")]
    say(not att, "no violation on the SDPA ops (%d)" % len(att) + (
        ": " + "; ".join("%s %s" % (v.get("op"), (v.get("evidence") or {}).get("verdict_line",
                                                                              "")[:160])
                         for v in att[:3]) if att else ""))
    src = open(os.path.abspath(__file__)).read().splitlines()
    line = next(i + 1 for i, t in enumerate(src) if t.strip().endswith("# the planted bug")
                and t.strip().startswith("attn_bwd_nod(q"))
    nod = [v for v in viol if v.get("op") == "kcagb::attn_bwd_nod.default"]
    lines = sorted({f.get("line") for v in nod for f in (v.get("stack") or {}).get("python", [])})
    say(any(v.get("gate") == "oracle" for v in nod) and line in lines,
        "planted backward without D caught by the oracle at line %d (lines %s)" % (line, lines))
    okc = [c for c in checks if c["op"] == "kcagb::attn_bwd_ok.default"]
    okv = [v for v in viol if v.get("op") == "kcagb::attn_bwd_ok.default"]
    say(bool(okc) and not okv and all((c["gates"].get("oracle") or {}).get("class") in
                                      ("pass", "bitwise") for c in okc),
        "correct twin silent (%s)" % [(c["gates"].get("oracle") or {}).get("verdict", "")[:160]
                                      for c in okc])
    return 1 if bad else 0


def run_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    yaml = os.path.join(outdir, "attn_grad_contracts.yaml")
    with open(yaml, "w") as f:
        f.write(CONTRACTS)
    prefix = os.path.join(outdir, "attn_grad")
    for p in glob.glob(prefix + ".*.jsonl"):
        os.unlink(p)
    env = dict(os.environ)
    env.setdefault("KCHECK_LIB", os.path.join(ROOT, "build", "libkcheck.so"))
    opts = ["log_path=" + prefix, "torch_budget=1", "contracts=" + yaml]
    if DEV == "cpu":
        opts.append("torch_devices=cuda,cpu")
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "kcheck"), "run", "--torch"]
    for o in opts:
        cmd += ["-o", o]
    cmd += ["--", sys.executable, os.path.abspath(__file__)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=580, cwd=ROOT)
    with open(os.path.join(outdir, "attn_grad.out"), "w") as f:
        f.write(p.stdout)
    with open(os.path.join(outdir, "attn_grad.err"), "w") as f:
        f.write(p.stderr)
    sys.stdout.write(p.stdout)
    tail = [l for l in p.stderr.splitlines() if l.startswith("kcheck")][-4:]
    for l in tail:
        print("INFO " + l)
    if p.returncode != 0:
        print("FAIL the program under kcheck exited %d (see %s/attn_grad.err)" % (p.returncode,
                                                                                   outdir))
        print(p.stderr[-2000:])
        return 1
    return check(glob.glob(prefix + ".*.jsonl"), p.stdout)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--all":
        sys.exit(run_all(sys.argv[2]))
    if len(sys.argv) > 2 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2:]))
    program()
