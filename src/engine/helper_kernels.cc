#include "engine/helper_kernels.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/util.h"
#include "compile/compiler.h"
#include "engine/host_values.h"

namespace assay {
namespace {

// dtype codes are static_cast<int>(DType); init kinds static_cast<int>(InitSpec::Kind).
// Random numbers: a counter-based splitmix64 mix of (seed, argument, element),
// so every element is reproducible on its own and the launch shape does not matter.
constexpr const char* kHelperSource = R"CUDA(
typedef unsigned long long u64;
typedef long long i64;
enum { F64 = 0, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };
enum { UNIFORM = 0, NORMAL, INT, CONST };

__device__ __forceinline__ u64 mix64(u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
__device__ __forceinline__ double unit01(u64 h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); }
__device__ __forceinline__ unsigned short f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
__device__ __forceinline__ float h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
__device__ __forceinline__ unsigned short f2bf(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
__device__ __forceinline__ float bf2f(unsigned short b) { return __uint_as_float(((unsigned)b) << 16); }

// Rounds v to the float dtype and back.
__device__ double round_to(int dt, double v) {
  switch (dt) {
    case F32: return (double)(float)v;
    case F16: return (double)h2f(f2h((float)v));
    case BF16: return (double)bf2f(f2bf((float)v));
    default: return v;
  }
}
__device__ void store_float(void* p, u64 i, int dt, double v) {
  switch (dt) {
    case F64: ((double*)p)[i] = v; break;
    case F32: ((float*)p)[i] = (float)v; break;
    case F16: ((unsigned short*)p)[i] = f2h((float)v); break;
    case BF16: ((unsigned short*)p)[i] = f2bf((float)v); break;
  }
}
__device__ void store_int(void* p, u64 i, int dt, i64 v) {
  switch (dt) {
    case I64: ((i64*)p)[i] = v; break;
    case I32: ((int*)p)[i] = (int)v; break;
    case I16: ((short*)p)[i] = (short)v; break;
    case I8: ((signed char*)p)[i] = (signed char)v; break;
    case U8: ((unsigned char*)p)[i] = (unsigned char)v; break;
    case BOOL: ((unsigned char*)p)[i] = v != 0 ? 1 : 0; break;
  }
}

extern "C" __global__ void assay_generate(void* p, u64 n, int dt, int kind, double a, double b, u64 seed,
                                          u64 arg) {
  const u64 key = mix64(seed ^ mix64(arg * 0xD1B54A32D192ED03ull));
  const bool is_float = dt <= BF16;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 h = mix64(key ^ mix64(2 * i));
    if (kind == CONST) {
      if (is_float) store_float(p, i, dt, a); else store_int(p, i, dt, (i64)a);
      continue;
    }
    if (kind == INT || (!is_float && kind == UNIFORM)) {
      // Integers in [lo, hi] inclusive; uniform over an integer dtype means [ceil(a), ceil(b) - 1].
      i64 lo = kind == INT ? (i64)a : (i64)ceil(a);
      i64 hi = kind == INT ? (i64)b : (i64)ceil(b) - 1;
      if (hi < lo) hi = lo;
      const u64 span = (u64)hi - (u64)lo + 1;  // 0 means the full 64-bit range
      const i64 v = (i64)((u64)lo + (span ? h % span : h));
      if (is_float) store_float(p, i, dt, (double)v);
      else if (dt == BOOL && kind == UNIFORM) store_int(p, i, dt, (i64)(h & 1));
      else store_int(p, i, dt, v);
      continue;
    }
    double v;
    if (kind == UNIFORM) {
      v = a + (b - a) * unit01(h);
      // Rounding to a narrow dtype can reach `high`; keep the interval half-open.
      if (round_to(dt, v) >= b) v = a;
    } else {  // NORMAL: Box-Muller on two independent uniforms
      const double u1 = ((double)(h >> 11) + 1.0) * (1.0 / 9007199254740992.0);  // (0, 1]
      const double u2 = unit01(mix64(key ^ mix64(2 * i + 1)));
      v = a + b * sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
    }
    if (is_float) store_float(p, i, dt, v);
    else if (dt == BOOL) store_int(p, i, dt, (i64)(h & 1));
    else store_int(p, i, dt, (i64)llrint(v));
  }
}

__device__ u64 poison_bits(int dt) {
  switch (dt) {
    case F64: return 0x7FF4A5A5A5A5A5A5ull;
    case F32: return 0x7FA5A5A5ull;
    case F16: case BF16: return 0xFFFFull;
    default: return 0xA5A5A5A5A5A5A5A5ull;
  }
}
__device__ __forceinline__ int dsize(int dt) {
  switch (dt) { case F64: case I64: return 8; case F32: case I32: return 4;
                case F16: case BF16: case I16: return 2; default: return 1; }
}
__device__ __forceinline__ u64 load_bits(const void* p, u64 i, int dt) {
  switch (dsize(dt)) {
    case 8: return ((const u64*)p)[i];
    case 4: return ((const unsigned*)p)[i];
    case 2: return ((const unsigned short*)p)[i];
    default: return ((const unsigned char*)p)[i];
  }
}
__device__ __forceinline__ double bits_to_double(u64 bits, int dt) {
  switch (dt) {
    case F64: return __longlong_as_double((i64)bits);
    case F32: return (double)__uint_as_float((unsigned)bits);
    case F16: return (double)h2f((unsigned short)bits);
    case BF16: return (double)bf2f((unsigned short)bits);
    case I64: return (double)(i64)bits;
    case I32: return (double)(int)(unsigned)bits;
    case I16: return (double)(short)(unsigned short)bits;
    case I8: return (double)(signed char)(unsigned char)bits;
    default: return (double)bits;
  }
}
extern "C" __global__ void assay_poison(void* p, u64 n, int dt) {
  const u64 bits = poison_bits(dt);
  const int sz = dsize(dt);
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    switch (sz) {
      case 8: ((u64*)p)[i] = bits; break;
      case 4: ((unsigned*)p)[i] = (unsigned)bits; break;
      case 2: ((unsigned short*)p)[i] = (unsigned short)bits; break;
      default: ((unsigned char*)p)[i] = (unsigned char)bits; break;
    }
  }
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ u64 warp_max(u64 v) {
  for (int o = 16; o > 0; o >>= 1) { u64 w = __shfl_down_sync(0xffffffffu, v, o); v = w > v ? w : v; }
  return v;
}
__device__ __forceinline__ u64 warp_min(u64 v) {
  for (int o = 16; o > 0; o >>= 1) { u64 w = __shfl_down_sync(0xffffffffu, v, o); v = w < v ? w : v; }
  return v;
}

extern "C" __global__ void assay_checksum(const unsigned char* p, u64 bytes, u64* out) {
  u64 acc = 0;
  const u64 words = bytes / 8;
  const u64 tid = blockIdx.x * (u64)blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = tid; i < words; i += stride) acc += mix64(((const u64*)p)[i] ^ mix64(i));
  for (u64 b = words * 8 + tid; b < bytes; b += stride) acc += mix64((u64)p[b] ^ mix64(b | (1ull << 63)));
  acc = warp_sum(acc);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, acc);
}

