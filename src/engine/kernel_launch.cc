#include "engine/kernel_launch.h"

#include <cstring>

#include "engine/host_values.h"
#include "gpu/cuda_driver.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }

// The scalar's value in the kernel's parameter layout (little-endian, dtype width).
uint64_t ScalarSlot(const ArgSpec& a) {
  uint64_t slot = 0;
  auto put = [&](const auto& v) { std::memcpy(&slot, &v, sizeof(v)); };
  const double d = std::holds_alternative<double>(a.value) ? std::get<double>(a.value)
                                                           : static_cast<double>(std::get<int64_t>(a.value));
  const int64_t i = std::holds_alternative<int64_t>(a.value) ? std::get<int64_t>(a.value)
                                                             : static_cast<int64_t>(std::get<double>(a.value));
  switch (a.dtype) {
    case DType::kF64: put(d); break;
    case DType::kF32: put(static_cast<float>(d)); break;
    case DType::kF16: put(FloatToHalf(static_cast<float>(d))); break;
    case DType::kBF16: put(FloatToBf16(static_cast<float>(d))); break;
    case DType::kI64: put(i); break;
    case DType::kI32: put(static_cast<int32_t>(i)); break;
    case DType::kI16: put(static_cast<int16_t>(i)); break;
    case DType::kI8: put(static_cast<int8_t>(i)); break;
    case DType::kU8: put(static_cast<uint8_t>(i)); break;
    case DType::kBool: put(static_cast<uint8_t>(i != 0)); break;
  }
  return slot;
}

std::string LaunchString(const ResolvedLaunch& l) {
  auto three = [](const int64_t* v) {
    return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + "]";
  };
  return "grid " + three(l.grid) + ", block " + three(l.block) + ", " + std::to_string(l.shared_mem_bytes) +
         " bytes of dynamic shared memory";
}

}  // namespace

bool IsStickyCudaError(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return false;
  }
}

Status KernelFailure(CUresult r, const std::string& who, const char* call, bool* context_lost) {
  if (IsStickyCudaError(r) && context_lost) *context_lost = true;
  Status s = CuStatus(ErrorClass::kRuntimeError, r, call);
  return Status::RuntimeError(who + " failed: " + s.message());
}

Result<KernelLaunch> KernelLaunch::Prepare(CUfunction f, const JobSpec& spec, const ResolvedLaunch& launch,
                                           std::string who) {
  KernelLaunch k;
  k.f_ = f;
  k.launch_ = launch;
  k.who_ = std::move(who);
  // The kernel's own parameter list must match the contract: otherwise the
  // driver would read parameters we never provided.
  size_t count = 0;
  for (;; ++count) {
    size_t offset = 0, size = 0;
    CUresult r = Cu().cuFuncGetParamInfo(f, count, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;
    if (r != CUDA_SUCCESS) return CuStatus(ErrorClass::kLaunchError, r, "cuFuncGetParamInfo");
    if (count < spec.args.size()) {
      const ArgSpec& a = spec.args[count];
      const size_t want = a.is_tensor() ? sizeof(CUdeviceptr) : static_cast<size_t>(DTypeSize(a.dtype));
      if (size != want)
        return Status::LaunchError(k.who_ + ": parameter " + std::to_string(count) + " ('" + a.name + "') is " +
                                   std::to_string(size) + " bytes in the kernel; the contract's " +
                                   (a.is_tensor() ? std::string("tensor pointer") : std::string(DTypeName(a.dtype))) +
                                   " is " + std::to_string(want));
    }
    if (count > 4096) break;
  }
  if (count != spec.args.size())
    return Status::LaunchError(k.who_ + " takes " + std::to_string(count) + " parameters; the contract declares " +
                               std::to_string(spec.args.size()) + " arguments");
  k.slots_.assign(spec.args.size(), 0);
  k.is_tensor_.assign(spec.args.size(), false);
  for (size_t i = 0; i < spec.args.size(); ++i) {
    k.is_tensor_[i] = spec.args[i].is_tensor();
    if (!k.is_tensor_[i]) k.slots_[i] = ScalarSlot(spec.args[i]);
  }
  k.params_.resize(k.slots_.size());
  for (size_t i = 0; i < k.slots_.size(); ++i) k.params_[i] = &k.slots_[i];

  if (launch.shared_mem_bytes > 48 * 1024) {
    CUresult r = Cu().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         static_cast<int>(launch.shared_mem_bytes));
    if (r != CUDA_SUCCESS) {
      Status s = CuStatus(ErrorClass::kLaunchError, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
      return Status::LaunchError(k.who_ + ": " + std::to_string(launch.shared_mem_bytes) +
                                 " bytes of dynamic shared memory refused: " + s.message());
    }
  }
  return k;
}

void KernelLaunch::SetTensors(const std::vector<CUdeviceptr>& by_arg) {
  for (size_t i = 0; i < slots_.size() && i < by_arg.size(); ++i)
    if (is_tensor_[i]) slots_[i] = by_arg[i];
}

Status KernelLaunch::Launch(CUstream stream, bool* context_lost) const {
  const auto& l = launch_;
  CUresult r = Cu().cuLaunchKernel(f_, static_cast<unsigned>(l.grid[0]), static_cast<unsigned>(l.grid[1]),
                                   static_cast<unsigned>(l.grid[2]), static_cast<unsigned>(l.block[0]),
                                   static_cast<unsigned>(l.block[1]), static_cast<unsigned>(l.block[2]),
                                   static_cast<unsigned>(l.shared_mem_bytes), stream,
                                   const_cast<void**>(params_.data()), nullptr);
  if (r == CUDA_SUCCESS) return Status::Ok();
  // A sticky error from earlier work surfaces at the next call: that is not a config problem.
  if (IsStickyCudaError(r)) return KernelFailure(r, who_, "cuLaunchKernel", context_lost);
  Status s = CuStatus(ErrorClass::kLaunchError, r, "cuLaunchKernel");
  return Status::LaunchError(who_ + ": launch refused (" + LaunchString(l) + "): " + s.message());
}

Status KernelLaunch::LaunchAndWait(CUstream stream, bool* context_lost) const {
  ASSAY_RETURN_IF_ERROR(Launch(stream, context_lost));
  if (CUresult r = Cu().cuStreamSynchronize(stream); r != CUDA_SUCCESS)
    return KernelFailure(r, who_, "cuStreamSynchronize", context_lost);
  return Status::Ok();
}

}  // namespace assay
