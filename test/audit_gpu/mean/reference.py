"""KernelBench level 1, 48_Mean_reduction_over_a_dimension (2-D)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=1)


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
