// Host-side element handling for the engine's dtypes: half/bfloat16
// conversion, reading one element for reports, the poison patterns written
// into outputs before a run, and the element comparison rule (the same rule
// as the device's compare kernel in helper_kernels.cc; docs/correctness.md).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "spec/job_spec.h"

namespace assay {

uint16_t FloatToHalf(float f);     // round to nearest even
float HalfToFloat(uint16_t h);
uint16_t FloatToBf16(float f);     // round to nearest even; NaN stays NaN
float Bf16ToFloat(uint16_t b);

// The poison pattern of one element, as its little-endian bits:
// f64 0x7FF4A5A5A5A5A5A5, f32 0x7FA5A5A5 (signalling NaNs), f16 and bf16 0xFFFF
// (NaN), integers and bool 0xA5 in every byte.
uint64_t PoisonBits(DType t);

// Element `i` of `data` (little-endian, C order).
double ElementAsDouble(DType t, const void* data, uint64_t i);
uint64_t ElementBits(DType t, const void* data, uint64_t i);
// The element as JSON: a number, or "nan" / "inf" / "-inf" (JSON has none).
nlohmann::json ElementJson(DType t, const void* data, uint64_t i);

struct ElementVerdict {
  bool ok = true;
  bool poisoned = false;  // the candidate element still holds the poison pattern
};
// cand vs ref element `i` under |a - b| <= atol + rtol * |b| (floats; NaN equal
// only when nan_equal; an infinity must match exactly), or equality (integers;
// bool compares truth values).
ElementVerdict CompareElement(DType t, const void* cand, const void* ref, uint64_t i, double atol, double rtol,
                              bool nan_equal);

}  // namespace assay
