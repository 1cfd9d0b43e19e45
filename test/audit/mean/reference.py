import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=1)


def get_inputs():
    return [torch.randn(16, 1024)]


def get_init_inputs():
    return []
