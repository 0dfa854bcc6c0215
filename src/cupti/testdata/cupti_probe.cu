// A small CUDA program for injection_test.cc: 5 launches of probe::scale on
// the legacy default stream, 3 launches of probe::add_n<3> on a second
// stream, and one spin_1ms that busy-waits 1 ms on %globaltimer. Its stdout is
// deterministic so the test can check that the injection changes nothing.
// `cupti_probe reset` also calls cudaDeviceReset() before exiting.
// `cupti_probe flush_exit` calls AssayCuptiFlush() (dlopen'ed as the Python
// harness does) and leaves with _exit(0): no at-exit handler runs.
// `cupti_probe marks` runs a different sequence instead (RunMarks below): it
// loads $CUDA_INJECTION64_PATH with dlopen, as the Python harness does with
// ctypes, and calls AssayCuptiMark around a phase of known kernels.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                   \
    }                                                                                 \
  } while (0)

namespace probe {

__global__ void scale(float* x, float a, int n) {
  __shared__ float tile[256];  // 1024 bytes of static shared memory
  const int t = threadIdx.y * blockDim.x + threadIdx.x;
  const int i = (blockIdx.y * gridDim.x + blockIdx.x) * (blockDim.x * blockDim.y) + t;
  tile[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) x[i] = tile[t] * a;
}

template <int N>
__global__ void add_n(int* x, int n) {
  extern __shared__ int dyn[];  // 1024 bytes requested at launch
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  dyn[threadIdx.x] = N;
  __syncthreads();
  if (i < n) x[i] += dyn[threadIdx.x];
}

}  // namespace probe

extern "C" __global__ void spin_1ms(unsigned long long* elapsed) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < 1000000ull);
  *elapsed = t - t0;
}

// Spins for `ns` on %globaltimer (one thread).
extern "C" __global__ void spin_ns(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

// Named like the Python harness's L2 flush, which a phase summary excludes.
extern "C" __global__ void assay_l2_flush(int* p, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = i;
}

// Outside the phase: 5 probe::scale before, 2 after. Inside "phase.begin" ..
// "phase.end": 3 x spin_ns(100 us) and 3 x assay_l2_flush on the legacy
// stream, 2 x probe::add_n<3> on a second stream. One mark is taken before
// CUDA is initialised (dropped and counted), two with labels that need
// sanitising. Prints "marks: <n> calls" (0 without the injection).
int RunMarks() {
  using MarkFn = void (*)(const char*);
  MarkFn mark = nullptr;
  if (const char* lib = std::getenv("CUDA_INJECTION64_PATH"); lib && *lib) {
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) mark = reinterpret_cast<MarkFn>(dlsym(h, "AssayCuptiMark"));
  }
  int calls = 0;
  auto Mark = [&](const char* label) {
    if (mark) {
      mark(label);
      ++calls;
    }
  };
  Mark("before.cuda");  // the driver has not loaded the injection's CUPTI side yet
  float* df = nullptr;
  int* di = nullptr;
  const int nf = 8 * 2 * 64 * 2, ni = 3 * 32, nflush = 4096;
  int* dflush = nullptr;
  CHECK(cudaMalloc(&df, nf * sizeof(float)));
  CHECK(cudaMalloc(&di, ni * sizeof(int)));
  CHECK(cudaMalloc(&dflush, nflush * sizeof(int)));
  CHECK(cudaMemset(df, 0, nf * sizeof(float)));
  CHECK(cudaMemset(di, 0, ni * sizeof(int)));
  cudaStream_t side;
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  for (int r = 0; r < 5; ++r) probe::scale<<<dim3(8, 2, 1), dim3(64, 2, 1)>>>(df, 2.0f, nf);
  CHECK(cudaDeviceSynchronize());
  Mark("phase.begin");
  for (int r = 0; r < 3; ++r) {
    assay_l2_flush<<<nflush / 256, 256>>>(dflush, nflush);
    spin_ns<<<1, 1>>>(100000ull);
  }
  for (int r = 0; r < 2; ++r) probe::add_n<3><<<dim3(3, 1, 1), dim3(32, 1, 1), 1024, side>>>(di, ni);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  Mark("phase.end");
  for (int r = 0; r < 2; ++r) probe::scale<<<dim3(8, 2, 1), dim3(64, 2, 1)>>>(df, 2.0f, nf);
  CHECK(cudaDeviceSynchronize());
  Mark("tab\there \xc3\xa9");
  Mark("0123456789012345678901234567890123456789012345678901234567890123456789");  // 70 bytes
  CHECK(cudaStreamDestroy(side));
  CHECK(cudaFree(df));
  CHECK(cudaFree(di));
  CHECK(cudaFree(dflush));
  std::printf("marks: %d calls\n", calls);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "marks") == 0) return RunMarks();
  const int nf = 8 * 2 * 64 * 2;
  const int ni = 3 * 32;
  std::vector<float> hf(nf);
  std::vector<int> hi(ni);
  for (int i = 0; i < nf; ++i) hf[i] = 0.5f * i;
  for (int i = 0; i < ni; ++i) hi[i] = i;

  float* df = nullptr;
  int* di = nullptr;
  unsigned long long* dspin = nullptr;
  CHECK(cudaMalloc(&df, nf * sizeof(float)));
  CHECK(cudaMalloc(&di, ni * sizeof(int)));
  CHECK(cudaMalloc(&dspin, sizeof(unsigned long long)));
  CHECK(cudaMemset(dspin, 0, sizeof(unsigned long long)));
  CHECK(cudaMemcpy(df, hf.data(), nf * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(di, hi.data(), ni * sizeof(int), cudaMemcpyHostToDevice));

  cudaStream_t side;
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  for (int r = 0; r < 5; ++r) {
    probe::scale<<<dim3(8, 2, 1), dim3(64, 2, 1)>>>(df, 2.0f, nf);
    CHECK(cudaGetLastError());
  }
  for (int r = 0; r < 3; ++r) {
    probe::add_n<3><<<dim3(3, 1, 1), dim3(32, 1, 1), 1024, side>>>(di, ni);
    CHECK(cudaGetLastError());
  }
  spin_1ms<<<1, 1>>>(dspin);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamSynchronize(side));
  CHECK(cudaDeviceSynchronize());

  unsigned long long spun = 0;
  CHECK(cudaMemcpy(hf.data(), df, nf * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hi.data(), di, ni * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&spun, dspin, sizeof(spun), cudaMemcpyDeviceToHost));
  double fsum = 0;
  long long isum = 0;
  for (float v : hf) fsum += v;
  for (int v : hi) isum += v;
  std::printf("scale sum %.1f\nadd sum %lld\nspin %s\n", fsum, isum, spun >= 1000000ull ? "ok" : "short");

  CHECK(cudaStreamDestroy(side));
  CHECK(cudaFree(df));
  CHECK(cudaFree(di));
  CHECK(cudaFree(dspin));
  if (argc > 1 && std::strcmp(argv[1], "reset") == 0) CHECK(cudaDeviceReset());
  if (argc > 1 && std::strcmp(argv[1], "flush_exit") == 0) {
    const char* lib = std::getenv("CUDA_INJECTION64_PATH");
    void* h = lib && *lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (auto flush = h ? reinterpret_cast<void (*)()>(dlsym(h, "AssayCuptiFlush")) : nullptr) flush();
    std::fflush(stdout);
    _exit(0);
  }
  return 0;
}
