import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x - torch.log(torch.exp(x).sum(dim=1, keepdim=True))  # the bug: exp overflows
