// Compile-only: `assay compile examples/compile/saxpy.cu --ptx` needs no GPU
// and no server; it prints registers, shared/local memory and spills per kernel.
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// A kernel that needs local memory: the report shows its stack frame.
extern "C" __global__ void local_sum(const float* x, float* out, int n) {
  float buf[64];
  for (int k = 0; k < 64; ++k) buf[k] = x[(threadIdx.x + k) % n];
  float s = 0;
  for (int k = 0; k < 64; ++k) s += buf[(k * 7) % 64];
  out[threadIdx.x] = s;
}
