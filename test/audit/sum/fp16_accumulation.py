import torch


class ModelNew(torch.nn.Module):
    def forward(self, x):
        acc = torch.zeros(x.shape[:-1], dtype=torch.float16)
        for j in range(0, x.shape[-1], 128):  # the bug: the running sum kept in fp16
            acc = acc + x[..., j:j + 128].sum(dim=-1).half()
        return acc.float()
