// Kernels of known behaviour, for the timer's tests and the fidelity benchmark
// (bench/timing_fidelity.cc). Not used in production paths.
//   assay_spin(ns)                        one thread spins on %globaltimer for `ns`
//   assay_read_sum(buf, n_float4, out)    reads a buffer once (L2 vs DRAM behaviour)
//   assay_vector_add(a, b, c, n)          c = a + b, one element per thread
//   assay_naive_matmul(A, B, C, n)        C = A*B, n x n row-major, one output per thread
//   assay_fault(p)                        writes through a bad pointer: CUDA_ERROR_ILLEGAL_ADDRESS
#pragma once

namespace assay {

inline constexpr const char* kReferenceKernelsSource = R"(
extern "C" __global__ void assay_spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

extern "C" __global__ void assay_read_sum(const float4* __restrict__ buf, unsigned long long n, float* out) {
  float acc = 0.f;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    float4 v = buf[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == -1.2345f) out[0] = acc;  // never true for the data used; keeps the loads
}

extern "C" __global__ void assay_vector_add(const float* a, const float* b, float* c, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void assay_naive_matmul(const float* A, const float* B, float* C, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
  C[row * n + col] = acc;
}

extern "C" __global__ void assay_fault(int* p) { p[threadIdx.x] = 42; }
)";

}  // namespace assay