struct Stats { u64 mismatches, poisoned, first, max_abs, max_rel, ref_varying, ref_poisoned; };

// Max of non-negative doubles through their bits: such doubles order like their bit patterns.
extern "C" __global__ void assay_compare(const void* c, const void* r, u64 n, int dt, double atol, double rtol,
                                         int nan_equal, Stats* s) {
  u64 mism = 0, pois = 0, first = ~0ull, mabs = 0, mrel = 0, vary = 0, rpois = 0;
  const u64 pb = poison_bits(dt) & (dsize(dt) == 8 ? ~0ull : ((1ull << (8 * dsize(dt))) - 1));
  const u64 r0 = n ? load_bits(r, 0, dt) : 0;
  const bool is_float = dt <= BF16;
  for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 cb = load_bits(c, i, dt), rb = load_bits(r, i, dt);
    const bool poisoned = cb == pb;
    vary += rb != r0;
    rpois += rb == pb;
    bool ok;
    if (is_float) {
      const double a = bits_to_double(cb, dt), b = bits_to_double(rb, dt);
      if (isnan(a) || isnan(b)) {
        ok = isnan(a) && isnan(b) && nan_equal;
      } else if (isinf(a) || isinf(b)) {
        ok = a == b;
      } else {
        const double d = fabs(a - b);
        ok = d <= atol + rtol * fabs(b);
        const u64 db = (u64)__double_as_longlong(d);
        mabs = db > mabs ? db : mabs;
        if (b != 0) {
          const u64 rel = (u64)__double_as_longlong(d / fabs(b));
          mrel = rel > mrel ? rel : mrel;
        }
      }
    } else {
      bool same;
      if (dt == BOOL) same = !poisoned && ((cb != 0) == (rb != 0));
      else same = cb == rb;
      ok = same;
      const double d = fabs(bits_to_double(cb, dt) - bits_to_double(rb, dt));
      const u64 db = (u64)__double_as_longlong(d);
      mabs = db > mabs ? db : mabs;
      const double bd = fabs(bits_to_double(rb, dt));
      if (bd != 0) {
        const u64 rel = (u64)__double_as_longlong(d / bd);
        mrel = rel > mrel ? rel : mrel;
      }
    }
    if (!ok) {
      ++mism;
      pois += poisoned;
      first = i < first ? i : first;
    }
  }
  mism = warp_sum(mism); pois = warp_sum(pois); vary = warp_sum(vary); rpois = warp_sum(rpois);
  first = warp_min(first); mabs = warp_max(mabs); mrel = warp_max(mrel);
  if ((threadIdx.x & 31) == 0) {
    if (mism) { atomicAdd(&s->mismatches, mism); atomicMin(&s->first, first); }
    if (pois) atomicAdd(&s->poisoned, pois);
    if (vary) atomicAdd(&s->ref_varying, vary);
    if (rpois) atomicAdd(&s->ref_poisoned, rpois);
    if (mabs) atomicMax(&s->max_abs, mabs);
    if (mrel) atomicMax(&s->max_rel, mrel);
  }
}
)CUDA";

