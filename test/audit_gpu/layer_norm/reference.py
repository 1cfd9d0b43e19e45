"""KernelBench level 1, 40_LayerNorm (2-D, smaller)."""
import torch


class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = torch.nn.LayerNorm(n)
        with torch.no_grad():  # parameters that are not 1 and 0, so that they matter
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.randn(64, 1024)]


def get_init_inputs():
    return [1024]
