"""layer norm written into its input, which it returns."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_ext import ext  # noqa: E402  (the corpus's one CUDA extension, built once)


class ModelNew(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = torch.nn.LayerNorm(n)

    def forward(self, x):
        return ext.layer_norm_writes_input(x, self.ln.weight, self.ln.bias, self.ln.eps)
