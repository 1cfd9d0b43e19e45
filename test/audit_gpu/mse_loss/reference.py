"""KernelBench level 1, 94_MSELoss (smaller): a composition (sub, pow, mean)."""
import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.nn.functional.mse_loss(a, b)


def get_inputs():
    return [torch.randn(64, 1024), torch.randn(64, 1024)]


def get_init_inputs():
    return []
