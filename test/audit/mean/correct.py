import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=1)
