"""test/gpu/serving/harness.py — a small LLM-serving loop for auditing with
kcheck: a GPT-style model with a static KV cache, eager prefill per new
request, decode steps replayed from CUDA graphs (one per batch bucket),
several request threads feeding a queue, continuous batching (finished
requests leave, waiting ones join at every step). Prints tokens/s and a
sha256 over every generated token (greedy decoding: bitwise reproducible).

Planted bugs (--bug NAME, each with a correct form when NAME ends in _ok):
  graph_race       a Triton kernel whose 2048 programs all store to the same
                   slots (last writer wins), launched only inside the
                   captured decode graph (graph_race_ok: each program
                   stores to its own slots)
  graph_uninit     a Triton kernel inside the decode graph copies from a
                   buffer nothing ever wrote (its own cudaMalloc segment,
                   allocated first) into a scratch buffer
                   (graph_uninit_ok: the buffer is filled eagerly first)
  missing_wait     the prompt is copied host->device on a copy stream and
                   read by the prefill on the compute stream without
                   wait_stream (missing_wait_ok: with it)
  record_stream    a tensor used on a side stream is freed on the main stream
                   without record_stream, and its memory is refilled by the
                   next request's H2D copy while the side stream may still
                   read it (record_stream_ok: with record_stream)
usage: python harness.py [--seconds S] [--threads T] [--bug NAME] [--device cpu]
The cpu device runs the same loop eagerly (no graphs, no streams): a dry run."""
import argparse
import hashlib
import queue
import threading
import time

import torch

VOCAB, D, LAYERS, HEADS, MAXLEN = 512, 256, 4, 4, 96
BUCKETS = (1, 2, 4, 8)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, D)
        self.blocks = torch.nn.ModuleList()
        for _ in range(LAYERS):
            self.blocks.append(torch.nn.ModuleDict({
                "ln1": torch.nn.LayerNorm(D), "qkv": torch.nn.Linear(D, 3 * D),
                "proj": torch.nn.Linear(D, D), "ln2": torch.nn.LayerNorm(D),
                "fc": torch.nn.Linear(D, 4 * D), "out": torch.nn.Linear(4 * D, D)}))
        self.lnf = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, VOCAB, bias=False)

    def forward(self, tok, pos, kc, vc, slots):
        """tok, pos: [B, T]; kc, vc: [L, S, H, MAXLEN, D/H] caches; slots: [B]."""
        B, T = tok.shape
        x = self.emb(tok)
        hd = D // HEADS
        for i, b in enumerate(self.blocks):
            q, k, v = b["qkv"](b["ln1"](x)).view(B, T, 3, HEADS, hd).unbind(2)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            # write this step's keys/values at their positions, read all
            idx = pos[:, None, :, None].expand(B, HEADS, T, hd)
            ks = kc[i].index_select(0, slots).scatter(2, idx, k)
            vs = vc[i].index_select(0, slots).scatter(2, idx, v)
            kc[i].index_copy_(0, slots, ks)
            vc[i].index_copy_(0, slots, vs)
            att = (q @ ks.transpose(-1, -2)) / hd ** 0.5
            mask = torch.arange(MAXLEN, device=tok.device)[None, None, None, :] > pos[:, None, :, None]
            att = att.masked_fill(mask, float("-inf")).softmax(-1)
            y = (att @ vs).transpose(1, 2).reshape(B, T, D)
            x = x + b["proj"](y)
            x = x + b["out"](torch.nn.functional.gelu(b["fc"](b["ln2"](x))))
        return self.head(self.lnf(x))[:, -1].argmax(-1)


