"""KernelBench level 1, 63_conv_standard_2D (smaller): 3x3, padding 1, bias."""
import torch


class Model(torch.nn.Module):
    def __init__(self, c, o, k):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, o, k, padding=1)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(8, 3, 32, 32)]


def get_init_inputs():
    return [3, 16, 3]
