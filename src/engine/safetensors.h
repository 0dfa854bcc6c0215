// safetensors files: an 8-byte little-endian header length N, N bytes of
// JSON ({name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}),
// then the tensor bytes (offsets relative to the end of the header).
//
// Errors are Status::Rejected; the caller prefixes the argument name.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "spec/job_spec.h"

namespace assay {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string_view data;  // view into the parsed buffer
};

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = uint64_t{100} << 20;

// Selects tensor `name` from the file in `bytes` (which must outlive the
// result). An empty `name` selects the only tensor, and is rejected when the
// file holds several (the message lists them).
Result<SafetensorsTensor> ParseSafetensors(std::string_view bytes, std::string_view name);

}  // namespace assay
