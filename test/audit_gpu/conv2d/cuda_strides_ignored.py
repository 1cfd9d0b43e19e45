"""direct convolution reading x's storage as dense NCHW."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_ext import ext  # noqa: E402  (the corpus's one CUDA extension, built once)


class ModelNew(torch.nn.Module):
    def __init__(self, c, o, k):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, o, k, padding=1)

    def forward(self, x):
        return ext.conv2d_strides_ignored(x, self.conv.weight, self.conv.bias, 1, 1)
