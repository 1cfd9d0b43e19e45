import torch


class ModelNew(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.gemm = torch.nn.Linear(n_in, n_out)

    def forward(self, x):
        return torch.relu(torch.addmm(self.gemm.bias, x, self.gemm.weight.t()))
