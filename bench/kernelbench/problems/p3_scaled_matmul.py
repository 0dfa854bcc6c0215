import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiplication followed by a scale: C = (A @ B) * scale."""

    def __init__(self, scale: float):
        super(Model, self).__init__()
        self.scale = scale

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B) * self.scale


M = 2048
K = 1024
N = 2048
scale = 0.75


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return [scale]
