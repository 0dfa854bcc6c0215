#include "measure/cupti_tracer.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "cupti/cupti_loader.h"

#if __has_include(<cupti.h>)
#include <cupti.h>
#define ASSAY_HAVE_CUPTI 1
#else
#define ASSAY_HAVE_CUPTI 0
#endif

namespace assay {
namespace {

// Refusals that do not depend on CUPTI itself.
Status PreconditionError() {
  if (const char* inj = std::getenv("CUDA_INJECTION64_PATH"); inj && *inj) {
    // The injection library owns this process's CUPTI activity callbacks;
    // registering ours would silently take them over.
    return Status::Infra("this process runs under a CUPTI injection library (CUDA_INJECTION64_PATH)");
  }
  return Status::Ok();
}

#if ASSAY_HAVE_CUPTI

constexpr size_t kBufferBytes = 1 << 20;  // ~3,000 kernel records; a batch has at most ~100
constexpr size_t kBufferAlign = 8;        // ACTIVITY_RECORD_ALIGNMENT
constexpr auto kCollectPatience = std::chrono::milliseconds(20);

struct Api {
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;  // optional
  decltype(&cuptiGetTimestamp) timestamp = nullptr;                       // optional: Now() is 0
};

class TracerImpl final : public CuptiTracer {
 public:
  Status Init();

  Status Enable() override {
    if (enabled_) return Status::Ok();
    if (CUptiResult r = api_.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS)
      return Status::Infra("cuptiActivityEnable(CONCURRENT_KERNEL): " + Text(r));
    enabled_ = true;
    return Status::Ok();
  }

  void Disable() override {
    if (!enabled_) return;
    api_.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    enabled_ = false;
    Discard();
  }

  void Discard() override {
    api_.flush_all(0);
    std::lock_guard<std::mutex> lock(mu_);
    records_.clear();
    dropped_ = 0;
  }

  uint64_t Now() override {
    uint64_t ts = 0;
    if (api_.timestamp == nullptr || api_.timestamp(&ts) != CUPTI_SUCCESS) return 0;
    return ts;
  }

  Status Collect(uint64_t since_ns, size_t want, std::span<const std::string> exclude,
                 std::vector<KernelSpan>* out) override {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      // Not under mu_: the flush calls BufferCompleted on this thread.
      if (CUptiResult r = api_.flush_all(0); r != CUPTI_SUCCESS)
        return Status::Infra("cuptiActivityFlushAll: " + Text(r));
      if (Counted(since_ns, exclude) >= want) break;
      if (std::chrono::steady_clock::now() - t0 > kCollectPatience) {
        api_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (dropped_ > 0) {
      Status s = Status::Infra("CUPTI dropped " + std::to_string(dropped_) + " kernel records");
      dropped_ = 0;
      records_.clear();
      return s;
    }
    for (KernelSpan& k : records_) {
      if (k.start_ns >= since_ns) out->push_back(std::move(k));
    }
    records_.clear();
    return Status::Ok();
  }

  const std::string& library() const override { return library_; }

  // On CUPTI's thread or inside a flush: takes the kernel records of a buffer.
  void Take(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t valid_size) noexcept {
    try {
      std::vector<KernelSpan> got;
      CUpti_Activity* rec = nullptr;
      while (api_.next_record(buffer, valid_size, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
        // Newer CUPTI versions append fields, so the Kernel10 prefix stays valid.
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        got.push_back({k->name ? k->name : "<unknown>", k->start, k->end, k->correlationId});
      }
      size_t dropped = 0;
      if (api_.dropped_records == nullptr || api_.dropped_records(ctx, stream_id, &dropped) != CUPTI_SUCCESS)
        dropped = 0;
      std::lock_guard<std::mutex> lock(mu_);
      records_.insert(records_.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
      dropped_ += dropped;
    } catch (...) {  // out of memory: the records are lost, the next match fails
      std::lock_guard<std::mutex> lock(mu_);
      ++dropped_;
    }
  }

 private:
  std::string Text(CUptiResult r) const {
    const char* s = nullptr;
    if (api_.result_string && api_.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
    return "CUPTI error " + std::to_string(static_cast<int>(r));
  }

  size_t Counted(uint64_t since_ns, std::span<const std::string> exclude) {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<size_t>(std::count_if(records_.begin(), records_.end(), [&](const KernelSpan& k) {
      return k.start_ns >= since_ns && std::find(exclude.begin(), exclude.end(), k.name) == exclude.end();
    }));
  }

  Api api_;
  std::string library_;
  bool enabled_ = false;  // only the timer's thread touches it
  std::mutex mu_;
  std::vector<KernelSpan> records_;  // GUARDED_BY(mu_)
  uint64_t dropped_ = 0;             // GUARDED_BY(mu_)
};

// Set once, before the callbacks are registered; never destroyed.
TracerImpl* g_tracer = nullptr;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  // Owned by CUPTI until BufferCompleted frees it.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // 0: CUPTI drops the records and counts them
  *max_num_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                              size_t valid_size) {
  if (g_tracer != nullptr && buffer != nullptr) g_tracer->Take(ctx, stream_id, buffer, valid_size);
  std::free(buffer);
}

template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(::dlsym(lib, name));
  return *out != nullptr;
}

Status TracerImpl::Init() {
  std::string error;
  // The assay binary's own directory first: a libcupti shipped next to it wins.
  void* lib = cupti::LoadCuptiLibrary(cupti::DirectoryOf(reinterpret_cast<void*>(&BufferCompleted)), &error);
  if (lib == nullptr) return Status::Infra(error);
  if (!Resolve(lib, "cuptiGetResultString", &api_.result_string) ||
      !Resolve(lib, "cuptiActivityRegisterCallbacks", &api_.register_callbacks) ||
      !Resolve(lib, "cuptiActivityEnable", &api_.enable) || !Resolve(lib, "cuptiActivityDisable", &api_.disable) ||
      !Resolve(lib, "cuptiActivityFlushAll", &api_.flush_all) ||
      !Resolve(lib, "cuptiActivityGetNextRecord", &api_.next_record)) {
    return Status::Infra("libcupti lacks the Activity API entry points");
  }
  Resolve(lib, "cuptiActivityGetNumDroppedRecords", &api_.dropped_records);
  Resolve(lib, "cuptiGetTimestamp", &api_.timestamp);
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(api_.enable), &where) != 0 && where.dli_fname) library_ = where.dli_fname;
  g_tracer = this;
  if (CUptiResult r = api_.register_callbacks(&BufferRequested, &BufferCompleted); r != CUPTI_SUCCESS)
    return Status::Infra("cuptiActivityRegisterCallbacks: " + Text(r));
  return Status::Ok();
}

Result<CuptiTracer*> Create() {
  ASSAY_RETURN_IF_ERROR(PreconditionError());
  // Never destroyed (see the header): CUPTI may deliver buffers while static
  // destructors run at exit.
  auto* t = new TracerImpl();  // NOLINT(cppcoreguidelines-owning-memory)
  Status s = t->Init();
  if (!s.ok()) return s;  // t stays allocated: g_tracer may point at it
  return static_cast<CuptiTracer*>(t);
}

#else  // !ASSAY_HAVE_CUPTI

Result<CuptiTracer*> Create() {
  ASSAY_RETURN_IF_ERROR(PreconditionError());
  return Status::Infra("built without cupti.h: no in-process CUPTI");
}

#endif

}  // namespace

Result<CuptiTracer*> CuptiTracer::Get() {
  static const Result<CuptiTracer*> tracer = Create();
  return tracer;
}

}  // namespace assay
