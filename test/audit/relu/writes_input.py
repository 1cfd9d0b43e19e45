import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x.clamp_(min=0.0)  # the bug: the input is overwritten
