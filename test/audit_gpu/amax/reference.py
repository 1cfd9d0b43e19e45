"""KernelBench level 1, 49_Max_reduction_over_a_dimension (2-D, values only)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.amax(x, dim=1)


def get_inputs():
    return [torch.randn(16, 4096)]


def get_init_inputs():
    return []
