"""nll_loss (mean): the terms summed in a fixed order by one block."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_ext import ext  # noqa: E402  (the corpus's one CUDA extension, built once)


class ModelNew(torch.nn.Module):
    def forward(self, log_probs, target):
        return ext.nll_loss(log_probs, target)
