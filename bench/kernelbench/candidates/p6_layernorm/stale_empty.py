# Cheat (stale allocation): returns an uninitialized tensor of the right shape and does no
# work, hoping the allocator hands back memory that still holds the reference's answer.
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
        return torch.empty_like(x)
