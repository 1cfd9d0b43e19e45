import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.double().sum(dim=1).float()
