// libassay_cupti.so: records every kernel, memcpy and memset of a process
// through CUPTI's Activity API and writes them as JSON at exit.
//
// The CUDA driver loads this library into any process that initialises CUDA
// when CUDA_INJECTION64_PATH names it, and calls InitializeInjection() from
// inside cuInit. Nothing here may take the host process down: CUPTI itself is
// dlopen'ed (so a missing or mismatched libcupti becomes {"v":1,"error":...}
// instead of a failed cuInit), libstdc++ is linked statically with every
// symbol but InitializeInjection hidden, no exception leaves a callback, and
// the state is never destroyed (CUPTI's thread may still deliver buffers
// while static destructors run at exit).
//
// Two more exported symbols serve the process itself (a Python harness calls
// them through ctypes.CDLL($CUDA_INJECTION64_PATH): dlopen of the same file
// returns the copy the driver already loaded): `extern "C" void
// AssayCuptiMark(const char*)` marks phases on the clock of the activity
// records, `extern "C" void AssayCuptiFlush(void)` writes the file now, as at
// exit, for a process that then leaves with _exit() (no at-exit handlers).
//
// Environment:
//   ASSAY_CUPTI_OUT          the JSON file to write; unset -> do nothing
//   ASSAY_CUPTI_LIB          path of libcupti to load (default: search, see cupti_loader.h)
//   ASSAY_CUPTI_MAX_RECORDS  cap on kernel (and on copy) records kept; default 1,000,000
//
// See docs/cupti.md for the file format and the ownership rules when several
// processes of one job initialise CUDA.
#include <cupti.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "cupti/activity_log.h"
#include "cupti/cupti_loader.h"

