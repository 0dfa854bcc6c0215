#include "engine/safetensors.h"

#include <nlohmann/json.hpp>

namespace assay {
namespace {

Result<DType> DTypeFromSafetensors(const std::string& s) {
  static const std::pair<const char*, DType> kMap[] = {
      {"F64", DType::kF64}, {"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16},
      {"I64", DType::kI64}, {"I32", DType::kI32}, {"I16", DType::kI16}, {"I8", DType::kI8},
      {"U8", DType::kU8},   {"BOOL", DType::kBool},
  };
  for (const auto& [n, t] : kMap)
    if (s == n) return t;
  return Status::Rejected("safetensors dtype '" + s + "' is not supported");
}

Result<SafetensorsTensor> ReadEntry(const std::string& name, const nlohmann::json& e, std::string_view payload) {
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    return Status::Rejected("safetensors entry '" + name + "' needs dtype, shape and data_offsets");
  const auto& dt = e["dtype"];
  const auto& shape = e["shape"];
  const auto& off = e["data_offsets"];
  if (!dt.is_string() || !shape.is_array() || !off.is_array() || off.size() != 2 ||
      !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    return Status::Rejected("safetensors entry '" + name + "' is malformed");
  SafetensorsTensor t;
  t.name = name;
  auto d = DTypeFromSafetensors(dt.get<std::string>());
  if (!d.ok()) return d.status();
  t.dtype = *d;
  uint64_t count = 1;
  for (const auto& v : shape) {
    if (!v.is_number_unsigned()) return Status::Rejected("safetensors shape of '" + name + "' holds a non-integer");
    uint64_t dim = v.get<uint64_t>();
    if (dim != 0 && count > (UINT64_MAX / 16) / dim) return Status::Rejected("safetensors tensor '" + name + "' is too large");
    count *= dim;
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end || end > payload.size())
    return Status::Rejected("safetensors offsets of '" + name + "' lie outside the file");
  if (end - begin != count * static_cast<uint64_t>(DTypeSize(t.dtype)))
    return Status::Rejected("safetensors tensor '" + name + "' has " + std::to_string(end - begin) +
                            " bytes; its shape and dtype need " + std::to_string(count * DTypeSize(t.dtype)));
  t.data = payload.substr(begin, end - begin);
  return t;
}

}  // namespace

Result<SafetensorsTensor> ParseSafetensors(std::string_view bytes, std::string_view name) {
  if (bytes.size() < 8) return Status::Rejected("not a safetensors file (shorter than 8 bytes)");
  uint64_t n = 0;
  for (int k = 0; k < 8; ++k) n |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[k])) << (8 * k);
  if (n > kMaxSafetensorsHeaderBytes || n > bytes.size() - 8)
    return Status::Rejected("safetensors header length " + std::to_string(n) + " is larger than the file");
  nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return Status::Rejected("safetensors header is not a JSON object");
  std::string_view payload = bytes.substr(8 + n);

  std::vector<std::string> names;
  for (const auto& [k, v] : header.items())
    if (k != "__metadata__") names.push_back(k);
  std::string chosen(name);
  if (chosen.empty()) {
    if (names.size() != 1) {
      std::string list;
      for (const auto& k : names) list += (list.empty() ? "" : ", ") + k;
      return Status::Rejected("safetensors file holds " + std::to_string(names.size()) +
                              " tensors (" + list + "); name one with 'tensor'");
    }
    chosen = names[0];
  }
  auto it = header.find(chosen);
  if (it == header.end() || chosen == "__metadata__")
    return Status::Rejected("safetensors file has no tensor '" + chosen + "'");
  return ReadEntry(chosen, *it, payload);
}

}  // namespace assay
