import torch


class Model(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.gemm = torch.nn.Linear(n_in, n_out)

    def forward(self, x):
        return torch.relu(self.gemm(x))


def get_inputs():
    return [torch.randn(32, 512)]


def get_init_inputs():
    return [512, 64]
