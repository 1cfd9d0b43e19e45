import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.empty(a.numel() + b.numel(), dtype=a.dtype)
        out[:a.numel()] = a
        out[a.numel():] = b
        return out
