import torch


class ModelNew(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)

    def forward(self, x):
        w, b = self.linear.weight, self.linear.bias
        return (x.half() @ w.half().t()).float() + b  # the bug: fp16 operands and arithmetic
