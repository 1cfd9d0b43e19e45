"""KernelBench level 1, 23_Softmax (smaller)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
