"""cross entropy (mean) with one atomicAdd per row."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_ext import ext  # noqa: E402  (the corpus's one CUDA extension, built once)


class ModelNew(torch.nn.Module):
    def forward(self, logits, target):
        return ext.cross_entropy_atomic(logits, target)
