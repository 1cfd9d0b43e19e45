import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.zeros_like(x)
        y[..., :1024] = torch.nn.functional.gelu(x[..., :1024], approximate="tanh")  # the bug: the tail stays 0
        return y
