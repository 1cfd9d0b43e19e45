import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)  # clamp propagates NaN, as relu does
