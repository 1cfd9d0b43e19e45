import torch


class ModelNew(torch.nn.Module):
    """Stands for an extension that does not compile (load_inline's error)."""

    def __init__(self):
        super().__init__()
        raise RuntimeError("Error building extension 'relu_ext'")

    def forward(self, x):
        return torch.relu(x)
