#include "engine/transfers.h"

#include <chrono>
#include <cstring>

#include "engine/kernel_launch.h"
#include "engine/npy.h"
#include "gpu/cuda_driver.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }

double WallMs(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

Status CopyFailure(CUresult r, const char* call, bool* context_lost) {
  // Our own copies fail this way only after a user kernel broke the context.
  if (IsStickyCudaError(r) && context_lost) *context_lost = true;
  return CuStatus(IsStickyCudaError(r) ? ErrorClass::kRuntimeError : ErrorClass::kInfraError, r, call);
}

// The tensor index of each spec.outputs name, in the order the spec lists them.
std::vector<size_t> OutputTensors(const JobPlan& plan) {
  std::vector<size_t> out;
  for (const std::string& name : plan.spec.outputs)
    for (size_t i = 0; i < plan.tensors.size(); ++i)
      if (plan.arg(plan.tensors[i]).name == name) out.push_back(i);
  return out;
}

// Times `enqueue` (copies on `stream`) with a pair of events around it [ms].
template <typename Enqueue>
Result<double> TimeCopies(CUstream stream, const char* what, bool* context_lost, Enqueue enqueue) {
  auto start = Event::Create();
  if (!start.ok()) return start.status();
  auto stop = Event::Create();
  if (!stop.ok()) return stop.status();
  if (CUresult r = Cu().cuEventRecord(start->get(), stream); r != CUDA_SUCCESS)
    return CopyFailure(r, "cuEventRecord", context_lost);
  ASSAY_RETURN_IF_ERROR(enqueue());
  if (CUresult r = Cu().cuEventRecord(stop->get(), stream); r != CUDA_SUCCESS)
    return CopyFailure(r, "cuEventRecord", context_lost);
  if (CUresult r = Cu().cuEventSynchronize(stop->get()); r != CUDA_SUCCESS)
    return CopyFailure(r, what, context_lost);
  float ms = 0;
  if (CUresult r = Cu().cuEventElapsedTime(&ms, start->get(), stop->get()); r != CUDA_SUCCESS)
    return CopyFailure(r, "cuEventElapsedTime", context_lost);
  return static_cast<double>(ms);
}

}  // namespace

nlohmann::json ToJson(const TransferStats& s) {
  nlohmann::json j = {{"bytes", s.bytes},
                      {"ms", s.ms},
                      {"bytes_per_s", nullptr},
                      {"staging_ms", s.staging_ms},
                      {"tensors", s.tensors},
                      {"pinned", s.pinned}};
  if (s.bytes > 0 && s.ms > 0) j["bytes_per_s"] = static_cast<double>(s.bytes) / (s.ms / 1e3);
  return j;
}

void* StagingArea::Get(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (block_.get() && block_.size() >= bytes) return block_.get();
  block_ = PinnedBuffer();  // free the old block first: the new one may be large
  // Round small needs up, so a run of growing jobs does not re-pin every time.
  const size_t want = bytes <= kKeepBytes ? std::max(bytes, std::min(kKeepBytes, bytes * 2)) : bytes;
  auto b = PinnedBuffer::Create(want);
  if (!b.ok() && want != bytes) b = PinnedBuffer::Create(bytes);
  if (!b.ok()) return nullptr;
  block_ = std::move(*b);
  return block_.get();
}

void StagingArea::Trim() {
  if (block_.size() > kKeepBytes) block_ = PinnedBuffer();
}

uint64_t UploadBytes(const JobPlan& plan) {
  uint64_t n = 0;
  for (const TensorPlan& t : plan.tensors)
    if (t.upload) n += t.bytes;
  return n;
}

uint64_t OutputBytes(const JobPlan& plan) {
  uint64_t n = 0;
  for (size_t i : OutputTensors(plan)) n += plan.tensors[i].bytes;
  return n;
}

Result<TransferStats> UploadInputs(const JobPlan& plan, const JobBuffers& buffers, void* staging, CUstream stream,
                                   std::vector<const void*>* sources, bool* context_lost) {
  TransferStats st;
  st.pinned = staging != nullptr;
  sources->assign(plan.tensors.size(), nullptr);
  // Stage every upload first, so the timed region holds only the DMA copies.
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t offset = 0;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& t = plan.tensors[i];
    if (!t.upload) continue;
    const void* src = t.upload->data();
    if (staging) {
      char* dst = static_cast<char*>(staging) + offset;
      if (t.bytes > 0) std::memcpy(dst, t.upload->data(), t.bytes);
      src = dst;
      offset += t.bytes;
    }
    (*sources)[i] = src;
    st.bytes += t.bytes;
    ++st.tensors;
  }
  st.staging_ms = WallMs(t0);
  if (st.tensors == 0) return st;
  auto ms = TimeCopies(stream, "cuEventSynchronize(inputs in)", context_lost, [&]() -> Status {
    for (size_t i = 0; i < plan.tensors.size(); ++i) {
      const TensorPlan& t = plan.tensors[i];
      if (!(*sources)[i] || t.bytes == 0) continue;
      if (CUresult r = Cu().cuMemcpyHtoDAsync(buffers.cand[i].get(), (*sources)[i], t.bytes, stream);
          r != CUDA_SUCCESS)
        return CopyFailure(r, "cuMemcpyHtoDAsync(input)", context_lost);
    }
    return Status::Ok();
  });
  if (!ms.ok()) return ms.status();
  st.ms = *ms;
  return st;
}

Result<TransferStats> DownloadOutputs(const JobPlan& plan, const JobBuffers& buffers, void* staging, CUstream stream,
                                      std::map<std::string, std::string>* npy, bool* context_lost) {
  TransferStats st;
  st.pinned = staging != nullptr;
  const std::vector<size_t> outs = OutputTensors(plan);
  // Where each output lands on the host: the staging block, or (pageable) its own string.
  std::vector<char*> dst(outs.size(), nullptr);
  std::vector<std::string> pageable(staging ? 0 : outs.size());
  uint64_t offset = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    const uint64_t bytes = plan.tensors[outs[k]].bytes;
    if (staging) {
      dst[k] = static_cast<char*>(staging) + offset;
      offset += bytes;
    } else {
      pageable[k].resize(bytes);
      dst[k] = pageable[k].data();
    }
    st.bytes += bytes;
    ++st.tensors;
  }
  if (outs.empty()) return st;
  auto ms = TimeCopies(stream, "cuEventSynchronize(outputs out)", context_lost, [&]() -> Status {
    for (size_t k = 0; k < outs.size(); ++k) {
      const TensorPlan& t = plan.tensors[outs[k]];
      if (t.bytes == 0) continue;
      if (CUresult r = Cu().cuMemcpyDtoHAsync(dst[k], buffers.cand[outs[k]].get(), t.bytes, stream);
          r != CUDA_SUCCESS)
        return CopyFailure(r, "cuMemcpyDtoHAsync(output)", context_lost);
    }
    return Status::Ok();
  });
  if (!ms.ok()) return ms.status();
  st.ms = *ms;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < outs.size(); ++k) {
    const TensorPlan& t = plan.tensors[outs[k]];
    (*npy)[plan.arg(t).name] = WriteNpy(plan.arg(t).dtype, t.shape, std::string_view(dst[k], t.bytes));
  }
  st.staging_ms = WallMs(t0);
  return st;
}

}  // namespace assay
