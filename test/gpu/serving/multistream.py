"""test/gpu/serving/multistream.py — PyTorch's own multi-stream patterns,
used correctly, for kcheck's cross-stream ordering check (stream_races=1):
every one must stay silent. Each round:
  1. a pinned host batch copied H2D on a copy stream (non_blocking), the
     compute stream waits for it (wait_stream) and the tensor is
     record_stream'ed onto it before the copy stream's handle is dropped;
  2. a side stream waits for the compute stream, reads its activations and
     the tensor is record_stream'ed onto the side stream before it is freed
     on the compute stream (the allocator then delays its reuse);
  3. an event recorded on the side stream and waited for by the compute
     stream before the compute stream reads the side stream's result;
  4. torch.cuda.Event.synchronize before the host reads a result made on a
     side stream;
  5. memory churn: many short-lived tensors on both streams, so the caching
     allocator reuses blocks across rounds (correctly, through 1-2).
Prints a checksum over the results (the same with and without kcheck).
usage: python multistream.py [--rounds N]"""
import argparse
import hashlib

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    w = torch.randn(512, 512, device=dev)
    copy_s, side_s = torch.cuda.Stream(), torch.cuda.Stream()
    main_s = torch.cuda.current_stream()
    digest = hashlib.sha256()
    for r in range(a.rounds):
        host = torch.arange(r, r + 64 * 512, dtype=torch.float32).reshape(64, 512).pin_memory()
        with torch.cuda.stream(copy_s):
            x = host.to(dev, non_blocking=True)
        main_s.wait_stream(copy_s)
        x.record_stream(main_s)
        h = torch.tanh(x @ w)
        side_s.wait_stream(main_s)
        with torch.cuda.stream(side_s):
            stat = (h * h).sum(1)
            done = torch.cuda.Event()
            done.record(side_s)
        h.record_stream(side_s)
        del h, x
        main_s.wait_event(done)
        stat.record_stream(main_s)
        y = torch.relu(torch.randn(64, 512, device=dev) + stat[:, None] * 1e-3)
        for _ in range(8):  # churn: blocks freed and reused on both streams
            t = (y @ w).softmax(-1)
            y = y + t
        with torch.cuda.stream(side_s):
            side_s.wait_stream(main_s)
            z = y.sum()
            ev = torch.cuda.Event()
            ev.record(side_s)
        y.record_stream(side_s)
        ev.synchronize()
        digest.update(repr(round(z.item(), 3)).encode())
        del y, z, stat
    torch.cuda.synchronize()
    print("RESULT multistream rounds=%d" % a.rounds)
    print("multistream sha256 %s" % digest.hexdigest())


if __name__ == "__main__":
    main()
