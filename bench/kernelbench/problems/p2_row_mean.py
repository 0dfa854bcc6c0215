import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean reduction over one dimension of a square matrix."""

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


batch_size = 4096
dim1 = 4096
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1)
    return [x]


def get_init_inputs():
    return [reduce_dim]
