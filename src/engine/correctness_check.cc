#include "engine/correctness_check.h"

#include <algorithm>
#include <cmath>

#include "engine/host_values.h"
#include "gpu/cuda_driver.h"

namespace assay {
namespace {

const CudaDriverApi& Cu() { return **CudaDriver(); }

// Elements read back around the first mismatch to report the first ones.
constexpr uint64_t kWindowElements = 1 << 16;

Tolerance ToleranceFor(const JobSpec& spec, const ArgSpec& a) {
  if (a.tolerance) return *a.tolerance;
  if (spec.correctness) {
    auto it = spec.correctness->tolerance.find(a.dtype);
    if (it != spec.correctness->tolerance.end()) return it->second;
  }
  return DefaultTolerance(a.dtype);
}

nlohmann::json Unravel(uint64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t k = shape.size(); k-- > 0;) {
    const auto d = static_cast<uint64_t>(shape[k]);
    if (d == 0) break;
    idx[k] = static_cast<int64_t>(flat % d);
    flat /= d;
  }
  return idx;
}

std::string IndexString(const nlohmann::json& idx) {
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + std::to_string(idx[i].get<int64_t>());
  return s + "]";
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

Status Infra(CUresult r, const char* call, bool* lost) {
  // Our own calls fail this way only after a user kernel broke the context.
  if (IsStickyCudaError(r) && lost) *lost = true;
  return CuStatus(IsStickyCudaError(r) ? ErrorClass::kRuntimeError : ErrorClass::kInfraError, r, call);
}

Result<std::string> ReadBack(CUdeviceptr p, uint64_t bytes, bool* lost) {
  std::string host(bytes, '\0');
  if (bytes == 0) return host;
  if (CUresult r = Cu().cuMemcpyDtoH(host.data(), p, bytes); r != CUDA_SUCCESS)
    return Infra(r, "cuMemcpyDtoH", lost);
  return host;
}

// Compares one output and fills its report; returns a wrong_result message or "".
Result<std::string> CheckOutput(const CheckEnv& env, const TensorPlan& t, CUdeviceptr cand, CUdeviceptr ref,
                                bool self_check, nlohmann::json* report, std::set<std::string>* warnings) {
  const JobSpec& spec = env.plan->spec;
  const ArgSpec& a = spec.args[t.arg];
  const Tolerance tol = ToleranceFor(spec, a);
  const bool nan_equal = self_check || (spec.correctness && spec.correctness->nan_equal);
  auto stats = env.helpers->Compare(env.stream, cand, ref, t.count, a.dtype, tol, nan_equal);
  if (!stats.ok()) return stats.status();
  const CompareStats& s = *stats;
  // In a self-check (no reference) only the poison pattern counts.
  const uint64_t unwritten = self_check ? 0 : s.poisoned;
  nlohmann::json& r = *report;
  r = {{"total", t.count}, {"atol", tol.atol}, {"rtol", tol.rtol}};
  if (!self_check) {
    r["mismatches"] = s.mismatches;
    r["max_abs_error"] = std::isfinite(s.max_abs()) ? nlohmann::json(s.max_abs()) : nlohmann::json("inf");
    r["max_rel_error"] = std::isfinite(s.max_rel()) ? nlohmann::json(s.max_rel()) : nlohmann::json("inf");
  }
  r["unwritten"] = self_check ? s.ref_poisoned : unwritten;

  if (!self_check && t.count > 1 && s.ref_varying == 0) {
    auto first = ReadBack(ref, static_cast<uint64_t>(DTypeSize(a.dtype)), env.context_lost);
    if (!first.ok()) return first.status();
    warnings->insert("reference output '" + a.name + "' is constant (every element is " +
                     ElementJson(a.dtype, first->data(), 0).dump() +
                     "): the check cannot tell right from wrong");
  }
  if (!self_check && env.reference && s.ref_poisoned > 0)
    warnings->insert("the reference kernel left " + std::to_string(s.ref_poisoned) + " elements of '" + a.name +
                     "' unwritten");

  if (self_check) {
    // ref == cand: ref_poisoned counts the candidate's poisoned elements.
    if (s.ref_poisoned == 0) return std::string();
    // Find the first poisoned element on the host (bounded window from the start).
    const uint64_t n = std::min<uint64_t>(t.count, kWindowElements);
    auto host = ReadBack(cand, n * DTypeSize(a.dtype), env.context_lost);
    if (!host.ok()) return host.status();
    for (uint64_t i = 0; i < n; ++i)
      if (ElementBits(a.dtype, host->data(), i) == PoisonBits(a.dtype))
        return "output '" + a.name + "' element " + IndexString(Unravel(i, t.shape)) +
               " was never written (it still holds the poison pattern; " + std::to_string(s.ref_poisoned) + " of " +
               std::to_string(t.count) + " elements unwritten)";
    return "output '" + a.name + "': " + std::to_string(s.ref_poisoned) + " of " + std::to_string(t.count) +
           " elements were never written (they still hold the poison pattern)";
  }
  if (s.mismatches == 0) return std::string();

  // The first mismatches, by index, with their values: read a window from the first one.
  const uint64_t begin = s.first_mismatch;
  const uint64_t n = std::min<uint64_t>(t.count - begin, kWindowElements);
  const uint64_t esz = static_cast<uint64_t>(DTypeSize(a.dtype));
  auto hc = ReadBack(cand + begin * esz, n * esz, env.context_lost);
  if (!hc.ok()) return hc.status();
  auto hr = ReadBack(ref + begin * esz, n * esz, env.context_lost);
  if (!hr.ok()) return hr.status();
  nlohmann::json list = nlohmann::json::array();
  for (uint64_t i = 0; i < n && list.size() < kMaxReportedMismatches; ++i) {
    ElementVerdict v = CompareElement(a.dtype, hc->data(), hr->data(), i, tol.atol, tol.rtol, nan_equal);
    if (v.ok) continue;
    nlohmann::json m = {{"index", Unravel(begin + i, t.shape)},
                        {"flat_index", begin + i},
                        {"candidate", ElementJson(a.dtype, hc->data(), i)},
                        {"reference", ElementJson(a.dtype, hr->data(), i)}};
    if (v.poisoned) m["never_written"] = true;
    list.push_back(std::move(m));
  }
  r["first_mismatches"] = list;
  const nlohmann::json& first = list.empty() ? nlohmann::json() : list[0];
  if (!list.empty() && first.value("never_written", false))
    return "output '" + a.name + "' element " + IndexString(first["index"]) +
           " was never written (it still holds the poison pattern; " + std::to_string(unwritten) + " of " +
           std::to_string(t.count) + " elements unwritten, " + std::to_string(s.mismatches) + " mismatches)";
  std::string msg = "output '" + a.name + "': " + std::to_string(s.mismatches) + " of " + std::to_string(t.count) +
                    " elements differ from the reference (max abs error " + Num(s.max_abs()) + ", atol " +
                    Num(tol.atol) + ", rtol " + Num(tol.rtol) + ")";
  if (!list.empty())
    msg += "; first at " + IndexString(first["index"]) + ": candidate " + first["candidate"].dump() +
           ", reference " + first["reference"].dump();
  return msg;
}

}  // namespace

Result<JobBuffers> AllocateJobBuffers(const JobPlan& plan) {
  JobBuffers b;
  const size_t nt = plan.tensors.size();
  b.cand.resize(nt);
  b.ref.resize(nt);
  b.expected.resize(nt);
  b.cand_by_arg.assign(plan.spec.args.size(), 0);
  b.ref_by_arg.assign(plan.spec.args.size(), 0);
  auto alloc = [&](uint64_t bytes, const std::string& what, DeviceBuffer* out) -> Status {
    // Zero-size tensors still get a distinct, valid pointer.
    auto buf = DeviceBuffer::Create(std::max<uint64_t>(bytes, 256));
    if (!buf.ok())
      return Status::Rejected("allocating " + std::to_string(bytes) + " bytes for " + what +
                              " failed: " + buf.status().message());
    *out = std::move(*buf);
    return Status::Ok();
  };
  for (size_t i = 0; i < nt; ++i) {
    const TensorPlan& t = plan.tensors[i];
    const std::string& name = plan.spec.args[t.arg].name;
    ASSAY_RETURN_IF_ERROR(alloc(t.bytes, "'" + name + "'", &b.cand[i]));
    b.cand_by_arg[t.arg] = b.cand[i].get();
    if (plan.reference_kernel) {
      ASSAY_RETURN_IF_ERROR(alloc(t.bytes, "the reference's copy of '" + name + "'", &b.ref[i]));
      b.ref_by_arg[t.arg] = b.ref[i].get();
    }
    if (t.expected) {
      ASSAY_RETURN_IF_ERROR(alloc(t.bytes, "the expected '" + name + "'", &b.expected[i]));
      if (t.bytes > 0)
        if (CUresult r = Cu().cuMemcpyHtoD(b.expected[i].get(), t.expected->data(), t.bytes); r != CUDA_SUCCESS)
          return CuStatus(ErrorClass::kInfraError, r, "cuMemcpyHtoD(expected output)");
    }
  }
  return b;
}

CheckOutcome RunCheck(const CheckEnv& env, uint64_t seed, bool show_seed, const std::string& label) {
  CheckOutcome out;
  out.report = {{"label", label}, {"passed", false}};
  if (show_seed) out.report["seed"] = seed;
  const JobPlan& plan = *env.plan;
  const JobSpec& spec = plan.spec;
  JobBuffers& b = *env.buffers;
  auto fail = [&](Status s) {
    out.status = std::move(s);
    out.report["error"] = out.status.message();
    return out;
  };

  // 1. Fresh inputs into the candidate's buffers; poison its outputs.
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& t = plan.tensors[i];
    const ArgSpec& a = spec.args[t.arg];
    Status s;
    if (a.role == ArgRole::kOut) {
      s = env.helpers->Poison(env.stream, b.cand[i].get(), t.count, a.dtype);
    } else if (t.upload) {
      const void* src = t.upload->data();
      if (env.upload_sources && (*env.upload_sources)[i]) src = (*env.upload_sources)[i];
      if (t.bytes > 0)
        if (CUresult r = Cu().cuMemcpyHtoDAsync(b.cand[i].get(), src, t.bytes, env.stream);
            r != CUDA_SUCCESS)
          s = Infra(r, "cuMemcpyHtoDAsync(input)", env.context_lost);
    } else {
      InitSpec init = a.init ? *a.init : InitSpec{InitSpec::Kind::kUniform, -1, 1, {}};
      s = env.helpers->Generate(env.stream, b.cand[i].get(), t.count, a.dtype, init, seed, t.arg);
    }
    if (!s.ok()) return fail(s);
    // 2. The reference's own copies of the inputs, taken before the candidate runs.
    if (plan.reference_kernel) {
      if (a.role == ArgRole::kOut) s = env.helpers->Poison(env.stream, b.ref[i].get(), t.count, a.dtype);
      else if (t.bytes > 0)
        if (CUresult r = Cu().cuMemcpyDtoDAsync(b.ref[i].get(), b.cand[i].get(), t.bytes, env.stream);
            r != CUDA_SUCCESS)
          s = Infra(r, "cuMemcpyDtoDAsync(reference input)", env.context_lost);
      if (!s.ok()) return fail(s);
    }
  }
  // 3. Checksums of the pure inputs.
  std::vector<uint64_t> sums(plan.tensors.size(), 0);
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    if (spec.args[plan.tensors[i].arg].role != ArgRole::kIn) continue;
    auto c = env.helpers->Checksum(env.stream, b.cand[i].get(), plan.tensors[i].bytes);
    if (!c.ok()) return fail(c.status());
    sums[i] = *c;
  }
  // 4. The candidate, first.
  if (Status s = env.candidate->LaunchAndWait(env.stream, env.context_lost); !s.ok()) return fail(s);
  // 5. Inputs unchanged?
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const ArgSpec& a = spec.args[plan.tensors[i].arg];
    if (a.role != ArgRole::kIn) continue;
    auto c = env.helpers->Checksum(env.stream, b.cand[i].get(), plan.tensors[i].bytes);
    if (!c.ok()) return fail(c.status());
    if (*c != sums[i]) return fail(Status::WrongResult("kernel wrote to input '" + a.name + "' (declared in)"));
  }
  // 6. The reference kernel, on its own buffers.
  if (env.reference) {
    if (Status s = env.reference->LaunchAndWait(env.stream, env.context_lost); !s.ok())
      return fail(Status(s.error_class(), "reference kernel: " + s.message()));
  }
  // 7. Compare every output.
  nlohmann::json outputs = nlohmann::json::object();
  std::string first_problem;
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorPlan& t = plan.tensors[i];
    const ArgSpec& a = spec.args[t.arg];
    if (a.role == ArgRole::kIn) continue;
    CUdeviceptr ref = b.cand[i].get();
    bool self_check = true;
    if (plan.reference_kernel) ref = b.ref[i].get(), self_check = false;
    else if (t.expected) ref = b.expected[i].get(), self_check = false;
    // Without a reference only the poison pattern can be checked, and only
    // where no written value can look like it: NaN payloads and bool's 0xA5.
    // inout buffers were never poisoned; integers can legitimately hold 0xA5...
    if (self_check && (a.role == ArgRole::kInOut || (!IsFloatDType(a.dtype) && a.dtype != DType::kBool)))
      continue;
    nlohmann::json rep;
    auto problem = CheckOutput(env, t, b.cand[i].get(), ref, self_check, &rep, &out.warnings);
    if (!problem.ok()) return fail(problem.status());
    outputs[a.name] = std::move(rep);
    if (first_problem.empty()) first_problem = *problem;
  }
  out.report["outputs"] = std::move(outputs);
  if (!first_problem.empty()) return fail(Status::WrongResult(first_problem));
  out.report["passed"] = true;
  return out;
}

}  // namespace assay
