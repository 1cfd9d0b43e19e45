"""KernelBench level 1, 20_Swish-like: silu (smaller)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.silu(x)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
