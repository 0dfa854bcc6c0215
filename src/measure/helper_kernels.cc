#include "measure/helper_kernels.h"

#include <unistd.h>

#include "common/util.h"
#include "compile/compiler.h"

namespace assay {
namespace {

// The blocking kernel spins on a flag in host-mapped memory (volatile: every
// iteration reads the host's copy over PCIe/C2C). The timeout guarantees it
// can never hold the GPU forever, e.g. if the host dies or the launch queue
// fills before the flag is released; it reports that through *timed_out.
constexpr const char* kSource = R"(
__device__ __forceinline__ unsigned long long assay_now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void assay_blocking_kernel(volatile int* flag, int* timed_out,
                                                 unsigned long long timeout_ns) {
  const unsigned long long start = assay_now_ns();
  while (*flag == 0) {
    if (assay_now_ns() - start > timeout_ns) {
      *reinterpret_cast<volatile int*>(timed_out) = 1;
      break;
    }
  }
}

extern "C" __global__ void assay_empty() {}

// The L2 flush: reads every byte of a buffer twice the L2's size (grid-stride,
// cached in L2 only). Reading, not writing: afterwards L2 holds only *clean*
// lines of this buffer, so the timed kernel pays no write-back of the flush's
// data (a memset leaves L2 full of dirty lines, whose eviction during the
// timed kernel inflated memory-bound medians by 8-16 % on an H200), as Nsight
// Compute's cache control (flush + invalidate) leaves it. Dirty lines of the
// previous run are written back here, outside the timed region.
extern "C" __global__ void assay_l2_flush(const float4* __restrict__ buf, unsigned long long n, float* sink) {
  float acc = 0.f;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    const float4 v = __ldcg(buf + i);
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == -1.2345f) *sink = acc;  // never true for the zeroed buffer; keeps the loads
}

extern "C" __global__ void assay_peak_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                           unsigned long long n) {
  const unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = src[i];
}

// kFmaChains independent chains hide the FMA latency; the result is written
// only when impossible, so the compiler cannot drop the work.
extern "C" __global__ void assay_peak_fma(float* out, int iterations, float seed) {
  float a[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) a[c] = seed + threadIdx.x * 1e-7f + c * 1e-6f;
  const float b = 0.999999f, d = 1e-7f;
#pragma unroll 4
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int c = 0; c < 8; ++c) a[c] = fmaf(a[c], b, d);
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < 8; ++c) s += a[c];
  if (s == -1.2345f) out[threadIdx.x] = s;
}
)";

}  // namespace

std::filesystem::path DefaultMeasureCacheDir() {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  return tmp / ("assay-measure-" + std::to_string(::getuid()));
}

Result<Module> CompileAndLoad(const GpuInfo& gpu, const std::string& source, const std::filesystem::path& cache_dir,
                              const std::string& filename) {
  CompilerOptions copts;
  copts.cache_dir = cache_dir;
  Compiler compiler(copts);
  CompileRequest req;
  req.source = source;
  req.filename = filename;
  req.arch = gpu.arch();
  CompileOutput out = compiler.Compile(req);
  if (!out.status.ok())
    return Status::Infra(filename + " did not compile: " + out.status.message() + "\n" + out.log);
  auto image = ReadFile(out.artifact);
  if (!image.ok()) return Status::Infra(filename + ": cubin unreadable: " + image.status().message());
  auto module = Module::Load(*image);
  if (!module.ok()) return Status::Infra(filename + ": " + module.status().message());
  return std::move(*module);
}

Result<HelperKernels> LoadHelperKernels(const GpuInfo& gpu, const std::filesystem::path& cache_dir) {
  auto module = CompileAndLoad(gpu, kSource, cache_dir, "assay_measure_helpers.cu");
  if (!module.ok()) return module.status();
  HelperKernels h;
  h.module = std::move(*module);
  for (auto [fn, name] : {std::pair{&h.blocking, "assay_blocking_kernel"},
                          std::pair{&h.copy, "assay_peak_copy"}, std::pair{&h.fma, "assay_peak_fma"},
                          std::pair{&h.empty, "assay_empty"}, std::pair{&h.l2_flush, "assay_l2_flush"}}) {
    auto f = h.module.Function(name);
    if (!f.ok()) return Status::Infra("measure helper: " + f.status().message());
    *fn = *f;
  }
  return h;
}

}  // namespace assay
