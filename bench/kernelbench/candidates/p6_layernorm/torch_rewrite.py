# Correct: a plain PyTorch rewrite (population variance, then the affine transform).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super(ModelNew, self).__init__()
        self.features = features
        self.eps = 1e-5
        self.weight = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        return (x - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias
