import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        return (a.half() @ b.half()).float()  # the bug: fp16 operands and arithmetic
