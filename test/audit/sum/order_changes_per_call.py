import torch


class ModelNew(torch.nn.Module):
    """Each call starts its reduction at another column (as a kernel whose
    blocks combine in arrival order would): every result is within the
    bound, but two calls on the same inputs differ in their last bits."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x.roll(self.calls * 37, dims=1).sum(dim=1)
