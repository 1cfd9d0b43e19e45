"""test/gpu/torch_graphs.py — a PyTorch decode-like step captured with
torch.cuda.graph and replayed, for kcheck's node-by-node graph checks.

A small MLP block (LayerNorm, Linear, GELU, Linear, residual) runs eagerly
for a prefill-like batch, then its decode step is captured once into a CUDA
graph (torch's documented recipe: warm-up on a side stream, static input and
output tensors) and replayed STEPS times with new inputs copied into the
static input. Prints one sha256 over every replay's output and one over the
eager outputs: they must be equal with and without kcheck.

--nccl: also captures a one-rank NCCL all_reduce into the graph (a
communication kernel inside a graph: kcheck must launch that graph
unchanged); prints "nccl: skipped (...)" where NCCL cannot be used.
usage: python torch_graphs.py [--steps N] [--nccl]"""
import argparse
import hashlib
import os

import torch


def block(d):
    return torch.nn.Sequential(torch.nn.LayerNorm(d), torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                               torch.nn.Linear(4 * d, d)).cuda()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--nccl", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    d = 256
    net = block(d).eval()
    group = None
    if a.nccl:
        try:
            import torch.distributed as dist
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", "29533")
            dist.init_process_group("nccl", rank=0, world_size=1)
            group = dist
            t = torch.ones(4, device="cuda")
            dist.all_reduce(t)  # NCCL's own warm-up outside the capture
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - the report says why
            print("nccl: skipped (%s)" % str(e).splitlines()[0][:120])
            group = None
    eager = hashlib.sha256()
    with torch.no_grad():
        # Prefill: eager, a longer batch.
        x = torch.randn(64, d, device="cuda")
        y = x + net(x)
        eager.update(y.cpu().numpy().tobytes())
        # Decode step as a CUDA graph.
        static_in = torch.zeros(8, d, device="cuda")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                static_out = static_in + net(static_in)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = static_in + net(static_in)
            if group is not None:
                group.all_reduce(static_out)
        replays = hashlib.sha256()
        for step in range(a.steps):
            static_in.copy_(torch.randn(8, d, device="cuda") * (1 + step % 3))
            g.replay()
            replays.update(static_out.cpu().numpy().tobytes())
        torch.cuda.synchronize()
    print("eager sha256 %s" % eager.hexdigest())
    print("replay sha256 %s" % replays.hexdigest())
    print("nccl: %s" % ("in graph" if group is not None else "not used"))
    if group is not None:
        group.destroy_process_group()


if __name__ == "__main__":
    main()
