import torch


class Model(torch.nn.Module):
    def forward(self, a, b):
        # a view before the one op: a's leading dims flattened into rows
        return a.reshape(-1, 256) @ b


def get_inputs():
    return [torch.rand(4, 16, 256), torch.rand(256, 32)]


def get_init_inputs():
    return []
