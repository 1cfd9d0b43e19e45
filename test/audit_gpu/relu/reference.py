"""KernelBench level 1, 19_ReLU (smaller)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