const CudaDriverApi& Cu() { return **CudaDriver(); }

constexpr uint32_t kThreads = 256;

}  // namespace

std::string_view HelperKernelSource() { return kHelperSource; }

double CompareStats::max_abs() const { return std::bit_cast<double>(max_abs_bits); }
double CompareStats::max_rel() const { return std::bit_cast<double>(max_rel_bits); }

Result<HelperKernels> HelperKernels::Create(const GpuInfo& gpu, const std::filesystem::path& cache_dir) {
  CompilerOptions options;
  options.cache_dir = cache_dir;
  Compiler compiler(options);
  CompileRequest req;
  req.source = kHelperSource;
  req.filename = "assay_helpers.cu";
  req.arch = gpu.arch();
  CompileOutput out = compiler.Compile(req);
  if (!out.status.ok())
    return Status::Infra("compiling the engine's helper kernels failed: " + out.status.message() + "\n" + out.log);
  auto image = ReadFile(out.artifact);
  if (!image.ok()) return Status::Infra("reading the helper cubin: " + image.status().message());
  HelperKernels h;
  auto m = Module::Load(*image);
  if (!m.ok()) return Status::Infra("loading the helper kernels: " + m.status().message());
  h.module_ = std::move(*m);
  struct Entry { const char* name; CUfunction* f; };
  for (Entry e : {Entry{"assay_generate", &h.generate_}, Entry{"assay_poison", &h.poison_},
                  Entry{"assay_checksum", &h.checksum_}, Entry{"assay_compare", &h.compare_}}) {
    auto f = h.module_.Function(e.name);
    if (!f.ok()) return Status::Infra("helper kernel missing: " + f.status().message());
    *e.f = *f;
  }
  auto scratch = DeviceBuffer::Create(sizeof(CompareStats));
  if (!scratch.ok()) return scratch.status();
  h.scratch_ = std::move(*scratch);
  h.max_blocks_ = static_cast<uint32_t>(std::max(1, gpu.sm_count) * 8);
  return h;
}

