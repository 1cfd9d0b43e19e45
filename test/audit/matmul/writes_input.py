import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        a.mul_(2.0)  # the bug: the input used as scratch
        return (a @ b) * 0.5
