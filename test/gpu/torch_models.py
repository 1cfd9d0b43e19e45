#!/usr/bin/env python3
"""test/gpu/torch_models.py — a few training steps of one model, for the
binding's reach over whole training steps (test/gpu/run_gpu_models.sh):
run it plain and under `kcheck run --torch`; the final loss and a hash of
every parameter must be bitwise equal, the binding must report no
violation, and its summary gives the judged share of ops and of the timed
step's GPU time.

  python3 torch_models.py MODEL [--steps N] [--bf16]

MODEL: gpt (bench/transformer_step.py's model), llama, gpt2, bert (Hugging
Face transformers built from configs, no download), cnn (conv, batch norm,
ReLU, max and adaptive average pooling, linear). AdamW with PyTorch's
defaults (the foreach path on CUDA); dropout 0 (its masks are the RNG's,
not the oracle's); fp32 with PyTorch's default precision settings, or
--bf16 under autocast.

Prints FINAL_LOSS <hex>, PARAMS_SHA256 <hex>.
"""
import argparse
import hashlib
import json
import os
import sys

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB, SEQ, BATCH = 1000, 128, 8


def _tokens(dev):
    g = torch.Generator().manual_seed(5)
    return torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g).to(dev)


def gpt(dev):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from transformer_step import LM
    model = LM(VOCAB, 256, 4, 1024, 2, SEQ).to(dev)
    data = _tokens(dev)

    def loss():
        logits = model(data[:, :-1])
        return F.cross_entropy(logits.reshape(-1, VOCAB).float(), data[:, 1:].reshape(-1))
    return model, loss


def _hf(kind, dev):
    import transformers as tf
    small = dict(vocab_size=VOCAB)
    if kind == "llama":
        cfg = tf.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=SEQ, **small)
        model = tf.LlamaForCausalLM(cfg)
    elif kind == "gpt2":
        cfg = tf.GPT2Config(n_embd=256, n_layer=2, n_head=4, n_positions=SEQ, resid_pdrop=0.0,
                            embd_pdrop=0.0, attn_pdrop=0.0, **small)
        model = tf.GPT2LMHeadModel(cfg)
    else:
        cfg = tf.BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=1024, max_position_embeddings=SEQ,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **small)
        model = tf.BertForMaskedLM(cfg)
    cfg._attn_implementation = "sdpa"
    model = model.to(dev)
    data = _tokens(dev)

    def loss():
        x = data[:, :-1]
        if kind == "bert":
            labels = torch.where(torch.arange(SEQ, device=dev) % 7 == 0, x, -100)
            return model(input_ids=x, labels=labels).loss
        return model(input_ids=x, labels=x).loss
    return model, loss


def cnn(dev):
    # cuDNN's default weight-gradient algorithms add with atomics (PyTorch
    # documents convolution backward as nondeterministic): two plain runs
    # differ, so the bitwise comparison asks for deterministic algorithms
    torch.backends.cudnn.deterministic = True

    def block(i, o):
        return [torch.nn.Conv2d(i, o, 3, padding=1, bias=False), torch.nn.BatchNorm2d(o),
                torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
    model = torch.nn.Sequential(*block(3, 32), *block(32, 64),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                torch.nn.Linear(64, 10)).to(dev)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(32, 3, 32, 32, generator=g).to(dev)
    y = torch.randint(0, 10, (32,), generator=g).to(dev)

    def loss():
        return F.cross_entropy(model(x), y)
    return model, loss


MODELS = {"gpt": gpt, "llama": lambda d: _hf("llama", d), "gpt2": lambda d: _hf("gpt2", d),
          "bert": lambda d: _hf("bert", d), "cnn": cnn}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--profile", type=int, default=0, metavar="K",
                    help="time step K with the binding's timer (kcheck.torch.timing), print "
                         "PLAIN_PROFILE <json>: where a plain run's kernel time goes")
    a = ap.parse_args()
    torch.manual_seed(1234)
    model, loss_fn = MODELS[a.model](a.device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    timer = None
    for i in range(a.steps):
        if a.profile and i + 1 == a.profile:
            sys.path.insert(0, os.path.join(ROOT, "python"))
            from kcheck.torch import timing
            timer = timing.StepTimer(a.device == "cuda")
            timer.start()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.bf16):
            loss = loss_fn()
        loss.backward()
        opt.step()
        if timer is not None:
            timer.stop()
            times, loose = timer.result()
            timer = None
            top = sorted(times.items(), key=lambda kv: -kv[1])[:16]
            print("PLAIN_PROFILE", json.dumps({"total_us": round(sum(times.values()), 1),
                                               "by_op": top, "kernels_outside_ops": loose}))
    if a.device == "cuda":
        torch.cuda.synchronize()
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().float().cpu().numpy().tobytes())
    print("FINAL_LOSS", float(loss.detach()).hex())
    print("PARAMS_SHA256", h.hexdigest())


if __name__ == "__main__":
    main()
