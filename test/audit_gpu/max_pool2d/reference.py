"""KernelBench level 1, 42_Max_Pooling_2D (smaller): 2x2, stride 2."""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = torch.nn.MaxPool2d(2, 2)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.randn(8, 16, 32, 32)]


def get_init_inputs():
    return []
