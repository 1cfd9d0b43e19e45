import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.cat([a, b], dim=1)


def get_inputs():
    return [torch.randn(16, 256), torch.randn(16, 128)]


def get_init_inputs():
    return []
