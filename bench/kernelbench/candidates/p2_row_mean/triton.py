# Correct: a Triton kernel, one program per row, looping over the row in blocks.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_mean_kernel(x_ptr, out_ptr, cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + offs, mask=offs < cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / cols)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim in (0, -2):
            x = x.t()
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        _row_mean_kernel[(rows,)](x, out, cols, x.stride(0), BLOCK=1024, num_warps=4)
        return out
