# Correct but slower than the reference: one thread per row sums its row serially
# (few blocks, uncoalesced loads).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void row_mean_serial_kernel(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    const float* row = x + (size_t)r * cols;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) acc += row[c];
    out[r] = acc / (float)cols;
}

torch::Tensor row_mean_serial_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2,
                "row_mean: a 2-D float32 CUDA tensor is expected");
    auto xc = x.contiguous();
    const int rows = (int)xc.size(0), cols = (int)xc.size(1);
    auto out = torch::empty({rows}, xc.options());
    const int threads = 128;
    if (rows > 0) {
        row_mean_serial_kernel<<<(rows + threads - 1) / threads, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), out.data_ptr<float>(), rows, cols);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
}
"""

_cpp_src = "torch::Tensor row_mean_serial_forward(torch::Tensor x);"

_ext = load_inline(name="kb_p2_row_mean_serial", cpp_sources=_cpp_src, cuda_sources=_cuda_src,
                   functions=["row_mean_serial_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim in (0, -2):
            x = x.t()
        return _ext.row_mean_serial_forward(x)
