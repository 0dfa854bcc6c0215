#include "store/blob_codec.h"

#include <fmt/format.h>
#include <zstd.h>

#include "common/util.h"

namespace assay {

namespace {
constexpr int kZstdLevel = 3;  // zstd's default: fast, most of the gain of higher levels
}  // namespace

std::string_view BlobCodecName(BlobCodec c) { return c == BlobCodec::kZstd ? "zstd" : "raw"; }

Result<EncodedBlob> EncodeBlob(std::string_view raw) {
  EncodedBlob out;
  std::string compressed(ZSTD_compressBound(raw.size()), '\0');
  size_t n = ZSTD_compress(compressed.data(), compressed.size(), raw.data(), raw.size(), kZstdLevel);
  if (ZSTD_isError(n)) {
    return Status::Infra(fmt::format("store: zstd compression failed: {}", ZSTD_getErrorName(n)));
  }
  if (n < raw.size()) {
    compressed.resize(n);
    compressed.shrink_to_fit();
    out.codec = BlobCodec::kZstd;
    out.data = std::move(compressed);
  } else {
    out.codec = BlobCodec::kRaw;
    out.data.assign(raw);
  }
  return out;
}

Result<std::string> DecodeBlob(std::string_view codec, std::string_view stored, int64_t raw_size,
                               std::string_view hash) {
  std::string raw;
  if (codec == "raw") {
    raw.assign(stored);
  } else if (codec == "zstd") {
    raw.resize(static_cast<size_t>(raw_size));
    size_t n = ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
    if (ZSTD_isError(n)) {
      return Status::Infra(
          fmt::format("store: blob {} is corrupt: zstd: {}", hash, ZSTD_getErrorName(n)));
    }
    raw.resize(n);
  } else {
    return Status::Infra(fmt::format("store: blob {} has unknown codec '{}'", hash, codec));
  }
  if (static_cast<int64_t>(raw.size()) != raw_size) {
    return Status::Infra(fmt::format("store: blob {} is corrupt: {} bytes, expected {}", hash,
                                     raw.size(), raw_size));
  }
  if (Sha256Hex(raw) != hash) {
    return Status::Infra(fmt::format("store: blob {} is corrupt: content hash mismatch", hash));
  }
  return raw;
}

bool IsBlobHash(std::string_view hash) {
  if (hash.size() != 64) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace assay
