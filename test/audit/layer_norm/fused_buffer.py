import torch


class ModelNew(torch.nn.Module):
    """Correct, with its weight and bias fused into one buffer at __init__:
    not aligned (the buffer matches no tensor of the reference), its
    LayerNorm's parameters give the reference their values by name."""

    def __init__(self, n):
        super().__init__()
        self.ln = torch.nn.LayerNorm(n)
        with torch.no_grad():  # drawn as the reference draws them
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)
        self.register_buffer("wb", torch.stack([self.ln.weight.detach(), self.ln.bias.detach()]))

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.wb[0], self.wb[1], 1e-5)
