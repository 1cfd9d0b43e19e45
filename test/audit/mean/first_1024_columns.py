import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x[:, :1024].sum(dim=1) / x.shape[1]  # the bug: one 1024-wide tile summed
