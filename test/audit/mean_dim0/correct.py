import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        # an empty column's mean is NaN (0 / 0), as the reference's
        return (x.double().sum(dim=0) / x.shape[0]).float()
