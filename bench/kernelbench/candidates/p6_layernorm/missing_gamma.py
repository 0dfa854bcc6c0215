# Wrong: the same Triton kernel without the learned scale (gamma): the normalized row is
# only shifted by beta.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_no_gamma_kernel(x_ptr, w_ptr, b_ptr, y_ptr, cols, stride, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * stride + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + offs, d * rstd + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super(ModelNew, self).__init__()
        self.features = features
        self.eps = 1e-5
        self.weight = nn.Parameter(torch.rand(features) + 0.5)
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        _layernorm_no_gamma_kernel[(rows,)](x, self.weight, self.bias, y, cols, x.stride(0), self.eps,
                        BLOCK=triton.next_power_of_2(cols), num_warps=8)
        return y
