/* assay: {
  "kind": "cuda",
  "entry": "add",
  "args": [
    {"name": "a", "role": "in",     "dtype": "f32", "shape": ["n"]},
    {"name": "b", "role": "in",     "dtype": "f32", "shape": ["n"]},
    {"name": "c", "role": "out",    "dtype": "f32", "shape": ["n"]},
    {"name": "n", "role": "scalar", "dtype": "i32", "value": 1048576}
  ],
  "launch": {"grid": ["ceil_div(n, 256)"], "block": [256]},
  "reference": {
    "kind": "cuda",
    "source": {"text": "extern \"C\" __global__ void ref(const float* a, const float* b, float* c, int n) { for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i]; }"},
    "entry": "ref",
    "launch": {"grid": [120], "block": [128]}
  }
} */
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