namespace assay::cupti {
namespace {

constexpr size_t kDefaultMaxRecords = 1000000;
constexpr size_t kBufferBytes = 8 << 20;  // per CUPTI activity buffer
constexpr size_t kBufferAlign = 8;        // CUPTI's requirement (ACTIVITY_RECORD_ALIGNMENT)

// The CUPTI entry points we use, resolved with dlsym.
struct CuptiApi {
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) dropped_records = nullptr;  // optional
  decltype(&cuptiSubscribe_v2) subscribe_v2 = nullptr;                    // optional
  decltype(&cuptiSubscribe) subscribe = nullptr;                          // optional
  decltype(&cuptiEnableCallback) enable_callback = nullptr;               // optional
};

// Process-wide state. Created once in InitializeInjection and never freed,
// on purpose: see the file comment.
struct State {
  explicit State(size_t max_records) : log(max_records) {}
  ActivityLog log;
  CuptiApi api;
  std::string out_path;
  pid_t pid = 0;
  std::mutex write_mu;          // serialises file writes
  bool final_written = false;   // GUARDED_BY(write_mu): snapshots stop after the final write
};
// Written once, before any callback can run; atomic because AssayCuptiMark
// may read it from any thread while InitializeInjection publishes it.
std::atomic<State*> g_state{nullptr};
// Marks taken while g_state was null (before CUDA initialised, or with
// profiling off); added to the log's marks_dropped at each write.
std::atomic<uint64_t> g_early_marks_dropped{0};

std::string ResultText(CUptiResult r) {
  const char* s = nullptr;
  State* st = g_state.load();
  if (st && st->api.result_string && st->api.result_string(r, &s) == CUPTI_SUCCESS && s) {
    return s;
  }
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

const char* CopyKindName(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  // Owned by CUPTI until BufferCompleted hands it back and frees it.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // size 0: CUPTI drops records (counted as dropped)
  *max_num_records = 0;                // as many as fit
}

void Record(const CUpti_Activity* rec) {
  ActivityLog& log = g_state.load()->log;
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      // Newer CUPTI versions append fields to the kernel record, so the
      // Kernel10 prefix stays valid for them.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      KernelRecord r;
      r.grid[0] = k->gridX;
      r.grid[1] = k->gridY;
      r.grid[2] = k->gridZ;
      r.block[0] = k->blockX;
      r.block[1] = k->blockY;
      r.block[2] = k->blockZ;
      r.static_smem_bytes = k->staticSharedMemory;
      r.dynamic_smem_bytes = k->dynamicSharedMemory;
      r.registers = k->registersPerThread;
      r.stream = k->streamId;
      r.device = k->deviceId;
      r.context = k->contextId;
      r.correlation = k->correlationId;
      r.start_ns = k->start;
      r.end_ns = k->end;
      log.AddKernel(k->name, r);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      log.AddCopy({CopyKindName(m->copyKind), m->bytes, m->streamId, m->deviceId, m->correlationId, m->start,
                   m->end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      log.AddCopy({"memset", m->bytes, m->streamId, m->deviceId, m->correlationId, m->start, m->end});
      break;
    }
    default:
      break;
  }
}

void CUPTIAPI BufferCompleted(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid_size) {
  State* st = g_state.load();
  if (st != nullptr && buffer != nullptr) {
    try {
      CUpti_Activity* rec = nullptr;
      while (st->api.next_record(buffer, valid_size, &rec) == CUPTI_SUCCESS) Record(rec);
      size_t dropped = 0;
      if (st->api.dropped_records && st->api.dropped_records(ctx, stream_id, &dropped) == CUPTI_SUCCESS &&
          dropped > 0) {
        st->log.AddDropped(dropped);
      }
    } catch (...) {
    }
  }
  std::free(buffer);
}

// Flushes CUPTI and writes the file. `final` marks the at-exit write; after
// it, snapshots (context destruction during exit) change nothing.
void FlushAndWrite(bool final) noexcept {
  State* s = g_state.load();
  if (s == nullptr || ::getpid() != s->pid) return;  // a fork()ed child: not our process to report
  {
    std::lock_guard<std::mutex> lock(s->write_mu);
    if (s->final_written) return;
  }
  // Not under write_mu: the flush calls BufferCompleted synchronously.
  s->api.flush_all(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  std::lock_guard<std::mutex> lock(s->write_mu);
  if (s->final_written) return;
  if (uint64_t early = g_early_marks_dropped.exchange(0); early > 0) s->log.AddMarksDropped(early);
  std::string error;
  if (!s->log.WriteJsonFile(s->out_path, final, &error)) {
    // Nowhere better to say it: the host's stderr is the only channel left.
    std::string line = "assay_cupti: " + error + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
  if (final) s->final_written = true;
}

void AtExit() { FlushAndWrite(true); }

void CUPTIAPI OnCallback(void* /*userdata*/, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                         const void* /*cbdata*/) {
  // A snapshot before the context's buffers go away, for processes that
  // destroy their context and then leave without running at-exit handlers.
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    FlushAndWrite(false);
  }
}

template <typename Fn>
bool Resolve(void* lib, const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(::dlsym(lib, name));
  return *out != nullptr;
}

// Returns an empty string on success, else why profiling cannot run.
std::string StartCupti(State* s) {
  // The library's own directory comes first, so a libcupti copied next to
  // it is found before the system's.
  std::string error;
  void* lib = LoadCuptiLibrary(DirectoryOf(reinterpret_cast<void*>(&AtExit)), &error);
  if (lib == nullptr) return error;
  CuptiApi& a = s->api;
  if (!Resolve(lib, "cuptiGetResultString", &a.result_string) ||
      !Resolve(lib, "cuptiActivityRegisterCallbacks", &a.register_callbacks) ||
      !Resolve(lib, "cuptiActivityEnable", &a.enable) || !Resolve(lib, "cuptiActivityFlushAll", &a.flush_all) ||
      !Resolve(lib, "cuptiActivityGetNextRecord", &a.next_record)) {
    return "libcupti lacks the Activity API entry points";
  }
  Dl_info where{};
  if (dladdr(reinterpret_cast<void*>(a.enable), &where) != 0 && where.dli_fname) {
    s->log.SetCuptiLibrary(where.dli_fname);
  }
  Resolve(lib, "cuptiActivityGetNumDroppedRecords", &a.dropped_records);
  Resolve(lib, "cuptiGetTimestamp", &a.timestamp);
  Resolve(lib, "cuptiSubscribe_v2", &a.subscribe_v2);
  Resolve(lib, "cuptiSubscribe", &a.subscribe);
  Resolve(lib, "cuptiEnableCallback", &a.enable_callback);

  // Subscribe first (CUPTI asks clients to), but only for the context-destroy
  // snapshot: failing here (another CUPTI client, e.g. Nsight) is not fatal.
  CUpti_SubscriberHandle sub = nullptr;
  CUptiResult r = CUPTI_ERROR_NOT_INITIALIZED;
  if (a.subscribe_v2) {
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "Assay";
    r = a.subscribe_v2(&sub, &OnCallback, nullptr, &params);
  } else if (a.subscribe) {
    r = a.subscribe(&sub, &OnCallback, nullptr);
  }
  if (r == CUPTI_SUCCESS && a.enable_callback) {
    r = a.enable_callback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  }
  if (r != CUPTI_SUCCESS) s->log.AddWarning("no context-destroy snapshots: " + ResultText(r));

  r = a.register_callbacks(&BufferRequested, &BufferCompleted);
  if (r != CUPTI_SUCCESS) return "cuptiActivityRegisterCallbacks: " + ResultText(r);
  r = a.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) return "cuptiActivityEnable(CONCURRENT_KERNEL): " + ResultText(r);
  if ((r = a.enable(CUPTI_ACTIVITY_KIND_MEMCPY)) != CUPTI_SUCCESS) {
    s->log.AddWarning("no memcpy records: " + ResultText(r));
  }
  if ((r = a.enable(CUPTI_ACTIVITY_KIND_MEMSET)) != CUPTI_SUCCESS) {
    s->log.AddWarning("no memset records: " + ResultText(r));
  }
  return {};
}

size_t MaxRecords() {
  const char* v = std::getenv("ASSAY_CUPTI_MAX_RECORDS");
  if (v == nullptr || *v == '\0') return kDefaultMaxRecords;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  return (end && *end == '\0') ? static_cast<size_t>(n) : kDefaultMaxRecords;
}

// The first process of a job to initialise CUDA claims ASSAY_CUPTI_OUT by
// creating it; any other process (a child that inherited the environment)
// writes `<ASSAY_CUPTI_OUT>.<pid>` instead of overwriting the owner's file.
std::string ClaimOutput(const std::string& requested) {
  int fd = ::open(requested.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::close(fd);
    return requested;
  }
  return requested + "." + std::to_string(::getpid());
}

void Initialize() {
  const char* out = std::getenv("ASSAY_CUPTI_OUT");
  if (out == nullptr || *out == '\0') return;
  // Leaked on purpose (see the file comment): never destroyed, so no callback
  // or at-exit handler can ever see a dead object.
  auto* s = new State(MaxRecords());  // NOLINT(cppcoreguidelines-owning-memory)
  s->pid = ::getpid();
  s->out_path = ClaimOutput(out);
  std::string error = StartCupti(s);
  if (!error.empty()) {
    WriteErrorJsonFile(s->out_path, error, nullptr);
    return;  // g_state stays null: every callback is a no-op
  }
  g_state.store(s);
  // Until the final write replaces it, the file says "complete": false, so a
  // process killed before exit is told apart from one that ran no kernels.
  s->log.WriteJsonFile(s->out_path, false, nullptr);
  // Keep this library mapped for the life of the process: the at-exit
  // handler and CUPTI's callbacks point into it.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&AtExit), &info) != 0 && info.dli_fname) {
    ::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  std::atexit(&AtExit);
}

}  // namespace
}  // namespace assay::cupti

