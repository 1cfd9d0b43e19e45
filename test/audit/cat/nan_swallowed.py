import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.cat([a, b], dim=1)
        return torch.where(out == out, out, torch.zeros_like(out))  # the bug: NaN copied as 0
