import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=0)


def get_inputs():
    return [torch.randn(1024, 16)]


def get_init_inputs():
    return []
