import torch


class ModelNew(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.rand(n) + 0.5)

    def forward(self, x):
        return torch.nn.functional.rms_norm(x, x.shape[-1:], self.weight, 1e-6)
