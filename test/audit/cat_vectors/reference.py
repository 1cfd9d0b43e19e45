import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.cat([a, b])


def get_inputs():
    return [torch.randn(512), torch.randn(256)]


def get_init_inputs():
    return []
