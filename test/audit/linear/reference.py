import torch


class Model(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)

    def forward(self, x):
        return self.linear(x)


def get_inputs():
    return [torch.rand(32, 512)]


def get_init_inputs():
    return [512, 64]
