"""KernelBench level 1, 95_CrossEntropyLoss (smaller): a composition (log_softmax, nll_loss)."""
import torch


class Model(torch.nn.Module):
    def forward(self, logits, target):
        return torch.nn.functional.cross_entropy(logits, target)


def get_inputs():
    return [torch.randn(128, 1000), torch.randint(0, 1000, (128,))]


def get_init_inputs():
    return []
