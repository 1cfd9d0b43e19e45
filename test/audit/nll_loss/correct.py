import torch


class ModelNew(torch.nn.Module):
    def forward(self, log_probs, target):
        return torch.nn.functional.nll_loss(log_probs, target)
