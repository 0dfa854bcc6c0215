# Correct but slower than the reference (cuBLAS): a textbook 32x32 shared-memory tiled
# matmul in CUDA, built with load_inline, with the scale applied in the epilogue.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define TILE 32

__global__ void matmul_scale_kernel(const float* __restrict__ A, const float* __restrict__ B,
                                    float* __restrict__ C, int M, int N, int K, float scale) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        const int ak = t + threadIdx.x, bk = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[(size_t)row * K + ak] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc * scale;
}

torch::Tensor matmul_scale_forward(torch::Tensor A, torch::Tensor B, double scale) {
    TORCH_CHECK(A.is_cuda() && B.is_cuda() && A.scalar_type() == torch::kFloat32 &&
                B.scalar_type() == torch::kFloat32 && A.dim() == 2 && B.dim() == 2 && A.size(1) == B.size(0),
                "matmul_scale: 2-D float32 CUDA matrices of matching inner size are expected");
    auto a = A.contiguous();
    auto b = B.contiguous();
    const int M = (int)a.size(0), K = (int)a.size(1), N = (int)b.size(1);
    auto c = torch::empty({M, N}, a.options());
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul_scale_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), M, N, K, (float)scale);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return c;
}
"""

_cpp_src = "torch::Tensor matmul_scale_forward(torch::Tensor A, torch::Tensor B, double scale);"

_ext = load_inline(name="kb_p3_matmul_tiled", cpp_sources=_cpp_src, cuda_sources=_cuda_src,
                   functions=["matmul_scale_forward"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super(ModelNew, self).__init__()
        self.scale = scale

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return _ext.matmul_scale_forward(A, B, float(self.scale))
