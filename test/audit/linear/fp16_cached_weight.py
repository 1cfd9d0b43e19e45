import torch


class ModelNew(torch.nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.linear = torch.nn.Linear(n_in, n_out)
        # the bug: the weight kept in fp16 from __init__ on (the arithmetic
        # is exact enough; the operand lost 13 bits)
        self.w16 = self.linear.weight.detach().half()

    def forward(self, x):
        b = self.linear.bias
        return (x.double() @ self.w16.double().t() + b.double()).float()
