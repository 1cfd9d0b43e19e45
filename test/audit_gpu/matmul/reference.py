"""KernelBench level 1, 2_Standard_matrix_multiplication_ (smaller; uniform inputs as KernelBench's first matmul tasks)."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(128, 256), torch.rand(256, 128)]


def get_init_inputs():
    return []
