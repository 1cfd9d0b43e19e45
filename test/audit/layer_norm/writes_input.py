import torch


class ModelNew(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = torch.nn.LayerNorm(n)

    def forward(self, x):
        y = torch.nn.functional.layer_norm(x, x.shape[-1:], self.ln.weight, self.ln.bias, 1e-5)
        x.zero_()  # the bug: the input cleared as if it were a workspace
        return y
