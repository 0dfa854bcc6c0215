import torch
import torch.nn as nn


class Model(nn.Module):
    """Depthwise 2D convolution, 3x3 kernel, stride 1, padding 1, no bias."""

    def __init__(self, channels: int, kernel_size: int):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, stride=1,
                              padding=kernel_size // 2, groups=channels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
channels = 64
height = 128
width = 128
kernel_size = 3


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [channels, kernel_size]
