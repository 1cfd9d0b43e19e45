"""sum over rows; the last row's sum also stored one element past the output's end."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_ext import ext  # noqa: E402  (the corpus's one CUDA extension, built once)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.sum_rows_writes_past_end(x)
