import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Layer normalization over the last dimension with a learned scale and shift.

    The scale and shift are drawn at construction (not ones and zeros), so a kernel
    that forgets either one gives a different answer.
    """

    def __init__(self, features: int):
        super(Model, self).__init__()
        self.features = features
        self.eps = 1e-5
        self.weight = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, (self.features,), self.weight, self.bias, self.eps)


batch_size = 4096
features = 2048


def get_inputs():
    x = torch.randn(batch_size, features)
    return [x]


def get_init_inputs():
    return [features]
