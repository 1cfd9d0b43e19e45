"""2x2 average pooling reading x's storage as dense NCHW."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from gpu_ext import ext  # noqa: E402  (the corpus's one CUDA extension, built once)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.avg_pool2d_strides_ignored(x, 2, 2)
