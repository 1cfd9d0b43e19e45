import torch


class ModelNew(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = torch.nn.LayerNorm(n)

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.ln.weight, self.ln.bias, 1e-5)
