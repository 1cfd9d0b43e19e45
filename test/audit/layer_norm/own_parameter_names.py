import torch


class ModelNew(torch.nn.Module):
    """Correct, with its own parameter names: drawn in the reference's
    order after the same seed, so they match the reference's by value."""

    def __init__(self, n):
        super().__init__()
        self.gamma = torch.nn.Parameter(torch.empty(n).uniform_(0.5, 1.5))
        self.beta = torch.nn.Parameter(torch.empty(n).uniform_(-0.5, 0.5))

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.gamma, self.beta, 1e-5)
