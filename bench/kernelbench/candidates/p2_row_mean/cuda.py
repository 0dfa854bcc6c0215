# Correct: a CUDA kernel built with load_inline; one block per row, warp-shuffle reduction.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void row_mean_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
    __shared__ float warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0f;
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, off);
        if (lane == 0) out[blockIdx.x] = acc / (float)cols;
    }
}

torch::Tensor row_mean_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.dim() == 2,
                "row_mean: a 2-D float32 CUDA tensor is expected");
    auto xc = x.contiguous();
    const int rows = (int)xc.size(0), cols = (int)xc.size(1);
    auto out = torch::empty({rows}, xc.options());
    if (rows > 0) {
        row_mean_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), out.data_ptr<float>(), cols);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return out;
}
"""

_cpp_src = "torch::Tensor row_mean_forward(torch::Tensor x);"

_ext = load_inline(name="kb_p2_row_mean_cuda", cpp_sources=_cpp_src, cuda_sources=_cuda_src,
                   functions=["row_mean_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super(ModelNew, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim in (0, -2):
            x = x.t()
        return _ext.row_mean_forward(x)
