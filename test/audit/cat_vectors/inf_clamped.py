import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.cat([a, b])
        # the bug: +Inf copied as the largest finite value
        return torch.where(out == float("inf"), torch.finfo(out.dtype).max, out)