def triton_kernels():
    """(racy, ok, copy): racy(x, out) lets every program of x.numel()/64
    store to out[0:64]; ok(x, out) stores program p to out[64p:64p+64];
    copy(x, out) copies out.numel() values of x."""
    import triton
    import triton.language as tl

    @triton.jit
    def last_writer(x_ptr, out_ptr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x_ptr + pid * BLOCK + offs)
        tl.store(out_ptr + offs, v)  # every program stores to the same slots

    @triton.jit
    def own_slots(x_ptr, out_ptr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs))

    @triton.jit
    def copy_block(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)

    return (lambda x, out: last_writer[(x.numel() // 64,)](x, out, BLOCK=64),
            lambda x, out: own_slots[(x.numel() // 64,)](x, out, BLOCK=64),
            lambda x, out: copy_block[(out.numel() // 64,)](x, out, BLOCK=64))


class Server:
    def __init__(self, dev, bug, slots=16):
        torch.manual_seed(0)
        self.dev, self.bug = dev, bug
        self.cuda = dev == "cuda"
        if self.cuda and bug.startswith("graph_uninit"):
            # First and >= 10 MB: a cudaMalloc segment of its own, which
            # nothing else shares (the caching allocator splits smaller
            # requests out of 20 MB segments).
            self.junk = torch.empty(3 << 20, device=dev)
            if bug == "graph_uninit_ok":
                self.junk.fill_(1.0)
        self.model = Model().to(dev).eval()
        hd = D // HEADS
        self.kc = torch.zeros(LAYERS, slots, HEADS, MAXLEN, hd, device=dev)
        self.vc = torch.zeros_like(self.kc)
        self.free_slots = list(range(slots))
        self.graphs = {}
        if self.cuda:
            self.copy_stream = torch.cuda.Stream()
            self.side_stream = torch.cuda.Stream()
            self.in_graph = None
            if bug.startswith("graph_"):
                racy, ok, copy = triton_kernels()
                n = 2048 * 64
                src = torch.arange(n, dtype=torch.float32, device=dev)
                out = torch.zeros(n if bug == "graph_race_ok" else 4096, device=dev)
                # Compiled eagerly at another grid (another signature: the
                # node inside the graph is still checked the first time).
                k = {"graph_race": racy, "graph_race_ok": ok}.get(bug, copy)
                k(src[:128], out[:128] if bug != "graph_race" else out[:64])
                if bug.startswith("graph_race"):
                    self.in_graph = lambda: k(src, out)
                else:
                    self.in_graph = lambda: k(self.junk, out)
                torch.cuda.synchronize()
            self.capture()

    def capture(self):
        for b in BUCKETS:
            st = {"tok": torch.zeros(b, 1, dtype=torch.long, device=self.dev),
                  "pos": torch.zeros(b, 1, dtype=torch.long, device=self.dev),
                  "slots": torch.zeros(b, dtype=torch.long, device=self.dev)}
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.no_grad(), torch.cuda.stream(side):
                for _ in range(2):
                    self.model(st["tok"], st["pos"], self.kc, self.vc, st["slots"])
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.no_grad(), torch.cuda.graph(g):
                st["out"] = self.model(st["tok"], st["pos"], self.kc, self.vc, st["slots"])
                if self.in_graph:
                    self.in_graph()
            self.graphs[b] = (g, st)
        self.kc.zero_()
        self.vc.zero_()

    def prefill(self, prompt, slot):
        n = len(prompt)
        host = torch.tensor(prompt, dtype=torch.long).pin_memory() if self.cuda else \
            torch.tensor(prompt, dtype=torch.long)
        if self.cuda and self.bug.startswith("missing_wait"):
            with torch.cuda.stream(self.copy_stream):
                tok = host.to(self.dev, non_blocking=True)[None]
            if self.bug == "missing_wait_ok":
                torch.cuda.current_stream().wait_stream(self.copy_stream)
                tok.record_stream(torch.cuda.current_stream())
        else:
            tok = host.to(self.dev, non_blocking=self.cuda)[None]
        pos = torch.arange(n, device=self.dev)[None]
        with torch.no_grad():
            first = self.model(tok, pos, self.kc, self.vc,
                               torch.tensor([slot], device=self.dev))
        if self.cuda and self.bug.startswith("record_stream"):
            # the prompt's tokens also go to a side stream (e.g. logging)
            self.side_stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self.side_stream):
                tok.float().sum()
            if self.bug == "record_stream_ok":
                tok.record_stream(self.side_stream)
            del tok  # freed on the main stream: reusable by the next prompt's copy
        return int(first.item())

    def decode(self, active):
        b = next(x for x in BUCKETS if x >= len(active))
        pad = active + [active[-1]] * (b - len(active))
        toks = [[r["last"]] for r in pad]
        poss = [[r["pos"]] for r in pad]
        slots = [r["slot"] for r in pad]
        if self.cuda:
            g, st = self.graphs[b]
            st["tok"].copy_(torch.tensor(toks))
            st["pos"].copy_(torch.tensor(poss))
            st["slots"].copy_(torch.tensor(slots))
            g.replay()
            out = st["out"].tolist()
        else:
            with torch.no_grad():
                out = self.model(torch.tensor(toks), torch.tensor(poss), self.kc, self.vc,
                                 torch.tensor(slots)).tolist()
        return out[:len(active)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--requests", type=int, default=0, help="stop after N requests (0: time)")
    ap.add_argument("--new-tokens", type=int, default=48)
    ap.add_argument("--bug", default="none")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    srv = Server(a.device, a.bug)
    q = queue.Queue(maxsize=64)
    stop = threading.Event()
    total = a.requests or 10 ** 9

    def client(tid):
        rng = __import__("random").Random(tid)
        i = 0
        while not stop.is_set() and i * a.threads + tid < total:
            prompt = [rng.randrange(VOCAB) for _ in range(8 + (i * 7 + tid) % 24)]
            try:
                q.put((tid, i, prompt), timeout=0.5)
                i += 1
            except queue.Full:
                pass

    clients = [threading.Thread(target=client, args=(t,), daemon=True) for t in range(a.threads)]
    for c in clients:
        c.start()
    active, done, tokens = [], [], 0
    digest = hashlib.sha256()
    t0 = time.perf_counter()
    half = None  # (tokens, seconds) when half of --seconds had passed
    while True:
        elapsed = time.perf_counter() - t0
        if half is None and elapsed >= a.seconds / 2:
            half = (tokens, elapsed)
        if (a.requests and len(done) >= a.requests) or (not a.requests and elapsed > a.seconds):
            break
        while len(active) < BUCKETS[-1] and srv.free_slots:
            try:
                tid, i, prompt = q.get(timeout=0.01 if active else 0.5)
            except queue.Empty:
                break
            slot = srv.free_slots.pop()
            first = srv.prefill(prompt, slot)
            active.append({"id": (tid, i), "slot": slot, "pos": len(prompt), "last": first,
                           "out": [first]})
        if not active:
            continue
        for r, t in zip(active, srv.decode(active)):
            r["out"].append(t)
            r["last"], r["pos"] = t, r["pos"] + 1
            tokens += 1
        for r in [r for r in active if len(r["out"]) > a.new_tokens or r["pos"] >= MAXLEN - 1]:
            active.remove(r)
            srv.free_slots.append(r["slot"])
            done.append(r)
    wall = time.perf_counter() - t0
    stop.set()
    for r in sorted(done, key=lambda r: r["id"]):
        digest.update(repr((r["id"], r["out"])).encode())
    # The second half's rate apart: the first checks of a new process
    # (every prefill shape's first launch) fall in the first half.
    late = (tokens - half[0]) / (wall - half[1]) if half and wall > half[1] else 0.0
    print("RESULT harness requests=%d tokens=%d wall_s=%.3f tokens_per_s=%.1f "
          "late_tokens_per_s=%.1f bug=%s" % (len(done), tokens, wall, tokens / wall, late, a.bug))
    print("tokens sha256 %s" % digest.hexdigest())


if __name__ == "__main__":
    main()
