import torch


class ModelNew(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        return (x.double() @ w.double().t() + b.double()).float()
