# Correct: a tiled Triton matmul with the scale in the epilogue. The dot runs in full fp32
# ("ieee"), not TF32, so it meets the fp32 tolerance.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _matmul_scale_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                         stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, scale,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] + k < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] + k < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc=acc, input_precision="ieee")
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc * scale, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super(ModelNew, self).__init__()
        self.scale = scale

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty(M, N, device=A.device, dtype=A.dtype)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        _matmul_scale_kernel[grid](A, B, C, M, N, K,
                                   A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                   C.stride(0), C.stride(1), float(self.scale),
                                   BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4)
        return C
