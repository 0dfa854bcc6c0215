// A program that uses the CUDA runtime: it needs a GPU. On a server without
// one it fails with a clear runtime_error.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i * 2;
}

int main() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cudaGetDeviceCount: %s\n", cudaGetErrorString(e));
    return 1;
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  std::printf("device 0: %s, %d SMs, %.1f GiB\n", p.name, p.multiProcessorCount,
              p.totalGlobalMem / 1073741824.0);
  const int n = 1 << 20;
  int* d = nullptr;
  cudaMalloc(&d, n * sizeof(int));
  fill<<<(n + 255) / 256, 256>>>(d, n);
  int last = 0;
  cudaMemcpy(&last, d + n - 1, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(d);
  std::printf("fill check: out[n-1] = %d (expected %d)\n", last, (n - 1) * 2);
  return last == (n - 1) * 2 ? 0 : 2;
}
