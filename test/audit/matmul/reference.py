import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.rand(64, 256), torch.rand(256, 32)]


def get_init_inputs():
    return []
