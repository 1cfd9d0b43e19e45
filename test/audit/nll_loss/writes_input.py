import torch


class ModelNew(torch.nn.Module):
    def forward(self, log_probs, target):
        log_probs.neg_()  # the bug: the input negated in place
        return log_probs.gather(1, target[:, None]).mean()
