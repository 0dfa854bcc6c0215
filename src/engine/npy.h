// NumPy .npy files (format versions 1.0, 2.0 and 3.0): parse an uploaded
// array, and write the engine's outputs. Only what Assay needs: little-endian
// (or byte-order-free) dtypes of the job spec, C order. bf16, which NumPy has
// no native dtype for, is written and accepted as the 2-byte void type '<V2'
// (what NumPy saves for ml_dtypes.bfloat16).
//
// Errors are Status::Rejected with a message that says what is wrong with the
// file; the caller prefixes the argument name.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "spec/job_spec.h"

namespace assay {

struct NpyArray {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;   // () is a 0-d array of one element
  std::string_view data;        // views into the parsed buffer: element bytes, C order
};

// Parses `bytes` (which must outlive the result's `data`).
Result<NpyArray> ParseNpy(std::string_view bytes);

// A complete .npy file (version 1.0, or 2.0 when the header needs it).
// REQUIRES: data.size() == product(shape) * DTypeSize(dtype).
std::string WriteNpy(DType dtype, const std::vector<int64_t>& shape, std::string_view data);

// The npy descr for a dtype: "<f4", "|b1", "<V2" for bf16.
std::string NpyDescr(DType dtype);

}  // namespace assay
