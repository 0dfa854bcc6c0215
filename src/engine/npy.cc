#include "engine/npy.h"

#include <cstring>

namespace assay {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

struct DescrEntry {
  std::string_view descr;
  DType dtype;
};
// Accepted spellings: '<' little-endian, '|' not applicable (1 byte), '=' native
// (little-endian on every machine Assay runs on).
constexpr DescrEntry kDescrs[] = {
    {"f8", DType::kF64}, {"f4", DType::kF32}, {"f2", DType::kF16}, {"V2", DType::kBF16},
    {"i8", DType::kI64}, {"i4", DType::kI32}, {"i2", DType::kI16}, {"i1", DType::kI8},
    {"u1", DType::kU8},  {"b1", DType::kBool},
};

Result<DType> DTypeFromDescr(const std::string& d) {
  if (d.size() == 3 && (d[0] == '<' || d[0] == '|' || d[0] == '=')) {
    for (const auto& e : kDescrs)
      if (d.substr(1) == e.descr) return e.dtype;
  }
  if (!d.empty() && d[0] == '>')
    return Status::Rejected("npy dtype '" + d + "' is big-endian; only little-endian data is accepted");
  return Status::Rejected("npy dtype '" + d +
                          "' is not supported (f8 f4 f2 V2(bf16) i8 i4 i2 i1 u1 b1)");
}

void SkipSpace(std::string_view s, size_t* i) {
  while (*i < s.size() && (s[*i] == ' ' || s[*i] == '\n' || s[*i] == '\t')) ++*i;
}

// Finds "'key':" in the header dict and returns the position after the colon.
Result<size_t> FindKey(std::string_view h, std::string_view key) {
  std::string pat = "'" + std::string(key) + "'";
  size_t p = h.find(pat);
  if (p == std::string_view::npos) {
    pat = "\"" + std::string(key) + "\"";
    p = h.find(pat);
  }
  if (p == std::string_view::npos) return Status::Rejected("npy header has no '" + std::string(key) + "'");
  size_t i = p + pat.size();
  SkipSpace(h, &i);
  if (i >= h.size() || h[i] != ':') return Status::Rejected("npy header is malformed near '" + std::string(key) + "'");
  ++i;
  SkipSpace(h, &i);
  return i;
}

Result<std::string> ParseQuoted(std::string_view h, size_t i) {
  if (i >= h.size() || (h[i] != '\'' && h[i] != '"')) return Status::Rejected("npy descr is not a string");
  char q = h[i];
  size_t end = h.find(q, i + 1);
  if (end == std::string_view::npos || end - i > 32) return Status::Rejected("npy descr is malformed");
  return std::string(h.substr(i + 1, end - i - 1));
}

Result<std::vector<int64_t>> ParseShape(std::string_view h, size_t i) {
  if (i >= h.size() || h[i] != '(') return Status::Rejected("npy shape is not a tuple");
  ++i;
  std::vector<int64_t> shape;
  while (true) {
    SkipSpace(h, &i);
    if (i >= h.size()) return Status::Rejected("npy shape is not closed");
    if (h[i] == ')') break;
    if (h[i] < '0' || h[i] > '9') return Status::Rejected("npy shape holds a non-integer");
    int64_t v = 0;
    while (i < h.size() && h[i] >= '0' && h[i] <= '9') {
      if (v > (INT64_MAX - 9) / 10) return Status::Rejected("npy shape dimension is too large");
      v = v * 10 + (h[i] - '0');
      ++i;
    }
    if (i < h.size() && h[i] == 'L') ++i;  // Python 2 longs
    shape.push_back(v);
    if (shape.size() > 32) return Status::Rejected("npy shape has more than 32 dimensions");
    SkipSpace(h, &i);
    if (i < h.size() && h[i] == ',') ++i;
  }
  return shape;
}

}  // namespace

std::string NpyDescr(DType dtype) {
  for (const auto& e : kDescrs)
    if (e.dtype == dtype) return std::string(DTypeSize(dtype) == 1 ? "|" : "<") + std::string(e.descr);
  return "";
}

Result<NpyArray> ParseNpy(std::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic)
    return Status::Rejected("not an npy file (bad magic)");
  const auto major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Status::Rejected("npy file is truncated");
    for (int k = 0; k < 4; ++k) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + k])) << (8 * k);
    header_start = 12;
  } else {
    return Status::Rejected("npy format version " + std::to_string(major) + " is not supported");
  }
  if (header_len > bytes.size() - header_start) return Status::Rejected("npy header is truncated");
  std::string_view h = bytes.substr(header_start, header_len);

  NpyArray a;
  auto dpos = FindKey(h, "descr");
  if (!dpos.ok()) return dpos.status();
  auto descr = ParseQuoted(h, *dpos);
  if (!descr.ok()) return descr.status();
  auto dt = DTypeFromDescr(*descr);
  if (!dt.ok()) return dt.status();
  a.dtype = *dt;

  auto fpos = FindKey(h, "fortran_order");
  if (!fpos.ok()) return fpos.status();
  if (h.substr(*fpos, 4) == "True") return Status::Rejected("npy array is in Fortran order; only C order is accepted");
  if (h.substr(*fpos, 5) != "False") return Status::Rejected("npy fortran_order is malformed");

  auto spos = FindKey(h, "shape");
  if (!spos.ok()) return spos.status();
  auto shape = ParseShape(h, *spos);
  if (!shape.ok()) return shape.status();
  a.shape = std::move(*shape);

  uint64_t count = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && count > UINT64_MAX / 16 / static_cast<uint64_t>(d))
      return Status::Rejected("npy array is too large");
    count *= static_cast<uint64_t>(d);
  }
  const uint64_t need = count * static_cast<uint64_t>(DTypeSize(a.dtype));
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != need)
    return Status::Rejected("npy data is " + std::to_string(bytes.size() - data_start) + " bytes; shape and dtype need " +
                            std::to_string(need));
  a.data = bytes.substr(data_start);
  return a;
}

std::string WriteNpy(DType dtype, const std::vector<int64_t>& shape, std::string_view data) {
  std::string dict = "{'descr': '" + NpyDescr(dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i) {
    dict += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) dict += ", ";
  }
  if (shape.size() == 1) dict.pop_back();  // "(5,)"
  dict += "), }";
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends in '\n'.
  size_t prefix = 10;
  size_t total = prefix + dict.size() + 1;
  bool v2 = false;
  if (total + 63 > 65535 + prefix) {
    v2 = true;
    prefix = 12;
    total = prefix + dict.size() + 1;
  }
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string out(kMagic);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const size_t hl = dict.size();
  out += static_cast<char>(hl & 0xff);
  out += static_cast<char>((hl >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((hl >> 16) & 0xff);
    out += static_cast<char>((hl >> 24) & 0xff);
  }
  out += dict;
  out.append(data.data(), data.size());
  return out;
}

}  // namespace assay
