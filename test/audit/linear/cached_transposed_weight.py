import torch


class ModelNew(torch.nn.Module):
    """Correct, with the weight transposed once at __init__ (a copy the
    forward reads instead of the parameter): judged with the weights as
    constants."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)
        self.w_t = self.linear.weight.detach().t().contiguous()

    def forward(self, x):
        b = self.linear.bias
        return (x.double() @ self.w_t.double() + b.double()).float()
