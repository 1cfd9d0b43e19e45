import torch


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        out = torch.cat([a, b], dim=1)
        out[-1, -1] = torch.nextafter(out[-1, -1], torch.tensor(float("inf")))  # the bug: one element one ulp off
        return out
