#include "engine/host_values.h"

#include <bit>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

namespace assay {
namespace {

template <typename T>
T Load(const void* data, uint64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

int64_t ElementAsInt(DType t, const void* data, uint64_t i) {
  switch (t) {
    case DType::kI64: return Load<int64_t>(data, i);
    case DType::kI32: return Load<int32_t>(data, i);
    case DType::kI16: return Load<int16_t>(data, i);
    case DType::kI8: return Load<int8_t>(data, i);
    case DType::kU8: return Load<uint8_t>(data, i);
    case DType::kBool: return Load<uint8_t>(data, i);
    default: return 0;
  }
}

}  // namespace

uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t ax = x & 0x7fffffff;
  if (ax >= 0x7f800000) return static_cast<uint16_t>(sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0));
  if (ax >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to >= 65520: inf
  if (ax < 0x38800000) {  // below the smallest normal half: subnormal or zero
    const float a = std::bit_cast<float>(ax);
    // Scale so the subnormal step (2^-24) becomes 1, then round half to even.
    const float scaled = a * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  uint32_t mant = ax & 0x7fffff;
  uint32_t exp = (ax >> 23) - 127 + 15;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // carries into the exponent correctly
  return static_cast<uint16_t>(sign | h);
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000 | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t FloatToBf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

float Bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint64_t PoisonBits(DType t) {
  switch (t) {
    case DType::kF64: return 0x7FF4A5A5A5A5A5A5ull;
    case DType::kF32: return 0x7FA5A5A5ull;
    case DType::kF16:
    case DType::kBF16: return 0xFFFFull;
    default: {
      uint64_t v = 0;
      for (int k = 0; k < DTypeSize(t); ++k) v |= uint64_t{0xA5} << (8 * k);
      return v;
    }
  }
}

uint64_t ElementBits(DType t, const void* data, uint64_t i) {
  uint64_t v = 0;
  std::memcpy(&v, static_cast<const char*>(data) + i * DTypeSize(t), DTypeSize(t));
  return v;
}

double ElementAsDouble(DType t, const void* data, uint64_t i) {
  switch (t) {
    case DType::kF64: return Load<double>(data, i);
    case DType::kF32: return Load<float>(data, i);
    case DType::kF16: return HalfToFloat(Load<uint16_t>(data, i));
    case DType::kBF16: return Bf16ToFloat(Load<uint16_t>(data, i));
    default: return static_cast<double>(ElementAsInt(t, data, i));
  }
}

nlohmann::json ElementJson(DType t, const void* data, uint64_t i) {
  if (!IsFloatDType(t)) {
    if (t == DType::kBool) {
      uint8_t b = Load<uint8_t>(data, i);
      if (b > 1) return b;  // a byte that is no C++ bool (e.g. the 0xA5 poison) is shown as a number
      return b != 0;
    }
    return ElementAsInt(t, data, i);
  }
  const double v = ElementAsDouble(t, data, i);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

ElementVerdict CompareElement(DType t, const void* cand, const void* ref, uint64_t i, double atol, double rtol,
                              bool nan_equal) {
  ElementVerdict v;
  v.poisoned = ElementBits(t, cand, i) == PoisonBits(t);
  if (IsFloatDType(t)) {
    const double a = ElementAsDouble(t, cand, i), b = ElementAsDouble(t, ref, i);
    if (std::isnan(a) || std::isnan(b)) v.ok = std::isnan(a) && std::isnan(b) && nan_equal;
    else if (std::isinf(a) || std::isinf(b)) v.ok = a == b;
    else v.ok = std::fabs(a - b) <= atol + rtol * std::fabs(b);
  } else if (t == DType::kBool) {
    const uint8_t a = Load<uint8_t>(cand, i), b = Load<uint8_t>(ref, i);
    v.ok = !v.poisoned && ((a != 0) == (b != 0));
  } else {
    v.ok = ElementAsInt(t, cand, i) == ElementAsInt(t, ref, i);
  }
  return v;
}

}  // namespace assay

