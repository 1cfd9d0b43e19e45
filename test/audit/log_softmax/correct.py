import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=1)