Status HelperKernels::Launch(CUfunction f, CUstream stream, uint64_t n, void** params, const char* what) {
  if (n == 0) return Status::Ok();
  const uint64_t want = (n + kThreads - 1) / kThreads;
  const auto blocks = static_cast<uint32_t>(std::min<uint64_t>(want, max_blocks_));
  if (CUresult r = Cu().cuLaunchKernel(f, blocks, 1, 1, kThreads, 1, 1, 0, stream, params, nullptr); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, what);
  return Status::Ok();
}

Status HelperKernels::Generate(CUstream stream, CUdeviceptr p, uint64_t n, DType t, const InitSpec& init,
                               uint64_t seed, uint64_t arg_index) {
  int dt = static_cast<int>(t), kind = static_cast<int>(init.kind);
  double a = init.a, b = init.b;
  void* params[] = {&p, &n, &dt, &kind, &a, &b, &seed, &arg_index};
  return Launch(generate_, stream, n, params, "cuLaunchKernel(assay_generate)");
}

Status HelperKernels::Poison(CUstream stream, CUdeviceptr p, uint64_t n, DType t) {
  int dt = static_cast<int>(t);
  void* params[] = {&p, &n, &dt};
  return Launch(poison_, stream, n, params, "cuLaunchKernel(assay_poison)");
}

Result<uint64_t> HelperKernels::Checksum(CUstream stream, CUdeviceptr p, uint64_t bytes) {
  CUdeviceptr out = scratch_.get();
  if (CUresult r = Cu().cuMemsetD8Async(out, 0, sizeof(uint64_t), stream); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemsetD8Async(checksum)");
  void* params[] = {&p, &bytes, &out};
  ASSAY_RETURN_IF_ERROR(Launch(checksum_, stream, (bytes + 7) / 8, params, "cuLaunchKernel(assay_checksum)"));
  if (CUresult r = Cu().cuStreamSynchronize(stream); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuStreamSynchronize(checksum)");
  uint64_t v = 0;
  if (CUresult r = Cu().cuMemcpyDtoH(&v, out, sizeof(v)); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemcpyDtoH(checksum)");
  return v;
}

Result<CompareStats> HelperKernels::Compare(CUstream stream, CUdeviceptr cand, CUdeviceptr ref, uint64_t n, DType t,
                                            const Tolerance& tol, bool nan_equal) {
  CompareStats init;
  init.first_mismatch = UINT64_MAX;
  CUdeviceptr out = scratch_.get();
  if (CUresult r = Cu().cuMemcpyHtoD(out, &init, sizeof(init)); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemcpyHtoD(compare stats)");
  int dt = static_cast<int>(t), ne = nan_equal ? 1 : 0;
  double atol = tol.atol, rtol = tol.rtol;
  void* params[] = {&cand, &ref, &n, &dt, &atol, &rtol, &ne, &out};
  ASSAY_RETURN_IF_ERROR(Launch(compare_, stream, n, params, "cuLaunchKernel(assay_compare)"));
  if (CUresult r = Cu().cuStreamSynchronize(stream); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuStreamSynchronize(compare)");
  CompareStats s;
  if (CUresult r = Cu().cuMemcpyDtoH(&s, out, sizeof(s)); r != CUDA_SUCCESS)
    return CuStatus(ErrorClass::kInfraError, r, "cuMemcpyDtoH(compare stats)");
  return s;
}

}  // namespace assay
