# Wrong: the same CUDA kernel with an off-by-one bound, so the last element is never written.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void swish_obo_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n - 1; i += stride) {
        float v = x[i];
        y[i] = v / (1.0f + expf(-v));
    }
}

torch::Tensor swish_obo_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "swish: a float32 CUDA tensor is expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    long long n = xc.numel();
    const int threads = 256;
    long long blocks = (n + threads - 1) / threads;
    if (blocks > (1LL << 20)) blocks = 1LL << 20;  // grid-stride loop covers the rest
    if (blocks < 1) blocks = 1;
    swish_obo_kernel<<<(unsigned)blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_cpp_src = "torch::Tensor swish_obo_forward(torch::Tensor x);"

_ext = load_inline(name="kb_p1_swish_off_by_one", cpp_sources=_cpp_src, cuda_sources=_cuda_src,
                   functions=["swish_obo_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super(ModelNew, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.swish_obo_forward(x)
