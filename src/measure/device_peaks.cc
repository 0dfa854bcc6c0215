// MeasureDevicePeaks: the two ceilings of METHOD.md, measured on the device
// itself (datasheet rates are leads, not limits). Both use the KernelTimer in
// hot mode: the copy's buffers are far larger than L2, and the FMA kernel
// touches no memory, so a flush would change nothing but the run time.
#include <algorithm>
#include <cstdint>

#include "gpu/cuda_driver.h"
#include "gpu/cuda_handles.h"
#include "measure/helper_kernels.h"
#include "measure/timer.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }  // REQUIRES: CudaDriver().ok()

Status Launch(CUfunction f, unsigned grid, unsigned block, CUstream s, void** args, const char* what) {
  CUresult r = Cu().cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, args, nullptr);
  return r == CUDA_SUCCESS ? Status::Ok() : CuStatus(ErrorClass::kInfraError, r, what);
}

TimingOptions PeakOptions() {
  TimingOptions o;
  o.mode = TimingMode::kHot;
  o.min_samples = 10;
  o.max_samples = 200;
  o.noise_target = 0.002;
  o.time_budget_ms = 300;
  o.warmup_ms = 50;
  return o;
}

}  // namespace

Result<DevicePeaks> MeasureDevicePeaks(const GpuInfo& gpu) { return MeasureDevicePeaks(gpu, DefaultMeasureCacheDir()); }

Result<DevicePeaks> MeasureDevicePeaks(const GpuInfo& gpu, const std::filesystem::path& cache_dir) {
  auto helpers = LoadHelperKernels(gpu, cache_dir);
  if (!helpers.ok()) return helpers.status();
  auto timer = KernelTimer::Create(gpu, cache_dir);
  if (!timer.ok()) return timer.status();
  DevicePeaks peaks;

  // DRAM: src + dst together 8x L2 or 1 GiB, whichever is smaller, but at
  // least 4x L2, so neither buffer can live in L2. Bytes = read + written.
  const int64_t l2 = std::max<int64_t>(gpu.l2_bytes, 1 << 20);
  int64_t total = std::max(std::min<int64_t>(int64_t{1} << 30, 8 * l2), 4 * l2);
  const unsigned long long n = static_cast<unsigned long long>(total / 2 / 16);  // float4 per buffer
  auto src = DeviceBuffer::Create(n * 16);
  if (!src.ok()) return src.status();
  auto dst = DeviceBuffer::Create(n * 16);
  if (!dst.ok()) return dst.status();
  if (CUresult r = Cu().cuMemsetD8(src->get(), 0x3c, n * 16); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemsetD8");
  CUdeviceptr s_ptr = src->get(), d_ptr = dst->get();
  const unsigned copy_grid = static_cast<unsigned>((n + 255) / 256);
  auto copy = (*timer)->Measure(
      [&](CUstream s) {
        void* args[] = {&s_ptr, &d_ptr, const_cast<unsigned long long*>(&n)};
        return Launch(helpers->copy, copy_grid, 256, s, args, "cuLaunchKernel(peak copy)");
      },
      PeakOptions());
  if (!copy.ok()) return copy.status();
  peaks.dram_bytes_per_s = 2.0 * static_cast<double>(n * 16) / (copy->stats.median_ms * 1e-3);

  // FP32: 8 resident blocks of 256 threads per SM (2048 threads, Hopper's and
  // Ampere's limit), kFmaChains independent chains each, 2 FLOP per FMA.
  auto out = DeviceBuffer::Create(256 * sizeof(float));
  if (!out.ok()) return out.status();
  CUdeviceptr o_ptr = out->get();
  int iterations = 8192;
  float seed = 1.0f;
  const unsigned fma_grid = static_cast<unsigned>(std::max(gpu.sm_count, 1) * 8);
  auto fma = (*timer)->Measure(
      [&](CUstream s) {
        void* args[] = {&o_ptr, &iterations, &seed};
        return Launch(helpers->fma, fma_grid, 256, s, args, "cuLaunchKernel(peak fma)");
      },
      PeakOptions());
  if (!fma.ok()) return fma.status();
  const double flops = 2.0 * kFmaChains * iterations * static_cast<double>(fma_grid) * 256;
  peaks.fp32_flops_per_s = flops / (fma->stats.median_ms * 1e-3);
  return peaks;
}

}  // namespace assay
