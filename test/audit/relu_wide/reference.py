"""KernelBench level 1, 19_ReLU at the width of the GPU corpus's task
(test/audit_gpu/relu): a trial of 16 rows judges every 65th column, and
the specials generator puts each row's NaN or Inf at one column, so the
judged columns must include those (a NaN turned into 0 read clean)."""
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 16384)]


def get_init_inputs():
    return []
