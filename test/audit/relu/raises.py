import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x.view(7, -1))  # does not run on the task's inputs
