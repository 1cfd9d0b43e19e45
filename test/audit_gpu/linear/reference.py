"""nn.Linear(256, 128) (KernelBench level 2's Gemm head)."""
import torch


class Model(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = torch.nn.Linear(k, n)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.rand(64, 256)]


def get_init_inputs():
    return [256, 128]
