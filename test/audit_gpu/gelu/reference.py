"""KernelBench level 1, 26_GELU_ (smaller): the erf form."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
