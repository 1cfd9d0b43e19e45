import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.empty(a.shape[0], a.shape[1] + b.shape[1])
        out[:, :a.shape[1]] = a
        out[:, a.shape[1]:] = b
        return out