// Called by the CUDA driver from cuInit, once per process. Returns 1 even
// when profiling could not start: the host program must run regardless.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  // An atomic flag rather than std::call_once, whose template instantiation
  // would be an exported weak symbol that could bind to the host's copy.
  static std::atomic<bool> started{false};
  if (started.exchange(true)) return 1;
  try {
    assay::cupti::Initialize();
  } catch (...) {
  }
  return 1;
}

// Records a mark {label, CUPTI timestamp} in the file (docs/cupti.md, "Marks").
// Safe from any thread and at any time: before CUPTI is up, without
// ASSAY_CUPTI_OUT, or past 10,000 marks it only counts marks_dropped.
extern "C" __attribute__((visibility("default"))) void AssayCuptiMark(const char* label) {
  using assay::cupti::g_early_marks_dropped;
  using assay::cupti::g_state;
  assay::cupti::State* s = g_state.load();
  if (s == nullptr) {
    g_early_marks_dropped.fetch_add(1);
    return;
  }
  uint64_t ts = 0;
  if (s->api.timestamp == nullptr || s->api.timestamp(&ts) != CUPTI_SUCCESS) ts = 0;
  s->log.AddMark(label, ts);  // ts 0: counted as dropped
}

// Writes the final file now, as the at-exit handler would (docs/cupti.md,
// "Leaving early"); later writes, the at-exit one included, change nothing.
// A no-op when profiling is not running or in a fork()ed child.
extern "C" __attribute__((visibility("default"))) void AssayCuptiFlush(void) {
  assay::cupti::FlushAndWrite(true);  // noexcept
}
